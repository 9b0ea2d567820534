#!/usr/bin/python3
"""A local stdio MCP server for the tests (standard library only): JSON-RPC 2.0, one message
per line on stdin/stdout, as the MCP stdio transport has it.

It offers one tool, `box_probe`, whose result is a JSON object describing where the server
runs: its marker (argv[1]), whether it is in a box (PID 1 is bubblewrap's or box-init), the
names of its environment variables, whether it sees a given host path (argv[2]), whether it
reaches a given TCP port on the host's loopback (argv[3]), and the file it wrote in its
working directory (the workspace's view)."""
import json
import os
import socket
import sys

MARKER = sys.argv[1] if len(sys.argv) > 1 else "MCP-PROBE"
# "@PATH": not a path argument as written, so the launcher does not check it.
HIDDEN = sys.argv[2].lstrip("@") if len(sys.argv) > 2 else "/nonexistent"
PORT = int(sys.argv[3]) if len(sys.argv) > 3 else 0


def probe():
    try:
        with open("/proc/1/cmdline", "rb") as f:
            init = f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        init = "?"
    reach = None
    if PORT:
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
            reach = True
        except OSError:
            reach = False
    wrote = "mcp-probe-%s.txt" % MARKER
    try:
        with open(wrote, "w") as f:
            f.write(MARKER + "\n")
    except OSError as e:
        wrote = "failed: %s" % e
    return {"marker": MARKER, "pid1": init, "env": sorted(os.environ), "cwd": os.getcwd(),
            "sees_hidden": os.path.exists(HIDDEN), "reaches_port": reach, "wrote": wrote}


def reply(mid, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": mid}
    if error:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


TOOL = {"name": "box_probe", "description": "Reports where this MCP server runs.",
        "inputSchema": {"type": "object", "properties": {}}}

for line in sys.stdin:
    try:
        req = json.loads(line)
    except ValueError:
        continue
    method, mid = req.get("method"), req.get("id")
    if mid is None:
        continue  # a notification (notifications/initialized, cancelled, ...)
    if method == "initialize":
        reply(mid, {"protocolVersion": (req.get("params") or {}).get("protocolVersion",
                                                                     "2025-06-18"),
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "arborinth-probe", "version": "1.0.0"}})
    elif method == "tools/list":
        reply(mid, {"tools": [TOOL]})
    elif method == "tools/call":
        if (req.get("params") or {}).get("name") != "box_probe":
            reply(mid, error={"code": -32602, "message": "unknown tool"})
        else:
            reply(mid, {"content": [{"type": "text", "text": json.dumps(probe())}],
                        "isError": False})
    elif method == "ping":
        reply(mid, {})
    elif method in ("resources/list", "prompts/list"):
        reply(mid, {method.split("/")[0]: []})
    elif method == "resources/templates/list":
        reply(mid, {"resourceTemplates": []})
    else:
        reply(mid, error={"code": -32601, "message": "method not found: %s" % method})
