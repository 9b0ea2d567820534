#!/usr/bin/env python3
"""The vertex backend attacked from a real box (curl in arborinth shell --backend vertex=...)
with a hostile fake of Google (tests/proxy/vertex_upstream.py): paths outside the project's
Anthropic rawPredict (encoded slashes and colons, suffixes, dot segments, another method or
publisher), Google's system parameters that the host's token would carry (x-goog-* headers,
a query such as $userProject or key), the minted token echoed back in a header, an error body
and server-sent events, and the proxy's memory under a box that reads an endless event
stream slowly. Each probe has its control.

    vertex_attack.py ARB TMPDIR
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs  # noqa: E402
from procwatch import proxy_of, rss_mib  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
os.environ["PATH"] = "/usr/local/bin:/usr/bin:/bin"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "ya29.VERTEXATTACK-" + os.urandom(12).hex()
C = Checks()
P = Procs()
REPO = os.path.join(T, "repo")
LOG = os.path.join(T, "vertex.log")
arb = Arb(ARB, REPO, C)
M = "/projects/proj-1/locations/us-east5/publishers/anthropic/models"

PROBES = [
    ("control", "", "$B$M/m:rawPredict"),
    ("stream", "", "$B$M/m:streamRawPredict"),
    ("goog", "-H 'x-goog-user-project: victim-project' -H 'X-Goog-Api-Key: box-key' "
             "-H 'x-goog-request-params: victim=1'", "$B$M/m:rawPredict"),
    ("query_user_project", "", "$B$M/m:rawPredict?%24userProject=victim-project"),
    ("query_key", "", "$B$M/m:rawPredict?key=AIzaBOX&alt=json"),
    ("pct2f", "", "$B$M/m%2F..%2F..%2Fgoogle%2Fmodels%2Fg:rawPredict"),
    ("pct3a", "", "$B$M/m%3ArawPredict"),
    ("suffix_slash", "", "$B$M/m:rawPredict/x"),
    ("suffix_junk", "", "$B$M/m:streamRawPredictx"),
    ("two_verbs", "", "$B$M/m:rawPredict:predict"),
    ("predict", "", "$B$M/m:predict"),
    ("get", "-X GET", "$B$M/m:rawPredict"),
    ("publisher_case", "", "$B/projects/proj-1/locations/us-east5/publishers/Anthropic/models/m"
                           ":rawPredict"),
    ("other_project", "", "$B/projects/victim/locations/us-east5/publishers/anthropic/models/m"
                          ":rawPredict"),
    ("other_region", "", "$B/projects/proj-1/locations/europe-west1/publishers/anthropic/models"
                         "/m:rawPredict"),
    ("dotdot", "--path-as-is", "$B$M/../../google/models/g:rawPredict"),
    ("echo-header", "", "$B$M/echo-header:rawPredict"),
    ("echo-body", "", "$B$M/echo-body:rawPredict"),
    ("echo-sse", "-N", "$B$M/echo-sse:streamRawPredict"),
]


def read_log():
    if not os.path.exists(LOG):
        return []
    with open(LOG) as f:
        return [json.loads(x) for x in f if x.strip()]


def box(script, **kw):
    return arb("shell", "w", "--backend", BE, "--", "sh", "-c", script, env=ENV, **kw)


def probes():
    sh = ["B=$ANTHROPIC_VERTEX_BASE_URL; M=%s" % M]
    for name, opts, url in PROBES:
        sh.append("echo '#%s'; curl -sS -D - -o - -w ' CODE=%%{http_code}\\n' -H "
                  "'content-type: application/json' -d '{\"anthropic_version\":\"x\"}' %s "
                  "\"%s\"" % (name, opts, url))
    n0 = len(read_log())
    cp = box("\n".join(sh))
    C.eq(0, cp.returncode, "the box's probes ran (%s)" % cp.stderr[-1000:])
    out, seen = {}, read_log()[n0:]
    for part in ("\n" + cp.stdout).split("\n#")[1:]:
        name, _, rest = part.partition("\n")
        out[name] = rest
    code = {k: (v.rsplit("CODE=", 1)[-1].strip() if "CODE=" in v else "?") for k, v in out.items()}
    sys.stderr.write("vertex probes: %r\n" % code)
    targets = [e["target"] for e in seen]
    C.eq("200", code.get("control"), "control: rawPredict of the project passes")
    C.eq("200", code.get("stream"), "control: streamRawPredict passes")
    C.ok(seen and all(e["headers"].get("authorization") == "Bearer " + TOKEN for e in seen),
         "every request reached Vertex with the minted token")
    C.eq("200", code.get("goog"), "a request with x-goog-* headers passes")
    goog = [e for e in seen if e["target"].endswith("/m:rawPredict")]
    C.ok(goog and not any(k.startswith("x-goog-") for e in goog for k in e["headers"]),
         "x-goog-* headers from the box never reach Vertex: %r" %
         [sorted(e["headers"]) for e in goog])
    for k in ("query_user_project", "query_key"):
        C.eq("403", code.get(k), "%s refused (%s)" % (k, out.get(k, "")[-300:]))
    C.ok(not any("?" in t for t in targets), "no query reached Vertex: %r" % targets)
    for k in ("pct2f", "pct3a", "suffix_slash", "suffix_junk", "two_verbs", "predict", "get",
              "publisher_case", "other_project", "other_region", "dotdot"):
        C.ok(code.get(k) in ("400", "403", "405"), "%s refused: %s" % (k, code.get(k)))
    allowed = {M + "/%s:%s" % (m, v) for m in ("m", "echo-header", "echo-body", "echo-sse")
               for v in ("rawPredict", "streamRawPredict")}
    C.ok(all(t[3:] in allowed for t in targets), "only the allowed paths reached Vertex: %r" %
         targets)
    C.ok(TOKEN not in cp.stdout + cp.stderr, "the echoed token never reaches the box: %s" %
         "".join(out.get(k, "") for k in ("echo-header", "echo-body", "echo-sse"))[-1500:])
    stars = "*" * len(TOKEN)
    for k in ("echo-header", "echo-body", "echo-sse"):
        C.ok(stars in out.get(k, ""), "control: Vertex echoed it in %s (redacted): %s" %
             (k, out.get(k, "")[-400:]))
    cp = arb("audit", "w", "--kind", "net")
    C.ok(cp.returncode == 0 and "rawPredict" in cp.stdout and TOKEN not in cp.stdout,
         "the audit lists the requests, never the token")


def slow_sse(limit_mib):
    script = ('curl -sS -N -H "content-type: application/json" -d "{}" '
              '"$ANTHROPIC_VERTEX_BASE_URL%s/flood:streamRawPredict" | '
              '{ echo ready >&2; read x </tmp/go; head -c 5000000 | wc -c; }' % M)
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w", "tmp", "go")
    if os.path.exists(ws):
        os.unlink(ws)
    os.mkfifo(ws, 0o666)
    p = subprocess.Popen([ARB, "shell", "w", "--backend", BE, "--", "sh", "-c", script],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **ENV))
    try:
        line = p.stderr.readline()
        C.ok("ready" in line, "slow SSE reader started (%s)" % line)
        px = proxy_of(p.pid)
        C.ok(px is not None, "found the box's arborinth_proxy")
        peak = 0
        for _ in range(40):  # 4 s: Vertex streams as fast as the proxy takes
            time.sleep(0.1)
            peak = max(peak, rss_mib(px) if px else 0)
        sys.stderr.write("proxy RSS under a slow SSE reader: %.1f MiB\n" % peak)
        C.ok(0 < peak < limit_mib, "the proxy's memory stays bounded under a slow SSE reader: "
             "%.1f MiB < %d" % (peak, limit_mib))
        with open(ws, "w") as f:
            f.write("go\n")
        out, err = p.communicate(timeout=60)
        C.eq("5000000", out.strip(), "control: the events were flowing (%s)" % err[-500:])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    global BE, ENV
    arb.make_repo("w")
    portfile = os.path.join(T, "vertex.port")
    P.start([sys.executable, os.path.join(HERE, "vertex_upstream.py"), LOG, portfile, TOKEN],
            stdout=None)
    for _ in range(200):
        if os.path.exists(portfile):
            break
        time.sleep(0.05)
    with open(portfile) as f:
        url = "http://127.0.0.1:%d" % int(f.read())
    adc = os.path.join(T, "adc.json")
    with open(adc, "w") as f:
        json.dump({"type": "authorized_user", "client_id": "c", "client_secret": "s",
                   "refresh_token": "r", "token_uri": url + "/token"}, f)
    os.chmod(adc, 0o600)
    BE = "vertex=%s,project=proj-1,region=us-east5" % url
    ENV = {"GOOGLE_APPLICATION_CREDENTIALS": adc}
    probes()
    slow_sse(150)
    P.stop_all()
    sys.exit(C.finish())


try:
    main()
finally:
    P.stop_all()
