#!/usr/bin/env python3
"""The attacker in the box for the reapi backend: grpcio calls with crafted messages and
metadata, and HTTP/2 frames written by hand (no h2 library: HPACK literals without indexing)
for what grpcio would never send. Prints one JSON report of what the box saw.

    reapi_evil.py grpc|echo|raw|flood|slow
"""
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2raw import (CONT, DATA, EH, ES, GOAWAY, HEADERS, PING, PREFACE, RST, SETTINGS, WINUP,  # noqa: E402
                   frame, hint, lit)
from reapi_pb import enc_bytes  # noqa: E402

ADDR = ("127.0.0.1", 8717)
V2 = "/build.bazel.remote.execution.v2."
CAP = V2 + "Capabilities/GetCapabilities"
rep = {}


# ---- grpcio ---------------------------------------------------------------------------------

def grpc_call(path, req, md=None, whole=False):
    import grpc
    ch = grpc.insecure_channel("%s:%d" % ADDR)
    try:
        body, call = ch.unary_unary(path, lambda b: b, lambda b: b).with_call(
            req, timeout=20, metadata=md)
        out = ["OK", "", body.decode("latin-1")]
    except grpc.RpcError as e:
        call, out = e, [e.code().name, e.details() or "", ""]
    if whole:  # everything the box received: headers, trailers, message
        out.append(repr(call.initial_metadata()) + repr(call.trailing_metadata()))
    ch.close()
    return out


def grpc_attacks():
    import grpc
    fm = V2 + "ContentAddressableStorage/FindMissingBlobs"
    rep["one_main"] = grpc_call(fm, enc_bytes(1, b"main"))
    rep["repeated"] = grpc_call(fm, enc_bytes(1, b"main") + enc_bytes(1, b"other"))
    rep["repeated_late"] = grpc_call(fm, enc_bytes(1, b"main") + enc_bytes(2, b"x") +
                                     enc_bytes(1, b"other"))
    rep["wire_type_0"] = grpc_call(fm, enc_bytes(1, b"main") + b"\x08\x01")
    rep["repeated_main"] = grpc_call(fm, enc_bytes(1, b"main") + enc_bytes(1, b"main"))
    # ByteStream Write: the second message names another instance.
    ch = grpc.insecure_channel("%s:%d" % ADDR)

    def msgs(second):
        yield enc_bytes(1, b"main/uploads/u/blobs/00/1") + enc_bytes(10, b"a")
        yield enc_bytes(1, second) + enc_bytes(10, b"b")
    for key, second in (("write_second_other", b"other/uploads/u/blobs/00/1"),
                        ("write_second_main", b"main/uploads/u/blobs/00/1")):
        try:
            ch.stream_unary("/google.bytestream.ByteStream/Write", lambda b: b, lambda b: b)(
                msgs(second), timeout=20)
            rep[key] = "OK"
        except grpc.RpcError as e:
            rep[key] = e.code().name
    ch.close()
    # Operations have no instance field: listing them names every instance's.
    rep["list_operations"] = grpc_call("/google.longrunning.Operations/ListOperations",
                                       enc_bytes(4, b"") + enc_bytes(1, b""))
    rep["get_operation"] = grpc_call("/google.longrunning.Operations/GetOperation",
                                     enc_bytes(1, b"operations/x"))
    # Google's metadata that the host's token would carry: quota project, IAM, routing.
    rep["goog_headers"] = grpc_call(CAP, enc_bytes(1, b"main"), [
        ("x-goog-user-project", "victim-project"), ("x-goog-request-params", "victim=1"),
        ("x-goog-iam-authorization-token", "box-iam"), ("cookie", "box-cookie"),
        ("x-goog-api-key", "box-key"), ("authorization", "Bearer box-own")])


def hostile_upstream():
    """Two calls against an upstream that pushes, or answers with huge or bombed headers."""
    for k in ("first", "second"):
        out = grpc_call(CAP, b"", whole=True)
        rep[k] = out[:2] + [out[3].count("_Metadatum")]


def echo_attacks():
    for m in ("echo-header", "echo-trailer", "echo-message", "echo-body", "plain"):
        rep[m] = grpc_call(CAP, enc_bytes(1, m.encode()), whole=True)


# ---- raw HTTP/2 ----------------------------------------------------------------------------

def block(hs):
    return b"".join(lit(n, v) for n, v in hs)


def req(path=CAP, extra=(), authority="127.0.0.1:8717"):
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", authority), ("content-type", "application/grpc"),
            ("te", "trailers")] + list(extra)


def grpc_msg(body):
    return b"\0" + struct.pack(">I", len(body)) + body


