#!/usr/bin/env bash
# The Python package: `pip install ./python` into a fresh venv (Debian 12's python3, no index:
# the standard library only), then its unittest suites (tests/python/test_api.py;
# test_remove_gc.py, also as an ordinary user) and the example (examples/example.py) from that venv against the build's libarborinth, in real
# mounts and boxes.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
"$PY" -c 'import ensurepip, setuptools' 2>/dev/null ||
	skip "python3-venv and python3-setuptools are needed (scripts/deps.sh installs them)"
export ARBORINTH_LIBRARY="$ARB_BUILD/lib/libarborinth.so.0"
[ -f "$ARBORINTH_LIBRARY" ] && pass || fail "libarborinth.so.0 is built"
# The sanitizer build's library needs its runtime loaded first, and Python's own allocations
# are not this project's leaks: the library's errors are still fatal (halt_on_error).
pyenv=()
if asan=$(ldd "$ARBORINTH_LIBRARY" | awk '/libasan/ {print $3}') && [ -n "$asan" ]; then
	ubsan=$(ldd "$ARBORINTH_LIBRARY" | awk '/libubsan/ {print $3}')
	pyenv=("LD_PRELOAD=$asan${ubsan:+ $ubsan}"
		"ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:verify_asan_link_order=0")
fi
pyrun() { env "${pyenv[@]}" "$@"; }

"$PY" -m venv --system-site-packages "$T/venv" >"$T/venv.log" 2>&1 && pass ||
	fail "venv: $(tail -3 "$T/venv.log")"
cp -r "$ARB_SRC/python" "$T/src"
"$T/venv/bin/pip" install --no-index --no-build-isolation --quiet "$T/src" >"$T/pip.log" 2>&1 &&
	pass || fail "pip install ./python: $(tail -5 "$T/pip.log")"
where=$(cd "$T" && pyrun "$T/venv/bin/python" -c 'import arborinth, os; print(os.path.dirname(arborinth.__file__))')
case "$where" in
"$T/venv/"*) pass ;;
*) fail "the venv imports the installed package, not $where" ;;
esac

if (cd "$T" && pyrun "$T/venv/bin/python" "$ARB_SRC/tests/python/test_api.py") >"$T/unittest.log" 2>&1; then
	pass
else
	fail "the package's unittest suite: $(tail -30 "$T/unittest.log")"
fi
grep -E "^Ran [0-9]+ tests" "$T/unittest.log" >/dev/null && pass || fail "unittest ran"

# The careful delete, gc and the list of projects (tests/python/test_remove_gc.py), with a
# list of projects of its own: as root from the venv, then as an ordinary user.
if (cd "$T" && XDG_STATE_HOME="$T/xdg" pyrun "$T/venv/bin/python" \
	"$ARB_SRC/tests/python/test_remove_gc.py") >"$T/gc.log" 2>&1; then
	pass
else
	fail "test_remove_gc.py: $(tail -30 "$T/gc.log")"
fi
expect_match "^Ran 4 tests" "$(cat "$T/gc.log")" "the four remove and gc tests ran"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && [ -u "$(command -v fusermount3)" ]; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || user=
	if [ -n "$user" ] && runuser -u "$user" -- test -r "$ARBORINTH_LIBRARY" -a \
		-r "$ARB_SRC/tests/python/test_remove_gc.py"; then
		chmod 0666 /dev/fuse
		chmod 0755 "$T"
		mkdir "$T/user"
		chown "$user" "$T/user"
		if runuser -u "$user" -- env HOME="$T/user" XDG_STATE_HOME="$T/user/xdg" \
			TMPDIR="$T/user" ARB_JAIL_TMPDIR="$T/user" PYTHONPATH="$ARB_SRC/python" \
			ARBORINTH_LIBRARY="$ARBORINTH_LIBRARY" "${pyenv[@]}" \
			"$PY" "$ARB_SRC/tests/python/test_remove_gc.py" >"$T/gc-user.log" 2>&1; then
			pass
		else
			fail "$user: test_remove_gc.py: $(tail -30 "$T/gc-user.log")"
		fi
		expect_match "^Ran 4 tests" "$(cat "$T/gc-user.log")" "$user: the four tests ran"
	else
		echo "note: the build tree is out of $user's reach: ordinary user part not run" >&2
	fi
fi

# The example, in a repository of its own.
mkdir "$T/repo"
(cd "$T/repo" && git init -q && echo x >f && git add f &&
	git -c user.email=t@e -c user.name=t commit -qm x)
OUT=$(cd "$T/repo" && pyrun "$T/venv/bin/python" "$ARB_SRC/examples/example.py" 2>&1) && pass ||
	fail "examples/example.py: $OUT"
expect_match "output: hello from the box" "$OUT" "the example's box printed"
expect_match "audit: fs create greeting.txt pid [0-9]+ sh" "$OUT" "the example read the audit"
expect_match "^deleted example-py-" "$OUT" "the example deleted its workspace"
[ -z "$(ls "$T/repo/.git/arborinth/workspaces" 2>/dev/null)" ] && pass || fail "no workspace left"
finish
