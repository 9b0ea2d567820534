#!/usr/bin/env python3
"""A local stand-in for the model APIs (Anthropic/OpenAI shapes), plain HTTP or TLS.

    fake_upstream.py --log FILE [--tls CERT KEY] [--port N]

Prints "PORT\n" on stdout when listening. Every request is appended to --log as one JSON
line (method, path, headers, body length and sha256, and per mode what happened).

Behaviour is chosen by the x-test-mode request header:
  (none)        POST: JSON answer with the body's length and sha256; GET /v1/models: a list.
                A JSON body with "stream": true gets server-sent events instead: "events"
                (default 5) of them, "gap_ms" (default 200) apart, each logged with its
                send time.
  echo-key      401 whose body and x-echo header repeat the credential headers it received.
  slow          sleeps x-test-sleep seconds (default 5) before answering.
  big           a body of x-test-bytes bytes with Content-Length.
  bigchunked    the same, chunked.
  forever       events every 100 ms until the client goes; logs "aborted" with the time.
  close         closes the connection without answering.
"""
import argparse
import hashlib
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
LOG = None
BLOCK = b"x" * (1 << 20)


def log(entry):
    with LOCK:
        LOG.write(json.dumps(entry) + "\n")
        LOG.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are separate writes

    def log_message(self, fmt, *args):
        pass

    def read_body(self):
        h = hashlib.sha256()
        n = 0
        te = self.headers.get("Transfer-Encoding", "")
        if te.lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = size
                while left:
                    d = self.rfile.read(min(left, 1 << 20))
                    if not d:
                        raise ConnectionError("short chunk")
                    h.update(d)
                    n += len(d)
                    left -= len(d)
                self.rfile.readline()
            return n, h.hexdigest(), None
        left = int(self.headers.get("Content-Length", "0"))
        first = b""
        while left:
            d = self.rfile.read(min(left, 1 << 20))
            if not d:
                raise ConnectionError("short body")
            if len(first) < 4096:
                first += d[: 4096 - len(first)]
            h.update(d)
            n += len(d)
            left -= len(d)
        return n, h.hexdigest(), first

    def entry(self, **kw):
        e = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "version": self.request_version,
            "headers": [[k.lower(), v] for k, v in self.headers.items()],
        }
        e.update(kw)
        return e

    def send_json(self, status, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def sse(self, events, gap_ms):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = []
        for i in range(events):
            if i:
                time.sleep(gap_ms / 1000.0)
            data = ("event: message\ndata: {\"index\": %d}\n\n" % i).encode()
            sent.append(time.time())
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return sent

    def forever(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        i = 0
        try:
            while i < 600:
                data = b"data: tick\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                time.sleep(0.1)
                i += 1
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            log({"event": "aborted", "time": time.time(), "ticks": i})
            self.close_connection = True
            return
        log({"event": "forever-finished", "time": time.time()})

    def big(self, n, chunked):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(n))
        self.end_headers()
        left = n
        while left:
            d = BLOCK[: min(left, len(BLOCK))]
            if chunked:
                self.wfile.write(b"%x\r\n" % len(d))
            self.wfile.write(d)
            if chunked:
                self.wfile.write(b"\r\n")
            left -= len(d)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def handle_any(self):
        mode = self.headers.get("x-test-mode", "")
        if mode == "close":
            log(self.entry(mode=mode))
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        n, digest, first = self.read_body()
        body = None
        if first and n <= 4096:
            try:
                body = json.loads(first)
            except ValueError:
                body = None
        if mode == "slow":
            time.sleep(float(self.headers.get("x-test-sleep", "5")))
        if mode == "echo-key":
            creds = {k: self.headers.get(k) for k in ("x-api-key", "authorization")}
            log(self.entry(body_len=n, sha256=digest, mode=mode))
            text = " ".join(v for v in creds.values() if v)
            self.send_json(401, {"type": "error", "error": {"message": "bad key " + text}},
                           {"x-echo": text})
            return
        if mode in ("big", "bigchunked"):
            size = int(self.headers.get("x-test-bytes", "1048576"))
            log(self.entry(body_len=n, sha256=digest, mode=mode))
            self.big(size, mode == "bigchunked")
            return
        if mode == "forever":
            log(self.entry(body_len=n, sha256=digest, mode=mode))
            self.forever()
            return
        if isinstance(body, dict) and body.get("stream"):
            e = self.entry(body_len=n, sha256=digest, mode="sse")
            sent = self.sse(int(body.get("events", 5)), int(body.get("gap_ms", 200)))
            e["sent"] = sent
            log(e)
            return
        log(self.entry(body_len=n, sha256=digest, mode=mode or "plain"))
        if self.path.startswith("/v1/models"):
            self.send_json(200, {"data": [{"id": "fake-model", "type": "model"}]})
        elif self.command in ("POST", "PUT", "PATCH"):
            self.send_json(200, {"id": "msg_fake", "type": "message", "body_len": n,
                                 "sha256": digest, "path": self.path})
        else:
            self.send_json(404, {"type": "error", "error": {"message": "not found"}})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--port", type=int, default=0)
    # --also ADDR: the same server on another loopback address too, at the same port.
    ap.add_argument("--also")
    a = ap.parse_args()
    LOG = open(a.log, "a")
    srv = Server(("127.0.0.1", a.port), Handler)
    servers = [srv]
    if a.also:
        servers.append(Server((a.also, srv.server_address[1]), Handler))
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
        for s in servers:
            s.socket = ctx.wrap_socket(s.socket, server_side=True,
                                       do_handshake_on_connect=False)
    print(srv.server_address[1], flush=True)
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
