#!/usr/bin/env python3
"""Backends from bind files (backends = [...]), with the reapi backend end to end: a real box
whose grpcio client reaches a fake REAPI server at $REAPI_REMOTE through the proxy, the
backend coming from a bind file; the token file hidden in the box although the same file
binds its folder; precedence (a later file, an include, --backend on the command line);
--explain and --explain --json (origin, upstream, instance, token source kind, the box's
variables; never the token); errors with FILE:LINE:COL; a bind file the box can write (its
workspace's tmp, its view, an rw entry) may not give backends, where the same file outside
works (control).

    reapi_binds_test.py ARB TMPDIR
"""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs, read_log  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
os.environ["PATH"] = "/usr/local/bin:/usr/bin:/bin"
HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "ya29.BINDSTOKEN-" + os.urandom(12).hex()
C = Checks()
P = Procs()
REPO = os.path.join(T, "repo")
HOME = os.path.join(T, "home")
arb = Arb(ARB, REPO, C)
ENV = {"HOME": HOME}
CLIENT = 'exec /usr/bin/python3 /tmp/reapi_client.py "${REAPI_REMOTE#grpc://}" "$REAPI_INSTANCE"'


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def shell(*args, timeout=120):
    return arb("shell", "w", *args, env=ENV, timeout=timeout)


def start_fake():
    log, portfile = os.path.join(T, "fake.log"), os.path.join(T, "fake.port")
    P.start([sys.executable, os.path.join(HERE, "reapi_fake.py"), log, portfile], stdout=None)
    for _ in range(200):
        if os.path.exists(portfile):
            break
        time.sleep(0.05)
    with open(portfile) as f:
        return log, int(f.read())


def box_client(log, main):
    """The backend from a bind file, used by a real client in a real box."""
    cp = shell("--binds", main, "--", "sh", "-c", CLIENT)
    C.eq(0, cp.returncode, "box client with the bind file's backend (%s)" % cp.stderr[-2000:])
    rep = json.loads(cp.stdout) if cp.returncode == 0 else {}
    C.eq("OK", (rep.get("capabilities") or [0])[0], "GetCapabilities at $REAPI_REMOTE")
    C.eq(True, rep.get("blob_1mib"), "1 MiB blob round trip")
    C.eq("PERMISSION_DENIED", (rep.get("update_action_result") or [0])[0],
         "UpdateActionResult refused")
    C.eq("PERMISSION_DENIED", (rep.get("wrong_instance") or [0])[0],
         "the file's instance= is enforced")
    entries = read_log(log)
    C.ok(entries and all(e.get("authorization") == "Bearer " + TOKEN for e in entries),
         "every call carried the token of the file's token-file (%d calls)" % len(entries))
    env = rep.get("env", {})
    C.ok(env.get("REAPI_REMOTE") == "grpc://127.0.0.1:8717" and
         env.get("REAPI_INSTANCE") == "main", "the box has REAPI_REMOTE and REAPI_INSTANCE")
    visible = rep.get("visible", "")
    C.ok("OTHER-FILE-IN-CFG" in visible,
         "control: the box reads the folder the bind file binds (ro = [\"~/cfg\"])")
    C.ok(TOKEN not in visible and TOKEN not in cp.stdout + cp.stderr,
         "the token file is hidden in the box though its folder is bound")
    # Control: without the bind file, no backend.
    cp = shell("--", "sh", "-c", 'echo "${REAPI_REMOTE:-none}"')
    C.eq("none", cp.stdout.strip(), "control: no REAPI_REMOTE without the bind file")


