#!/usr/bin/env python3
"""The REAPI client in the box (grpcio, insecure, no credentials): prints one JSON report.

    reapi_client.py ADDRESS INSTANCE [BIG_MIB]
"""
import hashlib
import json
import os
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reapi_pb import enc_bytes, enc_varint, fields  # noqa: E402

ADDR, INST = sys.argv[1], sys.argv[2]
BIG = int(sys.argv[3]) if len(sys.argv) > 3 else 0
ident = lambda b: b  # noqa: E731
ch = grpc.insecure_channel(ADDR, options=[("grpc.max_receive_message_length", 256 << 20)])
R = "/build.bazel.remote.execution.v2."
rep = {}


def inst_msg():
    return enc_bytes(1, INST.encode()) if INST else b""


def call(path, req=b"", md=None):
    t = time.monotonic()
    try:
        ch.unary_unary(path, ident, ident)(req, timeout=20, metadata=md)
        code, msg = "OK", ""
    except grpc.RpcError as e:
        code, msg = e.code().name, e.details()
    return [code, msg, round(time.monotonic() - t, 3)]


def write(resource, data):
    def reqs():
        for i in range(0, len(data), 64 << 10):
            m = (enc_bytes(1, resource.encode()) if i == 0 else b"")
            m += enc_varint(2 << 3) + enc_varint(i)
            if i + (64 << 10) >= len(data):
                m += enc_varint(3 << 3) + enc_varint(1)
            yield m + enc_bytes(10, data[i:i + (64 << 10)])
    return ch.stream_unary("/google.bytestream.ByteStream/Write", ident, ident)(reqs(),
                                                                                timeout=60)


def read(resource):
    out = bytearray()
    for m in ch.unary_stream("/google.bytestream.ByteStream/Read", ident, ident)(
            enc_bytes(1, resource.encode()), timeout=120):
        out += b"".join(v for f, v in fields(m) if f == 10)  # ReadResponse: data (10)
    return bytes(out)


def main():
    pre = INST + "/" if INST else ""
    rep["capabilities"] = call(R + "Capabilities/GetCapabilities", inst_msg())
    # The box's own authorization header is dropped; the host's token goes instead.
    rep["box_auth"] = call(R + "Capabilities/GetCapabilities", inst_msg(),
                           [("authorization", "Bearer box-own-token")])
    rep["get_action_result"] = call(R + "ActionCache/GetActionResult", inst_msg())
    rep["update_action_result"] = call(R + "ActionCache/UpdateActionResult", inst_msg())
    rep["unknown_method"] = call("/build.bazel.remote.asset.v1.Push/PushBlob", inst_msg())
    rep["wrong_instance"] = call(R + "ContentAddressableStorage/FindMissingBlobs",
                                 enc_bytes(1, b"other"))
    data = os.urandom(1 << 20)
    h = hashlib.sha256(data).hexdigest()
    try:
        write("%suploads/0f3c/blobs/%s/%d" % (pre, h, len(data)), data)
        back = read("%sblobs/%s/%d" % (pre, h, len(data)))
        rep["blob_1mib"] = hashlib.sha256(back).hexdigest() == h and len(back) == len(data)
    except grpc.RpcError as e:
        rep["blob_1mib"] = "%s %s" % (e.code().name, e.details())
    try:
        write("other/uploads/0f3c/blobs/%s/%d" % (h, len(data)), data)
        rep["write_other_instance"] = "OK"
    except grpc.RpcError as e:
        rep["write_other_instance"] = e.code().name
    if BIG:
        big = os.urandom(BIG << 20)
        bh = hashlib.sha256(big).hexdigest()
        write("%suploads/1/blobs/%s/%d" % (pre, bh, len(big)), big)
        t = time.monotonic()
        back = read("%sblobs/%s/%d" % (pre, bh, len(big)))
        rep["big_read_s"] = time.monotonic() - t
        rep["big_ok"] = hashlib.sha256(back).hexdigest() == bh
        t = time.monotonic()
        for _ in range(200):
            call(R + "Capabilities/GetCapabilities", inst_msg())
        rep["call_ms"] = (time.monotonic() - t) / 200 * 1000
        print(json.dumps({k: v for k, v in rep.items()}))
        return
    rep["env"] = dict(os.environ)
    seen = []
    home = os.environ.get("HOME", "/")
    for root, dirs, files in os.walk(home):
        for f in files:
            try:
                with open(os.path.join(root, f), "rb") as fh:
                    seen.append(fh.read(1 << 20).decode("latin-1"))
            except OSError:
                pass
    with open("/proc/self/environ", "rb") as fh:
        seen.append(fh.read().decode("latin-1"))
    rep["visible"] = "\n".join(seen)
    print(json.dumps(rep))


main()
