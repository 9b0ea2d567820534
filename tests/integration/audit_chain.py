"""tests/integration/audit_chain.py: the audit's hash chain, --verify and --export.

A workspace's real audit (file operations through the mounted view, a non-UTF-8 file name, a
`shell` session) is checked by `audit NAME --verify`, exported as a bundle and checked with
`audit --verify=FILE`, and by a verifier written here from docs/audit.md's description alone
(the chain must be checkable without arborinth). Then single rows are edited, deleted,
moved, reordered or retyped with sqlite3 (and single bundle lines edited, dropped, swapped
or cut) on copies: each must be reported with the seq of the row, exit 1; the untouched
originals verify. A database of the schema before the chain is migrated and verifies. Bad
input to --verify and --export: one line on stderr naming the thing, non-zero exit, nothing
written, the database unchanged.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fslib import Checks, Fixture  # noqa: E402

COLS = ["seq", "prev_seq", "time_ns", "kind", "op", "path", "path2", "result", "pid", "comm",
        "exe", "session", "size", "count", "off_lo", "off_hi", "mode", "mtime_ns", "backend",
        "method", "host", "port", "status", "bytes_up", "bytes_down", "duration_ns",
        "decision", "reason"]


def encode(v):
    """README: NULL 0x00; integer 0x01 + 8 bytes big-endian; text 0x02 + 4-byte length."""
    if v is None:
        return b"\x00"
    if isinstance(v, int):
        return b"\x01" + struct.pack(">q", v)
    if isinstance(v, str):
        v = v.encode("utf-8", "surrogateescape")
    return b"\x02" + struct.pack(">I", len(v)) + v


def genesis(ws_id):
    return hashlib.sha256(b"arborinth audit chain v1\n" + ws_id.encode()).digest()


def chain_head(ws_id, rows):
    """The head of rows (dicts in seq order) or raises naming the first broken seq."""
    prev, prev_seq = genesis(ws_id), None
    for r in rows:
        if r["prev_seq"] != prev_seq:
            raise ValueError("link at seq %d" % r["seq"])
        h = hashlib.sha256(prev + b"".join(encode(r[c]) for c in COLS)).digest()
        if h.hex() != r["hash"]:
            raise ValueError("hash at seq %d" % r["seq"])
        prev, prev_seq = h, r["seq"]
    return prev.hex()


def bundle_value(v):
    if isinstance(v, dict):
        return bytes.fromhex(v["hex"])
    return v


def verify_bundle_here(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f]
    head, rows, trailer = lines[0], lines[1:-1], lines[-1]
    assert head["format"] == "arborinth-audit-bundle" and head["columns"] == COLS
    rows = [{k: bundle_value(v) for k, v in r.items()} for r in rows]
    got = chain_head(head["workspace_id"], rows)
    assert trailer == {"head": got, "rows": len(rows)}, trailer
    return got, len(rows)


def db_rows(db_path, key):
    db = sqlite3.connect(db_path)
    db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    rows = []
    for t in db.execute("SELECT %s, hex(hash) FROM audit_events WHERE ws = ? ORDER BY seq" %
                        ", ".join(COLS), (key,)):
        r = dict(zip(COLS, t[:-1]))
        r["hash"] = t[-1].lower()
        rows.append(r)
    ws_id = db.execute("SELECT id FROM audit_workspaces WHERE key = ?", (key,)).fetchone()[0]
    db.close()
    return ws_id, rows


class Chain:
    def __init__(self, fx, c):
        self.fx, self.c = fx, c
        self.db = os.path.join(fx.repo, ".git", "arborinth", "state.db")
        self.saved = os.path.join(fx.tmp, "saved.db")

    def sql(self, stmt):
        db = sqlite3.connect(self.db)
        db.executescript(stmt)
        db.close()

    def seqs(self):
        db = sqlite3.connect(self.db)
        out = [s for (s,) in db.execute("SELECT seq FROM audit_events ORDER BY seq")]
        db.close()
        return out

    def save(self):
        shutil.copy(self.db, self.saved)

    def restore(self):
        shutil.copy(self.saved, self.db)

    def verify(self, *extra):
        return self.fx.arb("audit", *extra, check=False)

    def broken(self, what, stmt, seq):
        self.sql(stmt)
        p = self.verify("w", "--verify")
        self.c.eq(1, p.returncode, what + ": exit status")
        want = "broken at seq %d:" % seq if seq else "broken: "
        self.c.ok(want in p.stderr, "%s: %r in %r" % (what, want, p.stderr))
        self.c.eq(1, len(p.stderr.strip().splitlines()), what + ": one line")
        self.c.eq("", p.stdout, what + ": nothing on stdout")
        self.restore()


def make_history(fx, c):
    w = fx.root
    with open(os.path.join(w, "new.txt"), "w") as f:
        f.write("one\n")
    os.rename(os.path.join(w, "new.txt"), os.path.join(w, "moved.txt"))
    os.unlink(os.path.join(w, "empty"))
    os.mkdir(os.path.join(w, "dir"))
    odd = os.path.join(w.encode(), b"odd-\xff\xfe.txt")
    with open(odd, "wb") as f:
        f.write(b"bytes")
    p = fx.arb("shell", "w", "--jail", "none", "--", "sh", "-c", "echo hi > from-shell",
               check=False)
    c.eq(0, p.returncode, "a shell session (%s)" % p.stderr)
    fx.arb("workspace", "unmount", "w")


def check_intact(fx, c, ch):
    p = ch.verify("w", "--verify")
    c.eq(0, p.returncode, "untouched database verifies (%s)" % p.stderr)
    key = sqlite3.connect(ch.db).execute("SELECT key FROM audit_workspaces WHERE name='w'"
                                         ).fetchone()[0]
    ws_id, rows = db_rows(ch.db, key)
    head = chain_head(ws_id, rows)
    c.eq("audit of 'w': ok, %d rows, head %s\n" % (len(rows), head), p.stdout,
         "--verify's line (the head computed here from README's encoding)")
    c.ok(any(r["op"] == "exec" for r in rows) and any(r["op"] == "exit" for r in rows),
         "the session's rows are chained")
    bundle = os.path.join(fx.tmp, "w.bundle")
    p = ch.verify("w", "--export", bundle)
    c.eq(0, p.returncode, "--export (%s)" % p.stderr)
    c.eq("exported %d rows of 'w' to %s, head %s\n" % (len(rows), bundle, head), p.stdout,
         "--export's line")
    c.eq((head, len(rows)), verify_bundle_here(bundle), "the bundle checked here")
    with open(bundle) as f:
        c.ok('"hex"' in f.read(), "a non-UTF-8 path is carried as hex")
    p = ch.verify("--verify=" + bundle)
    c.eq(0, p.returncode, "--verify=FILE (%s)" % p.stderr)
    c.eq("bundle %s (workspace 'w'): ok, %d rows, head %s\n" % (bundle, len(rows), head),
         p.stdout, "--verify=FILE's line")
    p = ch.verify("w", "--export", "-")
    c.eq(open(bundle).read(), p.stdout, "--export - writes the same bundle to stdout")
    return bundle, rows


def check_db_tampering(c, ch, rows):
    s = [r["seq"] for r in rows]
    ch.save()
    ch.broken("edited path", "UPDATE audit_events SET path = 'x' WHERE seq = %d" % s[3], s[3])
    ch.broken("edited time", "UPDATE audit_events SET time_ns = time_ns + 1 WHERE seq = %d" %
              s[5], s[5])
    ch.broken("edited hash", "UPDATE audit_events SET hash = zeroblob(32) WHERE seq = %d" %
              s[2], s[2])
    ch.broken("retyped", "UPDATE audit_events SET size = 'two' WHERE seq = %d" % s[4], s[4])
    ch.broken("deleted", "DELETE FROM audit_events WHERE seq = %d" % s[4], s[4])
    ch.broken("deleted first", "DELETE FROM audit_events WHERE seq = %d" % s[0], s[0])
    ch.broken("deleted last", "DELETE FROM audit_events WHERE seq = %d" % s[-1], s[-1])
    ch.broken("head edited", "UPDATE audit_heads SET hash = zeroblob(32)", s[-1])
    ch.broken("head removed", "DELETE FROM audit_heads", 0)
    ch.broken("moved to the end", "UPDATE audit_events SET seq = 100000 WHERE seq = %d" % s[2],
              s[2])
    ch.broken("swapped", "UPDATE audit_events SET seq = -1 WHERE seq = %d;"
              "UPDATE audit_events SET seq = %d WHERE seq = %d;"
              "UPDATE audit_events SET seq = %d WHERE seq = -1" % (s[3], s[3], s[4], s[4]),
              s[3])
    copy = ("CREATE TEMP TABLE t AS SELECT * FROM audit_events WHERE seq = %d;"
            "UPDATE t SET seq = %d; INSERT INTO audit_events SELECT * FROM t;")
    ch.broken("a copy appended", copy % (s[3], s[-1] + 1), s[-1] + 1)
    ch.broken("a copy inserted", "UPDATE audit_events SET seq = seq + 1000 WHERE seq > %d;" %
              s[4] + copy % (s[3], s[4] + 1), s[4] + 1)
    p = ch.verify("w", "--verify")
    c.eq(0, p.returncode, "the restored database verifies again")


def check_bundle_tampering(fx, c, bundle, rows):
    with open(bundle) as f:
        lines = f.read().splitlines(True)
    bad = os.path.join(fx.tmp, "bad.bundle")
    s = [r["seq"] for r in rows]

    def broken(what, new_lines, want):
        with open(bad, "w") as f:
            f.writelines(new_lines)
        p = fx.arb("audit", "--verify=" + bad, check=False)
        c.eq(1, p.returncode, "bundle, " + what + ": exit status")
        c.ok(want in p.stderr and len(p.stderr.strip().splitlines()) == 1,
             "bundle, %s: %r in %r" % (what, want, p.stderr))

    edited = json.loads(lines[3])
    edited["size"] = 12345
    broken("edited row", lines[:3] + [json.dumps(edited) + "\n"] + lines[4:],
           "seq %d:" % s[2])
    broken("dropped row", lines[:3] + lines[4:], "seq %d:" % s[2])
    broken("swapped rows", lines[:3] + [lines[4], lines[3]] + lines[5:], "seq %d:" % s[2])
    broken("no trailer", lines[:-1], "cut short")
    broken("last row dropped", lines[:-2] + lines[-1:], "rows removed or added at the end")
    broken("not JSON", lines[:2] + ["{oops\n"] + lines[3:], "bad.bundle:3: not JSON")
    broken("not a bundle", ['{"a": 1}\n'], "bad.bundle:1: not an arborinth audit bundle")


def check_bad_input(fx, c, ch, bundle):
    before = db_rows(ch.db, 1)
    out = os.path.join(fx.tmp, "nodir", "x.bundle")
    cases = [
        (2, ("--verify",), "missing workspace NAME"),
        (2, ("w", "--verify", "--json"), "--verify takes the whole chain"),
        (2, ("w", "--export", "f", "--since", "1h"), "--export takes the whole chain"),
        (2, ("w", "--verify", "--export", "f"), "cannot be combined"),
        (2, ("--verify=",), "--verify=: empty file name"),
        (2, ("w", "--export", ""), "--export: empty file name"),
        (2, ("--verify=" + bundle, "w"), "takes no workspace NAME"),
        (2, ("w", "v", "--verify"), "unexpected argument 'v'"),
        (1, ("nosuch", "--verify"), "no workspace named 'nosuch'"),
        (1, ("nosuch", "--export", os.path.join(fx.tmp, "n.bundle")), "'nosuch'"),
        (1, ("w", "--export", out), out),
        (1, ("--verify=" + os.path.join(fx.tmp, "missing"),), "missing"),
        (1, ("--verify=" + fx.tmp,), fx.tmp),
    ]
    for status, args, want in cases:
        p = fx.arb("audit", *args, check=False)
        c.eq(status, p.returncode, "audit %s: exit status" % " ".join(args))
        c.ok(want in p.stderr and len(p.stderr.strip().splitlines()) == 1,
             "audit %s: one line with %r: %r" % (" ".join(args), want, p.stderr))
    c.ok(not os.path.exists(out) and not os.path.exists(os.path.join(fx.tmp, "n.bundle")),
         "no bundle written on error")
    c.eq(before, db_rows(ch.db, 1), "the database is unchanged")


def check_migration(fx, c, ch):
    """A database from before the chain (schema 3) gets its rows chained when opened."""
    ch.sql("DROP INDEX audit_events_ws_seq; DROP TABLE audit_runs; DROP TABLE audit_heads;"
           "ALTER TABLE audit_events DROP COLUMN hash;"
           "ALTER TABLE audit_events DROP COLUMN prev_seq;"
           "ALTER TABLE audit_events DROP COLUMN mtime_ns; PRAGMA user_version = 3;")
    p = ch.verify("w", "--verify")
    c.eq(0, p.returncode, "a migrated database verifies (%s)" % p.stderr)
    version = sqlite3.connect(ch.db).execute("PRAGMA user_version").fetchone()[0]
    c.eq(4, version, "schema version after migration")
    ch.broken("edited after migration", "UPDATE audit_events SET op = 'x' WHERE seq = 2", 2)


def main():
    fx = Fixture()
    c = Checks()
    ch = Chain(fx, c)
    try:
        make_history(fx, c)
        bundle, rows = check_intact(fx, c, ch)
        check_db_tampering(c, ch, rows)
        check_bundle_tampering(fx, c, bundle, rows)
        check_bad_input(fx, c, ch, bundle)
        check_migration(fx, c, ch)
    finally:
        fx.cleanup()
    c.finish()


main()
