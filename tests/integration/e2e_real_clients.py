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
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, need_box, search_files, skip  # noqa: E402

need_box()
C = Checks()
REPLY = "ARBORINTH-REAL-CLIENT-REPLY-31415"
PACKAGES = ["@anthropic-ai/claude-code", "@openai/codex", "opencode-ai"]


def install(E):
    prefix = os.environ.get("ARB_NPM_PREFIX")
    if prefix:
        return prefix
    if not shutil.which("npm"):
        skip("npm is not installed (apt-get install npm)")
    prefix = os.path.join(E.t, "npm")
    os.makedirs(prefix)
    cp = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix] +
                        PACKAGES, capture_output=True, text=True, timeout=900,
                        env=dict(os.environ, npm_config_update_notifier="false"))
    if cp.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=120)
        if ping.returncode != 0:
            skip("the npm registry is unreachable (npm ping: %s)" %
                 (ping.stderr.strip().splitlines() or ["?"])[-1])
        print(cp.stdout[-3000:], cp.stderr[-3000:], file=sys.stderr)
        C.ok(False, "npm install %s failed although the registry answers" % " ".join(PACKAGES))
        C.finish()
    return prefix


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


def main():
    with Env("e2e-real") as E:
        prefix = install(E)
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
    C.finish()


if __name__ == "__main__":
    main()