def explain(port, tf, main):
    cp = shell("--binds", main, "--explain", "--", "true")
    C.eq(0, cp.returncode, "--explain (%s)" % cp.stderr)
    line = "backend    reapi (--binds %s:3:3): upstream grpc://127.0.0.1:%d, instance main, " \
           "token file %s; in the box 127.0.0.1:8717, gets REAPI_REMOTE, REAPI_INSTANCE" % (
               main, port, tf)
    C.ok(line in cp.stdout, "--explain's backend line: %s" % [
        ln for ln in cp.stdout.splitlines() if "backend " in ln])
    C.ok("anthropic (--binds %s:4:3): upstream http://127.0.0.1:9, credential file %s/cfg/"
         "anth.key; in the box 127.0.0.1:8713, gets ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY "
         "(a placeholder)" % (main, HOME) in cp.stdout, "any backend from a file: anthropic")
    C.ok(TOKEN not in cp.stdout + cp.stderr, "--explain never shows the token")
    cp = shell("--net", "--binds", main, "--explain", "--", "true")
    C.ok(cp.returncode == 0 and "ANTHROPIC_API_KEY_FILE (a placeholder's file)" in cp.stdout,
         "with --net the key variable is a file's (%s)" % cp.stderr)
    cp = shell("--binds", main, "--explain", "--json", "--", "true")
    C.eq(0, cp.returncode, "--explain --json (%s)" % cp.stderr)
    doc = json.loads(cp.stdout) if cp.returncode == 0 else {}
    bs = {b["name"]: b for b in doc.get("backends", [])}
    r = bs.get("reapi", {})
    C.eq("--binds %s:3:3" % main, r.get("origin"), "json: origin FILE:LINE:COL")
    C.eq({"upstream": "grpc://127.0.0.1:%d" % port, "instance": "main", "token": "file " + tf},
         r.get("about"), "json: upstream, instance, token source")
    C.eq(["REAPI_REMOTE=grpc://127.0.0.1:8717", "REAPI_INSTANCE=main"], r.get("env"),
         "json: the box's variables")
    C.eq(None, r.get("key_var"), "json: no key variable for reapi")
    C.eq("ANTHROPIC_API_KEY", bs.get("anthropic", {}).get("key_var"), "json: anthropic's key")
    C.ok(TOKEN not in cp.stdout and "box" in doc, "json: no token; the box's text too")
    cp = shell("--json", "--", "true")
    arb.one_line_error(cp, 2, "--json goes with --explain", "--json without --explain")

    # A token command from a file: its kind, never its text.
    helper = write(os.path.join(T, "helper.sh"), "#!/bin/sh\ncat >/dev/null\nprintf "
                   "'{\"headers\":{\"Authorization\":[\"Bearer %s-cmd\"]}}\\n'\n" % TOKEN, 0o755)
    f = write(os.path.join(T, "cmd.toml"), "backends = ['reapi=grpc://127.0.0.1:%d,"
              "token-command=%s --secret-arg']\n" % (port, helper))
    cp = shell("--binds", f, "--explain", "--json", "--", "true")
    doc = json.loads(cp.stdout) if cp.returncode == 0 else {}
    about = (doc.get("backends") or [{}])[0].get("about", {})
    C.eq("token-command (run on the host)", about.get("token"), "json: token-command's kind")
    C.ok("--secret-arg" not in cp.stdout and TOKEN not in cp.stdout,
         "the command's text and token are not shown")


def precedence(port, tf, main):
    first = write(os.path.join(T, "first.toml"), "backends = ['reapi=grpc://127.0.0.1:%d,"
                  "instance=first,token-file=%s']\n" % (port, tf))
    cp = shell("--binds", main, "--binds", first, "--explain", "--json", "--", "true")
    doc = json.loads(cp.stdout) if cp.returncode == 0 else {}
    r = {b["name"]: b for b in doc.get("backends", [])}.get("reapi", {})
    C.ok(r.get("origin") == "--binds %s:1:13" % first and
         r.get("about", {}).get("instance") == "first", "a later file's backend replaces it")
    C.ok("REAPI_INSTANCE=first" in doc.get("box", ""), "... in the box's environment too")
    inc = write(os.path.join(T, "sub", "inc.toml"), "include = ['../first.toml']\n")
    cp = shell("--binds", inc, "--explain", "--json", "--", "true")
    doc = json.loads(cp.stdout) if cp.returncode == 0 else {}
    C.eq("--binds %s/sub/../first.toml:1:13" % T, (doc.get("backends") or [{}])[0].get("origin"),
         "an included file's backend, with its own FILE:LINE:COL")
    be = "reapi=grpc://127.0.0.1:%d,instance=cli,token-file=%s" % (port, tf)
    cp = shell("--binds", main, "--backend", be, "--explain", "--", "true")
    C.ok("backend    reapi (--backend): upstream grpc://127.0.0.1:%d, instance cli" % port in
         cp.stdout, "--backend on the command line wins over a file")
    C.ok("backend    reapi of --binds %s:3:3: replaced by --backend reapi" % main in cp.stdout,
         "--explain says which file backend --backend replaced")
    C.ok("REAPI_INSTANCE=cli" in cp.stdout and "REAPI_INSTANCE=main" not in cp.stdout,
         "the command line's instance is the box's")


