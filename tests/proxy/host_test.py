#!/usr/bin/env python3
"""The host-side proxy and the relay over real sockets, against the fake upstream.

    host_test.py HARNESS TMPDIR

Every refusal has a control: the same request, with only the refused part changed, passes.
"""
import hashlib
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxytest import (Checks, Procs, Reader, free_port, free_ports, make_ca, read_log, request,  # noqa
                       start_harness, start_upstream, tcp_conn, unix_conn, wait_for)

HARNESS, T = sys.argv[1], sys.argv[2]
KEY = "sk-ant-api03-REALKEY-" + os.urandom(12).hex()
OKEY = "sk-openai-REALKEY-" + os.urandom(12).hex()
C = Checks()
P = Procs()


def main():
    up_log, tls_log = os.path.join(T, "up.log"), os.path.join(T, "tls.log")
    _, up = start_upstream(P, up_log)
    ca, cert, key = make_ca(T, "good", ["localhost"])
    other_ca, _, _ = make_ca(T, "other", ["localhost"])
    _, tls_up = start_upstream(P, tls_log, tls=(cert, key))
    names = ("anthropic", "openai", "tls", "tlshost", "tlsca", "refused", "slow", "custom")
    closed, *chosen = free_ports(len(names) + 1)
    ports = dict(zip(names, chosen))
    allow = "allow=POST:/v1/messages"
    backends = [
        "anthropic=http://127.0.0.1:%d,port=%d" % (up, ports["anthropic"]),
        "openai=http://127.0.0.1:%d,port=%d" % (up, ports["openai"]),
        "tls=https://localhost:%d,port=%d,auth=x-api-key,ca-file=%s,%s"
        % (tls_up, ports["tls"], ca, allow),
        "tlshost=https://127.0.0.1:%d,port=%d,auth=x-api-key,ca-file=%s,key-env=TLS_API_KEY,%s"
        % (tls_up, ports["tlshost"], ca, allow),
        "tlsca=https://localhost:%d,port=%d,auth=x-api-key,ca-file=%s,key-env=TLS_API_KEY,%s"
        % (tls_up, ports["tlsca"], other_ca, allow),
        "refused=http://127.0.0.1:%d,port=%d,key-env=TLS_API_KEY,%s" % (closed, ports["refused"], allow),
        "slow=http://127.0.0.1:%d,port=%d,idle-timeout=1,key-env=TLS_API_KEY,%s" % (up, ports["slow"], allow),
        "custom=http://127.0.0.1:%d/v1,port=%d,auth=header:api-key,key-env=CUSTOM_KEY,"
        "allow=GET:/models*,allow=DELETE:/things/x" % (up, ports["custom"]),
    ]
    env = dict(os.environ, ANTHROPIC_API_KEY=KEY, OPENAI_API_KEY=OKEY, TLS_API_KEY=KEY,
               CUSTOM_KEY=KEY)
    sock = os.path.join(T, "run", "proxy.sock")
    os.makedirs(os.path.dirname(sock))
    records = os.path.join(T, "records.jsonl")
    hp, info = start_harness(P, HARNESS, sock, backends, env, relay=True, records=records)
    ph = info["placeholders"]
    C.ok(KEY not in json.dumps(info) and OKEY not in json.dumps(info), "harness output has no key")
    C.ok("ANTHROPIC_API_KEY=" + ph["anthropic"] in info["env"], "box env has the placeholder")
    C.ok("ANTHROPIC_BASE_URL=http://127.0.0.1:%d" % ports["anthropic"] in info["env"],
         "box env has the base URL")
    C.ok("OPENAI_BASE_URL=http://127.0.0.1:%d/v1" % ports["openai"] in info["env"],
         "openai base URL carries /v1")
    C.eq(0o600, os.stat(sock).st_mode & 0o777, "socket mode")
    a_host = "127.0.0.1:%d" % ports["anthropic"]
    a_key = [("x-api-key", ph["anthropic"])]

    def via_unix(raw, timeout=30):
        s = unix_conn(sock, timeout)
        try:
            s.sendall(raw)
            return Reader(s).response()
        finally:
            s.close()

    def via_relay(port, raw, timeout=30):
        s = tcp_conn(port, timeout)
        try:
            s.sendall(raw)
            return Reader(s).response()
        finally:
            s.close()

    def last_upstream(log=up_log):
        return read_log(log)[-1]

    def refused(r, status, reason, what):
        C.eq(status, r.status, what + ": status")
        try:
            msg = r.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            msg = repr(r.body)
        C.ok(reason in msg, "%s: reason %r in %r" % (what, reason, msg))
        C.ok(KEY.encode() not in r.body and ph["anthropic"].encode() not in r.body,
             what + ": body has no credential")
        C.eq("application/json", r.header("content-type"), what + ": JSON body")

    # --- forwarding, via the relay (TCP) ---
    body = json.dumps({"model": "m", "messages": []}).encode()
    r = via_relay(ports["anthropic"], request("POST", "/v1/messages?beta=true", a_host, a_key +
                  [("Content-Type", "application/json"), ("X-Custom", "kept"),
                   ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"),
                   ("Proxy-Authorization", "Basic Zm9v"), ("X-Forwarded-For", "10.0.0.1"),
                   ("Accept-Encoding", "gzip")], body))
    C.eq(200, r.status, "control: POST /v1/messages through relay")
    C.eq(hashlib.sha256(body).hexdigest(), r.json().get("sha256"), "body arrives intact")
    e = last_upstream()
    h = dict(e["headers"])
    C.eq(KEY, h.get("x-api-key"), "upstream receives the real key")
    C.eq("/v1/messages?beta=true", e["path"], "query string forwarded")
    C.eq("kept", h.get("x-custom"), "end-to-end header forwarded")
    for hop in ("x-hop", "keep-alive", "proxy-authorization", "x-forwarded-for", "authorization"):
        C.ok(hop not in h, "hop-by-hop/proxy header %s dropped" % hop)
    C.eq("identity", h.get("accept-encoding"), "compression refused upstream (redaction)")
    C.eq("127.0.0.1:%d" % up, h.get("host"), "upstream Host is the upstream's")

    # Bearer form of the placeholder works too (OAuth clients).
    r = via_unix(request("POST", "/v1/messages", a_host,
                         [("Authorization", "Bearer " + ph["anthropic"])], body))
    C.eq(200, r.status, "control: Authorization: Bearer placeholder")
    C.eq(KEY, dict(last_upstream()["headers"]).get("x-api-key"), "bearer placeholder swapped")

    # openai: bearer upstream
    r = via_relay(ports["openai"], request("POST", "/v1/chat/completions",
                  "127.0.0.1:%d" % ports["openai"], [("Authorization", "Bearer " + ph["openai"])],
                  body))
    C.eq(200, r.status, "control: openai chat completions")
    C.eq("Bearer " + OKEY, dict(last_upstream()["headers"]).get("authorization"),
         "openai upstream gets Bearer real key")
    r = via_unix(request("POST", "/v1/chat/completions", "127.0.0.1:%d" % ports["openai"],
                         [("Authorization", "Bearer " + ph["anthropic"])], body))
    refused(r, 401, "placeholder", "another backend's placeholder")

    # user-defined backend: custom header, base path, prefix and exact rules
    c_host = "127.0.0.1:%d" % ports["custom"]
    r = via_unix(request("GET", "/models/abc", c_host, [("api-key", ph["custom"])]))
    C.eq(200, r.status, "control: custom backend GET /models/abc")
    e = last_upstream()
    C.eq("/v1/models/abc", e["path"], "custom backend base path")
    C.eq(KEY, dict(e["headers"]).get("api-key"), "custom backend credential header")
    r = via_unix(request("DELETE", "/things/x", c_host, [("api-key", ph["custom"])]))
    C.eq(404, r.status, "control: custom DELETE forwarded (fake answers 404)")
    C.eq("DELETE", last_upstream()["method"], "DELETE method forwarded")
    refused(via_unix(request("DELETE", "/things/y", c_host, [("api-key", ph["custom"])])), 403,
            "path not allowed", "custom exact rule")
    refused(via_unix(request("GET", "/modelsx", c_host, [("api-key", ph["custom"])])), 403,
            "path not allowed", "prefix matches at segment boundary only")

    # keep-alive: several requests on one connection
    s = tcp_conn(ports["anthropic"])
    rd = Reader(s)
    statuses = []
    for i in range(3):
        s.sendall(request("POST", "/v1/messages", a_host, a_key, body))
        statuses.append(rd.response().status)
    s.sendall(request("GET", "/v1/models", a_host, a_key))
    statuses.append(rd.response().status)
    s.close()
    C.eq([200, 200, 200, 200], statuses, "keep-alive: four requests on one connection")
    # pipelined
    s = unix_conn(sock)
    s.sendall(request("POST", "/v1/messages", a_host, a_key, body) +
              request("GET", "/v1/models", a_host, a_key))
    rd = Reader(s)
    C.eq([200, 200], [rd.response().status, rd.response().status], "pipelined requests")
    s.close()

    # chunked request body, many MiB; and a large Content-Length body
    big = os.urandom(6 << 20)
    r = via_unix(request("POST", "/v1/messages", a_host, a_key, big, chunked=True), 120)
    C.eq(200, r.status, "chunked 6 MiB request")
    e = last_upstream()
    C.eq(len(big), e["body_len"], "chunked body length upstream")
    C.eq(hashlib.sha256(big).hexdigest(), e["sha256"], "chunked body digest upstream")
    big = os.urandom(40 << 20)
    r = via_relay(ports["anthropic"], request("POST", "/v1/messages", a_host, a_key, big), 120)
    C.eq(200, r.status, "40 MiB request body")
    C.eq(hashlib.sha256(big).hexdigest(), last_upstream()["sha256"], "40 MiB body digest")
    del big
    # Expect: 100-continue
    s = unix_conn(sock)
    s.sendall(("POST /v1/messages HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nExpect: 100-continue"
               "\r\nContent-Length: %d\r\n\r\n" % (a_host, ph["anthropic"], len(body))).encode())
    rd = Reader(s)
    st, _, _ = rd.head()
    C.eq(100, st, "Expect: 100-continue answered")
    s.sendall(body)
    C.eq(200, rd.response().status, "body after 100 Continue")
    s.close()

    # large responses, with and without length
    for mode in ("big", "bigchunked"):
        r = via_relay(ports["anthropic"], request("POST", "/v1/messages", a_host, a_key +
                      [("x-test-mode", mode), ("x-test-bytes", str(48 << 20))], body), 120)
        C.eq(200, r.status, mode + " response status")
        C.eq(48 << 20, len(r.body), mode + " response length")

    # streaming: each event arrives before the next is sent
    s = tcp_conn(ports["anthropic"])
    s.sendall(request("POST", "/v1/messages", a_host, a_key,
                      json.dumps({"stream": True, "events": 5, "gap_ms": 200}).encode()))
    rd = Reader(s)
    st, _, hdrs = rd.head()
    C.eq(200, st, "SSE status")
    C.ok(("Transfer-Encoding", "chunked") in hdrs, "SSE re-chunked to the box")
    got = []
    for d in rd.chunks():
        got.append((time.time(), d))
    s.close()
    sent = wait_for(lambda: [e for e in read_log(up_log) if e.get("mode") == "sse"])[-1]["sent"]
    C.eq(5, len(got), "five events received")
    C.ok(all(got[i][0] < sent[i + 1] for i in range(len(sent) - 1)),
         "each event received before the next was sent (recv %s sent %s)"
         % ([round(g[0], 3) for g in got], [round(x, 3) for x in sent]))

    # --- policy refusals, each with its control above or beside it ---
    refused(via_unix(request("POST", "/v1/messages", "127.0.0.1:%d" % free_port(), a_key, body)),
            404, "unknown backend", "unknown backend")
    refused(via_unix(request("GET", "/v1/messages", a_host, a_key)), 405, "method not allowed",
            "GET /v1/messages")
    refused(via_unix(request("DELETE", "/v1/models/x", a_host, a_key)), 405,
            "method not allowed", "DELETE /v1/models/x")
    C.eq(200, via_unix(request("GET", "/v1/models/x", a_host, a_key)).status,
         "control: GET /v1/models/x")
    refused(via_unix(request("POST", "/v1/complete", a_host, a_key, body)), 403,
            "path not allowed", "POST /v1/complete")
    refused(via_unix(request("POST", "/v1/messages/batches", a_host, a_key, body)), 403,
            "path not allowed", "POST /v1/messages/batches")
    C.eq(200, via_unix(request("POST", "/v1/messages/count_tokens", a_host, a_key, body)).status,
         "control: count_tokens")
    for bad in ("/v1/models/../messages", "/v1//messages", "/v1/%2e%2e/messages",
                "/v1/messages%2fx", "/v1/models/./x", "/v1/messages;x", "/v1/models\\x"):
        refused(via_unix(request("POST", bad, a_host, a_key, body)), 400, "not canonical",
                "path " + bad)
    refused(via_unix(request("POST", "/v1/messages", a_host, [], body)), 401,
            "missing credential", "no credential header")
    refused(via_unix(request("POST", "/v1/messages", a_host, [("x-api-key", KEY)], body)), 401,
            "placeholder", "the real key from the box")
    refused(via_unix(request("POST", "/v1/messages", a_host,
                             [("Authorization", "Bearer " + KEY)], body)), 401, "placeholder",
            "the real key as Bearer")
    refused(via_unix(request("POST", "/v1/messages", a_host, [("x-api-key", "sk-other")], body)),
            401, "placeholder", "another key")
    refused(via_unix(request("POST", "/v1/messages", a_host,
                             [("x-api-key", ph["anthropic"] + "x")], body)), 401, "placeholder",
            "placeholder with a suffix")
    refused(via_unix(request("POST", "/v1/messages", a_host, a_key + [("x-api-key", "y")], body)),
            401, "more than one credential", "two x-api-key headers")
    refused(via_unix(request("POST", "/v1/messages", a_host,
                             a_key + [("Authorization", "Bearer zzz")], body)), 401, "placeholder",
            "placeholder plus another bearer")
    refused(via_unix(request("POST", "http://%s/v1/messages" % a_host, a_host, a_key, body)), 400,
            "absolute-form", "absolute-form target")
    refused(via_unix(request("OPTIONS", "*", a_host, a_key)), 400, "asterisk-form", "OPTIONS *")
    refused(via_unix(request("POST", "/v1/messages", "api.anthropic.com", a_key, body)), 421,
            "Host does not match", "Host api.anthropic.com")
    refused(via_unix(request("POST", "/v1/messages", "127.0.0.2:%d" % ports["anthropic"], a_key,
                             body)), 421, "Host does not match", "Host 127.0.0.2")
    refused(via_unix(request("POST", "/v1/messages", None, a_key, body)), 400, "missing Host",
            "no Host")
    refused(via_unix(request("POST", "/v1/messages", a_host, a_key + [("Host", a_host)], body)),
            400, "more than one Host", "two Host headers")
    C.eq(200, via_unix(request("POST", "/v1/messages", "localhost:%d" % ports["anthropic"], a_key,
                               body)).status, "control: Host localhost:PORT")
    refused(via_unix(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n"),
            405, "CONNECT", "CONNECT")
    raw = request("POST", "/v1/messages", a_host, a_key + [("Content-Length", "5")],
                  b"abcde", chunked=True)
    refused(via_unix(raw), 400, "conflicting Content-Length and Transfer-Encoding", "CL + TE")
    raw = request("POST", "/v1/messages", a_host, a_key + [("Content-Length", "5")], b"abcde")
    refused(via_unix(raw), 400, "Content-Length", "two Content-Length")
    raw = request("POST", "/v1/messages", a_host, a_key + [("Transfer-Encoding", "gzip")],
                  b"abcde", chunked=True)
    refused(via_unix(raw), 501, "Transfer-Encoding", "TE gzip, chunked")
    raw = request("POST", "/v1/messages", a_host, a_key + [("X-Big", "a" * (40 << 10))], body)
    refused(via_unix(raw), 431, "too large", "40 KiB header")
    raw = request("POST", "/v1/messages", a_host, a_key + [("X-H%d" % i, "v") for i in range(120)],
                  body)
    refused(via_unix(raw), 431, "too many", "120 headers")
    raw = request("POST", "/v1/messages", a_host, a_key + [("X-H%d" % i, "v") for i in range(60)],
                  body)
    C.eq(200, via_unix(raw).status, "control: 60 extra headers")
    raw = request("GET", "/v1/models", a_host, a_key + [("Connection", "Upgrade"),
                                                         ("Upgrade", "websocket")])
    refused(via_unix(raw), 426, "WebSocket", "websocket upgrade (426: the client falls back)")
    raw = request("GET", "/v1/models", a_host, a_key + [("Connection", "Upgrade"),
                                                         ("Upgrade", "h2c")])
    refused(via_unix(raw), 400, "upgrade", "h2c upgrade")
    refused(via_unix(request("GET", "/v1/models", a_host, a_key + [("Expect", "fancy")])), 417,
            "Expect", "unsupported Expect")
    refused(via_unix(request("GET", "/v1/models", a_host, a_key, version="HTTP/2.0")), 505,
            "version", "HTTP/2.0 request line")
    C.eq(200, via_unix(request("GET", "/v1/models", a_host, a_key, version="HTTP/1.0")).status,
         "control: HTTP/1.0")

    # --- the key never comes back, even when the upstream echoes it ---
    r = via_unix(request("POST", "/v1/messages", a_host, a_key + [("x-test-mode", "echo-key")],
                         body))
    C.eq(401, r.status, "echo-key: upstream status passed through")
    C.ok(KEY.encode() not in r.body, "echoed key redacted in body")
    C.ok(b"*" * len(KEY) in r.body, "redaction keeps the length")
    C.ok(KEY not in (r.header("x-echo") or "") and "*" * len(KEY) in (r.header("x-echo") or ""),
         "echoed key redacted in headers")
    C.eq(len(r.body), int(r.header("content-length")), "Content-Length still true")

    # --- TLS: verification on, with a control ---
    t_key = [("x-api-key", ph["tls"])]
    r = via_unix(request("POST", "/v1/messages", "127.0.0.1:%d" % ports["tls"], t_key, body))
    C.eq(200, r.status, "control: TLS upstream with the right CA and host name")
    C.eq(KEY, dict(read_log(tls_log)[-1]["headers"]).get("x-api-key"), "TLS upstream got the key")
    r = via_unix(request("POST", "/v1/messages", "127.0.0.1:%d" % ports["tlshost"],
                         [("x-api-key", ph["tlshost"])], body))
    refused(r, 502, "TLS", "TLS host name mismatch")
    r = via_unix(request("POST", "/v1/messages", "127.0.0.1:%d" % ports["tlsca"],
                         [("x-api-key", ph["tlsca"])], body))
    refused(r, 502, "TLS", "TLS unknown CA")

    # --- upstream failures ---
    r = via_unix(request("POST", "/v1/messages", "127.0.0.1:%d" % ports["refused"],
                         [("Authorization", "Bearer " + ph["refused"])], body))
    refused(r, 502, "refused", "upstream refuses connections")
    t0 = time.time()
    r = via_unix(request("POST", "/v1/messages", "127.0.0.1:%d" % ports["slow"],
                         [("Authorization", "Bearer " + ph["slow"]), ("x-test-mode", "slow"),
                          ("x-test-sleep", "4")], body))
    refused(r, 504, "timed out", "upstream silent past the idle timeout")
    C.ok(time.time() - t0 < 3.5, "timeout came from the proxy (%.1fs)" % (time.time() - t0))
    r = via_unix(request("POST", "/v1/messages", a_host, a_key + [("x-test-mode", "close")], body))
    refused(r, 502, "upstream closed", "upstream closes without answering")

    # --- 64 concurrent streams ---
    results = [None] * 64

    def stream(i):
        try:
            s = tcp_conn(ports["anthropic"], 60)
            s.sendall(request("POST", "/v1/messages", a_host, a_key,
                              json.dumps({"stream": True, "events": 5, "gap_ms": 200}).encode()))
            rd = Reader(s)
            st, _, _ = rd.head()
            results[i] = (st, len(list(rd.chunks())))
            s.close()
        except Exception as ex:  # noqa: BLE001 - recorded as a failure
            results[i] = repr(ex)

    t0 = time.time()
    th = [threading.Thread(target=stream, args=(i,)) for i in range(64)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    took = time.time() - t0
    C.eq([(200, 5)] * 64, results, "64 concurrent streams all complete")
    C.ok(took < 8, "64 streams ran concurrently (%.1fs; serial would be ~51s)" % took)

    # --- a box that hangs up aborts the upstream request ---
    n_abort = len([e for e in read_log(up_log) if e.get("event") == "aborted"])
    s = tcp_conn(ports["anthropic"])
    s.sendall(request("POST", "/v1/messages", a_host, a_key + [("x-test-mode", "forever")], body))
    rd = Reader(s)
    rd.head()
    next(rd.chunks())
    t_close = time.time()
    s.close()
    ab = wait_for(lambda: [e for e in read_log(up_log) if e.get("event") == "aborted"][n_abort:],
                  timeout=10)
    C.ok(bool(ab), "upstream request aborted after the box hung up")
    if ab:
        C.ok(ab[0]["time"] - t_close < 3, "abort within 3 s (%.2fs)" % (ab[0]["time"] - t_close))

    # --- hostile input: no crash, no hang; the proxy still serves afterwards ---
    corpus = [
        b"\x00\x01\x02garbage\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\nx-api-key: "
        + ph["anthropic"].encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\nContent-Length: -1\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode()
        + b"\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\n Folded: x\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\nBad Name: x\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\nX: a\rb\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\nHost: " + a_host.encode() + b"\nX: a\x00b\n\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode()
        + b"\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode()
        + b"\r\nTransfer-Encoding: xchunked\r\n\r\n",
        b"GET /v1/models HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\nContent-Length: 3\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\n" + b"X: y\r\n" * 5000,
        b"G" * 100000,
        b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        b"\r\n\r\n\r\n",
        b"POST /v1/messages HTTP/1.1\r\nHost: " + a_host.encode() + b"\r\nx-api-key: "
        + ph["anthropic"].encode() + b"\r\nContent-Length: 100\r\n\r\nshort",
    ]
    for i, raw in enumerate(corpus):
        s = unix_conn(sock, 10)
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
            data = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                data += d
            C.ok(data == b"" or data.startswith(b"HTTP/1.1 4") or data.startswith(b"HTTP/1.1 5"),
                 "hostile #%d answered with an error or closed: %r" % (i, data[:80]))
        except socket.timeout:
            C.ok(False, "hostile #%d: proxy hung" % i)
        except (ConnectionResetError, BrokenPipeError):
            C.ok(True, "hostile #%d reset" % i)
        finally:
            s.close()
    C.ok(hp.poll() is None, "proxy alive after hostile input")
    C.eq(200, via_unix(request("POST", "/v1/messages", a_host, a_key, body)).status,
         "control: still serving after hostile input")

    # --- records (what the audit will store) ---
    hp.terminate()
    hp.wait(20)
    C.eq(0, hp.returncode, "harness shut down cleanly with connections open")
    recs = read_log(records)
    text = open(records).read()
    C.ok(KEY not in text and OKEY not in text, "records hold no credential")
    C.ok(any(r["allowed"] and r["status"] == 200 and r["backend"] == "anthropic" and
             r["path"] == "/v1/messages" and r["method"] == "POST" and r["bytes_up"] == len(body)
             for r in recs), "allowed request recorded with bytes")
    C.ok(any(not r["allowed"] and r["status"] == 403 and r["reason"] == "path not allowed for this backend"
             for r in recs), "refused request recorded with its reason")
    C.ok(any(r["status"] == 504 and r["reason"] == "upstream timed out" for r in recs),
         "upstream timeout recorded")
    C.ok(not any("beta=true" in r["path"] for r in recs), "records keep the path, not the query")


try:
    main()
finally:
    P.stop_all()
C.finish()
