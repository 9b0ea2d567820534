#!/usr/bin/env bash
# tests/pkg/install.sh BUILD: the Debian packages installed into a fresh Debian 12 system
# (mmdebstrap) and used there by an ordinary user: the README's demo (scripts/demo.sh with the
# installed command), the man page, bash completion of commands and workspace names, the
# Python package and a C program built against libarborinth-dev. The system runs in a
# private mount and pid namespace (pivot_root, see pkg_enter): its own /proc, the host's /dev (for /dev/fuse);
# the user's boxes make their own user namespaces as on any machine.
set -euo pipefail
source "$(dirname "$0")/common.sh"
pkg_need mmdebstrap dpkg-buildpackage unshare chroot
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/arborinth-pkg-install.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
start=$(date +%s)
pkg_debs "$build/pkg/debs"
pkg_installed "$build/pkg/debs" "$work"
root=$work/root
echo "install.sh: packages installed in $(($(date +%s) - start)) s" >&2
cp "$pkg_top/scripts/demo.sh" "$pkg_top/examples/box_example.c" "$root/home/demo/"
cat >"$root/home/demo/checks.sh" <<'CHECKS'
set -euo pipefail
cd "$HOME"
echo "== user: $(id -un) ($(id -u)); arborinth: $(command -v arborinth) -> $(readlink -f "$(command -v arborinth)")"
ARBORINTH=arborinth bash demo.sh >demo.out 2>&1 || { cat demo.out; echo "FAIL: the demo"; exit 1; }
for want in "hello from the box" "network: none" "agent: improve greeting"; do
	grep -q "$want" demo.out || { cat demo.out; echo "FAIL: demo output lacks '$want'"; exit 1; }
done
echo "ok: demo as $(id -un)"
test -s /usr/share/man/man1/arborinth-shell.1.gz && zcat /usr/share/man/man1/arborinth-workspace.1.gz | grep -q '^\.SH "OPTIONS"' || { echo "FAIL: man pages"; exit 1; }
echo "ok: man pages (arborinth-shell, arborinth-workspace)"
# Completion: the commands, then workspace names in a repository with one.
source /usr/share/bash-completion/completions/arborinth
COMP_WORDS=(arborinth wor); COMP_CWORD=1; _arborinth
[ "${COMPREPLY[*]}" = workspace ] || { echo "FAIL: completion of 'wor': ${COMPREPLY[*]}"; exit 1; }
mkdir repo && cd repo && git init -q && git -c user.name=u -c user.email=u@e commit -q --allow-empty -m x
arborinth workspace create first >/dev/null
COMP_WORDS=(arborinth shell f); COMP_CWORD=2; _arborinth
[ "${COMPREPLY[*]}" = first ] || { echo "FAIL: completion of a workspace name: ${COMPREPLY[*]}"; exit 1; }
echo "ok: bash completion (commands, workspace names)"
# Python, from the package: the library is found by its soname.
python3 -c 'import arborinth; p = arborinth.Project("."); print([w.name for w in p.workspaces])' >py.out
grep -q "first" py.out || { cat py.out; echo "FAIL: python3-arborinth"; exit 1; }
echo "ok: python3-arborinth lists $(cat py.out)"
# The credential proxy: arborinth_proxy, started from beside the real command.
base=$(ANTHROPIC_API_KEY=sk-test arborinth shell first --backend anthropic=http://127.0.0.1:9 -- \
	sh -c 'echo "$ANTHROPIC_BASE_URL"' 2>&1) || true
[ "$base" = http://127.0.0.1:8713 ] || { echo "FAIL: a box with --backend: $base"; exit 1; }
echo "ok: the credential proxy loads (ANTHROPIC_BASE_URL=$base in the box)"
arborinth workspace delete first --force >/dev/null
cd "$HOME"
gcc -o box_example box_example.c -larborinth
# It makes a workspace and runs a box: the library finds the helpers in /usr/libexec/arborinth.
(cd repo && ../box_example) >example.out 2>&1 || { cat example.out; echo "FAIL: box_example"; exit 1; }
echo "ok: a C program built against libarborinth-dev runs a box: $(tail -1 example.out)"
lib=$(echo /usr/lib/*/libarborinth.so.0)
grep -qa /usr/libexec/arborinth "$lib" && ! grep -qa obj-x86_64-linux-gnu/cli "$lib" ||
	{ echo "FAIL: libarborinth's helper folders"; exit 1; }
echo "ok: libarborinth looks for helpers in /usr/libexec/arborinth only"
CHECKS
chroot "$root" chown -R demo:demo /home/demo
pkg_enter "$root" runuser -u demo -- env -i HOME=/home/demo PATH=/usr/bin:/bin LANG=C.UTF-8 \
	bash /home/demo/checks.sh
echo "install.sh: all checks passed in $(($(date +%s) - start)) s"
