#!/bin/sh
# Fills fuzz/corpus/decode/ with the small edge-case fixtures of tests/fixtures/ (every pickle,
# gzip and JSON file under 20 kB) plus two small generated snapshots and the small hostile seeds of
# hostile_seeds.py. Run from anywhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out="$here/corpus/decode"
mkdir -p "$out"
for f in "$root"/tests/fixtures/*.pickle "$root"/tests/fixtures/*.pickle.gz "$root"/tests/fixtures/*.json \
         "$root"/tests/fixtures/*.txt; do
    [ -f "$f" ] || continue
    case "$(basename "$f")" in manifest.json) continue ;; esac
    [ "$(wc -c < "$f")" -le 20000 ] || continue
    cp "$f" "$out/"
done
if command -v python3 >/dev/null; then
    python3 "$root/tests/python/gen_snapshot.py" --entries 40 --seed 7 --depth-min 2 --depth-max 4 \
        --quiet -o "$out/gen_40_p4.pickle"
    python3 "$root/tests/python/gen_snapshot.py" --entries 40 --seed 8 --depth-min 2 --depth-max 4 \
        --protocol 2 --era 2.1 --wrap 10 --quiet -o "$out/gen_40_p2_wrap.pickle"
    python3 "$here/hostile_seeds.py" "$out"
fi
echo "seed corpus: $(ls "$out" | wc -l) files in $out"
