#!/usr/bin/env bash
# Writes the service worker's manifest into a built site's sw.js: every file of the site (but
# sw.js and hidden files) with the SHA-256 of its contents, and the version, a hash of all of
# them and of sw.js itself. It replaces what lies between sw.js's `// precache:begin` and
# `// precache:end` lines, so it can run again on a site it already wrote.
#
# Trunk runs it after every build, `trunk serve` included (a post_build hook in Trunk.toml), on
# its staging directory ($TRUNK_STAGING_DIR), before the site is moved into dist/. Any change to
# any file of the site changes sw.js, which is how browsers learn of a new version.
#
#   scripts/precache.sh [SITE_DIR]     (default: $TRUNK_STAGING_DIR)
#
# Needs only bash, find, sort, sha256sum and awk, as every Debian and Ubuntu has.
set -euo pipefail
export LC_ALL=C

die() { printf 'precache: %s\n' "$*" >&2; exit 1; }

site="${1:-${TRUNK_STAGING_DIR:-}}"
[ -n "$site" ] || die "usage: $0 SITE_DIR (Trunk sets TRUNK_STAGING_DIR when it runs this hook)"
sw="$site/sw.js"
[ -f "$sw" ] || die "$sw not found (index.html copies static/sw.js into the site)"

generated="$(mktemp)"
rewritten="$(mktemp)"
trap 'rm -f "$generated" "$rewritten"' EXIT

# The site's files, sorted so the same site always gives the same manifest.
files=()
while IFS= read -r -d '' path; do
  path="${path#./}"
  case "$path" in
    sw.js | .* | */.*) continue ;;
  esac
  # Names go into JavaScript strings and URLs as they are.
  [[ "$path" =~ ^[A-Za-z0-9._/-]+$ ]] || die "cannot list '$path': use letters, digits, '.', '_', '-' and '/' in file names"
  files+=("$path")
done < <(cd "$site" && find . -type f -print0 | sort -z)
[ ${#files[@]} -gt 0 ] || die "$site holds no files besides sw.js"

# "<sha256>  <path>" per file, then the version: the hash of these lines and of sw.js's own
# code (its lines outside the manifest), so a change to the worker alone is a new version too.
hashes="$(cd "$site" && sha256sum -- "${files[@]}")"
version="$({
  printf '%s\n' "$hashes"
  awk '/^\/\/ precache:begin/ { skip = 1 } !skip { print } /^\/\/ precache:end/ { skip = 0 }' "$sw"
} | sha256sum | cut -c1-16)"

{
  printf "const VERSION = '%s';\n" "$version"
  printf 'const PRECACHE = [\n'
  printf '%s\n' "$hashes" | awk '{ printf "  [\x27%s\x27, \x27%s\x27],\n", $2, $1 }'
  printf '];\n'
} >"$generated"

awk -v generated="$generated" '
  /^\/\/ precache:begin/ {
    print
    while ((getline line < generated) > 0) print line
    begins++
    skip = 1
    next
  }
  /^\/\/ precache:end/ { ends++; skip = 0 }
  !skip { print }
  END { if (begins != 1 || ends != 1) exit 3 }
' "$sw" >"$rewritten" || die "$sw must have one '// precache:begin' line and one '// precache:end' line after it"

cat "$rewritten" >"$sw"
printf 'precache: %d files, version %s, written into %s\n' "${#files[@]}" "$version" "$sw" >&2
