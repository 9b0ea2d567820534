#!/usr/bin/env python3
"""Launchers used as a person uses them (label e2e): the real Claude Code, Codex and OpenCode
from npm, each started with `arborinth CLIENT NAME` in a tmux window against a local fake
model API that also plays the OAuth token endpoint. Claude Code with a subscription login and
Codex with a ChatGPT login on the host, each token nearing expiry during the session; OpenCode
with an API key. Keys are typed with send-keys and the screen read with capture-pane: the
folder-trust question is answered, a prompt typed, the streamed reply seen; the window is
resized and a second prompt answered; the client's own quit command ends it with status 0.
Afterwards, for the logins, the host token has been refreshed (by the proxy, written back),
the upstream saw only real tokens, and no real token, refresh token or key is in any file the
box could write, the clients' logs included (control: the same scan finds the placeholders).

Needs tmux (Debian package) and npm; ARB_NPM_PREFIX=DIR reuses an install of the clients.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import ARB, Checks, Env, install_clients, need_box, search_files, skip  # noqa: E402
import e2e_real_clients as rc  # noqa: E402

need_box()
C = Checks()
rc.C = C
REPLY = rc.REPLY


class Tmux:
    def __init__(self, t):
        self.t, self.n = t, 0
        self.sock = None

    def start(self, cwd, cmd, env):
        """cmd in a tmux server of its own (which, with the window, gets env), in cwd."""
        if self.sock:
            self.run("kill-server", check=False)
        self.n += 1
        self.sock = os.path.join(self.t, "tmux-%d.sock" % self.n)
        self.run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "120", "-y", "35",
                 "-c", cwd, cmd + "; echo EXITED=$?; sleep 600", env=env)

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


def answer_trust(tm, trust):
    """Enter on the folder-trust question, again while it stays: a client drawing its first
    screen before it reads keys (a slow, sanitizer-built run) loses a key sent too early."""
    for _ in range(4):
        tm.keys("Enter")
        end = time.time() + 15
        while time.time() < end:
            if trust not in tm.screen():
                return
            time.sleep(0.3)


def converse(tm, who, ready, not_ready, refresh_at, quit_cmd):
    """Types a prompt, sees the reply; resizes, a second prompt; quits with quit_cmd."""
    s = tm.wait(lambda s: ready in s and not_ready not in s, who + ": the prompt")
    C.ok(s is not None, who + ": the prompt appears")
    tm.keys("-l", "Say the magic words.")
    time.sleep(0.5)
    tm.keys("Enter")
    s = tm.wait(lambda s: REPLY in s, who + ": the reply")
    C.ok(s is not None, who + ": the streamed reply appears on the screen")
    # Past the refresh margin (a 315 s token, 300 s margin) before the next call.
    time.sleep(max(0, refresh_at - time.time()))
    tm.run("resize-window", "-t", "w", "-x", "90", "-y", "30")
    s = tm.wait(lambda s: max(len(x) for x in s.splitlines() or [""]) <= 90,
                who + ": the resized screen", 20)
    C.ok(s is not None, who + ": after a resize the client redraws at 90 columns")
    tm.keys("-l", "Once more, please.")
    time.sleep(0.5)
    tm.keys("Enter")
    s = tm.wait(lambda s: s.count(REPLY) >= 2, who + ": the second reply")
    C.ok(s is not None, who + ": a second prompt after the resize is answered")
    tm.keys("-l", quit_cmd)
    time.sleep(0.5)
    tm.keys("Enter")
    s = tm.wait(lambda s: "EXITED=" in s, who + ": the exit", 60)
    C.ok(s is not None and "EXITED=0" in s, "%s: %s quits the launcher with status 0" %
         (who, quit_cmd))


def check_login(E, who, name, url, log, secrets, calls_path, host_token):
    """After a login session: refreshed on the host, only real tokens upstream, none in the box."""
    st = rc.oauth_state(url)
    C.ok(st["refreshes"] >= 1, who + ": the host token was refreshed during the session")
    C.ok(host_token() in st["access"] and host_token() != secrets[0],
         who + ": the host file holds the refreshed token")
    with open(log) as f:
        reqs = [json.loads(x) for x in f if x.strip()]
    calls = [r for r in reqs if r["path"].endswith(calls_path)]
    C.ok(len(calls) >= 2, who + ": the fake API answered both prompts (%d calls)" % len(calls))
    C.ok(all(r["headers"].get("authorization", "")[7:] in st["access"] for r in calls),
         who + ": every call carried a real token the endpoint issued")
    C.ok(any(r["headers"].get("authorization", "")[7:] != secrets[0] for r in calls),
         who + ": calls after the refresh carried the new token")
    scan_box(E, who, name, secrets + st["access"] + st["refresh"] + st["spent"])


def scan_box(E, who, name, secrets, control="placeholder"):
    """No secret in any file the box could write; control: the same scan finds `control`
    (the login file's placeholders, or the reply the client kept in its session)."""
    ws = E.ws(name)
    roots = [os.path.join(ws, d) for d in ("home", "tmp", "cache", "layer", "workdir")]
    for tok in secrets:
        C.eq([], search_files(roots, tok),
             "%s: no file the box could write holds %s..." % (who, tok[:24]))
    C.ok(search_files([os.path.join(ws, "home")], control),
         "%s: control: the same scan finds %r" % (who, control))


def claude_session(E, tm):
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
    tm.start(E.repo, "%s claude tty --upstream %s --token-url %s/v1/oauth/token" %
             (ARB, url, url), env)
    s = tm.wait(lambda s: "trust this folder" in s, "the folder-trust question")
    C.ok(s is not None, "claude asks whether to trust the workspace's folder")
    answer_trust(tm, "trust this folder")
    s = tm.wait(lambda s: "\u276f" in s and "trust this folder" not in s, "the prompt")
    C.ok(s is not None and "Claude Max" in s,
         "claude: the prompt shows the host login's plan (%r)" % (s or "")[-300:])
    converse(tm, "claude", "\u276f", "trust this folder", now + 16, "/exit")

    def host():
        with open(cred) as f:
            return json.load(f)["claudeAiOauth"]["accessToken"]
    check_login(E, "claude", "tty", url, log, [a0, r0], "/v1/messages", host)


def codex_session(E, tm):
    now = time.time()
    xdir, access, rt, url, log = rc.codex_host_login(E, "codex-tty", expires_in=315)
    env = E.env({"CODEX_HOME": xdir, "TERM": "xterm-256color"})
    tm.start(E.repo, "%s codex xtty --upstream %s --token-url %s/oauth/token" % (ARB, url, url),
             env)
    s = tm.wait(lambda s: "Trust this folder" in s, "codex's folder-trust question")
    C.ok(s is not None, "codex asks whether to trust the workspace's folder")
    answer_trust(tm, "Trust this folder")
    converse(tm, "codex", "Ask Codex to do anything", "Trust this folder", now + 16, "/quit")

    def host():
        with open(os.path.join(xdir, "auth.json")) as f:
            return json.load(f)["tokens"]["access_token"]
    check_login(E, "codex", "xtty", url, log, [access, rt], "/responses", host)
    with open(os.path.join(E.ws("xtty"), "home", ".codex", "auth.json")) as f:
        box = json.load(f)["tokens"]
    C.ok("REAL" not in box["account_id"], "codex: the box's account id is a placeholder")


def key_session(E, tm, client, name, var, key, trust, ready, quit_cmd, extra=()):
    """A client with an API key (the model fake of E): trust answered, two prompts; the
    upstream got the real key; no file the box could write holds it."""
    up = E.start_models(REPLY)
    n = len(E.models_requests())
    env = E.env({var: key, "TERM": "xterm-256color",
                 "CODEX_HOME": os.path.join(E.t, "empty-codex-home")})
    who = "%s (API key%s)" % (client, ", " + " ".join(extra) if extra else "")
    tm.start(E.repo, " ".join([ARB, client, name, "--upstream", up] + list(extra)), env)
    s = tm.wait(lambda s: trust in s, who + ": the folder-trust question")
    C.ok(s is not None, who + ": asks whether to trust the workspace's folder")
    answer_trust(tm, trust)
    # Claude Code asks before using "a custom API key" unless it was approved for the box.
    s = tm.wait(lambda s: ready in s and trust not in s or "Detected a custom API key" in s,
                who + ": the prompt")
    C.ok(s is not None and "Detected a custom API key" not in s,
         who + ": no question about the key; the prompt appears")
    converse(tm, who, ready, trust, time.time(), quit_cmd)
    calls = [r for r in E.models_requests()[n:] if r["path"].startswith("/v1/")]
    creds = [r["headers"].get("x-api-key") or r["headers"].get("authorization", "")[7:]
             for r in calls]
    C.ok(len(calls) >= 2 and all(c == key for c in creds),
         who + ": every call carried the real key (%d calls)" % len(calls))
    scan_box(E, who, name, [key], control=REPLY)


def opencode_session(E, tm):
    ak = "sk-ant-api03-REAL-" + os.urandom(8).hex()
    up = E.start_models(REPLY)
    env = E.env({"ANTHROPIC_API_KEY": ak, "TERM": "xterm-256color"})
    tm.start(E.repo, "%s opencode otty --upstream %s" % (ARB, up), env)
    converse(tm, "opencode", "Ask anything", "\x00", time.time(), "/exit")
    calls = [r for r in E.models_requests() if r["path"] == "/v1/messages"]
    C.ok(len(calls) >= 2 and all(r["headers"].get("x-api-key") == ak for r in calls),
         "opencode: every call carried the real key (%d calls)" % len(calls))
    scan_box(E, "opencode", "otty", [ak], control=REPLY)


def main():
    if not shutil.which("tmux"):
        skip("tmux is not installed (apt-get install tmux)")
    with Env("e2e-interactive") as E:
        prefix = install_clients(E, C)
        E.path = os.path.join(prefix, "node_modules", ".bin") + ":" + E.path
        tm = Tmux(E.t)
        try:
            claude_session(E, tm)
            codex_session(E, tm)
            opencode_session(E, tm)
            ak = "sk-ant-api03-REAL-" + os.urandom(8).hex()
            ok = "sk-proj-REAL-" + os.urandom(8).hex()
            key_session(E, tm, "claude", "ktty", "ANTHROPIC_API_KEY", ak, "trust this folder",
                        "\u276f", "/exit")
            key_session(E, tm, "claude", "kntty", "ANTHROPIC_API_KEY", ak, "trust this folder",
                        "\u276f", "/exit", extra=("--net",))
            os.makedirs(os.path.join(E.t, "empty-codex-home"), exist_ok=True)
            key_session(E, tm, "codex", "xktty", "OPENAI_API_KEY", ok, "Trust this folder",
                        "Ask Codex to do anything", "/quit")
        finally:
            if tm.sock:
                tm.run("kill-server", check=False)
    C.finish()


if __name__ == "__main__":
    main()
