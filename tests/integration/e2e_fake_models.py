#!/usr/bin/env python3
"""A local stand-in for the model APIs the agent clients call (standard library only).

    e2e_fake_models.py --log FILE --reply TEXT

Prints "PORT\\n" when listening on 127.0.0.1. Every request is appended to --log as one
JSON line: method, path, headers (lower-case names), and the JSON body when there is one.

  POST /v1/messages               Anthropic Messages: a canned assistant message with TEXT,
                                  streamed as server-sent events when "stream" is true
  POST /v1/messages/count_tokens  {"input_tokens": 12}
  POST /v1/responses              OpenAI Responses: TEXT, streamed as events when "stream"
  POST /v1/chat/completions       OpenAI chat completions: TEXT (streamed when "stream")
  GET  /v1/models                 a list with one model per family
  POST /v1/oauth/token, /oauth/token
                                  with --oauth: the OAuth refresh grant (Claude Code's and
                                  Codex's token endpoints): each refresh token works once,
                                  answers a new access and refresh token (Codex: JWTs with
                                  exp and account claims), valid for --oauth-expires-in s
  POST .../responses              also under other prefixes (ChatGPT's /backend-api/codex)
  GET  .../wham/accounts/check    ChatGPT's workspace routing: the account of the request
Anything else: 404 with a JSON error.

With --tool SUBSTR, a model call that offers a tool whose name contains SUBSTR and carries
no tool result yet is answered with a call of that tool (no arguments) in the API's own
form (tool_use, function_call, tool_calls); the call that carries its result gets TEXT.

With --tool-script FILE (a JSON list of {"tool": SUBSTR, "input": {...}}), an Anthropic call
that carries k tool results makes the k-th call of the list, with its input; then TEXT.
With --oauth ACCESS,REFRESH (repeatable), a model call with `Authorization: Bearer T` is
answered only when T is an access token this server issued (or was seeded with) and has not
expired; else 401. /oauth-state (GET) returns the valid and spent tokens and the refreshes.
With --oauth-refuse-all, every model call gets that 401 (refreshes still work).
"""
import base64
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
LOG = None
REPLY = ""
OAUTH = None  # {"access": {token: expiry}, "refresh": set, "spent": set, "refreshes": n}
EXPIRES_IN = 3600
TOOL = None  # --tool SUBSTR
SCRIPT = None  # --tool-script FILE: [{"tool": SUBSTR, "input": {...}}, ...], one per turn
REFUSE_ALL = False  # --oauth-refuse-all


def tool_names(body):
    """The tools a model call offers, in any of the three APIs' forms, as (namespace, name):
    OpenAI's Responses API groups an MCP server's tools in a namespace (Codex)."""
    out = []
    for t in (body or {}).get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            out += [(t.get("name"), c.get("name") or "") for c in t.get("tools") or []
                    if isinstance(c, dict)]
        else:
            out.append((None, t.get("name") or (t.get("function") or {}).get("name") or ""))
    return out


