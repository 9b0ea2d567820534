#!/usr/bin/env python3
"""Local stdio MCP servers of the host's client config, started inside the box (label e2e).

The host's Claude Code (~/.claude.json), Codex (~/.codex/config.toml) and OpenCode
(~/.config/opencode/opencode.json) each declare a local MCP server (a real one made by this
test: tests/integration/mcp_probe_server.py, JSON-RPC over stdio, kept under the host's
$HOME), a second local one no bind file names, and a remote one. A bind file shows the
server's folder (ro) and names it in mcp = [...]: by name (Claude Code), by its full path as
"~/..." (Codex), by "*" (OpenCode). The real client, run by its launcher against the fake
model API (which calls the offered tool whose name contains "box_probe"), lists the server's
tool and calls it; the tool's answer says where the server ran:

- inside the box (PID 1 is bubblewrap's, not the host's init);
- without the env its declaration sets (a token) and without the host's secrets (control:
  the host sees them);
- without a route to the host's loopback (control: the host reaches the same port);
- writing into the workspace's view (the file is in the workspace's layer, not in the
  origin checkout);
and the unnamed and remote servers were never offered, and the launcher said why (remote:
stays on the host; not named). Without the ro bind the server is withheld with a hint."""
import json
import os
import shutil
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, install_clients, need_box, search_files  # noqa: E402

need_box()
C = Checks()
REPLY = "ARBORINTH-MCP-REPLY-27182"
TOKEN = "SECRET-MCP-TOKEN-" + os.urandom(6).hex()
HERE = os.path.dirname(os.path.abspath(__file__))


def setup(E):
    """The server under the host's $HOME, and the fake API's port (for the reach probe)."""
    d = os.path.join(E.home, "mcp")
    os.makedirs(d)
    server = os.path.join(d, "probe.py")
    shutil.copy(os.path.join(HERE, "mcp_probe_server.py"), server)
    os.chmod(server, 0o755)
    return server


def probe_args(E, marker):
    return [marker, "@" + os.path.join(E.home, ".ssh", "id_ed25519"), str(E.models_port)]


def bind_file(E, name, select, ro=True):
    lines = ['ro = ["~/mcp"]'] if ro else []
    lines.append("mcp = [%s]" % ", ".join(json.dumps(s) for s in select))
    return E.write(name, "\n".join(lines) + "\n")


def results_for(E, started, marker):
    """(offered tool names, the probe's answers with this marker) since request `started`."""
    names, answers = set(), []
    for r in E.models_requests()[started:]:
        body = r.get("body") or {}
        for t in body.get("tools") or []:
            if not isinstance(t, dict):
                continue
            name = t.get("name") or (t.get("function") or {}).get("name") or ""
            # Codex: an MCP server's tools in a namespace of the Responses API.
            names.update(name + "__" + (c.get("name") or "") for c in t.get("tools") or []
                         if isinstance(c, dict)) if t.get("type") == "namespace" else \
                names.add(name)
        text = json.dumps(body)
        if marker in text and '\\"pid1\\"' in text:
            # The probe's JSON, as a string inside the request: find and decode it.
            for chunk in walk_strings(body):
                if '"marker": "%s"' % marker in chunk:
                    try:
                        answers.append(json.loads(chunk))
                    except ValueError:
                        pass
    return names, answers


