#!/usr/bin/env python3
"""The agent launchers with fake clients (label e2e): `arborinth claude|codex|opencode` in
real bubblewrap boxes, each client a script that reports what it sees. Checks: the workspace
is created from --rev, the client starts in its workdir with its arguments, its base URL and
key are the relay and the placeholder, a model call through the relay reaches the fake API
with the real key, config lives under NAME/home and persists, host settings are imported,
credential files are not visible (controls: they exist on the host), the key is in no file
or process the box can read (control: the same search finds the placeholder), --explain,
--client at a path the box hides, a missing client, input errors."""
import json
import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, HERE, need_box  # noqa: E402

need_box()
C = Checks()
KEYS = {"claude": "sk-ant-api03-E2EKEY-" + os.urandom(10).hex(),
        "codex": "sk-proj-E2EKEY-" + os.urandom(10).hex()}
KEYS["opencode"] = KEYS["claude"]
KEYVAR = {"claude": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY",
          "opencode": "ANTHROPIC_API_KEY"}
REPLY = "E2E-FAKE-REPLY-7"


def install_fake(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copy(os.path.join(HERE, "e2e_fake_client.py"), path)
    os.chmod(path, 0o755)


def run(E, client, name, *opts, args=(), env=None):
    check = [os.path.join(E.t, p) for p in E.secrets]
    e = {KEYVAR[client]: KEYS[client]}
    e.update(env or {})
    cp = E.arb(client, name, "--upstream", E.upstream, "--env", "E2E_CHECK=" + json.dumps(check),
               *opts, "--", *args, env=e)
    rep = None
    if cp.returncode == 0:
        try:
            rep = json.loads(cp.stdout)
        except ValueError:
            C.ok(False, "%s: report is not JSON: %r" % (client, cp.stdout[-500:]))
    return cp, rep


def common(E, client, name, cp, rep, args):
    what = client + ": "
    if not C.eq(0, cp.returncode, what + "exit status (stderr %r)" % cp.stderr[-2000:]) or not rep:
        return
    ws = E.ws(name)
    C.eq(os.path.join(ws, "workdir"), rep["cwd"], what + "starts in the workdir")
    C.eq(list(args), rep["argv"][-len(args):], what + "client arguments after -- unchanged")
    C.eq(E.home, rep["env"].get("HOME"), what + "HOME")
    C.eq(200, rep["call"][0], what + "model call through the relay (%r)" % rep["call"])
    C.ok(REPLY in rep["call"][1], what + "reply from the fake API")
    key = KEYS[client]
    C.ok(key not in cp.stdout and key not in cp.stderr, what + "no key in the output")
    C.ok(key not in rep["visible"], what + "no file or process in the box holds the key")
    C.ok(all(key not in v for v in rep["env"].values()), what + "environment holds no key")
    ph = [v for k, v in rep["env"].items() if k.endswith("_API_KEY")]
    C.ok(ph and all(p.startswith("arb-") and "placeholder" in p for p in ph),
         what + "keys in the box are placeholders (%r)" % ph)
    C.ok(ph and ph[0] in rep["visible"], what + "control: the same search finds the placeholder")
    for p, seen in rep["exists"].items():
        C.ok(not seen, what + "credential file %s not visible" % p)
        C.ok(os.path.exists(p), what + "control: %s exists on the host" % p)
    C.ok(not any("SECRET-" in v for v in rep["env"].values()) and "SECRET-" not in
         rep["visible"], what + "no host secret readable in the box")
    C.eq("second\n", rep["readme"], what + "workspace at HEAD")
    C.eq(True, rep["marker_written"], what + "config directory writable")
    C.eq(None, rep["marker_before"], what + "fresh config directory")
    reqs = [r for r in E.models_requests() if r["headers"].get("x-arb-client") == client or True]
    last = reqs[-1] if reqs else {}
    got = last.get("headers", {}).get("x-api-key") or \
        last.get("headers", {}).get("authorization", "").replace("Bearer ", "")
    C.eq(key, got, what + "the fake API received the real key")


def main():
    with Env("e2e-launch") as E:
        E.upstream = E.start_models(REPLY)
        # claude on PATH; codex under the host's /tmp (the box has its own /tmp); opencode
        # under the fake $HOME, not on PATH (the box hides $HOME): both need the launcher's
        # read-only bind at the host path.
        install_fake(os.path.join(E.bin, "claude"))
        hidden_tmp = os.path.join("/tmp", os.path.basename(E.t) + "-client")
        install_fake(os.path.join(hidden_tmp, "codex"))
        install_fake(os.path.join(E.home, "tools", "opencode"))
        try:
            test_claude(E)
            test_codex(E, os.path.join(hidden_tmp, "codex"))
            test_opencode(E, os.path.join(E.home, "tools", "opencode"))
            test_errors(E)
            test_limits(E)
            test_reach(E)
        finally:
            shutil.rmtree(hidden_tmp, ignore_errors=True)
    C.finish()


def test_claude(E):
    args = ("-p", "hello there", "--flag")
    cp, rep = run(E, "claude", "c1", args=args)
    common(E, "claude", "c1", cp, rep, args)
    if rep:
        env = rep["env"]
        C.eq(os.path.join(E.home, ".claude"), env.get("CLAUDE_CONFIG_DIR"), "CLAUDE_CONFIG_DIR")
        C.eq("1", env.get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), "non-essential traffic off")
        C.eq("http://127.0.0.1:8713", env.get("ANTHROPIC_BASE_URL"), "ANTHROPIC_BASE_URL")
        C.eq("claude-host-model", env.get("ANTHROPIC_MODEL"), "host model imported")
    marker = os.path.join(E.ws("c1"), "home", ".claude", "e2e-marker")
    C.ok(os.path.exists(marker), "config lands in NAME/home/.claude on the host")
    # Second run: same workspace, the session state is still there.
    cp, rep = run(E, "claude", "c1", "--model", "claude-opt", args=("x",))
    C.eq(0, cp.returncode, "claude second run (%s)" % cp.stderr[-500:])
    if rep:
        C.eq("run\n", rep["marker_before"], "config persists per workspace")
        C.eq("claude-opt", rep["env"].get("ANTHROPIC_MODEL"), "--model wins over the host's")
    # Another workspace has its own config.
    cp, rep = run(E, "claude", "c2", "--rev", "HEAD~1", args=("y",))
    C.eq(0, cp.returncode, "claude in c2 from --rev (%s)" % cp.stderr[-500:])
    if rep:
        C.eq(None, rep["marker_before"], "another workspace has its own config")
        C.eq("first\n", rep["readme"], "workspace created from --rev HEAD~1")
    cp = E.arb("claude", "c2", "--rev", "HEAD", "--", "z", env={KEYVAR["claude"]: "k"})
    C.one_line_error(cp, 1, "--rev only chooses the base of a new one", "--rev on a different base")
    # --explain: the profile and argv, nothing runs, nothing is created.
    n_before = len(E.models_requests())
    cp = E.arb("claude", "c1", "--explain", "--", "-p", "hi", env={KEYVAR["claude"]: KEYS["claude"]})
    C.eq(0, cp.returncode, "--explain (%s)" % cp.stderr)
    C.ok("command    %s -p hi" % os.path.join(E.bin, "claude") in cp.stdout,
         "--explain shows the client argv")
    C.ok("the Claude Code client" in cp.stdout and "CLAUDE_CONFIG_DIR=" in cp.stdout and
         "bwrap" in cp.stdout, "--explain shows mounts, environment and argv")
    C.ok(KEYS["claude"] not in cp.stdout, "--explain shows no key")
    C.eq(n_before, len(E.models_requests()), "--explain ran nothing")
    # A workspace that does not exist yet: said, the box still shown, nothing created.
    cp = E.arb("claude", "c9", "--explain", env={KEYVAR["claude"]: KEYS["claude"]})
    C.eq(0, cp.returncode, "--explain on a missing workspace (%s)" % cp.stderr)
    C.ok("'c9' does not exist yet: a launch creates it at HEAD" in cp.stdout and
         "--explain creates nothing" in cp.stdout, "--explain says what would be created")
    C.ok("== mounts by destination" in cp.stdout and
         "workspaces/c9/workdir" in cp.stdout, "--explain still shows the box")
    C.ok(not os.path.exists(E.ws("c9")), "--explain created no workspace")
    cp = E.arb("workspace", "list", "--json")
    C.ok("c9" not in [w["name"] for w in json.loads(cp.stdout)],
         "--explain added no workspace row")


