"""tests/integration/audit_crash.py: the audit survives a killed view daemon.

Repeatedly: a write storm runs in a real mounted workspace (creates, writes and appends,
changes to base files, truncates, renames, deletions, chmods, mkdirs, symlinks), the daemon is
killed with SIGKILL at a random moment, and the workspace is mounted again. Then every change
of the upper layer against the base (files that differ, new directories and links,
whiteouts) must appear in the audit: as a path of an ok row, or below a rename's destination.
Controls: at least one iteration lost rows that only the reconciliation's "unattributed" rows
restore (so the test can fail); each unattributed file row carries the file's real size; the
hash chain verifies after every crash; a clean unmount and mount adds no unattributed row.
"""
import hashlib
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fslib import Checks, Fixture, snapshot  # noqa: E402

ITERATIONS = int(os.environ.get("ARB_CRASH_ITERATIONS", "12"))
BASE_FILES = 40 * ITERATIONS

STORM = r'''
import errno, os, random, sys, time
rnd = random.Random(int(sys.argv[1]))
base = ["base/f%03d" % i for i in range(int(sys.argv[2]))]
rnd.shuffle(base)
dirs = ["d0", "d1", "d2", "d3"]
made = []
end = time.time() + 8
n = 0
while time.time() < end:
    n += 1
    try:
        k = rnd.random()
        if k < 0.25:                                   # a new file, written in pieces
            p = "%s/n%d" % (rnd.choice(dirs), n)
            with open(p, "wb") as f:
                for _ in range(rnd.randint(1, 4)):
                    f.write(os.urandom(rnd.randint(1, 3000)))
            made.append(p)
        elif k < 0.50 and base:                        # append to a base file (coalesced)
            with open(base.pop(), "ab") as f:
                f.write(b"x" * rnd.randint(1, 500))
        elif k < 0.60 and made:                        # append to one of ours
            with open(rnd.choice(made), "ab") as f:
                f.write(b"y" * rnd.randint(1, 500))
        elif k < 0.65 and made:
            os.truncate(rnd.choice(made), rnd.randint(0, 100))
        elif k < 0.72 and made:                        # rename, maybe across directories
            src = made.pop(rnd.randrange(len(made)))
            dst = "%s/r%d" % (rnd.choice(dirs), n)
            os.rename(src, dst)
            made.append(dst)
        elif k < 0.76 and base:                        # rename a base file
            os.rename(base.pop(), "%s/b%d" % (rnd.choice(dirs), n))
        elif k < 0.80 and made:
            os.unlink(made.pop(rnd.randrange(len(made))))
        elif k < 0.84 and base:
            os.unlink(base.pop())
        elif k < 0.88 and (made or base):
            os.chmod(rnd.choice(made or base), rnd.choice([0o600, 0o755, 0o640]))
        elif k < 0.92:
            d = "%s/sub%d" % (rnd.choice(dirs), n)
            os.mkdir(d)
            dirs.append(d)
        else:
            os.symlink("target%d" % n, "%s/l%d" % (rnd.choice(dirs), n))
    except OSError as e:
        # The daemon is gone. Over io_uring a request the kernel was handing to a killed
        # daemon's ring thread ends with ECANCELED instead.
        if e.errno in (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO, errno.ECANCELED):
            sys.exit(0)
        if e.errno not in (errno.ENOENT, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise
'''


def ws_key(db):
    return db.execute("SELECT key FROM audit_workspaces WHERE name = 'w' AND deleted_ns IS NULL"
                      ).fetchone()[0]


