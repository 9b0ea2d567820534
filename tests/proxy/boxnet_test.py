#!/usr/bin/env python3
"""`shell --net --backend`: the proxy on the host's loopback, for boxes that share the host's
network. Real boxes, a real fake upstream, real sockets.

    boxnet_test.py ARB TMPDIR   (TMPDIR outside /tmp: the box has its own /tmp)

- The box gets NAME_BASE_URL at a port the kernel chose for this session (not the relay's
  fixed 8713, on which nothing listens) and NAME_API_KEY_FILE, a 0600 file of its home that
  holds the session's token; no NAME_API_KEY variable.
- Requests without the token, or with another, are refused (401), from the box and from a
  host process alike; with the token they reach the upstream, which sees the real key only.
- While the session runs, no process's command line or environment holds the token
  (control: the same scan finds it in a process started with it in its environment).
- Two sessions at once each get their own port and token; a session's token does not open
  the other's port. When a session ends its port is closed.
- Every request, refused or not, is an audit row of the session.
- --explain --net writes no key file; --net with --allow-host is a one-line usage error.
"""
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import Arb, Checks, Procs, read_log, start_upstream, wait_for  # noqa: E402

ARB, T = sys.argv[1], sys.argv[2]
KEY = "sk-ant-api03-NETKEY-" + os.urandom(12).hex()
C = Checks()
P = Procs()
REPO = os.path.join(T, "repo")
arb = Arb(ARB, REPO, C)
WS = os.path.join(REPO, ".git", "arborinth", "workspaces")
BODY = json.dumps({"model": "m", "max_tokens": 5,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()

# In the box: report the environment and the key file, call the proxy three ways, then wait
# (holding the session open) until the host test removes the flag file in the workdir.
BOX = r'''
import json, os, stat, sys, time, urllib.request, urllib.error
base = os.environ.get("ANTHROPIC_BASE_URL", "")
kf = os.environ.get("ANTHROPIC_API_KEY_FILE", "")
def call(key):
    h = {"content-type": "application/json"}
    if key is not None:
        h["x-api-key"] = key
    req = urllib.request.Request(base + "/v1/messages", data=BODY, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
BODY = sys.argv[1].encode()
tok = open(kf).read().strip() if kf else ""
st = os.stat(kf) if kf else None
rep = {"base": base, "key_file": kf,
       "key_vars": sorted(k for k in os.environ if k.endswith("_API_KEY")),
       "mode": oct(stat.S_IMODE(st.st_mode)) if st else "",
       "with": call(tok), "without": call(None), "wrong": call(tok[:-4] + "beef")}
print(json.dumps(rep), flush=True)
flag = sys.argv[2]
while os.path.exists(flag):
    time.sleep(0.1)
'''






def host_call(port, key):
    h = {"content-type": "application/json", "host": "127.0.0.1:%d" % port}
    if key is not None:
        h["x-api-key"] = key
    req = urllib.request.Request("http://127.0.0.1:%d/v1/messages" % port, data=BODY, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def listening(port):
    s = socket.socket()
    try:
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def procs_holding(secret):
    """Pids whose command line or environment holds secret (what `ps eww` would show)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (pid, what), "rb") as f:
                    if secret.encode() in f.read():
                        found.append((int(pid), what))
            except OSError:
                pass
    return found


def start_session(name, up):
    flag = os.path.join(WS, name, "workdir", ".hold")
    with open(flag, "w") as f:
        f.write("1")
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = KEY
    p = subprocess.Popen([ARB, "shell", name, "--net", "--backend",
                          "anthropic=http://127.0.0.1:%d" % up, "--", "/usr/bin/python3", "-c",
                          BOX, BODY.decode(), flag], cwd=REPO, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    try:
        rep = json.loads(line)
    except ValueError:
        rep = {}
        C.ok(False, "%s: the box reported (%r, stderr %r)" % (name, line, p.stderr.read()))
    return p, flag, rep


def end_session(p, flag):
    os.unlink(flag)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p.returncode


def main():
    arb.make_repo("a", "b", "x")
    up_log = os.path.join(T, "up.log")
    _, up = start_upstream(P, up_log)

    # --- one session: what the box sees, and what a host process can do ---
    p, flag, rep = start_session("a", up)
    port = int(rep.get("base", "x:0").rsplit(":", 1)[1] or 0)
    C.ok(port and port != 8713, "the box's base URL has a port of this session (%r)" % rep)
    C.eq([], rep.get("key_vars"), "no NAME_API_KEY variable in the box")
    kf_host = os.path.join(WS, "a", "home", ".arborinth", "proxy", "anthropic.key")
    C.ok(rep.get("key_file", "").endswith("/.arborinth/proxy/anthropic.key"),
         "ANTHROPIC_API_KEY_FILE names the key file in $HOME (%r)" % rep.get("key_file"))
    C.eq("0o600", rep.get("mode"), "the key file is private (0600)")
    with open(kf_host) as f:
        tok = f.read().strip()
    C.ok(tok.startswith("arb-anthropic-placeholder-"), "the key file holds the session's token")
    C.eq(200, rep.get("with"), "from the box, with the token: forwarded")
    C.eq(401, rep.get("without"), "from the box, without the token: refused")
    C.eq(401, rep.get("wrong"), "from the box, with another token: refused")
    C.eq(401, host_call(port, None), "from the host, without the token: refused")
    C.eq(401, host_call(port, "arb-anthropic-placeholder-" + "0" * 32),
         "from the host, with a guessed token: refused")
    C.eq(200, host_call(port, tok), "control: from the host, with the token: forwarded")
    C.ok(not listening(8713), "nothing listens on the relay's fixed port 8713 on the host")
    C.eq([], procs_holding(tok), "no process's command line or environment holds the token")
    ctl = subprocess.Popen(["sleep", "30"], env={"X_TOKEN": tok})
    C.ok(ctl.pid in [pid for pid, _ in procs_holding(tok)],
         "control: the same scan finds a process that has the token in its environment")
    ctl.kill()
    ctl.wait()
    # The user gave arborinth the key in its environment; nothing else may hold it.
    C.eq([], [x for x in procs_holding(KEY) if x != (p.pid, "environ")],
         "the real key is in no other process's command line or environment")

    # --- a second session at the same time: its own port and token ---
    p2, flag2, rep2 = start_session("b", up)
    port2 = int(rep2.get("base", "x:0").rsplit(":", 1)[1] or 0)
    C.ok(port2 and port2 != port, "a second session gets a port of its own (%d, %d)" %
         (port, port2))
    C.eq(200, rep2.get("with"), "the second session works alongside the first")
    C.eq(401, host_call(port2, tok), "the first session's token does not open the second's port")
    C.eq(0, end_session(p2, flag2), "second session exit status")
    C.eq(0, end_session(p, flag), "first session exit status")
    C.ok(wait_for(lambda: not listening(port)), "the session's port is closed when it ends")

    log = read_log(up_log)
    keys = [dict(e.get("headers", [])).get("x-api-key") for e in log
            if e.get("path") == "/v1/messages"]
    C.ok(keys and all(k == KEY for k in keys), "the upstream received the real key only (%d)"
         % len(keys))
    C.ok(all(tok not in json.dumps(e) for e in log), "the upstream never saw the token")

    # --- the audit has every request of the session, refused ones too ---
    cp = arb("audit", "a", "--kind", "net", "--json")
    rows = [json.loads(x) for x in cp.stdout.splitlines() if x.strip()] if cp.returncode == 0 \
        else []
    if rows and isinstance(rows[0], list):
        rows = rows[0]
    statuses = sorted(r.get("status") for r in rows if isinstance(r, dict))
    C.eq([200, 200, 401, 401, 401, 401], statuses,
         "audit: the session's requests with their statuses (%r)" % cp.stdout[-800:])

    # --- --explain writes nothing; --allow-host with --net is refused ---
    cp = arb("shell", "x", "--net", "--backend", "anthropic=http://127.0.0.1:%d" % up,
             "--explain", env={"ANTHROPIC_API_KEY": KEY})
    C.eq(0, cp.returncode, "--explain --net (%s)" % cp.stderr)
    C.ok("ANTHROPIC_API_KEY_FILE=" in cp.stdout and "arb-anthropic-placeholder" not in cp.stdout
         and KEY not in cp.stdout, "--explain --net: the key file's variable, no token, no key")
    C.ok("/run/arborinth-proxy" not in cp.stdout and "--relay" not in cp.stdout,
         "--explain --net: no socket mount and no relay")
    C.ok(not os.path.exists(os.path.join(WS, "x", "home", ".arborinth")),
         "--explain --net wrote no key file")
    arb.one_line_error(arb("shell", "x", "--net", "--allow-host", "example.org", "--", "true"), 2,
                   "--allow-host is for boxes without --net", "--net with --allow-host")
    P.stop_all()
    C.finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        P.stop_all()
