#!/usr/bin/env bash
# tests/pkg/debs.sh SRC OUT: builds the Debian packages (debian/) from the source tree SRC
# with 'dpkg-buildpackage -us -uc -b' in a copy of its files (tracked and untracked, not
# ignored), and leaves the .debs in OUT. Cached: OUT/key records a hash of every source file,
# and a second call with the same sources does nothing.
set -euo pipefail
src=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$src"
files=$(git ls-files -co --exclude-standard | while read -r f; do [ -f "$f" ] && echo "$f"; done)
# The key leaves out what no package holds (the tests' scripts, documents), so editing them
# does not rebuild; but the command pages make the man pages, completions and --help.
key=$({
	printf '%s\n' "$files" | grep -v -e '^tests/pkg/' -e '^docs/' -e '\.md$'
	printf '%s\n' "$files" | grep -e '^docs/commands/' -e '^docs/CMakeLists.txt$'
} | xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/key" 2>/dev/null)" = "$key" ] && ls "$out"/arborinth_*.deb >/dev/null 2>&1; then
	echo "debs.sh: packages up to date in $out" >&2
	exit 0
fi
work=$(mktemp -d /tmp/arborinth-debs.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/arborinth"
printf '%s\n' "$files" | tar -cf - -T - | tar -xf - -C "$work/arborinth"
start=$(date +%s)
(cd "$work/arborinth" && nice dpkg-buildpackage -us -uc -b -j"$(nproc)" >"$work/build.log" 2>&1) || {
	tail -40 "$work/build.log" >&2
	echo "debs.sh: dpkg-buildpackage failed" >&2
	exit 1
}
rm -f "$out"/*.deb "$out/key"
cp "$work"/*.deb "$out/"
echo "$key" >"$out/key"
echo "debs.sh: built $(cd "$out" && echo *.deb) in $(($(date +%s) - start)) s" >&2
