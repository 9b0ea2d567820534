#!/usr/bin/env python3
"""Launchers used as a person uses them (label e2e): the real Claude Code from npm, started
with `arborinth claude NAME` in a tmux window against a local fake model API that also plays
the OAuth token endpoint, with a subscription login on the host whose token nears expiry
during the session. Keys are typed with send-keys and the screen read with capture-pane:
the folder-trust question is answered, a prompt typed, the streamed reply seen; the window is
resized and a second prompt answered; /exit quits with status 0. Afterwards the host token
has been refreshed (by the proxy, written back), the upstream saw only real tokens, and no
real token or refresh token is in any file the box could write, the client's logs included
(control: the same scan finds the placeholders).

Needs tmux (Debian package) and npm; ARB_NPM_PREFIX=DIR reuses an install of the clients.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import ARB, Checks, Env, need_box, search_files, skip  # noqa: E402
import e2e_real_clients as rc  # noqa: E402

need_box()
C = Checks()
rc.C = C
REPLY = rc.REPLY


class Tmux:
    def __init__(self, t):
        self.sock = os.path.join(t, "tmux.sock")

    def run(self, *args, check=True, env=None):
        return subprocess.run(["tmux", "-S", self.sock] + list(args), capture_output=True,
                              text=True, check=check, timeout=30, env=env)

    def screen(self):
        return self.run("capture-pane", "-p", "-t", "w").stdout

    def keys(self, *keys):
        self.run("send-keys", "-t", "w", *keys)

    def wait(self, pred, what, timeout=90):
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            if pred(s):
                return s
            time.sleep(0.3)
        s = self.screen()
        print("screen while waiting for %s:\n%s" % (what, s), file=sys.stderr)
        return None


def main():
    if not shutil.which("tmux"):
        skip("tmux is not installed (apt-get install tmux)")
    with Env("e2e-interactive") as E:
        prefix = rc.install(E)
        E.path = os.path.join(prefix, "node_modules", ".bin") + ":" + E.path
        now = time.time()
        a0 = "sk-ant-oat01-REAL-" + os.urandom(8).hex()
        r0 = "sk-ant-ort01-REAL-" + os.urandom(8).hex()
        url, log = rc.start_oauth_fake(E, [(a0, r0, now + 315)], "oauth-tty")
        cdir = os.path.join(E.t, "host-claude")
        os.makedirs(cdir)
        cred = os.path.join(cdir, ".credentials.json")
        with open(cred, "w") as f:
            json.dump({"claudeAiOauth": {"accessToken": a0, "refreshToken": r0,
                                         "expiresAt": int((now + 315) * 1000),
                                         "scopes": ["user:inference", "user:profile"],
                                         "subscriptionType": "max"}}, f)
        os.chmod(cred, 0o600)
        env = E.env({"CLAUDE_CONFIG_DIR": cdir, "TERM": "xterm-256color"})
        tm = Tmux(E.t)
        cmd = "%s claude tty --upstream %s --token-url %s/v1/oauth/token; echo EXITED=$?; " \
              "sleep 600" % (ARB, url, url)
        # The server (and so the window) gets the test's environment.
        tm.run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "120", "-y", "35",
               "-c", E.repo, cmd, env=env)
        try:
            s = tm.wait(lambda s: "trust this folder" in s, "the folder-trust question")
            C.ok(s is not None, "claude asks whether to trust the workspace's folder")
            tm.keys("Enter")
            s = tm.wait(lambda s: "\u276f" in s and "trust this folder" not in s, "the prompt")
            C.ok(s is not None and "Claude Max" in s,
                 "the prompt appears, showing the host login's plan (%r)" % (s or "")[-300:])
            tm.keys("-l", "Say the magic words.")
            tm.keys("Enter")
            s = tm.wait(lambda s: REPLY in s, "the reply")
            C.ok(s is not None, "the streamed reply appears on the screen")
            # Past the refresh margin (315 s token, 300 s margin) before the next call.
            time.sleep(max(0, now + 16 - time.time()))
            tm.run("resize-window", "-t", "w", "-x", "90", "-y", "30")
            s = tm.wait(lambda s: max(len(x) for x in s.splitlines() or [""]) <= 90,
                        "the resized screen", 20)
            C.ok(s is not None, "after a resize the client redraws at 90 columns")
            tm.keys("-l", "Once more, please.")
            tm.keys("Enter")
            s = tm.wait(lambda s: s.count(REPLY) >= 2, "the second reply")
            C.ok(s is not None, "a second prompt after the resize is answered")
            tm.keys("-l", "/exit")
            time.sleep(0.5)
            tm.keys("Enter")
            s = tm.wait(lambda s: "EXITED=" in s, "the exit", 60)
            C.ok(s is not None and "EXITED=0" in s, "/exit quits the launcher with status 0")
        finally:
            tm.run("kill-server", check=False)
        st = rc.oauth_state(url)
        C.ok(st["refreshes"] >= 1, "the host token was refreshed during the session")
        with open(cred) as f:
            host = json.load(f)["claudeAiOauth"]
        C.ok(host["accessToken"] in st["access"] and host["accessToken"] != a0,
             "the host file holds the refreshed token")
        with open(log) as f:
            reqs = [json.loads(x) for x in f if x.strip()]
        calls = [r for r in reqs if r["path"] == "/v1/messages"]
        C.ok(len(calls) >= 2, "the fake API answered both prompts (%d calls)" % len(calls))
        C.ok(all(r["headers"].get("authorization", "")[7:] in st["access"] for r in calls),
             "every call carried a real token the endpoint issued")
        C.ok(any(r["headers"].get("authorization", "")[7:] != a0 for r in calls),
             "calls after the refresh carried the new token")
        ws = E.ws("tty")
        roots = [os.path.join(ws, d) for d in ("home", "tmp", "cache", "layer", "workdir")]
        for tok in [a0, r0] + st["access"] + st["refresh"] + st["spent"]:
            C.eq([], search_files(roots, tok),
                 "no file the box could write holds %s..." % tok[:24])
        C.ok(search_files([os.path.join(ws, "home")], "placeholder"),
             "control: the same scan finds the placeholders")
    C.finish()


if __name__ == "__main__":
    main()
