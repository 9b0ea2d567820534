#!/usr/bin/env bash
# The credential proxy as its own program (arborinth_proxy, issue #29): started per box by the
# launcher, it alone holds the key. The launcher maps no TLS library and never opens the key
# file (strace of every process: only arborinth_proxy's opens it); the box cannot read it;
# the proxy dies with its launcher (kill -9); a proxy that cannot start (a missing or empty
# key file, its socket in use) fails the launcher with one line before the box starts. As
# root, then the same script as an ordinary user (copies of the programs).
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user, pid and network namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
command -v strace >/dev/null || skip "strace is not installed"
BIN=$(dirname "$(readlink -f "$ARB")")
[ -x "$BIN/arborinth_proxy" ] || { fail "no arborinth_proxy beside $ARB"; finish; }
TLS='libcurl|libssl|libgnutls|libnghttp2'

mkrepo "$T/repo"
cd "$T/repo"
"$ARB" workspace create w >/dev/null
ROOT=$("$ARB" workspace info w --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])')
KEY=$T/anthropic.key
SECRET=sk-ant-proxyprocess-$$-secret
printf '%s\n' "$SECRET" >"$KEY"
chmod 0600 "$KEY"
BACKEND="anthropic=http://127.0.0.1:9,key-file=$KEY"

# --- a running box: the proxy is a child of the launcher, which maps no TLS library ---------
# The box says it runs (/tmp/up), waits for /tmp/go, sends a request (the upstream refuses the
# connection: the proxy answers 502) and sleeps. In a workspace of its own (its row is not
# one of those counted below).
"$ARB" workspace create lz >/dev/null
WSTMP=$("$ARB" workspace info lz --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tmp"])')
REQ='import http.client, os
h, p = os.environ["ANTHROPIC_BASE_URL"].split("//")[1].split(":")
c = http.client.HTTPConnection(h, int(p.split("/")[0]), timeout=20)
c.request("GET", "/v1/models", headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
print(c.getresponse().status)'
"$ARB" shell lz --backend "$BACKEND" -- sh -c "touch /tmp/up; while [ ! -e /tmp/go ]; do sleep 0.05; done; python3 -c '$REQ' >/tmp/status; exec sleep 30" </dev/null >/dev/null 2>&1 &
LP=$!
PX=
for _ in $(seq 100); do
	PX=$(pgrep -P "$LP" -x arborinth_proxy || true)
	[ -n "$PX" ] && break
	sleep 0.05
done
if [ -n "$PX" ]; then pass; else fail "no arborinth_proxy child of the launcher"; fi
if [ -n "$PX" ]; then
	# Once the box runs, the launcher has done everything it does before it.
	for _ in $(seq 200); do [ -e "$WSTMP/up" ] && break; sleep 0.05; done
	if grep -Eq "$TLS" "/proc/$LP/maps"; then
		fail "the launcher maps a TLS library: $(grep -Eo "[^/]*($TLS)[^ ]*" "/proc/$LP/maps" | sort -u | tr '\n' ' ')"
	else pass; fi
	# The proxy opens libcurl and OpenSSL for the box's first request, not before.
	if grep -Eq "$TLS" "/proc/$PX/maps"; then
		fail "the proxy maps a TLS library before the box's first request"
	else pass; fi
	touch "$WSTMP/go"
	for _ in $(seq 200); do pgrep -f "^sleep 30$" >/dev/null && break; sleep 0.05; done
	expect_eq 502 "$(cat "$WSTMP/status" 2>/dev/null)" "the box's request reached the proxy (the upstream refused it)"
	expect_match libcurl "$(cat "/proc/$PX/maps")" "control: the proxy maps libcurl after it"
	if ls -l "/proc/$LP/fd" 2>/dev/null | grep -qF "$KEY"; then fail "the launcher holds the key file open"; else pass; fi
	if grep -qaF "$SECRET" "/proc/$LP/environ" "/proc/$LP/cmdline" "/proc/$PX/cmdline"; then
		fail "the key is in a command line or the launcher's environment"
	else pass; fi
	# kill -9 the launcher: the proxy is gone within a second.
	kill -9 "$LP"
	gone=no
	for _ in $(seq 20); do alive "$PX" || { gone=yes; break; }; sleep 0.05; done
	expect_eq yes "$gone" "the proxy exits within a second of its launcher's kill -9"
	wait "$LP" 2>/dev/null || true
	# The box goes with its launcher too (bwrap --die-with-parent); wait for it.
	for _ in $(seq 100); do pgrep -f "^sleep 30$" >/dev/null || break; sleep 0.05; done
fi

# --- strace of every process: only arborinth_proxy opens the key file ----------------------
mkdir "$T/st"
# (LeakSanitizer cannot run under ptrace: off for this run of a sanitizer build.)
expect_status 0 "a box with a key-file backend under strace" -- \
	env ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0" strace -ff -qq -o "$T/st/t" -e trace=execve,open,openat \
	"$ARB" shell w --backend "$BACKEND" -- sh -c "cat '$KEY' 2>/dev/null | wc -c; echo \"\$ANTHROPIC_API_KEY\""
expect_match '^0$' "$(printf '%s\n' "$OUT" | head -1)" "the box cannot read the key file"
expect_match '^arb-anthropic-placeholder-' "$(printf '%s\n' "$OUT" | tail -1)" "the box has the placeholder"
proxy_files=() launcher_opens=()
for f in "$T"/st/t.*; do
	first_exec=$(grep -m1 -o 'execve("[^"]*"' "$f" | sed 's/execve("//; s/"$//' || true)
	opens=$(grep -E "open(at)?\(.*\"$KEY\"" "$f" | grep -v ENOENT || true)
	case "$first_exec" in
	*/arborinth_proxy) proxy_files+=("$f") ;;
	"" | "$ARB" | "$(readlink -f "$ARB")")
		# The launcher (its threads, and its forks before they exec anything).
		[ -n "$opens" ] && launcher_opens+=("$f: $opens") ;;
	esac
