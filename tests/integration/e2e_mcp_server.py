#!/usr/bin/env python3
"""`arborinth mcp` driven by a real MCP client (label e2e): Claude Code from npm, on the
host as an orchestrator, with `arborinth mcp` as its MCP server and the fake model API
(e2e_fake_models.py --tool-script) asking, turn by turn, to create a workspace, run a
command in its box, fork it and run another, read compare, merge one. The effects are checked where they land: the
workspace and the file the box wrote in its view (not in the origin checkout), the session
in the audit (its argv, its exit status), and what compare answered, as the client sent it
back to the model, and the merge in the origin's branch. Control: apply, offered but not
allowed, never ran.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import ARB, Checks, Env, need_box  # noqa: E402

need_box()
C = Checks()
REPLY = "ARBORINTH-MCP-ORCHESTRATED-31415"


def install_claude(E):
    """Claude Code alone from the npm registry (or ARB_NPM_PREFIX): its executable."""
    prefix = os.environ.get("ARB_NPM_PREFIX")
    if not prefix:
        import e2e_lib
        if not __import__("shutil").which("npm"):
            e2e_lib.skip("npm is not installed")
        prefix = os.path.join(E.t, "npm")
        os.makedirs(prefix)
        cp = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix,
                             "@anthropic-ai/claude-code"], capture_output=True, text=True,
                            timeout=900, env=dict(os.environ, npm_config_update_notifier="false"))
        if cp.returncode != 0:
            ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=120)
            if ping.returncode != 0:
                e2e_lib.skip("the npm registry is unreachable")
            C.ok(False, "npm install failed: %s" % cp.stderr[-2000:])
            C.finish()
    return os.path.join(prefix, "node_modules", ".bin", "claude")


def main():
    with Env("mcpsrv") as E:
        claude = install_claude(E)
        commit = "git -c user.name=agent -c user.email=a@b commit -qm"
        script = [
            {"tool": "mcp__arb__workspace_create", "input": {"name": "agent1"}},
            {"tool": "mcp__arb__shell", "input": {"workspace": "agent1", "argv": [
                "sh", "-c", "echo from-agent > agent.txt && git add agent.txt && %s agent && "
                "echo RAN-IN-BOX; exit 5" % commit]}},
            {"tool": "mcp__arb__workspace_create", "input": {"name": "agent2",
                                                             "from": "agent1"}},
            {"tool": "mcp__arb__shell", "input": {"workspace": "agent2", "argv": [
                "sh", "-c", "echo two > other.txt"]}},
            {"tool": "mcp__arb__compare", "input": {"workspaces": ["agent1", "agent2"]}},
            {"tool": "mcp__arb__merge", "input": {"workspace": "agent1"}},
            {"tool": "mcp__arb__apply", "input": {"workspace": "agent2"}},
        ]
        sf = E.write("script.json", json.dumps(script))
        url = E.start_models(REPLY, ["--tool-script", sf])
        cfg = E.write("mcp.json", json.dumps({"mcpServers": {"arb": {
            "command": ARB, "args": ["--workdir", E.repo, "mcp"]}}}))
        head = subprocess.run(["git", "-C", E.repo, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        cp = subprocess.run(
            [claude, "-p", "Create a workspace, run a command in it, compare.",
             "--mcp-config", cfg, "--strict-mcp-config", "--allowedTools",
             "mcp__arb__workspace_create,mcp__arb__shell,mcp__arb__compare,mcp__arb__merge"],
            capture_output=True, text=True, timeout=300, cwd=E.t, stdin=subprocess.DEVNULL,
            env=E.env({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-fake-e2e",
                       "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}))
        C.ok(REPLY in cp.stdout, "claude ran to its reply (rc %d, stdout %r, stderr %r)" %
             (cp.returncode, cp.stdout[-500:], cp.stderr[-1500:]))
        reqs = E.models_requests()
        offered = set()
        results = []
        for r in reqs:
            body = r.get("body") or {}
            offered.update(t.get("name") for t in body.get("tools") or [] if isinstance(t, dict))
            for m in body.get("messages") or []:
                if isinstance(m.get("content"), list):
                    for c in m["content"]:
                        if isinstance(c, dict) and c.get("type") == "tool_result":
                            results.append(json.dumps(c.get("content")))
        C.ok({"mcp__arb__workspace_create", "mcp__arb__shell", "mcp__arb__compare",
              "mcp__arb__merge"} <= offered, "the client offered arborinth's tools (%r)" %
             sorted(n for n in offered if n and n.startswith("mcp__")))
        # The workspace and the box's write, on disk.
        view = os.path.join(E.ws("agent1"), "workdir")
        C.ok(os.path.isdir(E.ws("agent1")), "the workspace the model asked for exists")
        C.ok(os.path.isfile(os.path.join(E.ws("agent1"), "layer", "agent.txt")),
             "the box's file is in the workspace's layer")
        # The session in the audit.
        au = E.arb("audit", "agent1", "--json")
        rows = [json.loads(x) for x in au.stdout.splitlines() if x.strip()] \
            if not au.stdout.lstrip().startswith("[") else json.loads(au.stdout)
        execs = [r for r in rows if r.get("op") == "exec"]
        exits = [r for r in rows if r.get("op") == "exit"]
        C.ok(any("RAN-IN-BOX" in json.dumps(r.get("argv")) for r in execs),
             "the audit holds the session's argv (%r)" % execs[:2])
        C.ok(any(r.get("exit_status") == 5 for r in exits), "the audit holds its exit status 5")
        # What the tools answered, as the client passed it back.
        C.ok(any("RAN-IN-BOX" in t and '\\"exit\\": 5' in t for t in results),
             "the shell tool's output and exit status reached the model (%r)" % results[:3])
        C.ok(any("agent.txt" in t and "workspaces" in t for t in results),
             "compare's answer names the box's file")
        # The fork, its own write; compare of both; agent1 merged into the origin.
        C.ok(os.path.isfile(os.path.join(E.ws("agent2"), "layer", "other.txt")),
             "the fork's box wrote into the fork")
        C.ok(any("agent2" in t and "other.txt" in t for t in results),
             "compare's answer has the fork and its file")
        C.eq("from-agent\n", subprocess.run(["git", "-C", E.repo, "show", "HEAD:agent.txt"],
                                            capture_output=True, text=True).stdout,
             "merge: agent1's commit is in the origin's branch")
        C.ok(head != subprocess.run(["git", "-C", E.repo, "rev-parse", "HEAD"],
                                    capture_output=True, text=True).stdout.strip(),
             "merge: the origin's branch moved")
        # Control: apply was offered but not allowed: never ran.
        C.ok(not os.path.exists(os.path.join(E.repo, "other.txt")),
             "apply (not allowed) did not run: other.txt not in the origin")
        cmp = E.arb("compare", "--json", "agent1", "agent2")
        got = json.loads(cmp.stdout) if cmp.returncode == 0 else {}
        C.eq([["agent.txt"], ["agent.txt", "other.txt"]],
             [[f["path"] for f in w["files"]] for w in got.get("workspaces", [])],
             "compare (CLI) agrees")
    C.finish()


main()
