"""The protobuf wire format the REAPI tests need (no generated code): varints, length-delimited
fields, and reading a message's fields back. Shared by the fake server (reapi_fake.py) and the
box's client (reapi_client.py, copied into the box next to this file)."""


def enc_varint(v):
    out = bytearray()
    while True:
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append(v & 0x7F | 0x80)
        v >>= 7


def enc_bytes(f, v):
    """Field f, wire type 2 (length-delimited), holding bytes v."""
    return enc_varint(f << 3 | 2) + enc_varint(len(v)) + v


def varint(b, i):
    """The varint at b[i:]: (value, index after it)."""
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """[(field, value)] of message b, for varint and length-delimited fields."""
    out, i = [], 0
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, v))
    return out