def test_codex(E, client):
    args = ("exec", "do it")
    cp, rep = run(E, "codex", "x1", "--client", client, args=args)
    common(E, "codex", "x1", cp, rep, args)
    if rep:
        env, argv = rep["env"], rep["argv"]
        C.eq(os.path.join(E.home, ".codex"), env.get("CODEX_HOME"), "CODEX_HOME")
        C.eq(env.get("OPENAI_API_KEY"), env.get("CODEX_API_KEY"), "CODEX_API_KEY = placeholder")
        C.ok('model="gpt-host-model"' in argv and 'model_reasoning_effort="high"' in argv,
             "host model and effort imported as -c (%r)" % argv)
        C.ok('model_provider="arborinth"' in argv and
             any("127.0.0.1:8714/v1" in a and "supports_websockets=false" in a for a in argv),
             "codex provider at the relay (%r)" % argv)
        C.ok(any(m == os.path.dirname(client) or m == client for m in rep["mounts"]),
             "client under the host's /tmp bound at its path")


def test_opencode(E, client):
    args = ("run", "hi")
    cp, rep = run(E, "opencode", "o1", "--client", client, args=args)
    common(E, "opencode", "o1", cp, rep, args)
    if rep:
        env, cfg = rep["env"], rep.get("opencode_config", {})
        C.eq("anthropic/claude-host-oc", cfg.get("model"), "opencode model from host config")
        opts = cfg.get("provider", {}).get("anthropic", {}).get("options", {})
        C.eq("http://127.0.0.1:8713/v1", opts.get("baseURL"), "opencode provider at the relay")
        C.eq(env.get("ANTHROPIC_API_KEY"), opts.get("apiKey"), "opencode key = placeholder")
        for v in ("OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH"):
            C.eq("1", env.get(v), v)
        C.ok(client in rep["mounts"], "client under the hidden $HOME bound at its path")
    cp, rep = run(E, "opencode", "o1", "--client", client, "--provider", "openai",
                  "--model", "gpt-x", args=("run",),
                  env={"OPENAI_API_KEY": KEYS["codex"]})
    C.eq(0, cp.returncode, "opencode --provider openai (%s)" % cp.stderr[-300:])
    if rep:
        cfg = rep.get("opencode_config", {})
        C.eq("openai/gpt-x", cfg.get("model"), "opencode --model with --provider")
        C.eq("http://127.0.0.1:8714/v1",
             cfg.get("provider", {}).get("openai", {}).get("options", {}).get("baseURL"),
             "opencode openai provider at the relay")


