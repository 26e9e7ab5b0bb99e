#!/usr/bin/env bash
# How long the test command's lints and the builds they sit beside take from nothing (a fresh
# target directory, the crates already downloaded), two ways, alternately, and prints a
# Markdown table of the medians. Two comparisons:
#   native (the default):
#     separate: clippy natively over every target, clippy for wasm32 (the web app, the core
#               and the charts), then the native test build;
#     inside:   clippy for wasm32 (the web app only), then the test build with clippy-driver
#               as the workspace's compiler (measured, not adopted:
#               docs/decisions/0025-clippy-runs-beside-the-test-build.md).
#   browser:
#     checked:  clippy for wasm32 (the web app, with its page feature), then the release build;
#     built:    the release build with clippy-driver as the workspace's compiler, warnings as
#               errors (scripts/clippy-rustc.sh), as `./x test` runs it
#               (docs/decisions/0026-the-release-build-lints-for-wasm32.md).
# The tests are not run: both ways run the same tests.
#
#   bash benches/lints.sh [RUNS] [native|browser]    (default 1 native; each run takes minutes)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-1}"
comparison="${2:-native}"
export PATH="$PWD/.tools/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
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

checked() {
  cargo clippy --quiet --target wasm32-unknown-unknown -p memsight-web --features page --lib --bins \
    -- -D warnings
  trunk build --release --offline --public-url ./ --dist "$scratch/dist"
}
built() {
  RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/clippy-rustc.sh" \
    trunk build --release --offline --public-url ./ --dist "$scratch/dist"
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

case "$comparison" in
  native) ways=(separate inside) ;;
  browser) ways=(checked built) ;;
  *) echo "say native or browser" >&2; exit 2 ;;
esac
declare -a a_times b_times
for ((r = 1; r <= runs; r++)); do
  a_times+=("$(measure "${ways[0]}")")
  echo "run $r: ${ways[0]} ${a_times[-1]} ms" >&2
  b_times+=("$(measure "${ways[1]}")")
  echo "run $r: ${ways[1]} ${b_times[-1]} ms" >&2
done
a=$(printf '%s\n' "${a_times[@]}" | median)
b=$(printf '%s\n' "${b_times[@]}" | median)
seconds() { printf '%d.%d s' $(($1 / 1000)) $(($1 % 1000 / 100)); }
if [ "$comparison" = native ]; then
  echo "| way | lints and the native test build, from nothing (median of $runs) |"
  echo "|---|---|"
  echo "| clippy separate (native, wasm32 ×3 crates), then the test build | $(seconds "$a") |"
  echo "| clippy inside the test build, wasm32 for the web app only | $(seconds "$b") |"
else
  echo "| way | the wasm32 lints and the release build, from nothing (median of $runs) |"
  echo "|---|---|"
  echo "| clippy for wasm32 (the web app), then the release build | $(seconds "$a") |"
  echo "| the release build with clippy as the workspace's compiler | $(seconds "$b") |"
fi
printf '| ratio | %s |\n' "$(awk -v a="$b" -v b="$a" 'BEGIN {printf "%.2f", a / b}')"
