#!/usr/bin/env bash
# No network in the default box: host loopback TCP/UDP, DNS and host abstract unix sockets are
# unreachable; the box's own loopback works. Controls: the same probes succeed on the host and
# in a box started with --net.
. "$(dirname "$0")/jail_lib.sh"
jail_setup

mkdir -p "$T/srv"
"$PY" "$ARB_SRC/tests/integration/jail_helper.py" serve "$T/srv" &
srv_pid=$!
trap 'st=$?; kill $srv_pid 2>/dev/null; (exit $st); arb_cleanup' EXIT
for _ in $(seq 100); do [ -e "$T/srv/env" ] && break; sleep 0.05; done
. "$T/srv/env"
H=/tmp/helper.py

# A resolver configuration that points at the test's DNS stub on the host's loopback.
dns_mount=()
if [ -n "$DNS_IP" ] && [ -f /etc/resolv.conf ] && [ ! -L /etc/resolv.conf ]; then
	printf 'nameserver %s\noptions timeout:1 attempts:1\n' "$DNS_IP" >"$T/resolv.conf"
	dns_mount=(--mount "ro:$T/resolv.conf:/etc/resolv.conf")
else
	echo "note: DNS probe skipped (no stub on $DNS_IP:53, or /etc/resolv.conf is a link)" >&2
fi

# --- controls on the host ------------------------------------------------------------------
expect_status 0 "host: tcp" -- "$PY" "$ARB_SRC/tests/integration/jail_helper.py" tcp 127.0.0.1 "$TCP_PORT"
expect_status 0 "host: abstract" -- "$PY" "$ARB_SRC/tests/integration/jail_helper.py" abstract "$ABSTRACT"
expect_status 0 "host: udp" -- "$PY" "$ARB_SRC/tests/integration/jail_helper.py" udp 127.0.0.1 "$UDP_PORT" from-host
sleep 0.3
expect_match "from-host" "$(cat "$T/srv/udp.log" 2>/dev/null)" "host: datagram received"

# --- the default box -----------------------------------------------------------------------
expect_status 1 "box: tcp to the host's loopback" -- box -- python3 $H tcp 127.0.0.1 "$TCP_PORT"
expect_eq "ECONNREFUSED" "$OUT" "box: tcp refused (the box's loopback has no listener)"
expect_status 1 "box: host abstract socket" -- box -- python3 $H abstract "$ABSTRACT"
expect_eq "ECONNREFUSED" "$OUT" "box: abstract socket not found"
expect_status 0 "box: udp send" -- box -- python3 $H udp 127.0.0.1 "$UDP_PORT" from-box
sleep 0.5
expect_eq "" "$(grep from-box "$T/srv/udp.log" || true)" "box: datagram never reached the host"
expect_status 1 "box: tcp to an outside address" -- box -- python3 $H tcp 192.0.2.1 80
expect_eq "ENETUNREACH" "$OUT" "box: no route off the machine"
expect_status 0 "box: own loopback" -- box -- python3 $H loopback
expect_eq "ok" "$OUT" "box: loopback inside works"
expect_status 0 "box: interfaces" -- box -- cat /proc/net/dev
expect_eq "lo" "$(printf '%s\n' "$OUT" | tail -n +3 | awk -F: '{gsub(/ /, "", $1); print $1}' | tr '\n' ' ' | sed 's/ $//')" \
	"box: only loopback"
if [ ${#dns_mount[@]} -gt 0 ]; then
	expect_status 1 "box: dns" -- box "${dns_mount[@]}" -- python3 $H dns www.arb-test.example
	expect_match "^gaierror" "$OUT" "box: name lookup fails"
	expect_status 0 "control: --net dns" -- box --net "${dns_mount[@]}" -- python3 $H dns www.arb-test.example
	expect_eq "10.1.2.3" "$OUT" "control: the same lookup with --net"
fi

# --- controls: the same probes with --net --------------------------------------------------
expect_status 0 "--net: tcp" -- box --net -- python3 $H tcp 127.0.0.1 "$TCP_PORT"
expect_eq "ok" "$OUT" "--net: host loopback reachable"
expect_status 0 "--net: abstract" -- box --net -- python3 $H abstract "$ABSTRACT"
expect_eq "ok" "$OUT" "--net: host abstract socket reachable (as --explain warns)"
expect_status 0 "--net: udp" -- box --net -- python3 $H udp 127.0.0.1 "$UDP_PORT" from-net-box
sleep 0.3
expect_match "from-net-box" "$(cat "$T/srv/udp.log")" "--net: datagram received"

# --explain says what --net opens.
expect_status 0 "explain --net" -- box --net --explain -- true
expect_match "host abstract unix sockets" "$OUT" "--explain --net names abstract sockets"
expect_eq "" "$(printf '%s\n' "$OUT" | grep -- '--unshare-net' || true)" "--net: no --unshare-net"
expect_status 0 "explain" -- box --explain -- true
expect_match "--unshare-net" "$OUT" "default: --unshare-net"

finish