def test_reach(E):
    """An upstream that cannot be reached is said at once, in one line, before anything is
    created or run: a name that does not resolve, a local port nothing listens on. Control:
    the fake models server (it listens) launches; --explain checks nothing."""
    true = shutil.which("true")
    env = {KEYVAR["claude"]: "k", "https_proxy": "", "HTTPS_PROXY": "", "http_proxy": "",
           "HTTP_PROXY": "", "all_proxy": "", "ALL_PROXY": ""}
    with socket.socket() as s:  # a port nothing listens on: bound, never listened
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        for up, pattern in (("http://no-such-host.invalid", "no-such-host.invalid does not "
                             "resolve"),
                            ("http://127.0.0.1:%d" % port, "127.0.0.1 port %d cannot be "
                             "reached (Connection refused)" % port)):
            t0 = time.time()
            cp = E.arb("claude", "reach", "--client", true, "--upstream", up, env=env)
            took = time.time() - t0
            C.one_line_error(cp, 1, pattern, "unreachable %s" % up)
            C.ok("the client would retry for minutes" in cp.stderr, "the line says why it matters")
            C.ok(took < 10, "unreachable %s: failed in %.1f s" % (up, took))
            C.ok(not os.path.exists(E.ws("reach")), "unreachable %s: no workspace made" % up)
            cp = E.arb("claude", "reach", "--client", true, "--upstream", up, "--explain",
                       env=env)
            C.eq(0, cp.returncode, "--explain does not check the upstream (%s)" % cp.stderr)
    cp = E.arb("claude", "reach", "--client", true, "--upstream", E.upstream, env=env)
    C.eq(0, cp.returncode, "control: a listening upstream launches (%s)" % cp.stderr[-300:])


