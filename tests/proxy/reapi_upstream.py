#!/usr/bin/env python3
"""A recording and hostile REAPI upstream for the attack tests (grpcio, raw protobuf bytes).
Each call goes to LOG as a JSON line: method, every metadata pair, and every top-level field 1
of every request message (what the proxy's instance check must have passed). By the last field
1 of the request (what a protobuf parser keeps), GetCapabilities misbehaves: "echo-header",
"echo-trailer", "echo-message" and "echo-body" send the caller's authorization back in a
response header, a trailer, the status message or the response message. ByteStream Read
streams BIG MiB of zeros; Write stores nothing.

    reapi_upstream.py LOG PORTFILE
"""
import json
import os
import sys
import threading
from concurrent import futures

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reapi_pb import varint  # noqa: E402

LOG, PORTFILE = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()


def field1s(b):
    """Every top-level field 1 (any wire type) as text; None when not protobuf."""
    out, i = [], 0
    try:
        while i < len(b):
            tag, i = varint(b, i)
            f, wt = tag >> 3, tag & 7
            if wt == 0:
                v, i = varint(b, i)
                v = str(v)
            elif wt == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n].decode("latin-1"), i + n
            elif wt in (1, 5):
                v, i = "fixed", i + (8 if wt == 1 else 4)
            else:
                return out + ["<wire type %d>" % wt]
            if f == 1:
                out.append(v)
    except IndexError:
        out.append("<truncated>")
    return out


def log(method, ctx, msgs):
    rec = {"method": method, "metadata": [list(kv) for kv in ctx.invocation_metadata()],
           "field1": [field1s(m) for m in msgs]}
    with LOCK, open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


def enc_bytes(f, v):
    n, out = len(v), bytearray([f << 3 | 2])
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + v


def capabilities(req, ctx):
    log("GetCapabilities", ctx, [req])
    inst = (field1s(req) or [""])[-1]
    auth = dict(ctx.invocation_metadata()).get("authorization", "")
    if inst == "echo-header":
        ctx.send_initial_metadata([("x-echo", auth), ("www-authenticate", auth)])
    elif inst == "echo-trailer":
        ctx.set_trailing_metadata([("x-echo", auth)])
    elif inst == "echo-message":
        ctx.abort(grpc.StatusCode.UNAUTHENTICATED, "token rejected: " + auth)
    elif inst == "echo-body":
        return enc_bytes(15, ("you sent " + auth).encode())
    return b""


def unary(name):
    def fn(req, ctx):
        log(name, ctx, [req])
        return b""
    return fn


def bs_write(it, ctx):
    msgs = list(it)
    log("Write", ctx, msgs)
    return b"\x08" + bytes([0])


def bs_read(req, ctx):
    log("Read", ctx, [req])
    big = int(os.environ.get("BIG", "64"))
    chunk = enc_bytes(10, bytes(1 << 20))
    for _ in range(big):
        yield chunk


def main():
    ident = lambda b: b  # noqa: E731
    u = lambda fn: grpc.unary_unary_rpc_method_handler(fn, ident, ident)  # noqa: E731
    v2 = "build.bazel.remote.execution.v2."
    h = [
        grpc.method_handlers_generic_handler(v2 + "Capabilities",
                                             {"GetCapabilities": u(capabilities)}),
        grpc.method_handlers_generic_handler(v2 + "ContentAddressableStorage", {
            "FindMissingBlobs": u(unary("FindMissingBlobs"))}),
        grpc.method_handlers_generic_handler(v2 + "ActionCache", {
            "GetActionResult": u(unary("GetActionResult")),
            "UpdateActionResult": u(unary("UpdateActionResult"))}),
        grpc.method_handlers_generic_handler("google.bytestream.ByteStream", {
            "Write": grpc.stream_unary_rpc_method_handler(bs_write, ident, ident),
            "Read": grpc.unary_stream_rpc_method_handler(bs_read, ident, ident)}),
    ]
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=16), handlers=h,
                      options=[("grpc.max_receive_message_length", 256 << 20)])
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    srv.wait_for_termination()


if __name__ == "__main__":
    main()
