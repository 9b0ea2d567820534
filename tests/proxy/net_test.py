#!/usr/bin/env python3
"""The proxy's audit rows and the --allow-host CONNECT proxy, end to end in real boxes.

    net_test.py ARB TMPDIR   (TMPDIR outside /tmp: the box has its own /tmp)

Part 1: requests from a box to the credential proxy (allowed and refused) become "net" rows
in state.db, linked to the box's session, shown by `arborinth audit --kind net` (text and
JSON); neither the real key nor the box's placeholder is anywhere in the database files.
Part 2: --allow-host: curl in the box reaches a local TLS server through the tunnel to an
allowed host; another host, another port and plain HTTP are refused with the reason; each
probe has its control; every tunnel is an audit row.
"""
import glob
import json
import os
import shutil
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs, free_port, make_ca, start_upstream  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
KEY = "sk-ant-api03-NETKEY-" + os.urandom(12).hex()
C = Checks()
P = Procs()
REPO = os.path.join(T, "repo")
arb = Arb(ARB, REPO, C)
EGRESS = 8712




def box(args, script, env=None):
    """Runs sh -c script in a box of workspace w with the given shell options."""
    return arb("shell", "w", *args, "--", "sh", "-c", script, env=env)


def net_rows(*extra):
    cp = arb("audit", "w", "--kind", "net", "--json", *extra)
    C.eq(0, cp.returncode, "audit --kind net --json: exit (%s)" % cp.stderr)
    return [json.loads(ln) for ln in cp.stdout.splitlines() if ln.strip()]


def last_session():
    cp = arb("audit", "w", "--kind", "exec", "--json")
    rows = [json.loads(ln) for ln in cp.stdout.splitlines() if ln.strip()]
    return max(r["session"] for r in rows) if rows else None


def db_bytes():
    data = b""
    for f in sorted(glob.glob(os.path.join(REPO, ".git", "arborinth", "state.db*"))):
        with open(f, "rb") as fh:
            data += fh.read()
    return data




def other_host_name():
    """A second name the host resolves to a loopback address, and that address (Debian's
    installer puts the host's name on 127.0.1.1; the TLS server listens there too)."""
    for name in (socket.gethostname(), "localhost.localdomain", "ip6-localhost"):
        try:
            addrs = {a[4][0] for a in socket.getaddrinfo(name, 443, socket.AF_INET)}
        except OSError:
            continue
        if name and name != "localhost" and addrs:
            if "127.0.0.1" in addrs:
                return name.lower(), "127.0.0.1"
            loop = sorted(a for a in addrs if a.startswith("127."))
            if loop:
                return name.lower(), loop[0]
    return None, None


