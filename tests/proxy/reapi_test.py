#!/usr/bin/env python3
"""Remote builds over h2c end to end: a real box (arborinth shell --backend reapi=...) whose
grpcio client (insecure mode, no token) calls a fake REAPI server through box-init's relay and
the host proxy's HTTP/2 bridge. The server sees the host's token; the box never holds it;
UpdateActionResult and unknown methods fail fast with PERMISSION_DENIED; a 1 MiB blob round
trips through ByteStream; another instance name is refused; every stream is audited.

    reapi_test.py ARB TMPDIR
"""
import json
import os
import shutil
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs, make_ca  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
os.environ["PATH"] = "/usr/local/bin:/usr/bin:/bin"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "ya29.REAPITOKEN-" + os.urandom(12).hex()
C = Checks()
P = Procs()
REPO = os.path.join(T, "repo")
arb = Arb(ARB, REPO, C)


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


BAZEL_SH = r"""
set -e
mkdir -p /tmp/proj && cd /tmp/proj
: > WORKSPACE
printf 'genrule(name = "hello", outs = ["hello.txt"], cmd = "echo hello > $@")\n' > BUILD
start=$(date +%s)
bazel --batch --output_user_root=/tmp/bzroot --host_jvm_args=-XX:-UseContainerSupport build --spawn_strategy=local \
  --remote_cache="$REAPI_REMOTE" --remote_instance_name="$REAPI_INSTANCE" //:hello 2>&1
echo "bazel took $(( $(date +%s) - start ))s"
cat bazel-bin/hello.txt
"""


def bazel(port, tf):
    n0 = len(read_log(os.path.join(T, "fake.log")))
    be = "reapi=grpc://127.0.0.1:%d,instance=main,token-file=%s" % (port, tf)
    cp = arb("shell", "w", "--backend", be, "--", "sh", "-c", BAZEL_SH, timeout=240)
    C.eq(0, cp.returncode, "bazel build with --remote_cache in the box (%s)"
         % (cp.stdout + cp.stderr)[-3000:])
    C.ok(cp.stdout.rstrip().endswith("hello"), "bazel built the genrule")
    sys.stderr.write("bazel in the box (last lines):\n%s\n" % "\n".join(
        ln for ln in cp.stdout.splitlines()[-12:] if TOKEN not in ln))
    # The refused upload is a warning in Bazel's output, not a retried hang.
    C.ok("PERMISSION_DENIED" in cp.stdout and "UpdateActionResult refused" in cp.stdout,
         "bazel reports the refused UpdateActionResult: %s" % cp.stdout[-1500:])
    calls = read_log(os.path.join(T, "fake.log"))[n0:]
    names = [c["method"] for c in calls]
    C.ok("GetCapabilities" in names and "GetActionResult" in names,
         "bazel's calls reached the server: %r" % names)
    C.ok(all(c.get("authorization") == "Bearer " + TOKEN for c in calls),
         "bazel's calls carried the host's token")
    C.ok(TOKEN not in cp.stdout, "token not in bazel's output")


def start_fake(name, tls=None):
    log, portfile = os.path.join(T, name + ".log"), os.path.join(T, name + ".port")
    P.start([sys.executable, os.path.join(HERE, "reapi_fake.py"), log, portfile] +
            list(tls or []), stdout=None)
    for _ in range(200):
        if os.path.exists(portfile):
            break
        time.sleep(0.05)
    with open(portfile) as f:
        return log, int(f.read())


def tls_upstream(tf):
    """grpcs://: TLS with ALPN h2 to the upstream, verified against ca-file=."""
    ca, cert, key = make_ca(T, "reapi", ["localhost"])
    other, _, _ = make_ca(T, "other", ["localhost"])
    log, port = start_fake("tls", (cert, key))
    be = "reapi=grpcs://localhost:%d,instance=main,token-file=%s,ca-file=%s" % (port, tf, ca)
    cp = arb("shell", "w", "--backend", be, "--", "/usr/bin/python3", "/tmp/reapi_client.py",
             "127.0.0.1:8717", "main", timeout=120)
    C.eq(0, cp.returncode, "box client over a TLS upstream (stderr: %s)" % cp.stderr[-2000:])
    rep = json.loads(cp.stdout) if cp.returncode == 0 else {}
    C.eq("OK", (rep.get("capabilities") or [0])[0], "GetCapabilities over grpcs://")
    C.eq(True, rep.get("blob_1mib"), "1 MiB blob round trip over grpcs://")
    C.eq("PERMISSION_DENIED", (rep.get("update_action_result") or [0])[0],
         "UpdateActionResult refused over grpcs:// too")
    entries = read_log(log)
    C.ok(entries and all(e.get("authorization") == "Bearer " + TOKEN for e in entries),
         "TLS upstream received the host's token (%d calls)" % len(entries))
    be = "reapi=grpcs://localhost:%d,token-file=%s,ca-file=%s" % (port, tf, other)
    cp = arb("shell", "w", "--backend", be, "--", "true")
    arb.one_line_error(cp, 1, "TLS to localhost:%d failed" % port, "TLS upstream, unknown CA")


