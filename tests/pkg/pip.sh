#!/usr/bin/env bash
# tests/pkg/pip.sh BUILD: the README's offline install of the Python package from the source
# tree on Debian 12, as an ordinary user: PEP 668 makes the system pip refuse (checked), so a
# venv that sees Debian's python3-setuptools (--system-site-packages) and pip with
# --no-index --no-build-isolation (no PyPI); then the package imports from outside the tree
# and opens a project through the built library.
set -euo pipefail
build=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
lib=$build/lib/libarborinth.so.0
[ -e "$lib" ] || {
	echo "pip.sh: $lib not built" >&2
	exit 1
}
work=$(mktemp -d /tmp/arborinth-pip.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The source tree stays clean: pip builds in a copy, as a user would in their clone.
cp -r "$top/python" "$work/python"
rm -rf "$work/python/build" "$work/python"/*.egg-info
run=()
if [ "$(id -u)" = 0 ]; then
	id arbpip >/dev/null 2>&1 || useradd -m arbpip
	chown -R arbpip "$work"
	chmod 755 "$work"
	run=(runuser -u arbpip --)
fi
# CONTROL: the system pip refuses (PEP 668), which is why the README says venv.
if "${run[@]}" env -C "$work" python3 -m pip install --user --no-index ./python >"$work/sys.out" 2>&1; then
	echo "FAIL: the system pip installed into the user's site (no PEP 668?)" >&2
	exit 1
fi
grep -q externally-managed "$work/sys.out" || {
	cat "$work/sys.out" >&2
	echo "FAIL: the system pip failed for another reason than PEP 668" >&2
	exit 1
}
echo "ok: the system pip refuses (externally-managed-environment)"
# The README's commands, offline.
"${run[@]}" env -C "$work" sh -ec '
	python3 -m venv --system-site-packages venv
	venv/bin/pip install --no-index --no-build-isolation ./python >pip.out 2>&1 || { cat pip.out; exit 1; }'
show=$("${run[@]}" env -C "$work" venv/bin/pip show arborinth 2>&1) || true
grep -q '^Version: 0.1.0' <<<"$show" || {
	echo "$show" >&2
	echo "FAIL: pip show arborinth" >&2
	exit 1
}
echo "ok: pip install --no-index --no-build-isolation ./python in a venv"
# From elsewhere (not python/'s folder) and against a real repository.
repo=$work/repo
"${run[@]}" sh -ec "mkdir $repo && cd $repo && git init -q && git -c user.name=u -c user.email=u@e commit -q --allow-empty -m x"
out=$("${run[@]}" env -C "$repo" ARBORINTH_LIBRARY="$lib" VENV="$work/venv" "$work/venv/bin/python" -c '
import arborinth, os
assert arborinth.__file__.startswith(os.path.realpath(os.environ["VENV"])), arborinth.__file__
p = arborinth.Project()
print(p.repo_root_path, p.workspaces)' 2>&1) || true
echo "$out"
case $out in
"$repo []" | "$(realpath "$repo") []") echo "ok: the installed package opens a project" ;;
*)
	echo "FAIL: the installed package did not open the project" >&2
	exit 1
	;;
esac
