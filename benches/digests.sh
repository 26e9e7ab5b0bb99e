#!/usr/bin/env bash
# A job's digests at scale, on one core (taskset -c 0), and prints a Markdown table of medians:
#   - the files table of 1,000 digests of real-sized runs (each rank of a 125-iteration, 8-rank
#     job is the digest of one real snapshot, taken in turn), read as 1,000 files and as one
#     file of 1,000 digests, with the command's peak memory;
#   - `memsight digest` against `memsight overview` (the decoder and the overview alone) on the
#     largest real snapshot: a digest is made at the decoder's speed.
#   - the page's files table of the same 1,000 digests, chosen at once and as one file, with
#     the page's memory (benches/digests_page.mjs; when dist/ is built).
# Needs the real snapshots (../shared/fixtures/real or $MEMSIGHT_REAL_FIXTURES).
#
#   bash benches/digests.sh [RUNS]      (default 5)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-5}"
fixtures="${MEMSIGHT_REAL_FIXTURES:-../shared/fixtures/real}"
[ -d "$fixtures" ] || { echo "no real snapshots in $fixtures" >&2; exit 2; }
cargo build --quiet --release -p memsight-cli
memsight="$PWD/target/release/memsight"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# One digest per real snapshot, then 1,000 ranks named as a job names them.
mapfile -t snapshots < <(find "$fixtures" -maxdepth 1 -type f \( -name '*.pickle' -o -name '*.pkl' \) | sort)
"$memsight" digest "${snapshots[@]}" > "$scratch/real.jsonl"
mapfile -t real < "$scratch/real.jsonl"
mkdir -p "$scratch/job"
for ((i = 0; i < 1000; i++)); do
  name="job/iteration_$((i / 8))/rank$((i % 8)).pickle"
  digest="${real[$((i % ${#real[@]}))]}"
  # The digest's name is its first string field after format and version.
  printf '%s\n' "$(sed "s|\"name\":\"[^\"]*\"|\"name\":\"$name\"|" <<<"$digest")" \
    > "$scratch/job/iteration_$((i / 8))__rank$((i % 8)).digest.json"
done
cat "$scratch"/job/*.json > "$scratch/all.jsonl"
bytes=$(du -cb "$scratch"/job/*.json | tail -1 | cut -f1)

# Milliseconds of one run of a command, and its peak resident memory in KiB.
run() {
  local start end
  start=$(date +%s%N)
  /usr/bin/time -f '%M' -o "$scratch/rss" taskset -c 0 "$@" > /dev/null
  end=$(date +%s%N)
  echo "$(((end - start) / 1000000)) $(cat "$scratch/rss")"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() {
  local label="$1" times=() rss=()
  shift
  for ((r = 0; r < runs; r++)); do
    read -r ms kib < <(run "$@")
    times+=("$ms")
    rss+=("$kib")
  done
  printf '| %s | %s ms | %s MiB |\n' "$label" "$(printf '%s\n' "${times[@]}" | median)" \
    "$(($(printf '%s\n' "${rss[@]}" | median) / 1024))"
}

largest=$(ls -S "${snapshots[@]}" | head -1)
echo "| one core (taskset -c 0), median of $runs | time | peak memory |"
echo "|---|---:|---:|"
measure "files table of 1,000 digests, 1,000 files ($((bytes / 1048576)) MiB)" \
  "$memsight" files --json "$scratch"/job/*.json
measure "files table of 1,000 digests, one file" "$memsight" files --json "$scratch/all.jsonl"
measure "overview of $(basename "$largest") ($(($(stat -c %s "$largest") / 1024)) KiB)" \
  "$memsight" overview --json "$largest"
measure "digest of the same" "$memsight" digest "$largest"

# The page's half: the same 1,000 digests in the built viewer (not on one core: the page's
# browser runs as a user's does).
if [ -f dist/index.html ]; then
  echo
  node benches/digests_page.mjs "$scratch/job" "$scratch/all.jsonl" --runs "$runs"
else
  echo "dist/ is not built (./x build): the page's half is left out" >&2
fi