def test_limits(E):
    """The launchers pass shell's limits on: --timeout ends the client (exit 124), --explain
    shows every limit and the tool-manager switch; bad values are the launcher's usage
    errors."""
    sleep = shutil.which("sleep")
    t0 = time.time()
    cp = E.arb("claude", "lim", "--client", sleep, "--upstream", E.upstream, "--timeout", "1s",
               "--", "30",
               env={KEYVAR["claude"]: "k"}, timeout=120)
    took = time.time() - t0
    C.eq(124, cp.returncode, "--timeout 1s ends the client: exit 124 (%s)" % cp.stderr[-300:])
    C.ok(took < 20, "--timeout: the launcher returned in %.1f s, not after the client's 30" %
         took)
    C.ok("--timeout" in cp.stderr, "--timeout: one line says why (%r)" % cp.stderr[-300:])
    cp = E.arb("claude", "lim", "--client", sleep, "--timeout", "2m", "--memory", "256M",
               "--pids", "300", "--cpus", "1.5", "--no-tool-managers", "--explain",
               env={KEYVAR["claude"]: "k"})
    C.eq(0, cp.returncode, "--explain with limits (%s)" % cp.stderr[-300:])
    C.ok("timeout    120000 ms" in cp.stdout, "--explain shows the timeout")
    C.ok("memory 256 MiB" in cp.stdout and "pids 300" in cp.stdout and "cpus 1.500" in cp.stdout,
         "--explain shows the limits (%r)" % [ln for ln in cp.stdout.splitlines()
                                              if "limits" in ln])
    C.ok("tool-manager mounts turned off" in cp.stdout, "--explain shows --no-tool-managers")
    for args, pattern in ((["--memory", "12X"], "--memory '12X'"),
                          (["--timeout", "soon"], "--timeout 'soon'"),
                          (["--cpus", "0"], "--cpus '0'"),
                          (["--pids", "-3"], "--pids '-3'")):
        C.one_line_error(E.arb("codex", "lim2", *args), 2, pattern, "codex " + " ".join(args))
    C.ok(not os.path.exists(os.path.join(E.repo, ".git", "arborinth", "workspaces", "lim2")),
         "a refused limit created no workspace")


