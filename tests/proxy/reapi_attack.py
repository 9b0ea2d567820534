#!/usr/bin/env python3
"""The reapi backend attacked from a real box (tests/proxy/reapi_evil.py in arborinth shell)
with a recording, hostile upstream (tests/proxy/reapi_upstream.py): the instance check against
repeated fields and later messages, Google's metadata headers, :path and header smuggling in
hand-written HTTP/2 frames, floods (rapid reset, CONTINUATION, HPACK bomb, SETTINGS, PING,
WINDOW_UPDATE, thousands of streams), the token echoed back by the upstream, and the proxy's
memory under a box that never reads. Each probe has its control.

    reapi_attack.py ARB TMPDIR
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs  # noqa: E402
from procwatch import proxy_of, rss_mib  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
os.environ["PATH"] = "/usr/local/bin:/usr/bin:/bin"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "ya29.REAPIATTACK-" + os.urandom(12).hex()
C = Checks()
P = Procs()
REPO = os.path.join(T, "repo")
LOG = os.path.join(T, "up.log")
arb = Arb(ARB, REPO, C)


def read_log():
    if not os.path.exists(LOG):
        return []
    with open(LOG) as f:
        return [json.loads(x) for x in f if x.strip()]


def evil(backend, what, timeout=120):
    n0 = len(read_log())
    cp = arb("shell", "w", "--backend", backend, "--", "/usr/bin/python3", "/tmp/reapi_evil.py",
             what, timeout=timeout)
    C.eq(0, cp.returncode, "box attacker '%s' ran (stderr: %s)" % (what, cp.stderr[-2000:]))
    C.ok("Sanitizer" not in cp.stderr and "proxy (arborinth_proxy)" not in cp.stderr,
         "no sanitizer report, the proxy did not die (%s)" % cp.stderr[-3000:])
    rep = json.loads(cp.stdout.splitlines()[-1]) if cp.returncode == 0 else {}
    return rep, read_log()[n0:], cp


def code(rep, key):
    return (rep.get(key) or ["?"])[0]


def instance_attacks(be):
    rep, calls, _ = evil(be, "grpc")
    seen = [f for c in calls for m in c["field1"] for f in m]
    C.eq("OK", code(rep, "one_main"), "control: FindMissingBlobs of instance main passes")
    C.ok(["main"] in [m for c in calls for m in c["field1"]], "control: the server saw 'main'")
    C.eq("OK", code(rep, "repeated_main"), "control: field 1 repeated with the same instance")
    for k in ("repeated", "repeated_late", "wire_type_0"):
        C.eq("PERMISSION_DENIED", code(rep, k), "field 1 '%s' refused: %r" % (k, rep.get(k)))
    C.ok("other" not in seen and "1" not in seen,
         "no message naming another instance reached the server: %r" % seen)
    C.eq("OK", rep.get("write_second_main"), "control: ByteStream Write of two messages")
    C.ok(rep.get("write_second_other") not in (None, "OK"),
         "a Write whose second message names another instance is refused: %r" %
         rep.get("write_second_other"))
    C.ok(not any(f.startswith("other/") for f in seen),
         "the other instance's resource never reached the server: %r" % seen)
    C.eq("PERMISSION_DENIED", code(rep, "list_operations"), "ListOperations refused with instance=")
    C.eq("UNIMPLEMENTED", code(rep, "get_operation"),
         "control: GetOperation reaches the server (which has no such service)")
    caps = [c for c in calls if c["method"] == "GetCapabilities"]
    C.eq("OK", code(rep, "goog_headers"), "call with Google's metadata headers")
    md = caps[-1]["metadata"] if caps else []
    keys = [k for k, _ in md]
    C.ok(not any(k.startswith("x-goog-") for k in keys) and "cookie" not in keys,
         "x-goog-* and cookie headers from the box dropped: %r" % keys)
    C.eq(["Bearer " + TOKEN], [v for k, v in md if k == "authorization"],
         "only the host's authorization reached the server")
    C.ok(any(k == "user-agent" for k in keys), "control: the box's other headers go through")


def smuggling(be):
    rep, calls, _ = evil(be, "raw")
    C.eq("answered", rep.get("raw_control"), "control: a hand-written call is answered")
    for k, v in sorted(rep.items()):
        if k.startswith("raw_") and k not in ("raw_control", "raw_cont_auth",
                                               "raw_trailer_auth"):
            C.ok(v in ("refused", "rst", "goaway", "closed"), "%s is not served: %s" % (k, v))
    C.ok(all(c["method"] == "GetCapabilities" for c in calls),
         "only the allowed method reached the server: %r" % [c["method"] for c in calls])
    for k in ("http1_cap", "http1_uar"):
        C.ok(rep.get(k, "").startswith("HTTP/1.1 403"), "%s refused: %r" % (k, rep.get(k)))
    C.eq("answered", rep.get("raw_cont_auth"), "a head split into CONTINUATION is served")
    C.eq("answered", rep.get("raw_trailer_auth"), "a request with trailers is served")
    # The box's :path in the audit: no raw bytes a terminal or a JSON reader chokes on.
    for args in (["--kind", "net"], ["--kind", "net", "--json"]):
        cp = subprocess.run([ARB, "audit", "w"] + args, cwd=REPO, capture_output=True)
        out = cp.stdout
        C.ok(cp.returncode == 0 and b"GetCapabilities" in out,
             "audit %s lists the calls (%s)" % (args, cp.stderr[-300:]))
        C.ok(b"\xff" not in out and "\u202e".encode() not in out,
             "audit %s: the box's bytes are not written raw: %r" % (args, out[-600:]))
        try:
            out.decode("utf-8")
            C.ok(True, "audit %s is UTF-8" % args)
        except UnicodeDecodeError as e:
            C.ok(False, "audit %s is UTF-8: %s" % (args, e))
    for c in calls:
        md = dict((k, v) for k, v in c["metadata"])
        C.ok(md.get("authorization") == "Bearer " + TOKEN and "x-goog-user-project" not in md,
             "CONTINUATION/trailer credentials dropped upstream: %r" % c["metadata"])


def floods(be):
    rep, calls, _ = evil(be, "flood", timeout=180)
    for k in ("rapid_reset", "continuation", "hpack_bomb", "settings_flood", "ping_flood",
              "many_streams"):
        C.eq("answered", rep.get("alive_after_" + k), "the proxy serves after %s: %r" %
             (k, rep.get(k if k != "continuation" else "continuation_flood")))
    C.ok(rep.get("hpack_bomb") != "answered", "an HPACK bomb's head is refused: %r" %
         rep.get("hpack_bomb"))
    C.eq("goaway", rep.get("window_overflow"), "a window past 2^31-1 ends the connection")
    ms = rep.get("many_streams") or {}
    C.ok(ms.get("rst", 0) + ms.get("goaway", 0) > 0, "streams past the limit are refused: %r" % ms)
    cs = rep.get("conns") or {}
    C.ok(8 <= cs.get("answered", 0) <= 16 and cs.get("other", 0) >= 8,
         "at most 16 HTTP/2 connections at once are served, the others closed: %r" % cs)
    C.eq("answered", rep.get("alive_after_conns"), "... and a new one is served after them")
    sys.stderr.write("floods: %r\n" % rep)


def echo(be):
    rep, calls, cp = evil(be, "echo")
    box = cp.stdout + cp.stderr
    C.eq("OK", code(rep, "plain"), "control: a plain call without instance=")
    C.ok(len(calls) == 5, "every echo call reached the upstream (%d)" % len(calls))
    C.ok("Bearer " + TOKEN not in box and TOKEN not in box,
         "the token echoed by the upstream never reaches the box: %s" % box[-1500:])
    stars = "*" * len(TOKEN)
    for k in ("echo-header", "echo-trailer", "echo-message", "echo-body"):
        C.ok(stars in json.dumps(rep.get(k)),
             "control: the upstream echoed it in %s (redacted): %r" % (k, rep.get(k)))
    cp = arb("audit", "w")
    C.ok(cp.returncode == 0 and "GetCapabilities" in cp.stdout and TOKEN not in cp.stdout,
         "the audit lists the calls, never the token")


def hostile_upstreams(tf):
    """An upstream that pushes, or answers with 500 headers of 1 KiB, or an HPACK bomb: the
    box's calls end (the proxy keeps at most 64 headers), the proxy serves the next one."""
    for mode in ("plain", "push", "huge", "bomb"):
        portfile = os.path.join(T, "h2.%s.port" % mode)
        p = P.start([sys.executable, os.path.join(HERE, "reapi_h2upstream.py"), mode, portfile],
                    stdout=None)
        for _ in range(200):
            if os.path.exists(portfile):
                break
            time.sleep(0.05)
        with open(portfile) as f:
            port = int(f.read())
        rep, _, cp = evil("reapi=grpc://127.0.0.1:%d,token-file=%s" % (port, tf), "hostile")
        for k in ("first", "second"):
            r = rep.get(k) or ["?", "", 999]
            C.ok(r[0] in ("OK", "UNAVAILABLE", "INTERNAL", "UNKNOWN", "RESOURCE_EXHAUSTED") and
                 r[2] <= 64,
                 "%s upstream, %s call: ends, at most 64 headers: %r" % (mode, k, r))
        if mode == "plain":
            C.eq("OK", (rep.get("first") or ["?"])[0], "control: the hand-written upstream")
        P.stop(p)