def walk_strings(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from walk_strings(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk_strings(v)


def check(E, what, cp, ws, started, marker, tool_prefix,
          unnamed_why="not named in a bind file"):
    C.eq(0, cp.returncode, what + ": exit status (stderr %r)" % cp.stderr[-3000:])
    C.ok(REPLY in cp.stdout, what + ": the reply after the tool call (stdout %r)" %
         cp.stdout[-800:])
    names, answers = results_for(E, started, marker)
    probe = [n for n in names if "box_probe" in n and n.startswith(tool_prefix)]
    C.ok(probe, what + ": the client listed the server's tool (offered: %r)" % sorted(names))
    C.ok(not [n for n in names if "unnamed" in n],
         what + ": the server no bind file names was not started (offered: %r)" % sorted(names))
    C.ok(answers, what + ": the client called the tool and sent its answer back")
    if not answers:
        return
    a = answers[0]
    with open("/proc/1/cmdline", "rb") as f:
        host_init = f.read().split(b"\0")[0].decode()
    # box-init: bound at /run/arborinth/box-init, or run from its host path (arborinth_box_init).
    C.ok(a["pid1"] != host_init and ("bwrap" in a["pid1"] or "box-init" in a["pid1"]
                                     or a["pid1"].endswith("/arborinth_box_init")),
         what + ": the server ran in the box (its PID 1: %r, the host's: %r)" %
         (a["pid1"], host_init))
    C.ok("HOME" in a["env"] and "PROBE_TOKEN" not in a["env"],
         what + ": its environment is the box's, without the declaration's token (%r)" %
         a["env"])
    C.ok(os.path.exists(os.path.join(E.home, ".ssh", "id_ed25519")) and not a["sees_hidden"],
         what + ": the host's ~/.ssh key exists on the host (control) and not in the server's "
         "box")
    with socket.create_connection(("127.0.0.1", E.models_port), timeout=5):
        pass  # control: the port answers on the host
    C.ok(a["reaches_port"] is False,
         what + ": the server has no route to the host's loopback (%r)" % a["reaches_port"])
    layer = os.path.join(E.ws(ws), "layer", a["wrote"])
    C.ok(os.path.isfile(layer) and not os.path.exists(os.path.join(E.repo, a["wrote"])),
         what + ": its write landed in the workspace (%s), not in the origin checkout" %
         a["wrote"])
    C.ok("withheld remote" in cp.stderr and "stay on the host" in cp.stderr,
         what + ": the launcher said the remote server stays on the host (%r)" %
         cp.stderr[-1500:])
    C.ok("withheld unnamed" in cp.stderr and unnamed_why in cp.stderr,
         what + ": the launcher said which server it withheld and why")
    C.ok("in the box: probe" in cp.stderr and "PROBE_TOKEN" in cp.stderr,
         what + ": the launcher named the server it passed and the env it did not pass")
    roots = [os.path.join(E.ws(ws), d) for d in ("home", "tmp", "cache", "layer")]
    C.eq([], search_files(roots, TOKEN), what + ": no file the box could write holds the token")
    C.ok(TOKEN not in open(E.models_log).read(), what + ": the token never left the host")
    C.ok(search_files([os.path.join(E.ws(ws), "layer")], marker),
         what + ": control: the same search finds the probe's marker in the layer")


def claude(E, up, server, key):
    marker = "MCP-CLAUDE-" + os.urandom(4).hex()
    probe = {"command": "/usr/bin/python3", "args": [server] + probe_args(E, marker),
             "env": {"PROBE_TOKEN": TOKEN}}
    unnamed = dict(probe, args=[server, "UNNAMED"])
    E.write("home/.claude.json", json.dumps({"mcpServers": {
        "probe": probe, "unnamed": unnamed,
        "remote": {"type": "http", "url": "https://mcp.example.invalid/mcp",
                   "headers": {"Authorization": "Bearer " + TOKEN}}}}))
    binds = bind_file(E, "claude-binds.toml", ["probe"])
    n = len(E.models_requests())
    cp = E.arb("claude", "mc", "--upstream", up, "--binds", binds, "--", "-p",
               "Call the box probe.", "--allowedTools", "mcp__probe__box_probe",
               env={"ANTHROPIC_API_KEY": key}, timeout=300)
    check(E, "claude", cp, "mc", n, marker, "mcp__probe__")
    # Control: without the ro bind the server's folder is hidden: withheld, with the hint.
    hidden = bind_file(E, "claude-nobind.toml", ["probe"], ro=False)
    ex = E.arb("claude", "mc", "--upstream", up, "--binds", hidden, "--explain",
               env={"ANTHROPIC_API_KEY": key})
    C.ok(ex.returncode == 0 and "withheld probe" in ex.stdout and "under $HOME" in ex.stdout
         and "ro = [...]" in ex.stdout and "--mcp-config" not in ex.stdout,
         "claude: without a bind showing its folder the server is withheld with a hint (%r)" %
         ex.stdout[:600])
    ex = E.arb("claude", "mc", "--upstream", up, "--binds", binds, "--explain",
               env={"ANTHROPIC_API_KEY": key})
    C.ok("--mcp-config" in ex.stdout and TOKEN not in ex.stdout,
         "claude: --explain shows the servers' config, without the token")
    bad = E.write("bad-binds.toml", 'mcp = [""]\n')
    cp = E.arb("claude", "mc2", "--upstream", up, "--binds", bad, "--", "-p", "x",
               env={"ANTHROPIC_API_KEY": key})
    C.one_line_error(cp, 2, "mcp: an empty entry",
                     "claude: an empty mcp entry is a one-line usage error")
    C.ok(not os.path.exists(E.ws("mc2")), "claude: ... and creates no workspace")


def codex(E, up, server, key):
    marker = "MCP-CODEX-" + os.urandom(4).hex()
    args = ", ".join(json.dumps(a) for a in probe_args(E, marker))
    with open(os.path.join(E.home, ".codex", "config.toml"), "a") as f:
        f.write("\n[mcp_servers.probe]\ncommand = %s\nargs = [%s]\nstartup_timeout_sec = 30\n"
                "default_tools_approval_mode = 'approve'\n"
                "[mcp_servers.probe.env]\nPROBE_TOKEN = %s\n"
                "[mcp_servers.unnamed]\ncommand = '/usr/bin/python3'\nargs = ['%s', 'UNNAMED']\n"
                "[mcp_servers.remote]\nurl = 'https://mcp.example.invalid/mcp'\n" %
                (json.dumps(server), args, json.dumps(TOKEN), server))
    binds = bind_file(E, "codex-binds.toml", ["~/mcp/probe.py"])
    n = len(E.models_requests())
    cp = E.arb("codex", "mx", "--upstream", up, "--binds", binds, "--", "exec",
               "--skip-git-repo-check", "Call the box probe.", env={"OPENAI_API_KEY": key},
               timeout=300)
    check(E, "codex", cp, "mx", n, marker, "mcp__probe__")


def opencode(E, up, server, key):
    marker = "MCP-OPENCODE-" + os.urandom(4).hex()
    E.write("home/.config/opencode/opencode.json", json.dumps({
        "model": "anthropic/claude-host-oc",
        "mcp": {"probe": {"type": "local",
                          "command": ["/usr/bin/python3", server] + probe_args(E, marker),
                          "environment": {"PROBE_TOKEN": TOKEN}},
                "unnamed": {"type": "local", "command": ["/usr/bin/python3", server, "U"],
                            "enabled": False},
                "remote": {"type": "remote", "url": "https://mcp.example.invalid/mcp"}}}))
    binds = bind_file(E, "oc-binds.toml", ["*"])
    n = len(E.models_requests())
    cp = E.arb("opencode", "mo", "--upstream", up, "--binds", binds, "--", "run",
               "Call the box probe.", env={"ANTHROPIC_API_KEY": key}, timeout=300)
    # "*" takes every local server: the unnamed one is withheld here for being disabled.
    check(E, "opencode", cp, "mo", n, marker, "probe", "disabled in the host's config")


def main():
    with Env("e2e-mcp") as E:
        prefix = install_clients(E, C)
        E.path = os.path.join(prefix, "node_modules", ".bin") + ":" + E.path
        up = E.start_models(REPLY, ["--tool", "box_probe"])
        server = setup(E)
        claude(E, up, server, "sk-ant-api03-MCP-" + os.urandom(12).hex())
        codex(E, up, server, "sk-proj-MCP-" + os.urandom(12).hex())
        opencode(E, up, server, "sk-ant-api03-MCPOC-" + os.urandom(12).hex())
    C.finish()


if __name__ == "__main__":
    main()
