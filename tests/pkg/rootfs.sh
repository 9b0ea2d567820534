#!/usr/bin/env bash
# tests/pkg/rootfs.sh SUITE NAME PACKAGE...: a fresh Debian SUITE system (mmdebstrap
# --variant=apt, or ARBORINTH_PKG_VARIANT, from Debian's archive) with PACKAGEs, as a tarball under
# /var/cache/arborinth-pkg (ARBORINTH_PKG_CACHE), printed on stdout. Cached: the tarball's name
# carries a hash of the suite and the package list, so a second call only prints it.
set -euo pipefail
suite=$1
name=$2
shift 2
cache=${ARBORINTH_PKG_CACHE:-/var/cache/arborinth-pkg}
mkdir -p "$cache"
variant=${ARBORINTH_PKG_VARIANT:-apt}
key=$(printf '%s\n' "$suite" "$@" | sha256sum | cut -c1-12)
[ "$variant" = apt ] || key=$(printf '%s\n' "$suite" "$variant" "$@" | sha256sum | cut -c1-12)
tar=$cache/$suite-$name-$key.tar
if [ -s "$tar" ]; then
	echo "$tar"
	exit 0
fi
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources \
	2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
inc=$(
	IFS=,
	echo "$*"
)
start=$(date +%s)
nice mmdebstrap --quiet --format=tar --variant="$variant" --include="$inc" \
	--aptopt='Acquire::Retries "3"' "$suite" "$tar.tmp" "$mirror" >&2
mv "$tar.tmp" "$tar"
# Older tarballs of this SUITE and NAME (another package list) are not used again.
find "$cache" -maxdepth 1 -name "$suite-$name-*.tar" ! -name "${tar##*/}" -delete
echo "rootfs.sh: $suite ($name) made in $(($(date +%s) - start)) s: $tar" >&2
echo "$tar"