class H2:
    def __init__(self, settings=b""):
        self.s = socket.create_connection(ADDR, timeout=10)
        self.s.sendall(PREFACE + frame(SETTINGS, 0, 0, settings))
        self.buf = b""
        self.next = 1

    def send(self, data):
        self.s.sendall(data)

    def sid(self):
        self.next += 2
        return self.next - 2

    def frame(self, timeout=10):
        self.s.settimeout(timeout)
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            d = self.s.recv(1 << 20)
            if not d:
                return None
            self.buf += d
        n = int.from_bytes(self.buf[:3], "big")
        f = (self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF,
             self.buf[9:9 + n])
        self.buf = self.buf[9 + n:]
        if f[0] == SETTINGS and not f[1] & 1:
            self.send(frame(SETTINGS, 1, 0))
        return f

    def outcome(self, sid, timeout=10):
        """How stream sid ended: refused (one HEADERS with END_STREAM: a trailers-only gRPC
        answer), answered (HEADERS, DATA, trailers), rst, goaway, closed or timeout."""
        heads, end = 0, time.monotonic() + timeout
        try:
            while time.monotonic() < end:
                f = self.frame(end - time.monotonic())
                if f is None:
                    return "closed"
                t, fl, s, p = f
                if t == GOAWAY:
                    return "goaway"
                if s != sid:
                    continue
                if t == RST:
                    return "rst"
                if t == HEADERS:
                    heads += 1
                if t in (HEADERS, DATA) and fl & ES:
                    return "refused" if heads == 1 and t == HEADERS else "answered"
        except (socket.timeout, OSError):
            return "timeout"
        return "timeout"

    def call(self, hs, body=grpc_msg(enc_bytes(1, b"main")), split=None):
        sid = self.sid()
        hb = block(hs)
        if split is None:
            self.send(frame(HEADERS, EH, sid, hb))
        else:  # the head in HEADERS then CONTINUATION frames
            self.send(frame(HEADERS, 0, sid, hb[:split]) + frame(CONT, EH, sid, hb[split:]))
        self.send(frame(DATA, ES, sid, body))
        return self.outcome(sid)

    def close(self):
        self.s.close()


def raw_attacks():
    cases = {
        "control": req(),
        "path_pct2f": req(V2 + "Capabilities%2FGetCapabilities"),
        "path_dotdot": req("/google.bytestream.ByteStream/../../build.bazel.remote.execution"
                           ".v2.ActionCache/UpdateActionResult"),
        "path_query": req(CAP + "?x=1"),
        "path_trailing": req(CAP + "/"),
        "path_junk": req(CAP + "\x01"),
        "path_upper": req(V2 + "ActionCache/UPDATEACTIONRESULT"),
        "path_uar": req(V2 + "ActionCache/UpdateActionResult"),
        "path_twice": req() + [(":path", V2 + "ActionCache/UpdateActionResult")],
        "pseudo_after": [("content-type", "application/grpc")] + req()[:4],
        "name_upper": req() + [("Authorization", "Bearer box")],
        "authority_other": req(authority="evil.example:443"),
        "method_get": [(":method", "GET")] + req()[1:],
        # Bytes for the audit: invalid UTF-8, a right-to-left override, 8 KB.
        "path_binary": req(b"/evil\xff\xfe\xe2\x80\xaetxt.exe/" + b"A" * 8000),
    }
    for k, hs in cases.items():
        h = H2()
        rep["raw_" + k] = h.call(hs)
        h.close()
    # HTTP/1.1 on the reapi port: the HTTP/1 path must not forward it with the token.
    for k, path in (("http1_cap", CAP), ("http1_uar", V2 + "ActionCache/UpdateActionResult")):
        c = socket.create_connection(ADDR, timeout=10)
        body = grpc_msg(enc_bytes(1, b"main"))
        c.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:8717\r\nContent-Type: application/grpc"
                  b"\r\nContent-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
        rep[k] = c.recv(4096).split(b"\r\n")[0].decode("latin-1")
        c.close()
    # Credentials in a CONTINUATION frame, and in the request's trailers.
    h = H2()
    rep["raw_cont_auth"] = h.call(req(extra=[("authorization", "Bearer box-cont"),
                                             ("x-goog-user-project", "victim-cont")]),
                                  split=40)
    sid = h.sid()
    h.send(frame(HEADERS, EH, sid, block(req())) +
           frame(DATA, 0, sid, grpc_msg(enc_bytes(1, b"main"))) +
           frame(HEADERS, EH | ES, sid, block([("authorization", "Bearer box-trailer")])))
    rep["raw_trailer_auth"] = h.outcome(sid)
    h.close()


def alive():
    """A control call on a new connection: the proxy still serves."""
    h = H2()
    out = h.call(req())
    h.close()
    return out


