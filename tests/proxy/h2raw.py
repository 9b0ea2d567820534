"""HTTP/2 written by hand (no h2 library): frames and HPACK literals, for the tests that must
send or answer what a real client or server would not. Shared by the box's attacker
(reapi_evil.py, copied into the box next to this file) and the hostile upstream
(reapi_h2upstream.py)."""
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST, SETTINGS, PUSH, PING, GOAWAY, WINUP, CONT = 0, 1, 3, 4, 5, 6, 7, 8, 9
ES, EH = 1, 4  # END_STREAM, END_HEADERS


def frame(t, fl, sid, p=b""):
    return struct.pack(">I", len(p))[1:] + bytes([t, fl]) + struct.pack(">I", sid) + p


def hint(v, bits, first=0):
    """HPACK's integer v in a prefix of `bits` bits, the byte's other bits `first`."""
    mx = (1 << bits) - 1
    if v < mx:
        return bytes([first | v])
    out = bytearray([first | mx])
    v -= mx
    while v >= 128:
        out.append(v & 127 | 128)
        v >>= 7
    out.append(v)
    return bytes(out)


def lit(n, v, first=0):
    """A literal header field with a literal name (first: 0x00 without indexing, 0x40 with
    incremental indexing); n and v as str or bytes."""
    n, v = n.encode() if isinstance(n, str) else n, v.encode() if isinstance(v, str) else v
    return bytes([first]) + hint(len(n), 7) + n + hint(len(v), 7) + v
