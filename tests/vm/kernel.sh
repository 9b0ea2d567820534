#!/usr/bin/env bash
# tests/vm/kernel.sh SUITE CACHE: Debian SUITE's packaged kernel (bookworm: 6.1, trixie: 6.12)
# unpacked into CACHE/SUITE/ (vmlinuz, root/[usr/]lib/modules/VERSION), fetched from Debian's archive with
# a private apt state, so the host's own package lists and kernel are not touched. Prints the
# folder. Cached: a second call with the kernel present does nothing.
set -euo pipefail
suite=$1
cache=$2
dir=$cache/$suite
shopt -s nullglob
mods=("$dir"/root/lib/modules/* "$dir"/root/usr/lib/modules/*)
if [ -e "$dir/vmlinuz" ] && [ ${#mods[@]} -gt 0 ]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$dir/apt/lists/partial" "$dir/apt/archives/partial" "$dir/apt/etc"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources \
	2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
	"$mirror" "$suite" >"$dir/apt/etc/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$dir/apt/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache::Archives="$dir/apt/archives"
	-o Dir::State::Status=/dev/null -o APT::Sandbox::User=root -o Debug::NoLocking=1
	-o Acquire::Retries=3)
apt-get "${apt_opts[@]}" -qq update >&2
# linux-image-amd64 is a meta-package: its dependency is the kernel's own package.
pkg=$(apt-cache "${apt_opts[@]}" depends linux-image-amd64 |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -1)
[ -n "$pkg" ] || {
	echo "kernel.sh: no kernel package in $suite" >&2
	exit 1
}
(cd "$dir/apt/archives" && apt-get "${apt_opts[@]}" -qq download "$pkg" >&2)
rm -rf "$dir/root"
dpkg-deb -x "$dir"/apt/archives/"$pkg"_*.deb "$dir/root"
cp "$dir"/root/boot/vmlinuz-* "$dir/vmlinuz"
rm -rf "$dir/apt/archives"/*.deb "$dir/apt/lists"
echo "$dir"