def tool_results(body):
    """The text of every tool result a model call carries (all three APIs)."""
    out = []

    def text(c):
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            return "".join(text(x) for x in c)
        if isinstance(c, dict):
            return c.get("text") or text(c.get("content") or "")
        return ""
    for m in (body or {}).get("messages") or []:
        if m.get("role") == "tool":
            out.append(text(m.get("content")))
        elif isinstance(m.get("content"), list):
            out += [text(c.get("content")) for c in m["content"]
                    if isinstance(c, dict) and c.get("type") == "tool_result"]
    inp = (body or {}).get("input")
    if isinstance(inp, list):
        out += [text(i.get("output")) for i in inp
                if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return out


def tool_to_call(body):
    """The tool to call (--tool) when the call offers it and has no result yet, else None."""
    if SCRIPT is not None:  # the k-th call once k tool results came back (Anthropic API)
        k = len(tool_results(body))
        names = [(ns, n, SCRIPT[k].get("input") or {}, k) for ns, n in tool_names(body)
                 if k < len(SCRIPT) and SCRIPT[k]["tool"] in n]
        return names[0] if names else None
    if not TOOL or tool_results(body):
        return None
    names = [(ns, n) for ns, n in tool_names(body) if TOOL in n]
    return names[0] if names else None


def b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def jwt(claims):
    return b64({"alg": "RS256", "typ": "JWT"}) + "." + b64(claims) + ".c2lnbmF0dXJl"


def issue(kind):
    """A new access/refresh pair (under LOCK)."""
    n = OAUTH["refreshes"]
    exp = time.time() + EXPIRES_IN
    if kind == "codex":
        acct = {"chatgpt_account_id": "acct-REAL-0001", "chatgpt_plan_type": "pro"}
        access = jwt({"exp": int(exp), "https://api.openai.com/auth": acct, "n": n})
        out = {"access_token": access, "refresh_token": "rt-REAL-codex-%d-%s" % (
            n, os.urandom(6).hex()), "id_token": jwt({
                "exp": int(exp), "email": "dev@example.com",
                "https://api.openai.com/auth": acct})}
    else:
        access = "sk-ant-oat01-REAL-%d-%s" % (n, os.urandom(6).hex())
        out = {"access_token": access, "refresh_token": "sk-ant-ort01-REAL-%d-%s" % (
            n, os.urandom(6).hex()), "expires_in": EXPIRES_IN, "token_type": "Bearer"}
    OAUTH["access"][access] = exp
    OAUTH["refresh"].add(out["refresh_token"])
    return out


def log(entry):
    with LOCK:
        LOG.write(json.dumps(entry) + "\n")
        LOG.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(n) if n else b""

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, name, obj):
        text = ("event: %s\n" % name if name else "") + "data: " + json.dumps(obj) + "\n\n"
        self.chunk(text.encode())

    def end_sse(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def handle_any(self):
        raw = self.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        log({"method": self.command, "path": path, "query": self.path[len(path):],
             "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
             "time": time.time()})
        stream = isinstance(body, dict) and bool(body.get("stream"))
        model = body.get("model", "fake-model") if isinstance(body, dict) else "fake-model"
        if OAUTH is not None and self.command == "GET" and path == "/oauth-state":
            with LOCK:
                return self.send_json(200, {"access": sorted(OAUTH["access"]),
                                            "refresh": sorted(OAUTH["refresh"]),
                                            "spent": sorted(OAUTH["spent"]),
                                            "refreshes": OAUTH["refreshes"]})
        if self.command == "POST" and path in ("/v1/oauth/token", "/oauth/token"):
            return self.token(path, body)
        if OAUTH is not None and not self.authorized():
            return self.send_json(401, {"type": "error", "error": {
                "type": "authentication_error", "message": "OAuth token has expired"}})
        if self.command == "GET" and path.endswith("/wham/accounts/check"):
            acct = self.headers.get("chatgpt-account-id", "")
            return self.send_json(200, {"accounts": [{
                "id": acct, "workspace_backend_origin": "NO_CONSTRAINT",
                "account_routing_override": "NO_CONSTRAINT", "plan_type": "pro",
                "structure": "personal"}], "account_ordering": [acct]})
        if self.command == "POST" and path == "/v1/messages":
            return self.anthropic(model, stream, body)
        if self.command == "POST" and path == "/v1/messages/count_tokens":
            return self.send_json(200, {"input_tokens": 12})
        if self.command == "POST" and path.endswith("/responses"):
            return self.openai_responses(model, stream, body)
        if self.command == "POST" and path == "/v1/chat/completions":
            return self.chat(model, stream, body)
        if self.command == "GET" and path.startswith("/v1/models"):
            return self.send_json(200, {"object": "list", "data": [
                {"id": "claude-sonnet-4-5", "type": "model", "object": "model",
                 "display_name": "fake", "created_at": "2025-01-01T00:00:00Z"},
                {"id": "gpt-5", "object": "model", "created": 1700000000, "owned_by": "fake"}],
                "has_more": False, "first_id": "claude-sonnet-4-5", "last_id": "gpt-5"})
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": "no such path " + path}})

    do_GET = do_POST = do_PUT = do_DELETE = handle_any

    def authorized(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return True  # an API key: not this fake's business
        if REFUSE_ALL:
            return False
        with LOCK:
            exp = OAUTH["access"].get(auth[7:])
        return exp is not None and exp > time.time()

    def token(self, path, body):
        if OAUTH is None:
            return self.send_json(404, {"error": "not_found"})
        time.sleep(0.2)  # a real endpoint is slow: widens any race between refreshers
        rt = body.get("refresh_token") if isinstance(body, dict) else None
        with LOCK:
            if body.get("grant_type") != "refresh_token" or rt not in OAUTH["refresh"]:
                if rt in OAUTH["spent"]:
                    OAUTH["reused"] = OAUTH.get("reused", 0) + 1
                return self.send_json(400, {"error": "invalid_grant",
                                            "error_description": "refresh token not valid"})
            OAUTH["refresh"].discard(rt)
            OAUTH["spent"].add(rt)
            OAUTH["refreshes"] += 1
            out = issue("codex" if path == "/oauth/token" else "claude")
        self.send_json(200, out)

    def anthropic(self, model, stream, body):
        usage = {"input_tokens": 12, "output_tokens": 7, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg = {"id": "msg_fake_e2e", "type": "message", "role": "assistant", "model": model,
               "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn",
               "stop_sequence": None, "usage": usage}
        tool = tool_to_call(body)
        if tool:
            msg.update(content=[{"type": "tool_use", "id": "toolu_fake_e2e%s" % (
                "_%d" % tool[3] if len(tool) > 3 else ""), "name": tool[1],
                "input": tool[2] if len(tool) > 2 else {}}], stop_reason="tool_use")
        if not stream:
            return self.send_json(200, msg)
        self.start_sse()
        start = dict(msg, content=[], stop_reason=None)
        self.event("message_start", {"type": "message_start", "message": start})
        if tool:
            block = dict(msg["content"][0], input={})
            self.event("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": block})
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": json.dumps(
                                                             msg["content"][0]["input"])}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
            self.event("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": "tool_use",
                                                   "stop_sequence": None},
                                         "usage": {"output_tokens": 7}})
            self.event("message_stop", {"type": "message_stop"})
            return self.end_sse()
        self.event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
        self.event("ping", {"type": "ping"})
        half = len(REPLY) // 2
        for part in (REPLY[:half], REPLY[half:]):
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": part}})
        self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self.event("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": 7}})
        self.event("message_stop", {"type": "message_stop"})
        self.end_sse()

    def openai_responses(self, model, stream, body):
        now = int(time.time())
        item = {"id": "msg_fake_e2e", "type": "message", "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
        tool = tool_to_call(body)
        if tool:
            item = {"id": "fc_fake_e2e", "type": "function_call", "status": "completed",
                    "call_id": "call_fake_e2e", "name": tool[1], "arguments": "{}"}
            if tool[0]:
                item["namespace"] = tool[0]
        usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 19}
        resp = {"id": "resp_fake_e2e", "object": "response", "created_at": now,
                "status": "completed", "model": model, "output": [item], "usage": usage,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
        if not stream:
            return self.send_json(200, resp)
        self.start_sse()
        seq = iter(range(1000))

        def ev(name, obj):
            obj = dict(obj, type=name, sequence_number=next(seq))
            self.event(name, obj)
        ev("response.created", {"response": dict(resp, status="in_progress", output=[],
                                                 usage=None)})
        ev("response.in_progress", {"response": dict(resp, status="in_progress", output=[],
                                                     usage=None)})
        if tool:
            ev("response.output_item.added", {"output_index": 0, "item": dict(
                item, status="in_progress", arguments="")})
            ev("response.function_call_arguments.delta", {"item_id": item["id"],
                                                           "output_index": 0, "delta": "{}"})
            ev("response.function_call_arguments.done", {"item_id": item["id"],
                                                          "output_index": 0, "arguments": "{}"})
            ev("response.output_item.done", {"output_index": 0, "item": item})
            ev("response.completed", {"response": resp})
            return self.end_sse()
        ev("response.output_item.added", {"output_index": 0, "item": dict(
            item, status="in_progress", content=[])})
        ev("response.content_part.added", {"item_id": item["id"], "output_index": 0,
                                           "content_index": 0, "part": {
                                               "type": "output_text", "text": "",
                                               "annotations": []}})
        ev("response.output_text.delta", {"item_id": item["id"], "output_index": 0,
                                          "content_index": 0, "delta": REPLY})
        ev("response.output_text.done", {"item_id": item["id"], "output_index": 0,
                                         "content_index": 0, "text": REPLY})
        ev("response.content_part.done", {"item_id": item["id"], "output_index": 0,
                                          "content_index": 0, "part": item["content"][0]})
        ev("response.output_item.done", {"output_index": 0, "item": item})
        ev("response.completed", {"response": resp})
        self.end_sse()

    def chat(self, model, stream, body):
        base = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": model}
        usage = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
        tool = tool_to_call(body)
        if tool:
            call = {"index": 0, "id": "call_fake_e2e", "type": "function",
                    "function": {"name": tool[1], "arguments": "{}"}}
            if not stream:
                return self.send_json(200, dict(base, choices=[{
                    "index": 0, "message": {"role": "assistant", "content": None,
                                            "tool_calls": [call]},
                    "finish_reason": "tool_calls"}], usage=usage))
            self.start_sse()
            base["object"] = "chat.completion.chunk"
            self.event(None, dict(base, choices=[{"index": 0, "delta": {
                "role": "assistant", "tool_calls": [call]}, "finish_reason": None}]))
            self.event(None, dict(base, choices=[{"index": 0, "delta": {},
                                                  "finish_reason": "tool_calls"}], usage=usage))
            self.chunk(b"data: [DONE]\n\n")
            return self.end_sse()
        if not stream:
            return self.send_json(200, dict(base, choices=[{
                "index": 0, "message": {"role": "assistant", "content": REPLY},
                "finish_reason": "stop"}], usage=usage))
        self.start_sse()
        base["object"] = "chat.completion.chunk"
        self.event(None, dict(base, choices=[{"index": 0, "delta": {"role": "assistant",
                                                                    "content": REPLY},
                                              "finish_reason": None}]))
        self.event(None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}],
                              usage=usage))
        self.chunk(b"data: [DONE]\n\n")
        self.end_sse()