def errors(port, tf, main, log):
    def bad(name, text, code, msg, what):
        f = write(os.path.join(T, "bad", name), text)
        cp = shell("--binds", f, "--", "true")
        arb.one_line_error(cp, code, msg.replace("FILE", f), what)

    bad("rel.toml", "\nbackends = ['reapi=grpc://127.0.0.1:%d,token-file=tok']\n" % port, 2,
        "FILE:2:13: backends: token-file: 'tok' is not an absolute path", "relative token-file")
    bad("ca.toml", "backends = ['reapi=grpcs://h:1,ca-file=./ca.pem']\n", 2,
        "FILE:1:13: backends: ca-file: './ca.pem' is not an absolute path", "relative ca-file")
    bad("opt.toml", "backends = ['reapi=grpc://127.0.0.1:%d,bogus=1']\n" % port, 2,
        "FILE:1:13: backends: backend reapi: unknown option 'bogus'", "unknown option")
    bad("name.toml", "backends = ['Reapi=grpc://h:1']\n", 2,
        "FILE:1:13: backends: 'Reapi' is not a backend name", "bad name")
    bad("twice.toml", "backends = ['reapi=grpc://h:1',\n  'reapi=grpc://h:2']\n", 2,
        "FILE:2:3: backends: backend reapi is listed twice in this file", "twice in a file")
    bad("type.toml", "backends = 'reapi=grpc://h:1'\n", 2,
        "FILE:1:12: 'backends' takes an array of strings", "not an array")
    bad("down.toml", "backends = ['reapi=grpc://127.0.0.1:1,token-file=%s']\n" % tf, 1,
        "--binds FILE:1:13: backend reapi: cannot connect to 127.0.0.1:1", "unreachable upstream")

    # A bind file the box can write may not give backends: the box writes one in its tmp and
    # in its view, and the host is asked to use them. The same file outside works (control).
    text = "backends = ['reapi=grpc://127.0.0.1:%d,instance=main,token-file=%s']\n" % (port, tf)
    out = write(os.path.join(T, "outside.toml"), text)
    cp = shell("--binds", out, "--explain", "--", "true")
    C.eq(0, cp.returncode, "control: the file outside the workspace gives its backend")
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w")
    cp = shell("--", "sh", "-c", "printf \"%s\" > /tmp/evil.toml && printf \"%s\" > evil.toml"
               % (text, text))
    C.eq(0, cp.returncode, "the box wrote bind files (%s)" % cp.stderr)
    n0 = len(read_log(log))
    for f in (os.path.join(ws, "tmp", "evil.toml"), os.path.join(ws, "workdir", "evil.toml")):
        C.ok(os.path.exists(f), "the box's file is there: %s" % f)
        cp = shell("--binds", f, "--", "true")
        arb.one_line_error(cp, 2, "--binds %s:1:13: backends: %s is a file the box can write"
                           % (f, os.path.realpath(f)), "box-written bind file refused")
        cp = shell("--binds", out, "--binds", f, "--explain", "--", "true")
        C.eq(2, cp.returncode, "... also after a trusted file")
    wr = os.path.join(T, "shared")
    write(os.path.join(wr, "evil.toml"), text)
    rw = write(os.path.join(T, "rw.toml"), "rw = ['%s']\ninclude = ['shared/evil.toml']\n" % wr)
    cp = shell("--binds", rw, "--", "true")
    arb.one_line_error(cp, 2, "is a file the box can write", "bind file under an rw entry")
    cp = shell("--mount", "rw:%s" % wr, "--binds", os.path.join(wr, "evil.toml"), "--", "true")
    arb.one_line_error(cp, 2, "is a file the box can write", "bind file under --mount rw:")
    cp = shell("--mount", "ro:%s" % wr, "--binds", os.path.join(wr, "evil.toml"), "--explain",
               "--", "true")
    C.eq(0, cp.returncode, "control: the same file under --mount ro: gives its backend (%s)"
         % cp.stderr)
    C.eq(n0, len(read_log(log)), "no call reached the server for a refused file")


def main():
    os.makedirs(HOME)
    arb.make_repo("w")
    ws = os.path.join(REPO, ".git", "arborinth", "workspaces", "w")
    for f in ("reapi_client.py", "reapi_pb.py"):
        shutil.copy(os.path.join(HERE, f), os.path.join(ws, "tmp", f))
    log, port = start_fake()
    tf = write(os.path.join(HOME, "cfg", "reapi.token"), TOKEN + "\n", 0o600)
    write(os.path.join(HOME, "cfg", "other"), "OTHER-FILE-IN-CFG\n")
    write(os.path.join(HOME, "cfg", "anth.key"), "sk-ant-api03-x\n", 0o600)
    main_toml = write(os.path.join(T, "remote.toml"),
                      "ro = ['~/cfg']\nbackends = [\n"
                      "  'reapi=grpc://127.0.0.1:%d,instance=main,token-file=~/cfg/reapi.token',\n"
                      "  'anthropic=http://127.0.0.1:9,key-file=~/cfg/anth.key',\n]\n" % port)
    box_client(log, main_toml)
    explain(port, tf, main_toml)
    precedence(port, tf, main_toml)
    errors(port, tf, main_toml, log)
    P.stop_all()
    sys.exit(C.finish())


try:
    main()
finally:
    P.stop_all()
