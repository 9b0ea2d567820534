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
Anything else: 404 with a JSON error.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
LOG = None
REPLY = ""


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
        if self.command == "POST" and path == "/v1/messages":
            return self.anthropic(model, stream)
        if self.command == "POST" and path == "/v1/messages/count_tokens":
            return self.send_json(200, {"input_tokens": 12})
        if self.command == "POST" and path == "/v1/responses":
            return self.openai_responses(model, stream)
        if self.command == "POST" and path == "/v1/chat/completions":
            return self.chat(model, stream)
        if self.command == "GET" and path.startswith("/v1/models"):
            return self.send_json(200, {"object": "list", "data": [
                {"id": "claude-sonnet-4-5", "type": "model", "object": "model",
                 "display_name": "fake", "created_at": "2025-01-01T00:00:00Z"},
                {"id": "gpt-5", "object": "model", "created": 1700000000, "owned_by": "fake"}],
                "has_more": False, "first_id": "claude-sonnet-4-5", "last_id": "gpt-5"})
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": "no such path " + path}})

    do_GET = do_POST = do_PUT = do_DELETE = handle_any

    def anthropic(self, model, stream):
        usage = {"input_tokens": 12, "output_tokens": 7, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg = {"id": "msg_fake_e2e", "type": "message", "role": "assistant", "model": model,
               "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn",
               "stop_sequence": None, "usage": usage}
        if not stream:
            return self.send_json(200, msg)
        self.start_sse()
        start = dict(msg, content=[], stop_reason=None)
        self.event("message_start", {"type": "message_start", "message": start})
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

    def openai_responses(self, model, stream):
        now = int(time.time())
        item = {"id": "msg_fake_e2e", "type": "message", "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
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

    def chat(self, model, stream):
        base = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": model}
        usage = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
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
    global LOG, REPLY
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--reply", required=True)
    a = ap.parse_args()
    LOG = open(a.log, "a")
    REPLY = a.reply
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    srv.serve_forever()


if __name__ == "__main__":
    main()
