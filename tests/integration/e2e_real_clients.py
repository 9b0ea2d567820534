#!/usr/bin/env python3
"""The real agent CLIs in real boxes (label e2e): Claude Code (@anthropic-ai/claude-code),
Codex (@openai/codex) and OpenCode (opencode-ai), installed by this test from the npm
registry into a test-local prefix (never into the repository), each run non-interactively
through its launcher against a local fake model API that streams a canned reply.

For each: the run prints the reply; the fake API received the real key (and never the
placeholder); no file the box could write (the workspace's home, tmp, cache and view) holds
the key (control: the same search finds the reply the client stored in its session files,
or the placeholder-free reply in the workspace); the client ran from its host path.

A failed npm install fails the test, unless `npm ping` shows the registry is unreachable
(then it skips, saying so). ARB_NPM_PREFIX=DIR reuses an existing install."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, install_clients, need_box, search_files  # noqa: E402

need_box()
C = Checks()
REPLY = "ARBORINTH-REAL-CLIENT-REPLY-31415"


def check_run(E, client, name, cp, key, started):
    what = client + ": "
    C.eq(0, cp.returncode, what + "exit status (stderr %r)" % cp.stderr[-3000:])
    C.ok(REPLY in cp.stdout, what + "prints the reply (stdout %r)" % cp.stdout[-1000:])
    reqs = E.models_requests()[started:]
    model_calls = [r for r in reqs if r["path"] in ("/v1/messages", "/v1/responses",
                                                    "/v1/chat/completions")]
    C.ok(model_calls, what + "the fake API was called (%r)" % [r["path"] for r in reqs])
    creds = [r["headers"].get("x-api-key") or
             r["headers"].get("authorization", "").replace("Bearer ", "") for r in model_calls]
    C.ok(creds and all(c == key for c in creds), what + "every call carried the real key")
    C.ok(all("placeholder" not in str(r["headers"]) for r in reqs),
         what + "the placeholder never reached the upstream")
    C.ok(key not in cp.stdout and key not in cp.stderr, what + "no key in the output")
    ws = E.ws(name)
    roots = [os.path.join(ws, d) for d in ("home", "tmp", "cache", "layer")]
    C.eq([], search_files(roots, key), what + "no file the box could write holds the key")
    C.ok(search_files([os.path.join(ws, "home")], REPLY) or
         search_files([os.path.join(ws, "home")], "ARBORINTH-REAL"),
         what + "control: the same search finds the reply in the client's session files")


def start_oauth_fake(E, seeds, name):
    """A second fake API that also plays the OAuth token endpoints (own log)."""
    log = os.path.join(E.t, name + ".log")
    argv = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "e2e_fake_models.py"), "--log", log, "--reply", REPLY]
    for s_ in seeds:
        argv += ["--oauth", ",".join(str(x) for x in s_)]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    E.procs.append(p)
    port = int(p.stdout.readline())
    return "http://127.0.0.1:%d" % port, log


def oauth_state(url):
    import urllib.request
    with urllib.request.urlopen(url + "/oauth-state", timeout=30) as r:
        return json.loads(r.read())


def check_login_run(E, client, name, cp, url, log, secrets, box_file):
    what = client + " (login): "
    C.eq(0, cp.returncode, what + "exit status (stderr %r)" % cp.stderr[-3000:])
    C.ok(REPLY in cp.stdout, what + "prints the reply (stdout %r)" % cp.stdout[-1000:])
    st = oauth_state(url)
    with open(log) as f:
        reqs = [json.loads(x) for x in f if x.strip()]
    calls = [r for r in reqs if r["path"].endswith(("/v1/messages", "/responses"))]
    C.ok(calls, what + "the fake API was called (%r)" % [r["path"] for r in reqs])
    bearers = [r["headers"].get("authorization", "")[7:] for r in calls]
    C.ok(bearers and all(b in st["access"] for b in bearers),
         what + "every call carried a real token the endpoint issued")
    C.ok(all("placeholder" not in json.dumps(r["headers"]) for r in reqs),
         what + "no placeholder reached the upstream")
    C.ok(not [r for r in reqs if r["path"].endswith("/oauth/token")
              and "placeholder" in json.dumps(r.get("body"))],
         what + "the token endpoint never saw anything the box chose")
    ws = E.ws(name)
    roots = [os.path.join(ws, d) for d in ("home", "tmp", "cache", "layer")]
    for tok in secrets + st["access"] + st["refresh"] + st["spent"]:
        C.eq([], search_files(roots, tok), what + "no file the box could write holds %s..." %
             tok[:24])
        C.ok(tok not in cp.stdout and tok not in cp.stderr, what + "no token in the output")
    C.ok(search_files([os.path.join(ws, "home")], "placeholder"),
         what + "control: the same search finds the placeholders in the box's login file")
    C.ok(os.path.exists(os.path.join(ws, "home", box_file)),
         what + "the box has its own login file " + box_file)


def codex_host_login(E, name, expires_in=3600):
    """A host CODEX_HOME with a ChatGPT login (tokens valid for expires_in s) and a fake API
    that issued them: (CODEX_HOME, access token, refresh token, fake URL, fake log)."""
    import time
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import e2e_fake_models as fm
    exp = int(time.time()) + expires_in
    acct = {"chatgpt_account_id": "acct-REAL-7777", "chatgpt_plan_type": "pro",
            "chatgpt_user_id": "user-REAL-1"}
    access = fm.jwt({"exp": exp, "https://api.openai.com/auth": acct})
    rt = "rt-REAL-" + os.urandom(8).hex()
    url, log = start_oauth_fake(E, [(access, rt, exp)], "oauth-" + name)
    xdir = os.path.join(E.t, "host-" + name)
    os.makedirs(xdir)
    with open(os.path.join(xdir, "auth.json"), "w") as f:
        json.dump({"OPENAI_API_KEY": None, "tokens": {
            "id_token": fm.jwt({"exp": exp, "email": "dev@example.com",
                                "https://api.openai.com/auth": acct}),
            "access_token": access, "refresh_token": rt, "account_id": "acct-REAL-7777"},
            "last_refresh": "2026-12-01T00:00:00Z"}, f)
    return xdir, access, rt, url, log


def login_runs(E):
    """Subscription / ChatGPT logins: the host token nears expiry during the run."""
    import time
    now = time.time()
    a0, r0 = "sk-ant-oat01-REAL-" + os.urandom(8).hex(), "sk-ant-ort01-REAL-" + os.urandom(8).hex()
    url, log = start_oauth_fake(E, [(a0, r0, now + 303)], "oauth-claude")
    cdir = os.path.join(E.t, "host-claude")
    os.makedirs(cdir)
    with open(os.path.join(cdir, ".credentials.json"), "w") as f:
        json.dump({"claudeAiOauth": {"accessToken": a0, "refreshToken": r0,
                                     "expiresAt": int((now + 303) * 1000),
                                     "scopes": ["user:inference", "user:profile"],
                                     "subscriptionType": "max"}}, f)
    os.chmod(os.path.join(cdir, ".credentials.json"), 0o600)
    time.sleep(4)  # inside the refresh margin by the time the client calls
    cp = E.arb("claude", "ccl", "--upstream", url, "--token-url", url + "/v1/oauth/token",
               "--", "-p", "Say the magic words.", env={"CLAUDE_CONFIG_DIR": cdir},
               timeout=300)
    check_login_run(E, "claude", "ccl", cp, url, log, [a0, r0], ".claude/.credentials.json")
    st = oauth_state(url)
    C.ok(st["refreshes"] >= 1, "claude (login): the proxy refreshed the host token")
    with open(os.path.join(cdir, ".credentials.json")) as f:
        host = json.load(f)["claudeAiOauth"]
    C.ok(host["accessToken"] in st["access"] and host["accessToken"] != a0,
         "claude (login): the host file holds the refreshed token (the host's claude works)")

    xdir, access, rt, url, log = codex_host_login(E, "codex")
    cp = E.arb("codex", "cxl", "--upstream", url, "--token-url", url + "/oauth/token",
               "--", "exec", "--skip-git-repo-check", "Say the magic words.",
               env={"CODEX_HOME": xdir}, timeout=300)
    check_login_run(E, "codex", "cxl", cp, url, log, [access, rt], ".codex/auth.json")


def net_runs(E, up, ak, ok):
    """--net: the proxy on the host's loopback; each client reads the session's token from
    its key file (Claude Code through an apiKeyHelper, OpenCode through {file:...}, Codex
    from its auth.json); no key variable, no token on a command line."""
    for client, name, env, args in (
            ("claude", "ccn", {"ANTHROPIC_API_KEY": ak}, ["-p", "Say the magic words."]),
            ("codex", "cxn", {"OPENAI_API_KEY": ok},
             ["exec", "--skip-git-repo-check", "Say the magic words."]),
            ("opencode", "ocn", {"ANTHROPIC_API_KEY": ak}, ["run", "Say the magic words."])):
        n = len(E.models_requests())
        cp = E.arb(client, name, "--net", "--upstream", up, "--", *args, env=env, timeout=300)
        check_run(E, client + " --net", name, cp, env[next(iter(env))], n)
        ex = E.arb(client, name, "--net", "--upstream", up, "--explain", env=env)
        C.eq(0, ex.returncode, client + " --net --explain (%r)" % ex.stderr[-500:])
        C.ok("placeholder-" not in ex.stdout and "_API_KEY=" not in ex.stdout,
             client + " --net: no token in the box's environment or argv (--explain)")
        ctl = E.arb(client, name, "--upstream", up, "--explain", env=env)
        C.ok("placeholder-" in ctl.stdout,
             client + ": control: without --net the placeholder is in the box's environment")
    # Codex with a ChatGPT login and --net: the login's placeholders, the proxy on loopback.
    xdir, access, rt, url, log = codex_host_login(E, "codex-net")
    cp = E.arb("codex", "cxln", "--net", "--upstream", url, "--token-url", url + "/oauth/token",
               "--", "exec", "--skip-git-repo-check", "Say the magic words.",
               env={"CODEX_HOME": xdir}, timeout=300)
    check_login_run(E, "codex --net", "cxln", cp, url, log, [access, rt], ".codex/auth.json")


def opencode_runs(E, up):
    """OpenCode with the host's own OpenCode setup: a key from its login store (auth.json),
    an OpenAI-compatible provider from its opencode.jsonc (comments, trailing commas, the key
    from {env:VAR}), the same with --net, and --no-upstream-auth for a server that needs no
    key. Only the base URL, model, names and limits are imported (control: a header the host
    config sets never reaches the upstream)."""
    data, conf = os.path.join(E.t, "oc-data"), os.path.join(E.t, "oc-conf")
    os.makedirs(os.path.join(data, "opencode"))
    os.makedirs(os.path.join(conf, "opencode"))
    ak = "sk-ant-api03-AUTHJSON-" + os.urandom(8).hex()
    with open(os.path.join(data, "opencode", "auth.json"), "w") as f:
        json.dump({"anthropic": {"type": "api", "key": ak}}, f)
    xdg = {"XDG_DATA_HOME": data, "XDG_CONFIG_HOME": conf}
    n = len(E.models_requests())
    cp = E.arb("opencode", "oca", "--upstream", up, "--", "run", "Say the magic words.",
               env=xdg, timeout=300)
    check_run(E, "opencode (auth.json)", "oca", cp, ak, n)
    ex = E.arb("opencode", "oca", "--upstream", up, "--explain", env=xdg)
    C.ok("credential: API key from %s/opencode/auth.json (anthropic)" % data in ex.stdout,
         "opencode (auth.json): --explain names the login store (%r)" % ex.stdout[:300])

    mk = "sk-myprov-REAL-" + os.urandom(8).hex()
    with open(os.path.join(conf, "opencode", "opencode.jsonc"), "w") as f:
        f.write("""// the host's own OpenCode config
{
  "model": "myprov/m1", /* its default model */
  "provider": {
    "myprov": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "My Gateway",
      "options": {"baseURL": "%s/v1", "apiKey": "{env:MYPROV_KEY}",
                  "headers": {"X-Host-Only": "host-header-value"},},
      "models": {"m1": {"name": "Model One", "limit": {"context": 64000, "output": 4096}},},
    },
  },
}
""" % up)
    env = dict(xdg, MYPROV_KEY=mk)
    for name, extra in (("occ", []), ("occn", ["--net"])):
        n = len(E.models_requests())
        cp = E.arb("opencode", name, *extra, "--", "run", "Say the magic words.", env=env,
                   timeout=300)
        what = "opencode (custom provider%s)" % (" --net" if extra else "")
        check_run(E, what, name, cp, mk, n)
        reqs = E.models_requests()[n:]
        C.ok([r for r in reqs if r["path"] == "/v1/chat/completions" and
              (r.get("body") or {}).get("model") == "m1"],
             what + ": chat completions for model m1 at the provider's base URL")
        C.ok(all("x-host-only" not in r["headers"] for r in reqs),
             what + ": the host config's other options were not imported")
    ex = E.arb("opencode", "occ", "--explain", env=env)
    C.ok('"limit":{"context":64000,"output":4096}' in ex.stdout and "My Gateway" in ex.stdout
         and "X-Host-Only" not in ex.stdout and mk not in ex.stdout,
         "opencode (custom provider): the box's config has the name and limits only")
    n = len(E.models_requests())
    cp = E.arb("opencode", "occ", "--no-upstream-auth", "--", "run", "Say the magic words.",
               env=xdg, timeout=300)
    C.eq(0, cp.returncode, "opencode --no-upstream-auth: exit (%r)" % cp.stderr[-1000:])
    C.ok(REPLY in cp.stdout, "opencode --no-upstream-auth: the reply")
    calls = [r for r in E.models_requests()[n:] if r["path"] == "/v1/chat/completions"]
    C.ok(calls and all("authorization" not in r["headers"] for r in calls),
         "opencode --no-upstream-auth: the upstream got no credential")
    cp = E.arb("opencode", "occ", "--", "run", "x", env=xdg)
    C.ok(cp.returncode == 1 and "no credential for myprov" in cp.stderr and
         "MYPROV_KEY" in cp.stderr and "--no-upstream-auth" in cp.stderr,
         "opencode: no key anywhere: one line naming where it looked (%r)" % cp.stderr)


def main():
    with Env("e2e-real") as E:
        prefix = install_clients(E, C)
        E.path = os.path.join(prefix, "node_modules", ".bin") + ":" + E.path
        up = E.start_models(REPLY)
        ak = "sk-ant-api03-REAL-" + os.urandom(12).hex()
        ok = "sk-proj-REAL-" + os.urandom(12).hex()
        # Claude Code: -p prints the answer and exits.
        n = len(E.models_requests())
        cp = E.arb("claude", "cc", "--upstream", up, "--", "-p", "Say the magic words.",
                   env={"ANTHROPIC_API_KEY": ak}, timeout=300)
        check_run(E, "claude", "cc", cp, ak, n)
        # Codex: exec runs one turn non-interactively.
        n = len(E.models_requests())
        cp = E.arb("codex", "cx", "--upstream", up, "--", "exec", "--skip-git-repo-check",
                   "Say the magic words.", env={"OPENAI_API_KEY": ok}, timeout=300)
        check_run(E, "codex", "cx", cp, ok, n)
        # OpenCode: run sends one message with the anthropic provider at the relay.
        n = len(E.models_requests())
        cp = E.arb("opencode", "oc", "--upstream", up, "--", "run", "Say the magic words.",
                   env={"ANTHROPIC_API_KEY": ak}, timeout=300)
        check_run(E, "opencode", "oc", cp, ak, n)
        login_runs(E)
        net_runs(E, up, ak, ok)
        opencode_runs(E, up)
    C.finish()


if __name__ == "__main__":
    main()
