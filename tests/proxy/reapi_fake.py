#!/usr/bin/env python3
"""A fake REAPI server for the tests (grpcio, generic handlers, raw protobuf bytes): CAS in
memory through ByteStream Read/Write and the batch calls, Capabilities, GetActionResult (a
miss), UpdateActionResult (accepted: refusing it is the proxy's job). Each call's method and
`authorization` metadata go to LOG as JSON lines.

    reapi_fake.py LOG PORTFILE [CERT KEY]   (with CERT and KEY: TLS, ALPN h2)
"""
import json
import os
import sys
import threading
from concurrent import futures

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reapi_pb import enc_bytes, enc_varint, fields  # noqa: E402

LOG, PORTFILE = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()
CAS = {}


def log(method, ctx, **kw):
    md = dict(ctx.invocation_metadata())
    rec = {"method": method, "authorization": md.get("authorization"), **kw}
    with LOCK, open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


def blob_key(resource):
    parts = resource.split("/")
    i = parts.index("blobs")
    return parts[i + 1]


def capabilities(req, ctx):
    log("GetCapabilities", ctx)
    # ServerCapabilities: cache_capabilities (1) { digest_functions (1): [SHA256],
    # action_cache_update_capabilities (2) { update_enabled: true } }, low_api_version (4)
    # and high_api_version (5): 2.0
    cache = enc_bytes(1, enc_varint(1)) + enc_bytes(2, enc_varint(1 << 3) + enc_varint(1))
    v2 = enc_varint(1 << 3) + enc_varint(2)
    return enc_bytes(1, cache) + enc_bytes(4, v2) + enc_bytes(5, v2)


def find_missing(req, ctx):
    """Every digest (field 2) not in CAS is missing."""
    log("FindMissingBlobs", ctx)
    out = b""
    for f, v in fields(req):
        if f == 2 and dict(fields(v)).get(1, b"").decode() not in CAS:
            out += enc_bytes(1, v)
    return out


def batch_update(req, ctx):
    """BatchUpdateBlobsRequest.requests (2) {digest (1), data (2)}: each stored, status OK."""
    log("BatchUpdateBlobs", ctx)
    out = b""
    for f, v in fields(req):
        if f == 2:
            r = dict(fields(v))
            CAS[dict(fields(r[1]))[1].decode()] = r.get(2, b"")
            out += enc_bytes(1, enc_bytes(1, r[1]) + enc_bytes(2, b""))
    return out


def get_action_result(req, ctx):
    log("GetActionResult", ctx)
    ctx.abort(grpc.StatusCode.NOT_FOUND, "miss")


def update_action_result(req, ctx):
    log("UpdateActionResult", ctx)
    return b""


def bs_write(it, ctx):
    name, data = None, bytearray()
    for req in it:
        for f, v in fields(req):
            if f == 1 and name is None:
                name = v.decode()
            elif f == 10:
                data += v
    CAS[blob_key(name)] = bytes(data)
    log("Write", ctx, resource=name, size=len(data))
    return enc_varint(1 << 3) + enc_varint(len(data))


def bs_read(req, ctx):
    name = dict(fields(req))[1].decode()
    data = CAS.get(blob_key(name))
    log("Read", ctx, resource=name, found=data is not None)
    if data is None:
        ctx.abort(grpc.StatusCode.NOT_FOUND, "no blob")
    for i in range(0, len(data), 1 << 20):
        yield enc_bytes(10, data[i:i + (1 << 20)])


def main():
    ident = lambda b: b  # noqa: E731
    u = lambda fn: grpc.unary_unary_rpc_method_handler(fn, ident, ident)  # noqa: E731
    h = [
        grpc.method_handlers_generic_handler("build.bazel.remote.execution.v2.Capabilities",
                                             {"GetCapabilities": u(capabilities)}),
        grpc.method_handlers_generic_handler(
            "build.bazel.remote.execution.v2.ContentAddressableStorage",
            {"FindMissingBlobs": u(find_missing), "BatchUpdateBlobs": u(batch_update)}),
        grpc.method_handlers_generic_handler(
            "build.bazel.remote.execution.v2.ActionCache",
            {"GetActionResult": u(get_action_result),
             "UpdateActionResult": u(update_action_result)}),
        grpc.method_handlers_generic_handler("google.bytestream.ByteStream", {
            "Write": grpc.stream_unary_rpc_method_handler(bs_write, ident, ident),
            "Read": grpc.unary_stream_rpc_method_handler(bs_read, ident, ident)}),
    ]
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=h,
                      options=[("grpc.max_receive_message_length", 256 << 20)])
    if len(sys.argv) > 4:
        with open(sys.argv[3], "rb") as c, open(sys.argv[4], "rb") as k:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        port = srv.add_secure_port("127.0.0.1:0", creds)
    else:
        port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    srv.wait_for_termination()


if __name__ == "__main__":
    main()
