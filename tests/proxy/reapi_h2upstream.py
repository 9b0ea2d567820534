#!/usr/bin/env python3
"""A hostile HTTP/2 upstream for the reapi attack test, written frame by frame (no h2 library):
it answers every request stream without reading it, the way MODE says:

    push    a PUSH_PROMISE and the pushed stream's 1 MiB before the answer
    huge    500 response headers of 1 KiB (in CONTINUATION frames)
    bomb    an HPACK bomb: one 4 KiB header in the dynamic table, referenced 20000 times
    plain   a plain gRPC answer (the control)

    reapi_h2upstream.py MODE PORTFILE
"""
import os
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2raw import CONT, DATA, EH, ES, HEADERS, PUSH, SETTINGS, WINUP, frame, lit  # noqa: E402

MODE, PORTFILE = sys.argv[1], sys.argv[2]


def head_frames(sid, block, end=False):
    """A header block in HEADERS and CONTINUATION frames of at most 16 KiB."""
    chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)] or [b""]
    out = b""
    for i, c in enumerate(chunks):
        fl = (EH if i == len(chunks) - 1 else 0) | (ES if end and i == 0 else 0)
        out += frame(HEADERS if i == 0 else CONT, fl, sid, c)
    return out


def answer(sid, state):
    grpc = [lit(":status", "200"), lit("content-type", "application/grpc")]
    out = b""
    if MODE == "push":
        state["push"] += 2
        p = state["push"]
        promise = b"".join(lit(n, v) for n, v in ((":method", "GET"), (":scheme", "http"),
                                                   (":path", "/pushed"),
                                                   (":authority", "x")))
        out += frame(PUSH, EH, sid, struct.pack(">I", p) + promise)
        out += head_frames(p, lit(":status", "200"))
        out += b"".join(frame(DATA, 0, p, b"p" * 16384) for _ in range(64))
        out += frame(DATA, ES, p, b"")
    if MODE == "huge":
        grpc += [lit("x-huge-%d" % i, "h" * 1024) for i in range(500)]
    if MODE == "bomb":
        grpc += [lit("x-bomb", "b" * 4000, 0x40), b"\xbe" * 20000]
    out += head_frames(sid, b"".join(grpc))
    out += frame(DATA, 0, sid, b"\0\0\0\0\0")
    out += head_frames(sid, lit("grpc-status", "0"), end=True)
    return out


def serve(c):
    state = {"push": 0}
    buf = b""
    try:
        c.sendall(frame(SETTINGS, 0, 0) + frame(WINUP, 0, 0, struct.pack(">I", 1 << 30)))
        while len(buf) < 24:
            buf += c.recv(65536)
        buf = buf[24:]
        while True:
            while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            n = int.from_bytes(buf[:3], "big")
            t, fl, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            buf = buf[9 + n:]
            if t == SETTINGS and not fl & 1:
                c.sendall(frame(SETTINGS, 1, 0))
            elif t == HEADERS and sid % 2 == 1:
                c.sendall(answer(sid, state))
    except OSError:
        pass
    finally:
        c.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


main()
