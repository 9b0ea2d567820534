#!/usr/bin/env python3
"""tests/integration/cli_escape.py: box-chosen names cannot forge or erase what people read,
JSON keeps them exact, and state.db is its owner's only.

A real box (`arborinth shell`) creates files named with ESC sequences (erase line, cursor up),
CR, LF followed by a whole fake audit row, bytes that are not UTF-8, a C1 CSI and a
right-to-left override, tab, quote and backslash, renames one of them, and sets its own
process name (comm) to one with ESC and LF; the command's argv holds the raw names. Then every
human-readable output (audit: rows, --summary, --session, --kind exec, --follow, --verify;
diff --name-status, --stat and the patch; log; checkpoint -m with ESC, BEL and CR; workspace
info and list; an error line naming a workspace with ESC) must hold no control byte but line
ends (and name-status's tabs), be valid UTF-8 with no C1 or bidirectional control, show each
forged-row attempt as one row, and the quoted names must unquote to the raw bytes. Proxy rows
(method, host, URL path, backend and reason with ESC, LF, CR, BEL and bytes that are not
UTF-8) go into the real database last and must be shown the same way.
`--json` outputs (audit rows and summary, log) must give back the exact bytes (a string, or
{"hex": ...} when not UTF-8). Controls: the raw names exist in the view, and the audit DB holds
the raw bytes.

Then state.db: made under umask 000, it and its -wal/-shm are 0600 and the state directory
0700; as root, a second ordinary user cannot read state.db while it can read a world-readable
file next to the state directory (control); an older state directory (0755, state.db 0644:
the second user reads it, the control against the old behaviour) is closed by the next
command. Run as root, then again as an ordinary user (created with useradd).
"""
import json
import os
import pwd
import re
import select
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fslib import Checks, skip  # noqa: E402

ARB = os.environ["ARB"]
ROW_FORGERY = b"2026-01-01 00:00:00.000  bash[1]                create      forged-row  ok"
NAMES = [
    b"esc\x1b[2K\x1b[1Aerased",
    b"cr\rforged",
    b"lf\n" + ROW_FORGERY,
    b"bad\xff\xfeutf8",
    b"c1\xc2\x9b2Jrlo\xe2\x80\xaetxt",
    b"tab\tq\"b\\s",
]
RENAMED = NAMES[1] + b".moved\n" + ROW_FORGERY
COMM = b"evil\x1b[2K\nx"
ROW = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  \S")
C = Checks()


