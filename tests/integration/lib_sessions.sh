#!/usr/bin/env bash
# One library process runs many boxes: each is its own session in the audit, with its own rows
# and checkpoints, also when threads run them at once (tests/helpers/lib_sessions.c from C,
# tests/python/test_sessions.py from Python: two one after the other, then two and eight at
# once), and the command line's sessions stay as they were. As root and, when root can make
# one, as an ordinary user.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
LIBSO="$ARB_BUILD/lib/libarborinth.so.0"
HELPER="$ARB_BUILD/tests/lib_sessions"
[ -x "$HELPER" ] && pass || fail "the helper is built"
# The sanitizer build's library needs its runtime loaded first in Python; Python's own
# allocations are not this project's leaks.
pyenv=()
if asan=$(ldd "$LIBSO" | awk '/libasan/ {print $3}') && [ -n "$asan" ]; then
	ubsan=$(ldd "$LIBSO" | awk '/libubsan/ {print $3}')
	pyenv=("LD_PRELOAD=$asan${ubsan:+ $ubsan}"
		"ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:verify_asan_link_order=0")
fi

# run_all LABEL [RUNNER...]: the C helper, the Python test and a CLI session, in a fresh
# repository under $1's temp dir, through RUNNER (nothing, or as_user).
run_all() {
	local who=$1 dir=$2
	shift 2
	expect_status 0 "$who: git init" -- "$@" bash -c "mkdir -p '$dir/repo' && cd '$dir/repo' &&
		git init -q -b main && echo hi >README && git add README &&
		git -c user.email=t@e -c user.name=t commit -qm first"
	expect_status 0 "$who: lib_sessions (C)" -- "$@" timeout 180 "$HELPER" "$dir/repo" csess
	printf '%s\n' "$OUT" | grep -v '^box ' || true
	expect_match "^ok 12 sessions$" "$OUT" "$who: twelve boxes, twelve sessions, from C"
	expect_status 0 "$who: audit --verify" -- "$@" "$ARB" --workdir "$dir/repo" audit csess --verify
	expect_match "^audit of 'csess': ok, [0-9]+ rows" "$OUT" "$who: the chain verifies"
	# Each box's own timeout; a signal to the process reaches every box.
	expect_status 0 "$who: lib_sessions timers" -- "$@" timeout 120 "$HELPER" "$dir/repo" tsess timers
	expect_match "^ok timers$" "$OUT" "$who: timeouts and signals per box"
	expect_status 0 "$who: delete" -- "$@" "$ARB" --workdir "$dir/repo" workspace delete --force tsess
	# The command line: a session per shell, its rows its own.
	expect_status 0 "$who: cli shell" -- "$@" "$ARB" --workdir "$dir/repo" shell csess -- \
		sh -c 'echo cli > cli-a.txt'
	expect_status 0 "$who: cli audit" -- "$@" "$ARB" --workdir "$dir/repo" audit csess \
		--kind exec --json
	sid=$(printf '%s\n' "$OUT" | tail -1 | sed -n 's/.*"session":\([0-9]*\).*/\1/p')
	[ -n "$sid" ] && pass || fail "$who: the cli session's id: $OUT"
	expect_status 0 "$who: cli audit --session" -- "$@" "$ARB" --workdir "$dir/repo" audit csess \
		--session "$sid" --kind fs --json
	paths=$(printf '%s\n' "$OUT" | sed -n 's/.*"path":"\([^"]*\)".*/\1/p' | sort -u)
	expect_eq "cli-a.txt" "$paths" "$who: the cli session has its file, and only it"
	expect_status 0 "$who: delete" -- "$@" "$ARB" --workdir "$dir/repo" workspace delete --force csess
	expect_status 0 "$who: test_sessions.py" -- "$@" env ARB="$ARB" ARB_JAIL_TMPDIR="$dir" \
		ARBORINTH_LIBRARY="$LIBSO" PYTHONPATH="$ARB_SRC/python" "${pyenv[@]}" \
		timeout 240 "$PY" "$ARB_SRC/tests/python/test_sessions.py"
	expect_match "^Ran 4 tests" "$ERR" "$who: the four Python tests ran"
	expect_match "^OK$" "$ERR" "$who: and passed"
}

run_all root "$T/root"

if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && [ -e /dev/fuse ] &&
	[ -u "$(command -v fusermount3)" ]; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || user=
	if [ -n "$user" ] && runuser -u "$user" -- test -x "$HELPER" -a -r "$LIBSO" -a \
		-r "$ARB_SRC/tests/python/test_sessions.py"; then
		chmod 0666 /dev/fuse
		chmod 0755 "$T"
		mkdir "$T/user"
		chown "$user" "$T/user"
		as_user() { runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$T/user" "$@"; }
		run_all "$user" "$T/user" as_user
	else
		echo "note: the build tree is out of $user's reach: ordinary user part not run" >&2
	fi
fi
finish
