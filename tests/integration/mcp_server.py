#!/usr/bin/env python3
"""`arborinth mcp` spoken to directly over stdio (JSON-RPC 2.0, one message a line), on real
views and real boxes: initialize, tools/list, and every tool (workspace_create and a fork,
workspace_list, shell with its output and exit status and the output bound, log, diff,
compare, audit, checkpoint, rewind, merge and apply with check), each effect checked on
disk, in git and in the audit; bad input (an unknown tool, unknown or missing or mistyped
arguments, a bad workspace name, not JSON) answered with a JSON-RPC error and nothing
changed (the control: the same call with good arguments works).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402

C = fslib.Checks()


class Server:
    def __init__(self, repo):
        self.p = subprocess.Popen([fslib.ARB, "--workdir", repo, "mcp"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.n = 0

    def send(self, obj):
        self.p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        return json.loads(line) if line else None

    def call(self, method, params=None):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method,
                   **({"params": params} if params is not None else {})})
        r = self.recv()
        C.eq(self.n, r and r.get("id"), "reply to request %d (%s)" % (self.n, method))
        return r

    def tool(self, tool_name, **args):
        return self.call("tools/call", {"name": tool_name, "arguments": args})

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        return rc


def result(r, what):
    """The tool's result: the JSON its text holds."""
    ok = r is not None and "result" in r and not r["result"].get("isError")
    C.ok(ok, "%s succeeds (%r)" % (what, r))
    if not ok:
        return {}
    text = r["result"]["content"][0]["text"]
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}


def rpc_error(r, code, what):
    C.ok(r is not None and "error" in r and r["error"]["code"] == code and "result" not in r,
         "%s: a JSON-RPC error %d (%r)" % (what, code, r))