done
expect_eq 0 "${#launcher_opens[@]}" "the launcher never opens the key file (${launcher_opens[*]:-})"
expect_eq 1 "${#proxy_files[@]}" "one arborinth_proxy ran"
if [ "${#proxy_files[@]}" = 1 ] && grep -qE "openat\(.*\"$KEY\", O_RDONLY" "${proxy_files[0]}"; then
	pass
else
	fail "control: the strace sees arborinth_proxy open the key file"
fi

# --- a process using libarborinth maps no TLS library either ---------------------------------
if [ -n "${ARB_BUILD:-}" ] && [ -e "$ARB_BUILD/lib/libarborinth.so" ]; then
	deps=$(ldd "$ARB_BUILD/lib/libarborinth.so")
	if grep -Eq "$TLS" <<<"$deps"; then fail "libarborinth needs a TLS library: $deps"; else pass; fi
	# A process that loaded it (python3; not for a sanitizer build, whose runtime must come first).
	if ! grep -q libasan <<<"$deps"; then
		maps=$(python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1]); print(open("/proc/self/maps").read())' \
			"$ARB_BUILD/lib/libarborinth.so")
		expect_match libarborinth "$maps" "control: the process maps libarborinth"
		if grep -Eq "$TLS" <<<"$maps"; then fail "libarborinth brings a TLS library"; else pass; fi
	fi
fi

# --- a proxy that cannot start: one line naming why, and no box ------------------------------
expect_status 1 "a missing key file" -- "$ARB" shell w --backend "anthropic=http://127.0.0.1:9,key-file=$T/none" -- echo RAN
expect_one_line_error "a missing key file"
expect_match "cannot read key file $T/none" "$ERR" "the error names the key file"
expect_eq "" "$OUT" "the box did not start (missing key file)"
: >"$T/empty.key"
expect_status 1 "an empty key file" -- "$ARB" shell w --backend "anthropic=http://127.0.0.1:9,key-file=$T/empty.key" -- echo RAN
expect_one_line_error "an empty key file"
expect_match "$T/empty.key" "$ERR" "the error names the empty key file"
expect_eq "" "$OUT" "the box did not start (empty key file)"
# Its socket taken by a live listener (another proxy for this box).
mkdir -p "$ROOT/run/proxy"
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(60)' \
	"$ROOT/run/proxy/proxy.sock" &
