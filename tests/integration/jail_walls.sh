#!/usr/bin/env bash
# The box's walls (jail/walls.c, walls_root.c): its root is an allow-list (the system folders,
# the view, tmp, home, cache and what mounts name; no /var, /srv), credentials the box's
# commands were given or the host names (--api-key-file, $CLAUDE_CONFIG_DIR, $CODEX_HOME) stay
# hidden even where a bind names a folder above them, host path sockets do not answer through
# a bind of their folder, and root's box cannot read the host's root-only files. Every probe
# has a control on the host (the file readable, the socket answering) or in the box (the same
# bind without the credential named shows it). Run as root, then again as an ordinary user.
#
# Under /var/tmp, not /tmp: the box replaces /tmp with the workspace's tmp.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user and pid namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
PY=$(command -v python3) || skip "no python3"
PY=$(readlink -f "$PY")
case "$PY" in /usr/*) ;; *) PY=/usr/bin/python3 ;; esac
ME=$(id -un)

export HOME=$T/home
mkdir -p "$HOME"
unset XDG_CACHE_HOME XDG_RUNTIME_DIR CLAUDE_CONFIG_DIR CODEX_HOME
mkrepo "$T/repo"
cd "$T/repo"
"$ARB" workspace create w >/dev/null
box() { "$ARB" shell w "$@"; }

# Credentials and a socket outside $HOME, under /var/tmp, each beside a file that is not one.
S=$T/sec
mkdir -p "$S/keys" "$S/cfg/claude" "$S/cfg/codex" "$S/sock"
printf 'API-KEY-%s\n' "$$" >"$S/keys/api.key"
printf 'public\n' >"$S/keys/public"
printf 'CLAUDE-LOGIN-%s\n' "$$" >"$S/cfg/claude/.credentials.json"
printf 'CODEX-AUTH-%s\n' "$$" >"$S/cfg/codex/auth.json"
printf 'cfg-public\n' >"$S/cfg/public"
chmod -R go-rwx "$S"

# --- the root is an allow-list ------------------------------------------------------------
probe=/var/tmp/arb-walls-probe-$$
printf 'var\n' >"$probe"
[ "$(cat "$probe")" = var ] && pass || fail "control: $probe readable on the host"
[ -d /var/log ] && pass || fail "control: the host has /var/log"
expect_status 0 "system folders" -- box -- sh -c 'cat /etc/hostname >/dev/null && /usr/bin/env true && echo ok'
expect_eq ok "$OUT" "the box shows /etc and /usr"
expect_status 0 "no /var, /srv" -- box -- sh -c "for p in $probe /var/log /var/lib $T/sec /srv /mnt /media /home; do [ -e \$p ] && echo \"seen \$p\"; done; echo done"
expect_eq done "$OUT" "/var, /srv, /mnt, /media, /home and the test's files are not in the box"
if [ -n "${ARB_WALLS_SRV:-}" ]; then
	[ "$(cat "$ARB_WALLS_SRV")" = srv ] && pass || fail "control: $ARB_WALLS_SRV readable on the host"
	expect_status 1 "/srv" -- box -- cat "$ARB_WALLS_SRV"
fi
rm -f "$probe"
expect_status 0 "explain: the root" -- box --explain -- true
expect_match "note       root: an empty tmpfs \(read-only once built\) holding of the host only /usr /etc" "$OUT" "--explain says what the root holds"
expect_match "^  /  tmpfs, then read-only  \[default\] the box's root" "$OUT" "--explain lists the root"

# --- --api-key-file: hidden though a bind names its folder ----------------------------------
[ "$(cat "$S/keys/api.key")" = "API-KEY-$$" ] && pass || fail "control: the key file is readable on the host"
expect_status 0 "control: the bind shows the key file when it is no credential" -- \
	box --mount "ro:$S/keys" -- cat "$S/keys/api.key"
expect_eq "API-KEY-$$" "$OUT" "control: a bind of the key's folder shows it"
expect_status 0 "--api-key-file under a bound folder" -- \
	box --backend anthropic --api-key-file "$S/keys/api.key" --mount "ro:$S/keys" -- \
	sh -c "cat $S/keys/public; cat $S/keys/api.key 2>/dev/null; ls $S/keys | sort | tr '\n' ' '"
expect_eq "public
api.key public " "$OUT" "the key file is there but empty of its secret; its neighbour readable"
expect_status 0 "--api-key-file, bound elsewhere" -- \
	box --backend anthropic --api-key-file "$S/keys/api.key" --mount "ro:$S/keys:/mnt/k" -- \
	sh -c 'cat /mnt/k/public; cat /mnt/k/api.key 2>/dev/null; true'
expect_eq "public" "$OUT" "the key file hidden where the bind puts its folder"
expect_status 0 "--api-key-file explained" -- \
	box --backend anthropic --api-key-file "$S/keys/api.key" --mount "ro:$S/keys" --explain -- true
expect_match "$S/keys/api.key \*  ro /dev/null  \[guard\] hidden: the key file given to --api-key-file" "$OUT" "--explain names the mask"
expect_status 0 "--api-key-file, a bind that names it" -- \
	box --backend anthropic --api-key-file "$S/keys/api.key" --mount "ro:$S/keys/api.key" -- \
	sh -c "cat $S/keys/api.key 2>/dev/null; true"
expect_eq "" "$OUT" "a bind that names the key file shows nothing of it"

# --- $CLAUDE_CONFIG_DIR, $CODEX_HOME outside $HOME -------------------------------------------
expect_status 0 "control: the logins through a bind of their parent" -- \
	box --mount "ro:$S/cfg" -- cat "$S/cfg/claude/.credentials.json" "$S/cfg/codex/auth.json"
expect_eq "CLAUDE-LOGIN-$$
CODEX-AUTH-$$" "$OUT" "control: without the variables the bind shows them"
expect_status 0 "config folders named by the host" -- \
	env CLAUDE_CONFIG_DIR="$S/cfg/claude" CODEX_HOME="$S/cfg/codex" "$ARB" shell w --mount "ro:$S/cfg" -- \
	sh -c "cat $S/cfg/public; cat $S/cfg/claude/.credentials.json $S/cfg/codex/auth.json 2>/dev/null; find $S/cfg/claude $S/cfg/codex -mindepth 1 | wc -l"
expect_eq "cfg-public
0" "$OUT" "\$CLAUDE_CONFIG_DIR and \$CODEX_HOME are empty in the box"

# --- host path sockets --------------------------------------------------------------------
# serve PATH: a listener answering HELLO to every client, in the background.
serve() {
	"$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"HELLO\n")
    c.close()
' "$1" >"$1.ready" 2>&1 &
	SERVERS+=("$!")
	for _ in $(seq 100); do grep -q ready "$1.ready" 2>/dev/null && return; sleep 0.05; done
	fail "the listener at $1 did not start"
}
SERVERS=()
client='import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print(s.recv(16).decode().strip())
except OSError as e:
    print("refused", e.errno)'
serve "$S/sock/s.sock"
expect_status 0 "control: the socket answers a host client" -- "$PY" -c "$client" "$S/sock/s.sock"
expect_eq HELLO "$OUT" "control: the listener answers on the host"
expect_status 0 "a socket under a bound folder" -- box --mount "ro:$S/sock" -- "$PY" -c "$client" "$S/sock/s.sock"
expect_match "^refused " "$OUT" "the host socket does not answer through a bind of its folder"
expect_status 0 "control: a bind that names the socket" -- box --mount "ro:$S/sock/s.sock" -- "$PY" -c "$client" "$S/sock/s.sock"
expect_eq HELLO "$OUT" "control: a bind that names the socket reaches it"

# --- root's box -------------------------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
	opt=/opt/arb-walls-$$
	trap 'rc=$?; set +e; rm -rf "$opt"; kill "${SERVERS[@]}" 2>/dev/null || true; (exit $rc); arb_cleanup' EXIT
	mkdir -p "$opt"
	printf 'ROOT-ONLY-%s\n' "$$" >"$opt/secret"
	chmod 0600 "$opt/secret"
	printf 'opt-public\n' >"$opt/public"
	head -c 5 /etc/shadow >/dev/null && pass || fail "control: root reads /etc/shadow on the host"
	[ "$(cat "$opt/secret")" = "ROOT-ONLY-$$" ] && pass || fail "control: root reads $opt/secret on the host"
	expect_status 0 "root's box" -- box -- sh -c "id -u; cat $opt/public; cat /etc/shadow $opt/secret 2>/dev/null | wc -c"
	expect_eq "0
opt-public
0" "$OUT" "root's box keeps uid 0 and reads no root-only file (/etc/shadow, one in /opt)"
	expect_status 0 "root's box explained" -- box --explain -- true
	expect_match "note       caller is root: the box keeps uid 0 .* only root may read are hidden" "$OUT" "--explain says how root's box is walled"
	expect_match "/etc/shadow \*  ro /dev/null  \[guard\] hidden: only root may read it on the host" "$OUT" "--explain lists /etc/shadow's mask"
	# The list is cached: a new root-only file changes its folder, and is found at once.
	expect_match "list cached in" "$OUT" "the second start reuses the list"
	printf 'LATER-%s\n' "$$" >"$opt/later"
	chmod 0600 "$opt/later"
	expect_status 0 "a root-only file made since" -- box -- sh -c "cat $opt/later 2>/dev/null | wc -c"
	expect_eq 0 "$OUT" "a root-only file made after the cache was written is hidden too"
	# A socket in a system folder the box shows (/opt): it does not answer either.
	serve "$opt/s.sock"
	expect_status 0 "control: the /opt socket answers a host client" -- "$PY" -c "$client" "$opt/s.sock"
	expect_eq HELLO "$OUT" "control: the /opt listener answers on the host"
	expect_status 0 "a socket in /opt" -- box -- "$PY" -c "$client" "$opt/s.sock"
	expect_match "^refused " "$OUT" "a host socket in /opt does not answer in the box"

	# The same probes as an ordinary user (its own workspace, copies of what runs).
	if [ -z "${ARB_WALLS_USER:-}" ] && command -v runuser >/dev/null && [ -u "$(command -v fusermount3)" ]; then
		user=arbtest
		id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || fail "cannot create user $user"
		chmod 0666 /dev/fuse
		mkdir -p /srv
		srv=/srv/arb-walls-$$
		printf 'srv\n' >"$srv"
		chmod 0644 "$srv"
		chmod 0755 "$T"
		U=$T/user
		mkdir -p "$U/bin" "$U/src/tests/integration"
		for f in arborinth arborinth_box_init arborinth_fs arborinth_proxy; do
			[ -e "$(dirname "$(readlink -f "$ARB")")/$f" ] && cp "$(dirname "$(readlink -f "$ARB")")/$f" "$U/bin/"
		done
		cp "$ARB_SRC/tests/integration/lib.sh" "$ARB_SRC/tests/integration/jail_walls.sh" "$U/src/tests/integration/"
		chown -R "$user" "$U"
		expect_status 0 "the walls as $user" -- runuser -u "$user" -- env -i PATH=/usr/bin:/bin \
			ARB="$U/bin/arborinth" ARB_SRC="$U/src" ARB_WALLS_USER=1 ARB_WALLS_SRV="$srv" \
			ARB_JAIL_TMPDIR="$U" ASAN_OPTIONS="${ASAN_OPTIONS:-}" LSAN_OPTIONS="${LSAN_OPTIONS:-}" \
			UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
			bash "$U/src/tests/integration/jail_walls.sh"
		expect_match "^all [0-9]+ checks passed" "$OUT" "every probe ran and held as $user"
		printf '%s: %s\n' "$user" "$OUT" >&2
		rm -f "$srv"
	elif [ -z "${ARB_WALLS_USER:-}" ]; then
		fail "cannot run the walls as an ordinary user (runuser, setuid fusermount3)"
	fi
else
	# An ordinary user's box: its own uid, and /etc/shadow unreadable on the host and in the box.
	expect_status 0 "an ordinary user's box" -- box -- id -u
	expect_eq "$(id -u)" "$OUT" "$ME's box runs as $ME"
	expect_status 0 "no root note" -- box --explain -- true
	if printf '%s\n' "$OUT" | grep -q 'caller is root'; then fail "a user's box says it is root's"; else pass; fi
fi
kill "${SERVERS[@]}" 2>/dev/null || true
finish
