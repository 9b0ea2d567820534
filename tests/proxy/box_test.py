#!/usr/bin/env python3
"""End to end: real boxes (arborinth shell --backend) calling the fake upstream through
box-init's relay and the host proxy, with python3 urllib, curl and node inside.

    box_test.py ARB TMPDIR   (TMPDIR outside /tmp: the box has its own /tmp)
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs, make_ca, read_log, start_upstream  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
# The box client reads every file under the box's $HOME: keep the host's home toolchains
# (which the default box mounts for PATH entries under $HOME, jail/toolmgr.c) out of it.
os.environ["PATH"] = "/usr/local/bin:/usr/bin:/bin"
HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "sk-ant-api03-BOXKEY-" + os.urandom(12).hex()
C = Checks()
P = Procs()






REPO = os.path.join(T, "repo")
arb = Arb(ARB, REPO, C)


def main():
    arb.make_repo("w")
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w")
    shutil.copy(os.path.join(HERE, "box_client.py"), os.path.join(ws, "tmp", "box_client.py"))
    up_log = os.path.join(T, "up.log")
    _, up = start_upstream(P, up_log)
    py = "/usr/bin/python3"

    # --- python3, curl and node inside a real box ---
    cp = arb("shell", "w", "--backend", "anthropic=http://127.0.0.1:%d" % up, "--",
             py, "/tmp/box_client.py", str(up), env={"ANTHROPIC_API_KEY": KEY})
    C.eq(0, cp.returncode, "box client ran (stderr: %s)" % cp.stderr[-2000:])
    C.ok(KEY not in cp.stdout and KEY not in cp.stderr, "the key appears nowhere in the box output")
    rep = json.loads(cp.stdout) if cp.returncode == 0 else {}
    ph = rep.get("placeholder", "")
    C.ok(ph.startswith("arb-anthropic-placeholder-"), "box holds a placeholder (%r)" % ph)
    C.eq("http://127.0.0.1:8713", rep.get("base"), "ANTHROPIC_BASE_URL in the box")
    C.eq(200, rep.get("urllib_status"), "python3 urllib through the relay")
    C.ok(rep.get("urllib_sha_ok"), "request body arrived intact")
    C.eq([403, "arborinth proxy: path not allowed for this backend"], rep.get("refused_path"),
         "refused path from the box")
    C.eq(401, (rep.get("refused_key") or [0])[0], "wrong key from the box refused")
    C.ok("fake-model" in rep.get("curl", ""), "curl in the box: %r" % rep.get("curl"))
    node = rep.get("node", "")
    C.ok(node.startswith("200") and node.count("data:") == 3, "node fetch streams: %r" % node)
    C.ok(rep.get("direct", "").startswith("refused"), "no route to the upstream but the relay "
         "(%r)" % rep.get("direct"))
    C.ok(KEY not in rep.get("visible", "x" + KEY), "no visible file or process holds the key")
    C.ok(ph and ph in rep.get("visible", ""), "control: the same search finds the placeholder")
    C.ok(all(KEY not in v for v in rep.get("env", {}).values()), "box environment has no key")
    log = read_log(up_log)
    msgs = [e for e in log if e.get("path") == "/v1/messages" and e.get("mode") == "plain"]
    C.ok(msgs and dict(msgs[-1]["headers"]).get("x-api-key") == KEY,
         "upstream received the real key")
    C.ok(all(dict(e.get("headers", [])).get("x-api-key") != ph for e in log),
         "upstream never saw the placeholder")
    sse = [e for e in log if e.get("mode") == "sse" and len(e["sent"]) == 5]
    recv = rep.get("sse_recv", [])
    C.eq(5, len(recv), "five events received in the box")
    if sse and len(recv) == 5:
        sent = sse[0]["sent"]
        C.ok(all(recv[i] < sent[i + 1] for i in range(4)),
             "each event reached the box before the next was sent (recv %s, sent %s)"
             % ([round(x, 3) for x in recv], [round(x, 3) for x in sent]))
    C.ok(not os.path.exists(os.path.join(ws, "run", "proxy", "proxy.sock")),
         "socket removed when the box ended")

    # --- the key from a file; an https upstream verified with the test CA ---
    ca, cert, key = make_ca(T, "box", ["localhost"])
    other, _, _ = make_ca(T, "other", ["localhost"])
    tls_log = os.path.join(T, "tls.log")
    _, tls = start_upstream(P, tls_log, tls=(cert, key))
    kf = os.path.join(T, "key.txt")
    with open(kf, "w") as f:
        f.write(KEY + "\n")
    os.chmod(kf, 0o600)
    curl = ["curl", "-sS", "-w", " %{http_code}", "-H", "content-type: application/json", "-d",
            "{}"]
    cmd = "exec " + shlex.join(curl) + ' -H "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/messages"'
    cp = arb("shell", "w", "--backend", "anthropic=https://localhost:%d,ca-file=%s" % (tls, ca),
             "--api-key-file", kf, "--", "sh", "-c", cmd)
    C.eq(0, cp.returncode, "curl over TLS upstream: exit (%s)" % cp.stderr)
    C.ok(cp.stdout.endswith(" 200") and "msg_fake" in cp.stdout, "TLS upstream answered: %r"
         % cp.stdout)
    C.ok(read_log(tls_log) and dict(read_log(tls_log)[-1]["headers"]).get("x-api-key") == KEY,
         "key from --api-key-file reached the TLS upstream")
    cp = arb("shell", "w", "--backend", "anthropic=https://localhost:%d,ca-file=%s" % (tls, other),
             "--api-key-file", kf, "--", "sh", "-c", cmd)
    C.ok(cp.stdout.endswith("\n 502") and "TLS certificate verification failed" in cp.stdout,
         "TLS upstream with an unknown CA refused: %r" % cp.stdout)

    # --- two backends; openai's base URL carries /v1 ---
    cp = arb("shell", "w", "--backend", "anthropic=http://127.0.0.1:%d" % up, "--backend",
             "openai=http://127.0.0.1:%d" % up, "--", "sh", "-c",
             'echo "$OPENAI_BASE_URL"; curl -sS -H "Authorization: Bearer $OPENAI_API_KEY" '
             '"$OPENAI_BASE_URL/models"', env={"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY})
    C.eq(0, cp.returncode, "two backends: exit (%s)" % cp.stderr)
    C.ok(cp.stdout.startswith("http://127.0.0.1:8714/v1\n") and "fake-model" in cp.stdout,
         "openai through its relay: %r" % cp.stdout)
    C.eq("Bearer " + KEY, dict(read_log(up_log)[-1]["headers"]).get("authorization"),
         "openai upstream got Bearer key")

    # --- --explain shows the wiring, never the key ---
    cp = arb("shell", "w", "--backend", "anthropic", "--explain", env={"ANTHROPIC_API_KEY": KEY})
    C.eq(0, cp.returncode, "--explain with a backend")
    C.ok("/run/arborinth-proxy" in cp.stdout and "ANTHROPIC_BASE_URL=http://127.0.0.1:8713"
         in cp.stdout and "--relay" in cp.stdout, "--explain shows mount, variables and relay")
    C.ok(KEY not in cp.stdout, "--explain does not show the key")

    # --- input errors: one line, right status, nothing left behind ---
    arb.one_line_error(arb("shell", "w", "--backend", "anthropic", "--", "true"), 1,
                   "ANTHROPIC_API_KEY", "no credential")
    arb.one_line_error(arb("shell", "w", "--backend", "frob", "--", "true"), 1,
                   "not built in", "unknown backend name")
    arb.one_line_error(arb("shell", "w", "--backend", "anthropic=ftp://x", "--", "true",
                       env={"ANTHROPIC_API_KEY": KEY}), 1, "http or https", "bad URL")
    arb.one_line_error(arb("shell", "w", "--backend", "anthropic", "--api-key-file", os.path.join(T, "no-such-key"),
                       "--", "true"), 1, "cannot read key file", "missing key file")
    arb.one_line_error(arb("shell", "w", "--jail", "none", "--backend", "anthropic", "--", "true",
                       env={"ANTHROPIC_API_KEY": KEY}), 2, "--backend", "--jail none")
    arb.one_line_error(arb("shell", "w", "--backend", "anthropic", "--backend", "openai",
                       "--api-key-file", kf, "--", "true"), 2, "exactly one", "key file, 2 backends")
    arb.one_line_error(arb("shell", "w", "--backend", "anthropic", "--backend", "anthropic", "--",
                       "true", env={"ANTHROPIC_API_KEY": KEY}), 1, "given twice", "same backend twice")
    C.ok(not os.path.exists(os.path.join(ws, "run", "proxy", "proxy.sock")),
         "no socket left after failed starts")
    part_tls(ws, up, up_log)


def part_tls(ws, up, up_log):
    """tls-port=: the box may reach a backend over TLS, trusting only the proxy's own CA."""
    curl = ('curl -sS -o /dev/null -w "%%{http_code}\\n" %s -H "x-api-key: %s" '
            '-H "content-type: application/json" -d "{}" %s/v1/messages; ')
    script = ("echo tls=$ANTHROPIC_TLS_BASE_URL; "
              + curl % ('--cacert "$ARBORINTH_PROXY_CA_FILE"', "$ANTHROPIC_API_KEY",
                        "$ANTHROPIC_TLS_BASE_URL")
              + curl % ('--cacert "$ARBORINTH_PROXY_CA_FILE"', "$ANTHROPIC_API_KEY",
                        "https://localhost:8716")
              + curl % ('--cacert "$ARBORINTH_PROXY_CA_FILE"', "wrong", "$ANTHROPIC_TLS_BASE_URL")
              + curl % ("", "$ANTHROPIC_API_KEY", "$ANTHROPIC_TLS_BASE_URL")
              + curl % ("", "$ANTHROPIC_API_KEY", "http://127.0.0.1:8716"))
    n = len(read_log(up_log))
    cp = arb("shell", "w", "--backend", "anthropic=http://127.0.0.1:%d,tls-port=8716" % up, "--",
             "sh", "-c", script, env={"ANTHROPIC_API_KEY": KEY})
    out = cp.stdout.splitlines()
    C.eq("tls=https://127.0.0.1:8716", out[0] if out else "", "ANTHROPIC_TLS_BASE_URL in the box")
    C.eq(["200", "200", "401"], out[1:4], "over TLS with the proxy's CA: forwarded at 127.0.0.1 "
         "and localhost, a wrong key refused (%r, %s)" % (out, cp.stderr[-300:]))
    C.ok(len(out) > 4 and out[4] == "000" and "certificate" in cp.stderr,
         "control: without the proxy's CA the certificate is not trusted (%r)" % cp.stderr[-300:])
    C.ok(len(out) > 5 and out[5] == "000", "plain HTTP on the TLS port gets no answer")
    calls = [e for e in read_log(up_log)[n:] if e.get("path") == "/v1/messages"]
    C.ok(len(calls) == 2 and all(dict(e["headers"]).get("x-api-key") == KEY for e in calls),
         "the upstream got the real key for the two TLS requests (%d calls)" % len(calls))
    ca = os.path.join(ws, "home", ".arborinth", "proxy", "ca.pem")
    txt = subprocess.run(["openssl", "x509", "-in", ca, "-noout", "-text"], capture_output=True,
                         text=True).stdout
    C.ok("CA:TRUE" in txt and "IP:127.0.0.1/255.255.255.255" in txt and "DNS:localhost" in txt
         and "Name Constraints: critical" in txt,
         "the box's CA is name-constrained to 127.0.0.1 and localhost")
    C.eq([], search_files([os.path.join(ws, d) for d in ("home", "tmp", "cache", "run")],
                          "PRIVATE KEY"), "no private key anywhere the box or the disk has")
    # The same with --net: the TLS port is one of the session's own on the host's loopback.
    cp = arb("shell", "w", "--net", "--backend",
             "anthropic=http://127.0.0.1:%d,tls-port=8716" % up, "--", "sh", "-c",
             "echo tls=$ANTHROPIC_TLS_BASE_URL; " + curl % (
                 '--cacert "$ARBORINTH_PROXY_CA_FILE"', '$(cat "$ANTHROPIC_API_KEY_FILE")',
                 "$ANTHROPIC_TLS_BASE_URL"), env={"ANTHROPIC_API_KEY": KEY})
    out = cp.stdout.splitlines()
    C.ok(out and out[0].startswith("tls=https://127.0.0.1:") and not out[0].endswith(":8716"),
         "--net: the TLS port is the session's own (%r)" % out)
    C.eq(["200"], out[1:], "--net: a request over TLS is forwarded (%s)" % cp.stderr[-300:])
    arb.one_line_error(arb("shell", "w", "--backend", "anthropic,tls-port=8713", "--", "true",
                           env={"ANTHROPIC_API_KEY": KEY}), 1, "tls-port must differ from port",
                       "tls-port equal to port")


def search_files(roots, needle):
    hits = []
    for root in roots:
        for d, _, files in os.walk(root):
            for name in files:
                p = os.path.join(d, name)
                try:
                    with open(p, "rb") as f:
                        if needle.encode() in f.read():
                            hits.append(p)
                except OSError:
                    pass
    return hits


try:
    main()
finally:
    P.stop_all()
C.finish()
