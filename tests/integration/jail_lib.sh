# tests/integration/jail_lib.sh: shared setup for the jail tests (sourced; sources lib.sh).
#
# Test folders live under /var/tmp, not /tmp: the box replaces /tmp with the workspace's tmp,
# and a fake $HOME or origin under /tmp would be hidden by that mask rather than by the one a
# test is about.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user and pid namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
PROBE=${ARB_BUILD:?}/tests/jail_probe
[ -x "$PROBE" ] || { echo "FAIL: $PROBE not built" >&2; exit 1; }
PY=$(command -v python3)
PY=$(readlink -f "$PY")
case "$PY" in /usr/*) ;; *) PY=/usr/bin/python3 ;; esac

# jail_setup: a fake host $HOME (a secret, a tool on PATH), an origin repository with an
# untracked secret, workspaces w and w2, the probes in w's tmp (/tmp in the box).
jail_setup() {
	export HOME=$T/home
	mkdir -p "$HOME/.ssh" "$HOME/bin" "$HOME/.cache"
	printf 'SECRET-KEY-%s\n' "$$" >"$HOME/.ssh/id_ed25519"
	printf '#!/bin/sh\necho hello-from-home-bin\n' >"$HOME/bin/arb-hello"
	chmod +x "$HOME/bin/arb-hello"
	export PATH="$HOME/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	unset XDG_CACHE_HOME XDG_RUNTIME_DIR
	mkrepo "$T/repo"
	printf 'ORIGIN-ENV-SECRET\n' >"$T/repo/.env"
	cd "$T/repo"
	# Setup, not under test here: a leak report from create must not stop the jail tests.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ARB" workspace create w >/dev/null
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ARB" workspace create w2 >/dev/null
	WS=$T/repo/.git/arborinth/workspaces/w
	WS2=$T/repo/.git/arborinth/workspaces/w2
	cp "$PROBE" "$WS/tmp/probe"
	cp "$ARB_SRC/tests/integration/jail_helper.py" "$WS/tmp/helper.py"
}

# box ARGS...: arborinth shell w ARGS...
box() { "$ARB" shell w "$@"; }

# inbox CMD: runs the shell command CMD in the box; its stdout in OUT, status in RC.
inbox() {
	RC=0
	OUT=$("$ARB" shell w -- sh -c "$1" 2>"$T/.inbox-err") || RC=$?
	ERR=$(cat "$T/.inbox-err")
}