def part_audit(up):
    body = '{"model":"m","max_tokens":1}'
    script = (
        'echo "PH=$ANTHROPIC_API_KEY"; B="$ANTHROPIC_BASE_URL"; '
        'curl -sS -o /dev/null -w "A %{http_code} %{size_upload} %{size_download}\\n" '
        '-H "x-api-key: $ANTHROPIC_API_KEY" -H "content-type: application/json" '
        "-d '" + body + "' \"$B/v1/messages?beta=true\"; "
        'curl -sS -o /dev/null -w "B %{http_code}\\n" -H "x-api-key: $ANTHROPIC_API_KEY" '
        '"$B/v1/secret"; '
        'curl -sS -o /dev/null -w "C %{http_code}\\n" -H "x-api-key: $ANTHROPIC_API_KEY" '
        '"$B/v1/$ANTHROPIC_API_KEY"; '
        'curl -sS -o /dev/null -w "D %{http_code}\\n" -H "x-api-key: not-the-placeholder" '
        '-H "content-type: application/json" -d "{}" "$B/v1/messages"')
    cp = box(["--backend", "anthropic=http://127.0.0.1:%d" % up], script,
             env={"ANTHROPIC_API_KEY": KEY})
    C.eq(0, cp.returncode, "box with four requests ran (%s)" % cp.stderr[-1500:])
    out = dict(ln.split(" ", 1) for ln in cp.stdout.splitlines() if " " in ln)
    ph = next((ln[3:] for ln in cp.stdout.splitlines() if ln.startswith("PH=")), "")
    C.ok(ph.startswith("arb-anthropic-placeholder-"), "placeholder seen in the box (%r)" % ph)
    a = out.get("A", "0 0 0").split()
    C.eq("200", a[0], "allowed request answered")
    C.eq("403", out.get("B"), "path refused")
    C.eq("403", out.get("C"), "path holding the placeholder refused")
    C.eq("401", out.get("D"), "wrong credential refused")
    session = last_session()
    rows = net_rows("--session", str(session))
    C.eq(4, len(rows), "four net rows for the session (%r)" % rows)
    if len(rows) != 4:
        return ph, session
    want = [
        ("POST", "/v1/messages", 200, "allowed", "allowed", "ok"),
        ("GET", "/v1/secret", 403, "refused", "path not allowed for this backend", "refused"),
        ("GET", "/v1/" + "*" * len(ph), 403, "refused", "path not allowed for this backend",
         "refused"),
        ("POST", "/v1/messages", 401, "refused",
         "credential header does not hold this box's placeholder", "refused"),
    ]
    for i, (r, w) in enumerate(zip(rows, want)):
        got = (r["method"], r["path"], r["status"], r["decision"], r["reason"], r["result"])
        C.eq(w, got, "row %d: method, path, status, decision, reason, result" % i)
        C.eq(("net", "request", "anthropic", session, None, None),
             (r["kind"], r["op"], r["backend"], r["session"], r["host"], r["port"]),
             "row %d: kind, op, backend, session, host, port" % i)
        C.ok(isinstance(r["duration_ns"], int) and r["duration_ns"] > 0,
             "row %d: duration %r" % (i, r["duration_ns"]))
        C.ok(r["errno"] is None and r["pid"] is None, "row %d: no errno, no pid" % i)
    C.eq((int(a[1]), int(a[2])), (rows[0]["bytes_up"], rows[0]["bytes_down"]),
         "allowed row: bytes up/down are curl's upload/download sizes")
    C.eq((0, 0), (rows[1]["bytes_up"], rows[1]["bytes_down"]), "refused row: no bytes")
    C.ok(all(rows[i]["time_ns"] <= rows[i + 1]["time_ns"] for i in range(3)), "rows in order")
    # The session's exec row and the net rows are the same session.
    cp = arb("audit", "w", "--session", str(session), "--json")
    kinds = [json.loads(ln)["kind"] for ln in cp.stdout.splitlines()]
    C.eq(["exec", "net", "net", "net", "net", "exec"], kinds,
         "the session holds its exec, four net rows and its exit")
    # Readable text.
    cp = arb("audit", "w", "--kind", "net", "--session", str(session))
    lines = cp.stdout.splitlines()
    C.eq(4, len(lines), "text: four lines (%r)" % cp.stdout)
    if len(lines) == 4:
        C.ok("proxy/session %d" % session in lines[0] and "request" in lines[0] and
             "anthropic POST /v1/messages  200  up %s B, down %s B" % (a[1], a[2]) in lines[0]
             and lines[0].endswith("allowed"), "text: allowed line %r" % lines[0])
        C.ok("anthropic GET /v1/secret  403" in lines[1] and
             lines[1].endswith("refused: path not allowed for this backend"),
             "text: refused line %r" % lines[1])
    cp = arb("audit", "w", "--kind", "net", "--failed", "--json", "--session", str(session))
    C.eq(3, len(cp.stdout.splitlines()), "--failed shows the three refusals")
    cp = arb("audit", "w", "--op", "request", "--json", "--session", str(session))
    C.eq(4, len(cp.stdout.splitlines()), "--op request selects the rows")
    return ph, session


def check_db_clean(ph):
    data = db_bytes()
    C.ok(len(data) > 0, "state.db files read")
    C.ok(KEY.encode() not in data, "the real key is nowhere in state.db (or its WAL)")
    C.ok(ph and ph.encode() not in data, "the placeholder is nowhere in state.db (or its WAL)")
    # Control: the same search finds what the rows do hold.
    C.ok(b"path not allowed for this backend" in data and b"/v1/secret" in data,
         "control: the search finds the rows' reason and path")