def main():
    arb.make_repo("w")
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w")
    for f in ("reapi_client.py", "reapi_pb.py"):
        shutil.copy(os.path.join(HERE, f), os.path.join(ws, "tmp", f))
    log, portfile = os.path.join(T, "fake.log"), os.path.join(T, "fake.port")
    P.start([sys.executable, os.path.join(HERE, "reapi_fake.py"), log, portfile], stdout=None)
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
    cp = arb("shell", "w", "--backend", be, "--", "/usr/bin/python3", "/tmp/reapi_client.py",
             "127.0.0.1:8717", "main", timeout=120)
    C.eq(0, cp.returncode, "box client ran (stderr: %s)" % cp.stderr[-2000:])
    rep = json.loads(cp.stdout) if cp.returncode == 0 else {}
    C.eq("OK", (rep.get("capabilities") or [0])[0], "GetCapabilities through the bridge")
    C.eq("NOT_FOUND", (rep.get("get_action_result") or [0])[0],
         "GetActionResult reaches the server (a miss)")
    u = rep.get("update_action_result") or ["", "", 99]
    C.ok(u[0] == "PERMISSION_DENIED" and "UpdateActionResult" in u[1] and u[2] < 1.0,
         "UpdateActionResult refused with grpc-status 7 within a second: %r" % u)
    C.eq("PERMISSION_DENIED", (rep.get("unknown_method") or [0])[0], "unknown method refused")
    C.eq("PERMISSION_DENIED", (rep.get("wrong_instance") or [0])[0], "other instance refused")
    C.eq("PERMISSION_DENIED", rep.get("write_other_instance"), "ByteStream to another instance")
    C.eq(True, rep.get("blob_1mib"), "1 MiB blob round trip through ByteStream")
    C.eq("OK", (rep.get("box_auth") or [0])[0], "a call with the box's own authorization")
    entries = read_log(log)
    methods = [e["method"] for e in entries]
    C.ok("UpdateActionResult" not in methods, "UpdateActionResult never reached the server")
    C.ok(entries and all(e.get("authorization") == "Bearer " + TOKEN for e in entries),
         "every call reached the server with the host's token (%d calls)" % len(entries))
    C.ok(not any("box-own-token" in (e.get("authorization") or "") for e in entries),
         "the box's own authorization never reached the server")
    C.ok(TOKEN not in cp.stdout and TOKEN not in cp.stderr, "token nowhere in the box output")
    C.ok(rep.get("visible") and TOKEN not in rep.get("visible", TOKEN),
         "token not in the box's /proc/self/environ nor its home")
    C.ok("REAPI_REMOTE=grpc://127.0.0.1:8717" in rep.get("visible", ""),
         "control: the same search reads the box's environment")
    # Control: the fake server itself accepts UpdateActionResult, so the refusal is the proxy's.
    direct = grpc.insecure_channel("127.0.0.1:%d" % port)
    direct.unary_unary("/build.bazel.remote.execution.v2.ActionCache/UpdateActionResult",
                       lambda b: b, lambda b: b)(b"", timeout=20)
    C.eq("UpdateActionResult", read_log(log)[-1]["method"],
         "control: the server accepts UpdateActionResult when called directly")
    direct.close()
    env = rep.get("env", {})
    C.ok(env.get("REAPI_REMOTE") == "grpc://127.0.0.1:8717" and env.get("REAPI_INSTANCE") ==
         "main", "control: the box environment has the backend's address and instance")
    C.ok(not any(k.endswith("_API_KEY") for k in env), "no key placeholder for reapi")

    # --- the audit has a row per stream: method, bytes, status ---
    cp = arb("audit", "w")
    C.eq(0, cp.returncode, "audit ran (%s)" % cp.stderr)
    out = cp.stdout
    C.ok("UpdateActionResult" in out and "grpc-status 7" in out, "refusal audited")
    C.ok(TOKEN not in out, "token not in the audit")
    cp = arb("audit", "w", "--json")
    rows = [json.loads(l) for l in cp.stdout.splitlines() if l.strip()]
    res = [(r.get("path"), r.get("result"), r.get("reason")) for r in rows
           if r.get("kind") == "net"]
    C.ok(("/google.bytestream.ByteStream/Write", "ok", "allowed: grpc-status 0") in res,
         "ByteStream Write audited with its status, and a completed stream's row says ok, "
         "not failed (%r)" % res)
    C.ok(("/build.bazel.remote.execution.v2.ActionCache/UpdateActionResult", "refused",
          "refused: method not allowed: grpc-status 7") in res or any(
              p.endswith("UpdateActionResult") and r == "refused" and "grpc-status 7" in (w or "")
              for p, r, w in res), "control: the refused stream's row says refused (%r)" % res)

    # --- token from a command (Bazel's credential helper protocol) ---
    helper = os.path.join(T, "helper.sh")
    with open(helper, "w") as f:
        f.write("#!/bin/sh\ncat >/dev/null\nprintf '{\"headers\":{\"Authorization\":"
                "[\"Bearer %s\"]}}\\n' " + TOKEN + "-cmd\n")
    os.chmod(helper, 0o755)
    be = "reapi=grpc://127.0.0.1:%d,token-command=%s" % (port, helper)
    cp = arb("shell", "w", "--backend", be, "--", "/usr/bin/python3", "-c",
             "import grpc; ch=grpc.insecure_channel('127.0.0.1:8717');"
             "ch.unary_unary('/build.bazel.remote.execution.v2.Capabilities/GetCapabilities',"
             "lambda b: b, lambda b: b)(b'', timeout=20); print('ok')")
    C.eq("ok", cp.stdout.strip(), "call with the helper's token (%s)" % cp.stderr[-800:])
    C.eq("Bearer %s-cmd" % TOKEN, read_log(log)[-1].get("authorization"),
         "server received the helper's token")

    # --- Bazel (Debian's bazel-bootstrap) builds a genrule with the remote cache ---
    if os.path.exists("/usr/bin/bazel"):
        bazel(port, tf)

    tls_upstream(tf)

    # --- HTTP/2 to a proxy without the reapi backend: closed and audited ---
    cp = arb("shell", "w", "--backend", "anthropic=http://127.0.0.1:9", "--", "/usr/bin/python3",
             "-c", "import grpc; ch=grpc.insecure_channel('127.0.0.1:8713')\ntry:\n"
             " ch.unary_unary('/google.bytestream.ByteStream/Read', lambda b: b, lambda b: b)"
             "(b'', timeout=10); print('OK')\nexcept grpc.RpcError as e: print(e.code().name)",
             env={"ANTHROPIC_API_KEY": "sk-ant-api03-x"})
    C.eq("UNAVAILABLE", cp.stdout.strip(), "h2 to an HTTP/1 backend fails (%s)" % cp.stderr[-500:])
    cp = arb("audit", "w")
    C.ok("HTTP/2 without a reapi backend" in cp.stdout, "... and is audited")

    # --- --explain shows the backend's wiring, never the token ---
    be = "reapi=grpc://127.0.0.1:%d,instance=main,token-file=%s" % (port, tf)
    cp = arb("shell", "w", "--backend", be, "--explain")
    C.eq(0, cp.returncode, "--explain with the reapi backend (%s)" % cp.stderr)
    C.ok("REAPI_REMOTE=grpc://127.0.0.1:8717" in cp.stdout and "REAPI_INSTANCE=main" in
         cp.stdout and "--relay 8717=" in cp.stdout, "--explain shows the relay and variables")
    C.ok(TOKEN not in cp.stdout + cp.stderr, "--explain never shows the token")

    # --- bad input: one line naming the thing ---
    cp = arb("shell", "w", "--backend", "reapi=grpc://127.0.0.1:%d,instance=a b" % port, "--",
             "true")
    arb.one_line_error(cp, 1, "instance", "bad instance name")
    cp = arb("shell", "w", "--backend", "reapi=grpc://127.0.0.1:1,token-file=%s" % tf, "--",
             "true")
    arb.one_line_error(cp, 1, "cannot connect to 127.0.0.1:1", "unreachable REAPI host")
    cp = arb("shell", "w", "--backend", "reapi=grpc://127.0.0.1:%d,token-command=false" % port,
             "--", "true")
    arb.one_line_error(cp, 1, "token-command failed", "failing token command")
    P.stop_all()
    sys.exit(C.finish())


try:
    main()
finally:
    P.stop_all()