def main():
    fx = fslib.Fixture(name="w")
    repo = fx.repo
    try:
        s = Server(repo)
        r = s.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "1"}})
        C.eq("2025-06-18", r["result"]["protocolVersion"], "initialize: the version echoed")
        C.ok("tools" in r["result"]["capabilities"], "initialize: tools offered")
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        names = [t["name"] for t in s.call("tools/list")["result"]["tools"]]
        C.eq(["workspace_create", "workspace_list", "shell", "log", "diff", "compare", "audit",
              "checkpoint", "rewind", "merge", "apply"], names, "tools/list: every tool")

        # Bad input first: each a JSON-RPC error, nothing made (the controls follow).
        # The digest reads the view's files (under .git/arborinth/workspaces/w/workdir), which
        # fills the blob cache (.git/arborinth/blobs): whether the walk sees the cache before or
        # after it fills depends on the directory order of the file system (tmpfs lists the
        # newest first), so a first walk settles the cache and the second is the one compared.
        fslib.tree_digest(os.path.join(repo, ".git"))
        before = fslib.snapshot(os.path.join(repo, ".git"), skip_git=False)
        rpc_error(s.tool("no_such_tool", name="x"), -32602, "unknown tool")
        rpc_error(s.tool("workspace_create"), -32602, "missing name")
        rpc_error(s.tool("workspace_create", name=7), -32602, "name not a string")
        rpc_error(s.tool("workspace_create", name="../evil"), -32602, "a bad workspace name")
        rpc_error(s.tool("workspace_create", name="x", bogus=1), -32602, "unknown argument")
        rpc_error(s.tool("shell", workspace="w", argv="rm -rf /"), -32602, "argv a string")
        rpc_error(s.tool("shell", workspace="w", argv=[]), -32602, "argv empty")
        rpc_error(s.tool("shell", workspace="w", argv=["sh", 1]), -32602, "argv not strings")
        rpc_error(s.tool("merge", workspace="w", check="yes"), -32602, "check not a boolean")
        rpc_error(s.tool("compare", workspaces="w"), -32602, "workspaces not an array")
        rpc_error(s.call("tools/call", {"name": "log", "arguments": [1]}), -32602,
                  "arguments not an object")
        rpc_error(s.call("no/such/method"), -32601, "unknown method")
        s.send("{not json")
        rpc_error(s.recv(), -32700, "not JSON")
        changed = fslib.diff_snapshots(before, fslib.snapshot(os.path.join(repo, ".git"),
                                                              skip_git=False))
        C.ok(not changed, "bad input changed nothing: %r" % changed)
        C.ok(not os.path.exists(os.path.join(repo, ".git", "arborinth", "workspaces", "x")),
             "no workspace x was made")

        # Every tool, its effect checked.
        got = result(s.tool("workspace_create", name="m1"), "create m1")
        C.eq("m1", got.get("name"), "create: the name")
        C.eq(fslib.git(repo, "rev-parse", "HEAD").stdout.strip(), got.get("base"), "create: base")
        view = fx.view("m1")
        C.ok(os.path.isdir(view), "create: the view is there")
        got = result(s.tool("shell", workspace="m1", argv=[
            "sh", "-c", "echo made > new.txt; printf 'x\\001\\377y\\n'; echo err >&2; exit 7"]),
            "shell")
        C.eq(7, got.get("exit"), "shell: the exit status")
        C.eq("made\n", open(os.path.join(view, "new.txt")).read(), "shell: its write in the view")
        C.eq("x\\001\\377y\n", got.get("stdout"), "shell: output, control bytes escaped")
        C.eq("err\n", got.get("stderr"), "shell: stderr")
        session = got.get("session")
        C.ok(isinstance(session, int) and session > 0, "shell: a session number")
        got = result(s.tool("shell", workspace="m1", argv=["sh", "-c", "yes | head -c 200000"]),
                     "shell with much output")
        C.eq(65536, len(got.get("stdout", "")), "shell: output bounded")
        C.ok(got.get("stdout_truncated") is True, "shell: says it was cut")
        got = result(s.tool("shell", workspace="m1", argv=["sh", "-c", "echo hi; exit 0"]),
                     "argv is not a shell line")
        C.eq("hi\n", got.get("stdout"), "shell: the control runs")
        got = result(s.tool("audit", workspace="m1", session=session), "audit")
        ops = [row["op"] for row in got.get("rows", [])]
        C.ok("exec" in ops and "exit" in ops, "audit: the session's exec and exit (%r)" % ops)
        C.ok(any(row.get("path") == "new.txt" for row in got.get("rows", [])),
             "audit: the write of new.txt")
        got = result(s.tool("diff", workspace="m1"), "diff")
        C.ok("+made" in got.get("diff", ""), "diff: the new file's line")
        got = result(s.tool("checkpoint", workspace="m1", message="mcp"), "checkpoint")
        ck = got.get("checkpoint")
        C.ok(isinstance(ck, int), "checkpoint: its number")
        got = result(s.tool("log", workspace="m1"), "log")
        C.ok(any(c["checkpoint"] == ck and c["message"] == "mcp" for c in got.get("checkpoints", [])),
             "log: the checkpoint listed")
        open(os.path.join(view, "new.txt"), "w").write("changed\n")
        result(s.tool("rewind", workspace="m1", to=str(ck)), "rewind")
        C.eq("made\n", open(os.path.join(view, "new.txt")).read(), "rewind: the file as it was")
        got = result(s.tool("workspace_create", name="m2", **{"from": "m1"}), "fork m2")
        C.eq("made\n", open(os.path.join(fx.view("m2"), "new.txt")).read(), "fork: m1's file")
        got = result(s.tool("workspace_list"), "list")
        C.ok({"w", "m1", "m2"} <= {w["name"] for w in got.get("workspaces", [])}, "list: all")
        got = result(s.tool("compare", workspaces=["m1", "m2"]), "compare")
        C.eq(["m1", "m2"], [w["name"] for w in got.get("workspaces", [])], "compare: both")
        C.eq(["new.txt"], [o["path"] for o in got.get("overlaps", [])], "compare: the overlap")
        rpc_error(s.tool("compare", workspaces=["m1", "nope"]), -32602, "compare: unknown")
        result(s.tool("shell", workspace="m1", argv=[
            "sh", "-c", "git add -A && git -c user.name=a -c user.email=a@b commit -qm mcp"]),
            "commit in the box")
        head = fslib.git(repo, "rev-parse", "HEAD").stdout.strip()
        got = result(s.tool("merge", workspace="m1", check=True), "merge check")
        C.eq("fast-forward", got.get("result"), "merge check: what it would be")
        C.eq(head, fslib.git(repo, "rev-parse", "HEAD").stdout.strip(), "merge check: no change")
        result(s.tool("shell", workspace="m2", argv=["sh", "-c", "echo o > other.txt"]),
               "m2 works")
        got = result(s.tool("apply", workspace="m2", check=True), "apply check")
        C.eq(1, got.get("files"), "apply check: one file")
        C.ok(not os.path.exists(os.path.join(repo, "other.txt")), "apply check: nothing written")
        got = result(s.tool("merge", workspace="m1"), "merge")
        C.eq("made\n", fslib.git(repo, "show", "HEAD:new.txt").stdout, "merge: in the origin")
        got = result(s.tool("apply", workspace="m2"), "apply (m1's merge is not in its way)")
        C.eq("o\n", open(os.path.join(repo, "other.txt")).read(), "apply: in the working tree")
        r = s.tool("apply", workspace="m2")
        C.ok(r["result"].get("isError") is True and "other.txt" in r["result"]["content"][0]["text"],
             "apply again: refused, naming the file in the way (%r)" % r)
        C.eq(0, s.close(), "the server ends with its input")
    finally:
        fx.cleanup()
    C.finish()


main()