def flood_attacks():
    t0 = time.monotonic()
    # Rapid reset (CVE-2023-44487): streams opened and reset at once, thousands of them.
    h = H2()
    burst = b"".join(frame(HEADERS, EH, 2 * i + 1, block(req())) +
                     frame(DATA, 0, 2 * i + 1, grpc_msg(enc_bytes(1, b"main"))) +
                     frame(RST, 0, 2 * i + 1, struct.pack(">I", 8)) for i in range(5000))
    try:
        h.send(burst)
        f = h.frame(5)
        while f and f[0] != GOAWAY:
            f = h.frame(5)
        rep["rapid_reset"] = "goaway" if f else "closed"
    except OSError as e:
        rep["rapid_reset"] = "error %s" % e
    h.close()
    rep["alive_after_rapid_reset"] = alive()
    # CONTINUATION flood: one head in endless CONTINUATION frames.
    h = H2()
    try:
        h.send(frame(HEADERS, 0, 1, block(req())))
        for i in range(20000):
            h.send(frame(CONT, 0, 1, lit("x-pad-%d" % i, "y" * 100)))
        rep["continuation_flood"] = "accepted"
    except OSError:
        rep["continuation_flood"] = "cut"
    h.close()
    rep["alive_after_continuation"] = alive()
    # An HPACK bomb: one 4 KiB header in the dynamic table, referenced 20000 times.
    h = H2()
    sid = h.sid()
    big = b"\x40" + hint(7, 7) + b"x-bombs" + hint(4000, 7) + b"b" * 4000
    h.send(frame(HEADERS, EH, sid, block(req()) + big + b"\xbe" * 20000))
    h.send(frame(DATA, ES, sid, grpc_msg(enc_bytes(1, b"main"))))
    rep["hpack_bomb"] = h.outcome(sid)
    h.close()
    rep["alive_after_hpack_bomb"] = alive()
    # SETTINGS and PING floods from a box that never reads the acknowledgements.
    for name, fr in (("settings_flood", frame(SETTINGS, 0, 0, b"\0\x03\0\0\0\x64")),
                     ("ping_flood", frame(PING, 0, 0, b"12345678"))):
        h = H2()
        h.s.settimeout(5)
        try:
            for _ in range(200):
                h.send(fr * 1000)
            rep[name] = "accepted"
        except OSError:
            rep[name] = "cut"
        h.close()
        rep["alive_after_" + name] = alive()
    # WINDOW_UPDATE past 2^31-1.
    h = H2()
    h.send(frame(WINUP, 0, 0, struct.pack(">I", 0x7FFFFFFF)) * 2)
    f = h.frame(5)
    while f and f[0] != GOAWAY:
        f = h.frame(5)
    rep["window_overflow"] = "goaway" if f else "closed"
    h.close()
    # Thousands of concurrent streams (the proxy allows 100 at a time).
    h = H2()
    h.send(b"".join(frame(HEADERS, EH, 2 * i + 1, block(req())) for i in range(2000)))
    kinds = {}
    try:
        while True:
            f = h.frame(3)
            if f is None:
                break
            if f[0] in (RST, GOAWAY):
                kinds[f[0]] = kinds.get(f[0], 0) + 1
    except (socket.timeout, OSError):
        pass
    rep["many_streams"] = {"rst": kinds.get(RST, 0), "goaway": kinds.get(GOAWAY, 0)}
    h.close()
    rep["alive_after_many_streams"] = alive()
    # More HTTP/2 connections at once than the proxy bridges (each may hold its windows).
    time.sleep(1)  # the connections above are gone from the proxy
    hs, outs = [], []
    for _ in range(24):
        try:
            hs.append(H2())
        except OSError:
            outs.append("closed")
    for h in hs:
        try:
            outs.append(h.call(req()))
        except OSError:
            outs.append("closed")
    rep["conns"] = {"answered": outs.count("answered"), "other": len(outs) - outs.count("answered")}
    for h in hs:
        h.close()
    time.sleep(0.5)
    rep["alive_after_conns"] = alive()
    rep["flood_s"] = round(time.monotonic() - t0, 1)


def slow_reader(conns=4, streams=8):
    """ByteStream Reads of big blobs on several connections whose box never reads: it opens
    its windows wide first, so only the proxy's own bounds keep its memory small."""
    hs = []
    rd = "/google.bytestream.ByteStream/Read"
    for _ in range(conns):
        h = H2(settings=b"\0\x04" + struct.pack(">I", 0x7FFFFFFF))
        h.send(frame(WINUP, 0, 0, struct.pack(">I", 0x7FFFFFFF - 65535)))
        for _ in range(streams):
            sid = h.sid()
            h.send(frame(HEADERS, EH, sid, block(req(rd))) +
                   frame(DATA, ES, sid, grpc_msg(enc_bytes(1, b"main/blobs/00/1"))))
        hs.append(h)
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()  # the host measured the proxy: now read a bit, then end
    got = 0
    for h in hs:
        h.s.settimeout(2)
        try:
            while got < (64 << 20):
                d = h.s.recv(1 << 20)
                if not d:
                    break
                got += len(d)
        except OSError:
            pass
        h.close()
    rep["slow_read_bytes"] = got


def main():
    what = sys.argv[1]
    {"grpc": grpc_attacks, "echo": echo_attacks, "hostile": hostile_upstream,
     "raw": raw_attacks, "flood": flood_attacks,
     "slow": slow_reader}[what]()
    print(json.dumps(rep), flush=True)


main()