def raw_connect(target, method="CONNECT", host=None):
    """A request to the egress relay from inside the box; prints status and body."""
    return ("import socket,sys\n"
            "s=socket.create_connection(('127.0.0.1',%d),timeout=30)\n"
            "s.sendall(b'%s %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n')\n"
            "d=b''\n"
            "while True:\n"
            "    c=s.recv(65536)\n"
            "    if not c: break\n"
            "    d+=c\n"
            "h,_,b=d.partition(b'\\r\\n\\r\\n')\n"
            "print(h.split(b'\\r\\n')[0].decode()+'|'+b.decode().strip())\n"
            % (EGRESS, method, target, host or target))


def part_egress(other, addr):
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w")
    ca, cert, key = make_ca(T, "egress", ["localhost", other])
    shutil.copy(ca, os.path.join(ws, "tmp", "egress-ca.pem"))
    _, tp = start_upstream(P, os.path.join(T, "egress-up.log"), tls=(cert, key),
                           also=None if addr == "127.0.0.1" else addr)
    curl = ('curl -sS --max-time 20 --cacert /tmp/egress-ca.pem -w " %%{http_code}" '
            'https://%s:%d/v1/models; echo " rc=$?"')
    allow = ["--allow-host", "localhost:%d" % tp]

    # Probe: curl in the box through the tunnel to the allowed host.
    s0 = last_session()
    cp = box(allow, 'echo "$HTTPS_PROXY $https_proxy $HTTP_PROXY $http_proxy $NO_PROXY"; '
             + curl % ("localhost", tp))
    C.eq(0, cp.returncode, "allowed box ran (%s)" % cp.stderr[-1500:])
    lines = cp.stdout.splitlines()
    px = "http://127.0.0.1:%d" % EGRESS
    C.eq("%s %s %s %s 127.0.0.1" % (px, px, px, px), lines[0] if lines else "",
         "proxy variables in the box")
    C.ok(len(lines) > 1 and "fake-model" in lines[1] and lines[1].endswith(" 200 rc=0"),
         "curl reached the allowed TLS host through the tunnel: %r" % lines[1:])
    allowed_session = last_session()
    C.ok(allowed_session and allowed_session != s0, "a new session ran")
    # Control: the same curl without --allow-host has no route at all.
    cp = box([], curl % ("localhost", tp))
    C.ok("fake-model" not in cp.stdout and " rc=0" not in cp.stdout,
         "control: no --allow-host, no way out (%r)" % cp.stdout)
    # Control: with the tunnel available, going around it (no proxy) still has no route.
    cp = box(allow, curl.replace("curl ", "curl --noproxy '*' ") % ("localhost", tp))
    C.ok("fake-model" not in cp.stdout and " rc=0" not in cp.stdout,
         "control: bypassing the proxy finds no route (%r)" % cp.stdout)

    # Probe: another host, another port, plain HTTP: refused with the reason.
    s0 = last_session()
    script = (curl % (other, tp) + "; "
              "python3 - <<'EOF'\n" + raw_connect("%s:%d" % (other, tp)) + "EOF\n"
              "python3 - <<'EOF'\n" + raw_connect("localhost:1") + "EOF\n"
              "python3 - <<'EOF'\n" + raw_connect("http://localhost:%d/v1/models" % tp,
                                                  method="GET", host="localhost:%d" % tp)
              + "EOF\n")
    cp = box(allow, script)
    C.eq(0, cp.returncode, "refusing box ran (%s)" % cp.stderr[-1500:])
    lines = cp.stdout.splitlines()
    C.ok(lines and "fake-model" not in lines[0] and " rc=0" not in lines[0],
         "curl to the other host failed: %r" % lines[:1])
    msg = 'HTTP/1.1 403 Forbidden|{"type":"error","error":{"type":"arborinth_proxy_refused",' \
          '"message":"arborinth proxy: %s"}}'
    C.eq(msg % ("host %s is not an allowed host" % other), lines[1] if len(lines) > 1 else "",
         "CONNECT to another host: 403 with the reason")
    C.eq(msg % "port 1 of host localhost is not allowed", lines[2] if len(lines) > 2 else "",
         "CONNECT to another port: 403 with the reason")
    C.ok(len(lines) > 3 and lines[3].startswith("HTTP/1.1 405 Method Not Allowed|") and
         "only CONNECT tunnels to allowed hosts are forwarded (plain HTTP is refused)"
         in lines[3], "plain HTTP to an allowed host refused: %r" % lines[3:])
    refused_session = last_session()
    # Control: the same curl to the other host works once it is allowed.
    cp = box(["--allow-host", "%s:%d" % (other, tp)], curl % (other, tp))
    C.ok("fake-model" in cp.stdout and cp.stdout.strip().endswith(" 200 rc=0"),
         "control: the other host is reachable when allowed (%r)" % cp.stdout)

    # Audit rows of the tunnels.
    rows = net_rows("--session", str(allowed_session))
    C.eq(1, len(rows), "one tunnel row for the allowed box (%r)" % rows)
    if rows:
        r = rows[0]
        C.eq(("net", "tunnel", "CONNECT", "localhost", tp, 200, "allowed", "allowed", "ok",
              None, None),
             (r["kind"], r["op"], r["method"], r["host"], r["port"], r["status"],
              r["decision"], r["reason"], r["result"], r["backend"], r["path"]),
             "allowed tunnel row")
        C.ok(r["bytes_up"] > 200 and r["bytes_down"] > 1000 and r["duration_ns"] > 0,
             "tunnel row counts the TLS stream both ways: up %r down %r" %
             (r["bytes_up"], r["bytes_down"]))
    rows = net_rows("--session", str(refused_session))
    got = [(r["op"], r["method"], r["host"], r["port"], r["status"], r["decision"], r["reason"],
            r["result"]) for r in rows]
    C.eq([("tunnel", "CONNECT", other, tp, 403, "refused",
           "host %s is not an allowed host" % other, "refused"),
          ("tunnel", "CONNECT", other, tp, 403, "refused",
           "host %s is not an allowed host" % other, "refused"),
          ("tunnel", "CONNECT", "localhost", 1, 403, "refused",
           "port 1 of host localhost is not allowed", "refused"),
          ("tunnel", "GET", "localhost", tp, 405, "refused",
           "only CONNECT tunnels to allowed hosts are forwarded (plain HTTP is refused)",
           "refused")], got, "refused tunnel rows")
    cp = arb("audit", "w", "--kind", "net", "--session", str(refused_session))
    C.ok("CONNECT %s:%d  403" % (other, tp) in cp.stdout and
         "refused: host %s is not an allowed host" % other in cp.stdout,
         "text shows the refused tunnel: %r" % cp.stdout)

    # An allowed host that does not answer: 502 with the reason, recorded as failed.
    dead = free_port()
    cp = box(["--allow-host", "localhost:%d" % dead],
             "python3 - <<'EOF'\n" + raw_connect("localhost:%d" % dead) + "EOF\n")
    C.ok(cp.stdout.startswith("HTTP/1.1 502 Bad Gateway|") and
         "cannot connect to localhost:%d: Connection refused" % dead in cp.stdout,
         "unreachable allowed host: 502 with the reason (%r)" % cp.stdout)
    rows = net_rows("--session", str(last_session()))
    C.eq([("allowed", 502, "failed")], [(r["decision"], r["status"], r["result"]) for r in rows],
         "unreachable host row")

    # Hostile and odd requests to the CONNECT proxy: each refused with a status, none crashes
    # it (the same box's last request, a tunnel with bytes sent before the 200, still works).
    hostile = [
        b"garbage\r\n\r\n",
        b"CONNECT localhost HTTP/1.1\r\n\r\n",
        b"CONNECT user@localhost:%d HTTP/1.1\r\n\r\n" % UP,
        b"CONNECT localhost:%d HTTP/2.0\r\n\r\n" % UP,
        b"CONNECT localhost:99999 HTTP/1.1\r\n\r\n",
        b"CONNECT localhost:%d HTTP/1.1\r\nX: " % UP + b"a" * 40000 + b"\r\n\r\n",
        b"CONNECT " + b"a" * 300 + b":443 HTTP/1.1\r\n\r\n",
        b"CONNECT [::1:443 HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"CONNECT localhost:%d HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked"
        b"\r\n\r\n" % UP,
    ]
    prog = ("import socket\nfor req in %r:\n"
            "    s=socket.create_connection(('127.0.0.1',%d),timeout=30)\n"
            "    s.sendall(req)\n"
            "    d=s.recv(65536)\n"
            "    print(d.split(b'\\r\\n')[0].decode() or 'closed')\n"
            "s=socket.create_connection(('127.0.0.1',%d),timeout=30)\n"
            "s.sendall(b'CONNECT localhost:%d HTTP/1.1\\r\\n\\r\\nGET /v1/models HTTP/1.0\\r\\n\\r\\n')\n"
            "d=b''\n"
            "while True:\n"
            "    c=s.recv(65536)\n"
            "    if not c: break\n"
            "    d+=c\n"
            "print(repr(d))\n" % (hostile, EGRESS, EGRESS, UP))
    cp = box(["--allow-host", "localhost:%d" % UP], "python3 - <<'EOF'\n" + prog + "EOF\n")
    lines = cp.stdout.splitlines()
    C.eq(len(hostile) + 1, len(lines), "hostile requests: one answer each (%r, %s)"
         % (lines, cp.stderr[-800:]))
    for req, line in zip(hostile, lines):
        C.ok(line.startswith("HTTP/1.1 4") or line.startswith("HTTP/1.1 5"),
             "hostile %r refused with an error status: %r" % (req[:40], line))
    C.ok(lines and "200 Connection established" in lines[-1] and "fake-model" in lines[-1],
         "bytes sent right after CONNECT reach the upstream: %r" % lines[-1:])
    rows = net_rows("--session", str(last_session()))
    C.eq(len(hostile) + 1, len(rows), "one row per hostile request and the tunnel")
    C.ok(rows and rows[-1]["bytes_up"] == len(b"GET /v1/models HTTP/1.0\r\n\r\n"),
         "tunnel row counts the pipelined bytes up (%r)" % (rows[-1:] and rows[-1]["bytes_up"]))

    # With a backend too: its relay is not proxied (NO_PROXY) and still answers.
    cp = box(allow + ["--backend", "anthropic=http://127.0.0.1:%d" % UP],
             'curl -sS -H "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/models"; '
             + curl % ("localhost", tp), env={"ANTHROPIC_API_KEY": KEY})
    C.ok(cp.stdout.count("fake-model") == 2 and cp.stdout.strip().endswith(" 200 rc=0"),
         "backend relay and tunnel side by side: %r" % cp.stdout)

    # --explain shows the relay, the variables and the allowed hosts; runs nothing.
    cp = arb("shell", "w", "--allow-host", "localhost:%d" % tp, "--allow-host", "Example.ORG",
             "--explain")
    C.eq(0, cp.returncode, "--explain with --allow-host")
    for want in ("HTTPS_PROXY=http://127.0.0.1:%d" % EGRESS, "no_proxy=127.0.0.1",
                 "%d=/run/arborinth-proxy/egress.sock" % EGRESS,
                 "CONNECT tunnels only to localhost:%d example.org:443" % tp):
        C.ok(want in cp.stdout, "--explain shows %r" % want)

    # Input errors: one line, usage status.
    arb.one_line_error(arb("shell", "w", "--allow-host", "bad host", "--", "true"), 2,
                   "--allow-host", "bad host name")
    arb.one_line_error(arb("shell", "w", "--allow-host", "localhost:0", "--", "true"), 2,
                   "port is not 1..65535", "port 0")
    arb.one_line_error(arb("shell", "w", "--allow-host", "::1", "--", "true"), 2,
                   "brackets", "bare IPv6")
    arb.one_line_error(arb("shell", "w", "--jail", "none", "--allow-host", "localhost", "--",
                       "true"), 2, "--allow-host", "--jail none")
    C.ok(not os.path.exists(os.path.join(ws, "run", "proxy", "egress.sock")),
         "no egress socket left behind")


UP = 0


def main():
    global UP
    arb.make_repo("w")
    _, UP = start_upstream(P, os.path.join(T, "up.log"))
    ph, _ = part_audit(UP)
    other, addr = other_host_name()
    if not other:
        C.ok(False, "no second host name resolves to a loopback address (needed for the "
             "refusal test)")
    else:
        part_egress(other, addr)
    check_db_clean(ph)


try:
    main()
finally:
    P.stop_all()
C.finish()
