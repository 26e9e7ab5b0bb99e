#!/usr/bin/env bash
# Runs the README's "Memory budgets in CI" job as written, on two real snapshots, and checks
# that it fails on a regression and passes on the run its baseline was written from.
#
# The job's commands are not copied here: they are the `run:` steps of the README's YAML
# between its `# memsight-check:begin` and `# memsight-check:end` lines, run as GitHub Actions
# runs a step (`bash -e`) with GITHUB_STEP_SUMMARY set; the baseline is written with the
# README's own `memsight check … --write-baseline …` line. An edit of the README that breaks
# the job fails this script.
#
#   tests/ci/budget-job.sh
#
# MEMSIGHT is the command line to run (default: `memsight` on PATH); MEMSIGHT_REAL_FIXTURES
# the real snapshots (default: ../shared/fixtures/real beside the repository). Needs bash,
# awk, grep and coreutils. `cargo test -p memsight-cli --test ci_job` runs it with the build.
set -euo pipefail
export LC_ALL=C.UTF-8

die() { printf 'budget-job: %s\n' "$*" >&2; exit 2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readme="$root/README.md"
fixtures="${MEMSIGHT_REAL_FIXTURES:-$root/../shared/fixtures/real}"
# One project's runs: the baseline's, then one with about twice the parameters (peak allocated
# 21.3 GiB, then 40.7 GiB: within the job's --max-peak, 92% past its --max-growth).
baseline_run="$fixtures/notHanmin__assignment2-systems__memory_snapshot.pickle"
grown_run="$fixtures/notHanmin__assignment2-systems__memory_snapshot_forward.pickle"
for f in "$baseline_run" "$grown_run"; do
  [ -f "$f" ] || die "$f is missing (set MEMSIGHT_REAL_FIXTURES)"
done
memsight_bin="$(command -v "${MEMSIGHT:-memsight}")" ||
  die "no memsight command: set MEMSIGHT or put memsight on PATH"
memsight_bin="$(readlink -f "$memsight_bin")"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/repo"
ln -s "$memsight_bin" "$work/bin/memsight"
export PATH="$work/bin:$PATH"

# The job's steps: each `run:` value (a line, or a `|` block) between the markers.
awk '
  /# memsight-check:begin/ { on = 1; next }
  /# memsight-check:end/ { on = 0; ended = 1; next }
  !on { next }
  block {
    if ($0 ~ /^[[:space:]]*$/) { print ""; next }
    match($0, /^ */)
    if (RLENGTH > key) { if (!indent) indent = RLENGTH; print substr($0, indent + 1); next }
    block = 0
  }
  /^[[:space:]]*(- )?run:/ {
    match($0, /^ *(- )?/); key = RLENGTH
    value = $0; sub(/^[[:space:]]*(- )?run:[[:space:]]*/, "", value)
    if (value ~ /^\|-?$/) { block = 1; indent = 0 } else print value
    steps++
  }
  END { if (!ended || !steps) exit 1 }
' "$readme" >"$work/job.sh" ||
  die "README.md has no run: step between # memsight-check:begin and # memsight-check:end"

# The README's line that refreshes the baseline, from its section's text.
refresh="$(awk '/^## Memory budgets in CI/ { on = 1; next } /^## / { on = 0 } on' "$readme" |
  tr '\n' ' ' | grep -o '`memsight check [^`]*--write-baseline [^`]*`' | head -n 1 | tr -d '`')" ||
  die "README.md's Memory budgets in CI section has no \`memsight check … --write-baseline …\`"

echo "The job's steps, from README.md:"
sed 's/^/  /' "$work/job.sh"
echo "The baseline, from README.md: $refresh"

summary="$work/step-summary.md"
failed=0
fail() { printf 'budget-job: FAILED: %s\n' "$*" >&2; failed=1; }
summary_has() {
  grep -qF -- "$1" "$summary" || fail "the summary lacks: $1"
}
# Runs the job in the checkout with SNAPSHOT as memory.pickle and an empty summary, expects
# exit code CODE and prints the summary: job WHAT SNAPSHOT CODE.
job() {
  local what="$1" code=0
  install -m 0644 "$2" "$work/repo/memory.pickle"
  : >"$summary"
  (cd "$work/repo" && GITHUB_STEP_SUMMARY="$summary" bash -e "$work/job.sh") || code=$?
  [ "$code" -eq "$3" ] || fail "$what: the job exited with $code, not $3"
  echo "$what: exit code $code; the summary:"
  sed 's/^/  /' "$summary"
}

# The accepted run, as memory.pickle, writes the committed baseline.
install -m 0644 "$baseline_run" "$work/repo/memory.pickle"
(cd "$work/repo" && bash -e -c "$refresh") || fail "the baseline was not written: $refresh"
[ -s "$work/repo/memory-baseline.json" ] || fail "no memory-baseline.json after: $refresh"

# A run that grew: the job fails with exit code 1 (2 would be no verdict), on growth alone.
job "A run 92% over its baseline" "$grown_run" 1
summary_has "## Memory check: failed"
summary_has "- memory.pickle cuda:0: peak allocated grew by 19.5 GiB against the baseline (21.3 GiB → 40.7 GiB), 91.7% of its baseline, above the 5.0% allowed"
! grep -qF "peak allocated 40.7 GiB exceeds" "$summary" ||
  fail "the grown run breached --max-peak: the example is meant to fail on growth alone"

# The baseline's own run: the job passes.
job "The baseline's own run" "$baseline_run" 0
summary_has "## Memory check: passed"

[ "$failed" -eq 0 ] || exit 1
echo "budget-job: the README's job fails on growth and passes on its baseline's run"