def slow_reader(be, limit_mib):
    p = subprocess.Popen([ARB, "shell", "w", "--backend", be, "--", "/usr/bin/python3",
                          "/tmp/reapi_evil.py", "slow"], cwd=REPO, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        C.ok("ready" in line, "slow reader started (%s)" % line)
        px = proxy_of(p.pid)
        C.ok(px is not None, "found the box's arborinth_proxy")
        peak = 0
        for _ in range(30):  # 3 s: the upstream streams 64 MiB per stream meanwhile
            time.sleep(0.1)
            peak = max(peak, rss_mib(px) if px else 0)
        sys.stderr.write("proxy RSS under a box that never reads: %.1f MiB\n" % peak)
        C.ok(0 < peak < limit_mib, "the proxy's memory stays bounded: %.1f MiB < %d" %
             (peak, limit_mib))
        p.stdin.write("\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=60)
        rep = json.loads(out.splitlines()[-1]) if out.strip() else {}
        C.ok(rep.get("slow_read_bytes", 0) > (1 << 20),
             "control: the data was flowing to the box (%r; %s)" % (rep, err[-500:]))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    arb.make_repo("w")
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w")
    for f in ("reapi_evil.py", "h2raw.py", "reapi_pb.py"):
        shutil.copy(os.path.join(HERE, f), os.path.join(ws, "tmp", f))
    portfile = os.path.join(T, "up.port")
    P.start([sys.executable, os.path.join(HERE, "reapi_upstream.py"), LOG, portfile],
            stdout=None, env=dict(os.environ, BIG="64"))
    for _ in range(200):
        if os.path.exists(portfile):
            break
        time.sleep(0.05)
    with open(portfile) as f:
        port = int(f.read())
    tf = os.path.join(T, "token.txt")
    with open(tf, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(tf, 0o600)
    be = "reapi=grpc://127.0.0.1:%d,instance=main,token-file=%s" % (port, tf)
    only = sys.argv[3:] or ["instance", "smuggling", "floods", "echo", "hostile", "slow"]
    if "instance" in only:
        instance_attacks(be)
    if "smuggling" in only:
        smuggling(be)
    if "floods" in only:
        floods(be)
    if "echo" in only:
        echo("reapi=grpc://127.0.0.1:%d,token-file=%s" % (port, tf))
    if "hostile" in only:
        hostile_upstreams(tf)
    if "slow" in only:
        slow_reader(be, 200)
    P.stop_all()
    sys.exit(C.finish())


try:
    main()
finally:
    P.stop_all()