def main():
    global LOG, REPLY, OAUTH, EXPIRES_IN, TOOL, REFUSE_ALL, SCRIPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--reply", required=True)
    ap.add_argument("--oauth", action="append", default=[],
                    help="ACCESS,REFRESH[,EXPIRY_EPOCH]: a login this server accepts")
    ap.add_argument("--oauth-expires-in", type=int, default=3600)
    ap.add_argument("--tool", help="call the offered tool whose name contains this")
    ap.add_argument("--tool-script", help="JSON file: the tool calls to make, one per turn")
    ap.add_argument("--oauth-refuse-all", action="store_true",
                    help="answer every model call with 401 (an upstream that never accepts)")
    a = ap.parse_args()
    REFUSE_ALL = a.oauth_refuse_all
    TOOL = a.tool
    if a.tool_script:
        with open(a.tool_script) as f:
            SCRIPT = json.load(f)
    LOG = open(a.log, "a")
    REPLY = a.reply
    EXPIRES_IN = a.oauth_expires_in
    if a.oauth:
        OAUTH = {"access": {}, "refresh": set(), "spent": set(), "refreshes": 0}
        for seed in a.oauth:
            parts = seed.split(",")
            OAUTH["access"][parts[0]] = float(parts[2]) if len(parts) > 2 else time.time() + 3600
            OAUTH["refresh"].add(parts[1])
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    srv.serve_forever()


if __name__ == "__main__":
    main()