def is_whiteout(st):
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def real_changes(layer, base):
    """Paths where the upper layer differs from the base (what the audit must account for)."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(layer):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, layer)
            st = os.lstat(full)
            b = base.get(rel)
            if is_whiteout(st):
                out.add(rel)
            elif stat.S_ISDIR(st.st_mode):
                if not b or b[0] != "dir" or "user.arborinth.opaque" in os.listxattr(full):
                    out.add(rel)
            elif stat.S_ISLNK(st.st_mode):
                if b != ("link", os.readlink(full)):
                    out.add(rel)
            else:
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                if b != ("file", stat.S_IMODE(st.st_mode), st.st_size, digest):
                    out.add(rel)
    return out


def audit_paths(db, key, with_unattributed=True):
    paths, renamed_to = set(), set()
    for op, path, path2 in db.execute(
            "SELECT op, path, path2 FROM audit_events WHERE ws = ? AND kind = 'fs' AND "
            "result = 0", (key,)):
        if not with_unattributed and op.startswith("unattributed"):
            continue
        paths.add(path)
        if op == "rename":
            paths.add(path2)
            renamed_to.add(path2)
    return paths, renamed_to


def covered(p, paths, renamed_to):
    if p in paths:
        return True
    parts = p.split("/")
    return any("/".join(parts[:i]) in renamed_to for i in range(1, len(parts)))


def daemon_pid(fx):
    with open(os.path.join(fx.repo, ".git/arborinth/workspaces/w/run/daemon.pid")) as f:
        return int(f.read())


def one_crash(fx, c, rnd, it, db_path, layer, base, storm_py):
    view = fx.root
    proc = subprocess.Popen([sys.executable, storm_py, str(rnd.randrange(1 << 30)),
                             str(BASE_FILES)], cwd=view, stderr=subprocess.PIPE, text=True)
    time.sleep(rnd.uniform(0.15, 1.4))
    os.kill(daemon_pid(fx), signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    c.eq(0, proc.returncode, "iteration %d: the storm ended on the lost mount (%s)" % (it, err))
    with sqlite3.connect(db_path) as db:
        top = db.execute("SELECT ifnull(max(seq), 0) FROM audit_events").fetchone()[0]
    fx.arb("workspace", "mount", "w")
    with sqlite3.connect(db_path) as db:
        key = ws_key(db)
        changes = real_changes(layer, base)
        paths, renamed_to = audit_paths(db, key)
        missing = sorted(p for p in changes if not covered(p, paths, renamed_to))
        c.eq([], missing[:10], "iteration %d: changes missing from the audit" % it)
        old_paths, old_renamed = audit_paths(db, key, with_unattributed=False)
        lost = [p for p in changes if not covered(p, old_paths, old_renamed)]
        for path, size, mode in db.execute(
                "SELECT path, size, mode FROM audit_events WHERE ws = ? AND seq > ? AND "
                "op = 'unattributed'", (key, top)):
            if path == ".git" or path.startswith(".git/"):
                continue                               # the gitdir, not the layer
            st = os.lstat(os.path.join(layer, path))
            c.eq(stat.S_IFMT(st.st_mode), stat.S_IFMT(mode), "type of %s" % path)
            if stat.S_ISREG(st.st_mode):
                c.eq(st.st_size, size, "size of %s in its unattributed row" % path)
    v = fx.arb("audit", "w", "--verify", check=False)
    c.eq(0, v.returncode, "iteration %d: the chain verifies after the crash (%s)" %
         (it, v.stderr.strip()))
    print("iteration %d: %d changes so far, %d known only from unattributed rows" % (it, len(changes),
                                                                        len(lost)))
    return len(lost)


def main():
    files = {"base/f%03d" % i: "base file %d\n" % i for i in range(BASE_FILES)}
    files.update({"d%d/keep" % i: "keep\n" for i in range(4)})
    fx = Fixture(repo_files=files)
    c = Checks()
    rnd = random.Random(os.environ.get("ARB_CRASH_SEED") or time.time_ns())
    db_path = os.path.join(fx.repo, ".git", "arborinth", "state.db")
    layer = os.path.join(fx.repo, ".git", "arborinth", "workspaces", "w", "layer")
    base = snapshot(fx.plain)
    storm_py = os.path.join(fx.tmp, "storm.py")
    with open(storm_py, "w") as f:
        f.write(STORM)
    try:
        restored = sum(one_crash(fx, c, rnd, it, db_path, layer, base, storm_py)
                       for it in range(ITERATIONS))
        c.ok(restored > 0, "some crash lost rows that only reconciliation restored")

        # Control: a clean unmount ends the run; mounting again adds no unattributed row.
        fx.arb("workspace", "unmount", "w")
        with sqlite3.connect(db_path) as db:
            key = ws_key(db)
            before = db.execute("SELECT count(*) FROM audit_events WHERE ws = ? AND op LIKE "
                                "'unattributed%'", (key,)).fetchone()[0]
            clean = db.execute("SELECT clean FROM audit_runs WHERE ws = ? ORDER BY id DESC "
                               "LIMIT 1", (key,)).fetchone()[0]
        c.eq(1, clean, "a clean unmount marks the run clean")
        fx.arb("workspace", "mount", "w")
        with sqlite3.connect(db_path) as db:
            after = db.execute("SELECT count(*) FROM audit_events WHERE ws = ? AND op LIKE "
                               "'unattributed%'", (key,)).fetchone()[0]
        c.eq(before, after, "unattributed rows after a clean unmount and mount")
    finally:
        fx.cleanup()
    c.finish()


main()