def run(args, env=None, cwd=None, umask=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def safe(out, what, tabs=False):
    """No control byte but line ends (and tabs), valid UTF-8, no C1 or bidi control."""
    bad = [b for b in out if (b < 0x20 and b != 0x0a and not (tabs and b == 0x09)) or b == 0x7f]
    C.ok(not bad, "%s: raw control bytes %r in %r" % (what, bytes(bad[:8]), out[:300]))
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        C.ok(False, "%s: not UTF-8 (%s)" % (what, e))
        return
    odd = [c for c in text if 0x80 <= ord(c) <= 0x9f or c in "\u061c\u200e\u200f\u2028\u2029"
           or 0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069]
    C.ok(not odd, "%s: C1 or bidi controls %r" % (what, odd))


def unquote(q):
    """git's C-style quoting undone (as util_unquote): bytes."""
    if not q.startswith(b'"'):
        return q
    assert q.endswith(b'"') and len(q) >= 2, q
    out, i, body = bytearray(), 0, q[1:-1]
    letters = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
               ord("r"): 13, ord('"'): 34, ord("\\"): 92}
    while i < len(body):
        c = body[i]
        if c != 0x5c:
            out.append(c)
            i += 1
        elif body[i + 1] in letters:
            out.append(letters[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


def jbytes(v):
    """A JSON string field back to bytes: a string, or {"hex": ...}."""
    if isinstance(v, dict):
        return bytes.fromhex(v["hex"])
    return v.encode("utf-8") if v is not None else None


class Box:
    def __init__(self, top):
        self.repo = os.path.join(top, "repo")
        os.makedirs(self.repo)
        for a in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"],
                  ["config", "user.name", "tester"]):
            subprocess.run(["git", "-C", self.repo] + a, check=True)
        with open(os.path.join(self.repo, "README"), "w") as f:
            f.write("hello\n")
        subprocess.run(["git", "-C", self.repo, "add", "-A"], check=True)
        subprocess.run(["git", "-C", self.repo, "commit", "-qm", "first"], check=True)
        self.view = os.path.join(self.repo, ".git", "arborinth", "workspaces", "w", "workdir")

    def arb(self, *args, want=0, umask=None):
        p = run([ARB, "--workdir", self.repo] + list(args), umask=umask)
        C.eq(want, p.returncode, "exit of %r (stderr %r)" % (args, p.stderr[-300:]))
        return p


def make_names(b):
    """The box writes the names (its argv holds them raw) and sets its comm."""
    p = b.arb("workspace", "create", "w", umask=0)
    script = ('for f in "$@"; do printf x > "$f"; done; mv "$2" "$(printf "%s.moved\\n%s" '
              '"$2" "$0")"')
    p = b.arb("shell", "w", "--", "sh", "-c", script, ROW_FORGERY, *NAMES)
    py = ("import ctypes,sys; ctypes.CDLL(None).prctl(15, sys.argv[1].encode('latin-1'), 0, 0,"
          " 0); open('by-comm', 'w').write('y')")
    p = b.arb("shell", "w", "--", "python3", "-c", py, COMM.decode("latin-1"))
    listing = set(os.listdir(os.fsencode(b.view)))
    want = set(NAMES[:1] + NAMES[2:] + [RENAMED, b"by-comm"])
    C.ok(want <= listing, "CONTROL: the raw names exist in the view (%r)" % (want - listing))


def check_db(b):
    db = os.path.join(b.repo, ".git", "arborinth", "state.db")
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    con.text_factory = bytes
    paths = {r[0] for r in con.execute("SELECT path FROM audit_events WHERE path IS NOT NULL")}
    paths |= {r[0] for r in con.execute("SELECT path2 FROM audit_events WHERE path2 NOT NULL")}
    comms = {r[0] for r in con.execute("SELECT comm FROM audit_events WHERE comm NOT NULL")}
    argvs = [r[0] for r in con.execute("SELECT argv FROM audit_sessions ORDER BY id")]
    con.close()
    for n in NAMES + [RENAMED]:
        C.ok(n in paths, "CONTROL: the audit DB holds the raw name %r" % n)
    C.ok(any(c.startswith(b"evil\x1b") for c in comms), "CONTROL: the DB holds the raw comm")
    C.ok(NAMES[3] in argvs[0], "CONTROL: the DB's argv holds the raw invalid UTF-8 bytes")


def check_audit(b):
    text = b.arb("audit", "w").stdout
    safe(text, "audit")
    lines = text.splitlines()
    C.ok(all(ROW.match(ln) for ln in lines), "audit: every line is a row of its own")
    C.ok(not any(ln.startswith(b"2026-01-01 00:00:00.000") for ln in lines),
         "audit: no forged row")
    js = [json.loads(ln) for ln in b.arb("audit", "w", "--json").stdout.splitlines()]
    C.eq(len(js), len(lines), "audit: as many rows as --json has")
    paths = {jbytes(r.get("path")) for r in js} | {jbytes(r.get("path2")) for r in js}
    for n in NAMES + [RENAMED]:
        C.ok(n in paths, "audit --json: the exact name %r" % n)
    quoted = [m for ln in lines for m in re.findall(rb'"(?:[^"\\]|\\.)*"', ln)]
    back = {unquote(q) for q in quoted}
    for n in NAMES + [RENAMED]:
        C.ok(n in back, "audit: %r shown quoted and unquotes to its bytes" % n)
    C.ok(any(jbytes(r.get("comm")) == COMM for r in js), "audit --json: the exact comm")
    exec_rows = [r for r in js if r["op"] == "exec"]
    argv = [jbytes(a) for a in exec_rows[0]["argv"] or []]
    C.eq([b"sh", b"-c"], argv[:2], "audit --json: argv")
    C.eq(NAMES, argv[4:], "audit --json: argv holds the exact names")
    for form in (["--summary"], ["--session", "1"], ["--kind", "exec"], ["--all"]):
        out = b.arb("audit", "w", *form).stdout
        safe(out, "audit " + " ".join(form))
        rows = out.splitlines()[1 if form == ["--summary"] else 0:]
        ok = all(ROW.match(ln) for ln in rows) if form != ["--summary"] else all(
            re.match(rb"^\w+ +\d+ ", ln) for ln in rows)
        C.ok(ok, "audit %s: every line is a row of its own: %r" % (form, out[-400:]))
        if form == ["--summary"]:
            sj = [json.loads(ln) for ln in b.arb("audit", "w", "--summary", "--json")
                  .stdout.splitlines()]
            C.eq(len(sj), len(rows), "audit --summary: as many rows as --json has")
            sp = {jbytes(r.get("path")) for r in sj} | {jbytes(r.get("renamed_to")) for r in sj}
            # NAMES[1] was made in the session and then moved: one entry, RENAMED's.
            C.ok(set(NAMES[:1] + NAMES[2:] + [RENAMED]) <= sp and NAMES[1] not in sp,
                 "audit --summary --json: the exact names")
    follow(b)
    p = b.arb("audit", "w", "--verify")
    safe(p.stdout, "audit --verify")
    p = run([ARB, "--workdir", b.repo, "audit", "x\x1b[2Ky\rz"])
    C.eq(1, p.returncode, "audit of an unknown name with ESC")
    safe(p.stderr, "error line")
    C.eq(1, len(p.stderr.splitlines()), "error: one line")
    C.ok(b"\\033[2K" in p.stderr, "error: the name escaped (%r)" % p.stderr)


def follow(b):
    p = subprocess.Popen([ARB, "--workdir", b.repo, "audit", "w", "--follow"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, end = b"", time.time() + 3
    while time.time() < end and out.count(b"\n") < 12:
        r, _, _ = select.select([p.stdout], [], [], 0.2)
        if r:
            out += os.read(p.stdout.fileno(), 65536)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=10)
    safe(out, "audit --follow")
    C.ok(out.count(b"\n") >= 12 and all(ROW.match(ln) for ln in out.splitlines()),
         "audit --follow: rows, one a line: %r" % out[-300:])


def check_diff_log(b):
    out = b.arb("diff", "w", "--name-status").stdout
    safe(out, "diff --name-status", tabs=True)
    rows = [ln.split(b"\t") for ln in out.splitlines()]
    C.eq(len(NAMES) + 1, len(rows), "diff --name-status: one row per path (%r)" % out)
    shown = {unquote(r[-1]) for r in rows}
    C.eq(set(NAMES[:1] + NAMES[2:] + [RENAMED, b"by-comm"]), shown,
         "diff --name-status: names unquote to the raw bytes")
    out = b.arb("diff", "w", "--stat").stdout
    safe(out, "diff --stat")
    C.eq(len(NAMES) + 2, len(out.splitlines()), "diff --stat: one line per path and a total")
    out = b.arb("diff", "w").stdout
    safe(out, "diff (patch)")
    heads = [ln for ln in out.splitlines() if ln.startswith(b"diff --git ")]
    C.eq(len(NAMES) + 1, len(heads), "diff: one header per path")
    out = b.arb("log", "w").stdout
    safe(out, "log")
    C.eq(2 * 2, len(out.splitlines()), "log: two lines per session")
    p = b.arb("log", "w", "--json")
    lj = json.loads(p.stdout) if p.returncode == 0 else {"sessions": [{"argv": []}]}
    C.eq(NAMES, [jbytes(a) for a in lj["sessions"][0]["argv"]][4:],
         "log --json: argv holds the exact names")
    msg = "msg\x1b]0;title\x07 \rend"
    out = b.arb("checkpoint", "w", "-m", msg).stdout
    safe(out, "checkpoint")
    C.ok(b"\\033]0;title\\a \\rend" in out, "checkpoint: the message escaped (%r)" % out)
    cj = json.loads(b.arb("checkpoint", "w", "-m", msg, "--json").stdout)
    C.eq(msg, cj["message"], "checkpoint --json: the exact message")
    out = b.arb("log", "w").stdout
    safe(out, "log with the checkpoint")
    for args in (["workspace", "info", "w"], ["workspace", "list"]):
        safe(b.arb(*args).stdout, " ".join(args))
    wj = json.loads(b.arb("workspace", "info", "w", "--json").stdout)
    C.eq(os.path.realpath(b.view), os.path.realpath(wj["workdir"]), "workspace info --json")


def check_net(b):
    """Proxy rows (method, host, URL path, backend, reason come from the box's requests): put
    into the real database as the proxy would (last: the hash chain does not cover them)."""
    db = os.path.join(b.repo, ".git", "arborinth", "state.db")
    con = sqlite3.connect(db)
    ws = con.execute("SELECT ws FROM audit_events LIMIT 1").fetchone()[0]
    now = time.time_ns()
    rows = [("request", b"ba\x1bckend", b"GE\nT", None, None,
             b"/p\r\n" + ROW_FORGERY, b"refused", b"no\x1b]0;t\x07"),
            ("tunnel", None, b"CONNECT", b"h\x1b[2K\xff", 443, None, b"allowed", b"allowed")]
    for i, (op, backend, method, host, port, path, decision, reason) in enumerate(rows):
        con.execute("INSERT INTO audit_events (ws, time_ns, kind, op, path, session, backend,"
                    " method, host, port, status, decision, reason) VALUES (?, ?, 'net', ?,"
                    " CAST(? AS TEXT), 1, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT),"
                    " ?, 403, CAST(? AS TEXT), CAST(? AS TEXT))",
                    (ws, now + i, op, path, backend, method, host, port, decision, reason))
    con.commit()
    con.close()
    out = b.arb("audit", "w", "--kind", "net").stdout
    safe(out, "audit --kind net")
    C.eq(2, len(out.splitlines()), "audit --kind net: CONTROL: both rows shown, one line each")
    C.ok(all(ROW.match(ln) for ln in out.splitlines()), "audit --kind net: rows")
    js = [json.loads(ln) for ln in b.arb("audit", "w", "--kind", "net", "--json").stdout
          .splitlines()]
    C.eq([b"/p\r\n" + ROW_FORGERY, b"h\x1b[2K\xff"],
         [jbytes(js[0].get("path")), jbytes(js[1].get("host"))], "audit --json: net rows exact")


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def check_modes(b):
    st = os.path.join(b.repo, ".git", "arborinth")
    C.eq(0o700, mode(st), "state directory mode (made under umask 000)")
    for f in os.listdir(st):
        if f.startswith("state.db"):
            C.eq(0o600, mode(os.path.join(st, f)), "%s mode" % f)
    C.ok(os.path.exists(os.path.join(st, "state.db")), "CONTROL: state.db exists")


def scenario(top):
    b = Box(top)
    make_names(b)
    check_audit(b)  # first: `audit` makes the mounted view's audit current
    check_db(b)
    check_diff_log(b)
    check_net(b)
    check_modes(b)
    return b


def as_user(user, args, env):
    return subprocess.run(["runuser", "-u", user, "--", "env"] +
                          ["%s=%s" % kv for kv in env.items()] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)


def ensure_user(name):
    try:
        pwd.getpwnam(name)
    except KeyError:
        if subprocess.run(["useradd", "-m", name]).returncode != 0:
            skip("cannot create user " + name)
    return pwd.getpwnam(name)


def can_read(user, path):
    p = subprocess.run(["runuser", "-u", user, "--", "head", "-c", "16", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode == 0 and len(p.stdout) > 0


def as_ordinary_users(top):
    """The scenario as u1, then u2 against u1's state.db."""
    if not shutil.which("runuser"):
        skip("no runuser")
    fusermount = shutil.which("fusermount3")
    if not fusermount or not os.stat(fusermount).st_mode & stat.S_ISUID:
        skip("fusermount3 is not setuid (an ordinary user cannot mount)")
    os.chmod("/dev/fuse", 0o666)  # as fs_user.sh and tests/run-all.sh
    u1, u2 = ensure_user("arbesc1"), ensure_user("arbesc2")
    os.chmod(top, 0o755)
    udir = os.path.join(top, "user")
    os.mkdir(udir)
    for f in os.listdir(os.path.dirname(ARB)):
        src = os.path.join(os.path.dirname(ARB), f)
        if os.path.isfile(src) and f.startswith(("arborinth", "libarb")):
            shutil.copy2(src, udir)
    here = os.path.dirname(os.path.abspath(__file__))
    for f in ("cli_escape.py", "fslib.py", "../lib/arbtest.py"):
        shutil.copy2(os.path.join(here, f), udir)
    subprocess.run(["chown", "-R", u1.pw_name, udir], check=True)
    os.chmod(udir, 0o755)
    env = {"HOME": u1.pw_dir, "TMPDIR": udir, "ARB": os.path.join(udir, "arborinth"),
           "ARB_ESCAPE_KEEP": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    p = as_user(u1.pw_name, ["python3", os.path.join(udir, "cli_escape.py")], env)
    sys.stderr.write(p.stderr.decode(errors="replace"))
    C.eq(0, p.returncode, "the scenario as %s: %s" % (u1.pw_name, p.stdout[-200:]))
    print("as %s: %s" % (u1.pw_name, p.stdout.decode().strip().splitlines()[-1:]))
    kept = re.search(r"^kept (.*)$", p.stdout.decode(), re.M)
    if not kept:
        return
    repo = os.path.join(kept.group(1), "repo")
    try:
        closed_to_others(u1, u2, env, repo)
    finally:
        as_user(u1.pw_name, [env["ARB"], "--workdir", repo, "workspace", "delete", "w", "--force"], env)


def closed_to_others(u1, u2, env, repo):
    db = os.path.join(repo, ".git", "arborinth", "state.db")
    control = os.path.join(repo, "control.txt")
    with open(control, "w") as f:
        f.write("readable by all\n")
    os.chmod(control, 0o644)
    C.ok(can_read(u2.pw_name, control),
         "CONTROL: %s reads a world-readable file next to .arborinth" % u2.pw_name)
    C.ok(not can_read(u2.pw_name, db), "%s cannot read %s's state.db" % (u2.pw_name,
                                                                        u1.pw_name))
    # An older version's state directory: 0755 and state.db 0644.
    os.chmod(os.path.dirname(db), 0o755)
    for f in os.listdir(os.path.dirname(db)):
        if f.startswith("state.db"):
            os.chmod(os.path.join(os.path.dirname(db), f), 0o644)
    C.ok(can_read(u2.pw_name, db), "CONTROL: %s reads an old (0644) state.db" % u2.pw_name)
    p = as_user(u1.pw_name, [env["ARB"], "--workdir", repo, "workspace", "list"], env)
    C.eq(0, p.returncode, "workspace list as %s (%r)" % (u1.pw_name, p.stderr))
    C.eq(0o700, mode(os.path.dirname(db)), "the old state directory closed on open")
    C.eq(0o600, mode(db), "the old state.db closed on open")
    C.ok(not can_read(u2.pw_name, db), "%s cannot read it any more" % u2.pw_name)


def main():
    if not os.path.exists("/dev/fuse"):
        skip("no /dev/fuse")
    if not shutil.which("bwrap"):
        skip("no bwrap (shell needs it)")
    top = tempfile.mkdtemp(prefix="arb-escape-")
    b = None
    if os.environ.get("ARB_ESCAPE_KEEP"):
        os.chmod(top, 0o755)  # the second user reaches the files beside .arborinth
    try:
        b = scenario(top)
        if os.geteuid() == 0 and not os.environ.get("ARB_ESCAPE_KEEP"):
            as_ordinary_users(top)
    finally:
        if b and not os.environ.get("ARB_ESCAPE_KEEP"):
            run([ARB, "--workdir", b.repo, "workspace", "delete", "w", "--force"])
        if os.environ.get("ARB_ESCAPE_KEEP"):
            print("kept " + top, flush=True)
        else:
            subprocess.run(["rm", "-rf", top])
    C.finish()


main()
