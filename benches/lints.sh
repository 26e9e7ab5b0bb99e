#!/usr/bin/env bash
# How long the lints and the native test build take from nothing (a fresh target directory, the
# crates already downloaded), two ways, alternately, and prints a Markdown table of the medians:
#   separate: clippy natively over every target, clippy for wasm32 (the web app, the core and
#             the charts), then the test build — as `./x test` lints (it checks the web app alone);
#   inside:   clippy for wasm32 (the web app only), then the test build with clippy-driver as
#             the workspace's compiler (measured, not adopted: docs/decisions/0025-clippy-runs-beside-the-test-build.md).
# The tests are not run: both ways run the same tests.
#
#   bash benches/lints.sh [RUNS]      (default 1; each run of each way takes minutes)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-1}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cargo fetch --quiet

clippy_args="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
separate() {
  cargo clippy --quiet --workspace --all-targets -- -D warnings
  cargo clippy --quiet --target wasm32-unknown-unknown -p memsight-web -p memsight-core \
    -p memsight-charts --features memsight-web/page --lib --bins --examples -- -D warnings
  cargo test --quiet --workspace --all-targets --no-run
}
inside() {
  cargo clippy --quiet --target wasm32-unknown-unknown -p memsight-web --features page --lib --bins \
    -- -D warnings
  RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)" CLIPPY_ARGS="$clippy_args" \
    cargo test --quiet --workspace --all-targets --no-run
}

# Seconds a way takes from an empty target directory.
measure() {
  local way="$1" dir="$scratch/$1" start
  rm -rf "$dir"
  start=$(date +%s%N)
  CARGO_TARGET_DIR="$dir" "$way" >/dev/null 2>"$scratch/$way.log" ||
    { cat "$scratch/$way.log" >&2; exit 1; }
  echo $((($(date +%s%N) - start) / 1000000))
  rm -rf "$dir"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -a s_times i_times
for ((r = 1; r <= runs; r++)); do
  s_times+=("$(measure separate)")
  echo "run $r: separate ${s_times[-1]} ms" >&2
  i_times+=("$(measure inside)")
  echo "run $r: inside ${i_times[-1]} ms" >&2
done
s=$(printf '%s\n' "${s_times[@]}" | median)
i=$(printf '%s\n' "${i_times[@]}" | median)
echo "| way | lints and the native test build, from nothing (median of $runs) |"
echo "|---|---|"
printf '| clippy separate (native, wasm32 ×3 crates), then the test build | %d.%d s |\n' $((s / 1000)) $((s % 1000 / 100))
printf '| clippy inside the test build, wasm32 for the web app only | %d.%d s |\n' $((i / 1000)) $((i % 1000 / 100))
printf '| ratio | %s |\n' "$(awk -v a="$i" -v b="$s" 'BEGIN {printf "%.2f", a / b}')"