LISTENER=$!
for _ in $(seq 100); do [ -S "$ROOT/run/proxy/proxy.sock" ] && break; sleep 0.05; done
expect_status 1 "the proxy's socket in use" -- "$ARB" shell w --backend "$BACKEND" -- echo RAN
expect_one_line_error "the proxy's socket in use"
expect_match "already listens on .*proxy.sock" "$ERR" "the error names the socket in use"
expect_eq "" "$OUT" "the box did not start (socket in use)"
kill "$LISTENER" 2>/dev/null || true
wait "$LISTENER" 2>/dev/null || true
rm -f "$ROOT/run/proxy/proxy.sock"
expect_status 0 "control: with the socket free the box starts" -- "$ARB" shell w --backend "$BACKEND" -- echo RAN
expect_eq RAN "$OUT" "control: the same box starts once the socket is free"

# --- the proxy's own audit rows, in one chain with the view daemon's -------------------------
python3 "$ARB_SRC/tests/proxy/fake_upstream.py" --log "$T/up.log" >"$T/up.port" &
UP=$!
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
UPORT=$(head -1 "$T/up.port")
expect_status 0 "a box that writes files and makes three requests" -- "$ARB" shell w \
	--backend "anthropic=http://127.0.0.1:$UPORT,key-file=$KEY" -- python3 -c '
import http.client, os
h, p = os.environ["ANTHROPIC_BASE_URL"].split("//")[1].split(":")
c = http.client.HTTPConnection(h, int(p))
for i in range(3):
    open("f%d" % i, "w").write("x")
    c.request("GET", "/v1/models", headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
    r = c.getresponse(); r.read(); print(r.status)'
expect_eq "$(printf '200\n200\n200')" "$OUT" "the box's requests are forwarded"
expect_match "\"x-api-key\", \"$SECRET\"" "$(cat "$T/up.log")" "control: the upstream got the real key"
kill "$UP" 2>/dev/null || true
wait "$UP" 2>/dev/null || true
expect_status 0 "the net rows" -- "$ARB" audit w --kind net --json
expect_eq 3 "$(printf '%s\n' "$OUT" | grep -c '"op": *"request"' || true)" "the proxy wrote one row per request"
sessions=$(printf '%s\n' "$OUT" | python3 -c 'import json, sys
print(" ".join(sorted({str(json.loads(l).get("session")) for l in sys.stdin if l.strip()})))')
expect_match '^[1-9][0-9]*$' "$sessions" "the rows belong to the box's session"
expect_status 0 "the audit chain with two writers" -- "$ARB" audit w --verify
expect_match ": ok, [0-9]+ rows" "$OUT" "the chain verifies with the proxy's and the daemon's rows"

# --- the same as an ordinary user ------------------------------------------------------------
if [ "$(id -u)" = 0 ] && [ -z "${ARB_PROXY_PROCESS_USER:-}" ]; then
	if command -v runuser >/dev/null && [ -u "$(command -v fusermount3)" ]; then
		user=arbtest
		id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || fail "cannot create user $user"
		chmod 0666 /dev/fuse
		chmod 0755 "$T"
		U=$T/user
		mkdir -p "$U/bin" "$U/src/tests/integration"
		for f in arborinth arborinth_box_init arborinth_fs arborinth_proxy; do
			cp "$BIN/$f" "$U/bin/"
		done
		mkdir -p "$U/src/tests/proxy"
		cp "$ARB_SRC/tests/integration/lib.sh" "$ARB_SRC/tests/integration/proxy_process.sh" \
			"$U/src/tests/integration/"
		cp "$ARB_SRC/tests/proxy/fake_upstream.py" "$U/src/tests/proxy/"
		chown -R "$user" "$U"
		expect_status 0 "the proxy process as $user" -- runuser -u "$user" -- env -i \
			PATH=/usr/bin:/bin HOME="/home/$user" ARB="$U/bin/arborinth" ARB_SRC="$U/src" \
			ARB_PROXY_PROCESS_USER=1 ARB_JAIL_TMPDIR="$U" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
			LSAN_OPTIONS="${LSAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
			bash "$U/src/tests/integration/proxy_process.sh"
		expect_match "^all [0-9]+ checks passed" "$OUT" "every check ran and held as $user"
		printf '%s: %s\n' "$user" "$OUT" >&2
	else
		fail "cannot run as an ordinary user (runuser, setuid fusermount3)"
	fi
fi
cd /
finish