def test_errors(E):
    ws_before = sorted(os.listdir(os.path.join(E.repo, ".git", "arborinth", "workspaces")))
    cp = E.arb("claude", "n1", env={"PATH": "/usr/bin:/bin", KEYVAR["claude"]: "k"})
    C.one_line_error(cp, 1, "npm install -g @anthropic-ai/claude-code", "missing client")
    cp = E.arb("codex", "n1", env={"PATH": "/usr/bin:/bin"})
    C.one_line_error(cp, 1, "npm install -g @openai/codex", "missing codex")
    cp = E.arb("opencode", "n1", env={"PATH": "/usr/bin:/bin"})
    C.one_line_error(cp, 1, "npm install -g opencode-ai", "missing opencode")
    cp = E.arb("claude", "n1", "--client", "/nonexistent/claude")
    C.one_line_error(cp, 1, "--client /nonexistent/claude is not an executable", "bad --client")
    cp = E.arb("claude")
    C.one_line_error(cp, 2, "missing workspace NAME", "no NAME")
    cp = E.arb("claude", "n1", "extra")
    C.one_line_error(cp, 2, "client arguments go after --", "stray argument")
    cp = E.arb("claude", "n1", "--bogus")
    C.one_line_error(cp, 2, "unknown option '--bogus'", "unknown option")
    cp = E.arb("claude", "bad/name", "--", "x")
    C.eq(2, cp.returncode, "bad workspace name (%s)" % cp.stderr)
    cp = E.arb("claude", "n1", "--provider", "openai")
    C.one_line_error(cp, 2, "--provider is only for opencode", "--provider on claude")
    cp = E.arb("claude", "n1", "--upstream", "ftp://x")
    C.one_line_error(cp, 2, "is not an http(s) URL", "bad --upstream")
    cp = E.arb("claude", "n1", "--auth", "api-key", env={"ANTHROPIC_API_KEY": ""})
    C.one_line_error(cp, 1, "ANTHROPIC_API_KEY", "--auth api-key without a key")
    # No key and no login: the error names the login file and how to log in.
    empty = os.path.join(E.t, "no-login")
    os.makedirs(empty, exist_ok=True)
    cp = E.arb("claude", "n1", env={"CLAUDE_CONFIG_DIR": empty})
    C.one_line_error(cp, 1, "'claude auth login'", "no key and no login")
    C.ok(os.path.join(empty, ".credentials.json") in cp.stderr, "no login: names the file")
    cp = E.arb("codex", "n1", "--client", "/bin/true", env={"CODEX_HOME": empty})
    C.one_line_error(cp, 1, "'codex login'", "codex: no key and no login")
    cp = E.arb("claude", "n1", "--auth", "login", env={"CLAUDE_CONFIG_DIR": empty})
    C.one_line_error(cp, 1, "does not exist", "--auth login without a login")
    bad = os.path.join(E.t, "bad-login")
    E.write(os.path.join(bad, ".credentials.json"), "{not json", 0o600)
    cp = E.arb("claude", "n1", env={"CLAUDE_CONFIG_DIR": os.path.join(E.t, bad)})
    C.one_line_error(cp, 1, "is not a Claude Code subscription login file", "malformed login")
    old = os.path.join(E.t, "old-login")
    E.write(os.path.join(old, ".credentials.json"), json.dumps({"claudeAiOauth": {
        "accessToken": "sk-ant-oat01-OLD", "refreshToken": "sk-ant-ort01-OLD",
        "expiresAt": 1000}}), 0o600)
    cp = E.arb("claude", "n1", "--token-url", "http://127.0.0.1:9/v1/oauth/token",
               env={"CLAUDE_CONFIG_DIR": os.path.join(E.t, old)})
    C.one_line_error(cp, 1, "could not be refreshed", "expired login, endpoint unreachable")
    C.ok("OLD" not in cp.stderr, "expired login: no token in the message")
    cp = E.arb("opencode", "n1", "--auth", "login")
    C.one_line_error(cp, 2, "has no host login", "--auth login on opencode")
    cp = E.arb("claude", "n1", "--auth", "maybe")
    C.one_line_error(cp, 2, "--auth 'maybe'", "bad --auth")
    cp = E.arb("claude", "n1", "--auth", "login", "--no-upstream-auth")
    C.one_line_error(cp, 2, "--no-upstream-auth is --auth none", "--auth with --no-upstream-auth")
    # OpenCode: providers and keys from the host's OpenCode config and login store.
    oc = os.path.join(E.t, "oc-host")
    xdg = {"XDG_CONFIG_HOME": os.path.join(oc, "conf"), "XDG_DATA_HOME": os.path.join(oc, "data"),
           "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    E.write(os.path.join(oc, "data", "opencode", "auth.json"), json.dumps(
        {"openai": {"type": "oauth", "access": "at-OAUTH", "refresh": "rt-OAUTH", "expires": 1},
         "broken": {"type": "api", "key": "has space"}}), 0o600)
    E.write(os.path.join(oc, "conf", "opencode", "opencode.json"), json.dumps({"provider": {
        "nobase": {"npm": "@ai-sdk/openai-compatible", "options": {}},
        "other": {"npm": "@ai-sdk/anthropic", "options": {"baseURL": "http://127.0.0.1:1"}},
        "broken": {"npm": "@ai-sdk/openai-compatible",
                   "options": {"baseURL": "http://127.0.0.1:1/v1"}, "models": {"m": {}}},
        "empty": {"npm": "@ai-sdk/openai-compatible",
                  "options": {"baseURL": "http://127.0.0.1:1/v1", "apiKey": "k"}}}}), 0o600)
    oc_cli = ["--client", "/bin/true"]
    for prov, pattern, what in (
            ("nope", "provider 'nope' is not anthropic, openai or an OpenAI-compatible",
             "unknown provider"),
            ("nobase", "with an http(s) options.baseURL", "provider without a base URL"),
            ("other", "OpenAI-compatible provider", "provider of another SDK"),
            ("empty", "provider 'empty' lists no model; give --model", "provider without models"),
            ("anthropic", "no key for anthropic in %s" % os.path.join(oc, "data", "opencode",
                                                                   "auth.json"),
             "no key anywhere")):
        cp = E.arb("opencode", "n1", *oc_cli, "--provider", prov, env=xdg)
        C.one_line_error(cp, 1, pattern, "opencode: " + what)
    cp = E.arb("opencode", "n1", *oc_cli, "--provider", "openai", env=xdg)
    C.one_line_error(cp, 1, "is an OpenCode 'oauth' login, which the proxy cannot use",
                     "opencode: an OAuth login of OpenCode's")
    C.ok("OAUTH" not in cp.stderr, "opencode: no token of the login store in the message")
    cp = E.arb("opencode", "n1", *oc_cli, "--provider", "broken", env=xdg)
    C.one_line_error(cp, 1, "must be 1-1024 printable", "opencode: a malformed key in auth.json")
    C.ok("has space" not in cp.stderr, "opencode: the malformed key is not in the message")
    cp = E.arb("opencode", "n1", *oc_cli, "--provider", "openai", "--model", "anthropic/x",
               env=dict(xdg, OPENAI_API_KEY="k"))
    C.one_line_error(cp, 1, "--model 'anthropic/x' is not of provider 'openai'",
                     "opencode: --model of another provider")
    C.eq(ws_before, sorted(os.listdir(os.path.join(E.repo, ".git", "arborinth", "workspaces"))),
         "failed launches created no workspace")
    cp = E.arb("claude", "--help")
    C.ok(cp.returncode == 0 and "ANTHROPIC_BASE_URL" in cp.stdout, "claude --help")


if __name__ == "__main__":
    main()
