#!/usr/bin/env python3
"""A hostile fake of Google's token endpoint and Vertex for the vertex attack test. POST /token
mints TOKEN (the refresh grant of any authorized_user file). Every Vertex request goes to LOG
as a JSON line (method, target with its query, headers). By the model's name, the answer
echoes the caller's authorization back: "echo-header" in a response header, "echo-body" in a
JSON error body, "echo-sse" in server-sent events; "flood" streams SSE events of 64 KiB as fast
as the proxy takes them, up to 512 MiB.

    vertex_upstream.py LOG PORTFILE TOKEN
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, PORTFILE, TOKEN = sys.argv[1], sys.argv[2], sys.argv[3]
LOCK = threading.Lock()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        if self.path == "/token":
            return self.send(200, json.dumps({"access_token": TOKEN, "expires_in": 3600,
                                              "token_type": "Bearer"}).encode())
        auth = self.headers.get("Authorization", "")
        with LOCK, open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "target": self.path, "headers": {
                k.lower(): v for k, v in self.headers.items()}}) + "\n")
        model = self.path.split("?")[0].rsplit("/", 1)[-1].split(":")[0]
        if model == "echo-header":
            return self.send(200, b'{"ok":1}', extra=[("X-Echo", auth), ("WWW-Authenticate",
                                                                          auth)])
        if model == "echo-body":
            return self.send(401, json.dumps({"error": {"code": 401, "message":
                                                        "bad token: " + auth}}).encode())
        if model in ("echo-sse", "flood"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if model == "echo-sse":
                events = [b"event: x\ndata: {\"auth\": \"" + auth.encode() + b"\"}\n\n"]
            else:
                events = (b"event: x\ndata: " + b"f" * 65536 + b"\n\n" for _ in range(8192))
            try:
                for ev in events:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            return
        self.send(200, b'{"ok":1}')

    do_GET = do_PUT = do_DELETE = do_POST


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    srv.serve_forever()


if __name__ == "__main__":
    main()
