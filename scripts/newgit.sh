#!/usr/bin/env bash
# scripts/newgit.sh: the newest git, built from Debian sid's source, for the tests that need a
# git newer than Debian 12's (tests/integration/ws_origin_refs.sh: git >= 2.55 takes FUSE for
# a remote file system and turns fsmonitor off). Run by tests/run-all.sh before the build;
# only Debian's archive is needed (no GitHub). The source comes from `apt-get source git`
# through a private sources list (deb-src ... sid main) and private lists, so the system's apt
# configuration is untouched; a minimal git (no curl, gettext, Tcl/Tk, Perl, Python, expat,
# Rust) is built and installed into $ARB_GIT_CACHE/git-<version> (default
# /var/cache/arborinth-git), then $ARB_GIT_CACHE/current points at it. Built once per sid
# version: a later run costs the look-up of the version (a few seconds) or nothing with
# --offline. Prints the path of the git binary. Needs dpkg-dev (dpkg-source) and a C compiler.
set -euo pipefail
cache=${ARB_GIT_CACHE:-/var/cache/arborinth-git}
suite=${ARB_GIT_SUITE:-sid}
mirror=${ARB_GIT_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

have() { # the git in $1 runs and is at least 2.55
	local v
	v=$("$1" version 2>/dev/null | sed -n 's/^git version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
	[ -n "$v" ] && { set -- $v; [ "$1" -gt 2 ] || { [ "$1" = 2 ] && [ "$2" -ge 55 ]; }; }
}
if [ "${1:-}" = --offline ]; then
	have "$cache/current/bin/git" && { readlink -f "$cache/current/bin/git"; exit 0; }
	echo "newgit: no git >= 2.55 in $cache/current (run scripts/newgit.sh)" >&2
	exit 1
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial"
echo "deb-src [signed-by=$keyring] $mirror $suite main" >"$work/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work"
	-o APT::Sandbox::User=root -q)
apt-get "${apt_opts[@]}" update >"$work/update.log" 2>&1 ||
	{ tail -3 "$work/update.log" >&2; echo "newgit: cannot read $mirror $suite's sources" >&2; exit 1; }
ver=$(apt-cache "${apt_opts[@]}" showsrc git | sed -n 's/^Version: //p' | sort -V | tail -1)
case $ver in
'' | *[!0-9A-Za-z.+~:-]*) echo "newgit: no git source version in $suite ('$ver')" >&2; exit 1 ;;
esac
dest="$cache/git-${ver//:/_}"
if ! have "$dest/bin/git"; then
	echo "newgit: building git $ver from $suite's source into $dest (once)" >&2
	command -v dpkg-source >/dev/null || { echo "newgit: dpkg-source is missing (apt-get install dpkg-dev)" >&2; exit 1; }
	(cd "$work" && apt-get "${apt_opts[@]}" source "git=$ver") >"$work/source.log" 2>&1 ||
		{ tail -3 "$work/source.log" >&2; echo "newgit: apt-get source git=$ver failed" >&2; exit 1; }
	src=$(find "$work" -mindepth 2 -maxdepth 2 -name GIT-VERSION-GEN -printf '%h\n' | head -1)
	[ -n "$src" ] || { echo "newgit: no git source tree in $work" >&2; exit 1; }
	rm -rf "$dest.tmp"
	# The smallest set that builds: no optional library, no docs; the installed git is
	# relocatable neither way, so it is built for its final prefix and moved there whole.
	if ! nice make -C "$src" -j"$(nproc)" NO_RUST=1 NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 \
		NO_PERL=1 NO_PYTHON=1 NO_EXPAT=1 NO_OPENSSL=1 NO_INSTALL_HARDLINKS=1 \
		prefix="$dest" DESTDIR="$dest.tmp" install >"$work/build.log" 2>&1; then
		tail -5 "$work/build.log" >&2
		echo "newgit: the build of git $ver failed" >&2
		exit 1
	fi
	rm -rf "$dest"
	mv "$dest.tmp$dest" "$dest"
	rm -rf "$dest.tmp"
	have "$dest/bin/git" || { echo "newgit: $dest/bin/git does not run as git >= 2.55" >&2; exit 1; }
fi
ln -sfn "$(basename "$dest")" "$work/current"
mv -T "$work/current" "$cache/current"
readlink -f "$cache/current/bin/git"
