"""tests/integration/fs_random.py: randomized differential test of the view.

One seeded random sequence of creates, writes at random offsets, truncates, appends, renames
(files and directories, across layers), unlinks, links, symlinks, mkdirs, rmdirs and chmods is
applied to the view and to a plain copy of the same tree. Every operation's outcome (result or
errno) must match, and the whole trees must match after every batch.

usage: fs_random.py [SEED ...] [--ops N]   (default: the fixed CI seeds)
"""
import errno
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402

CI_SEEDS = [1, 2, 3, 4]
BATCH = 40


def entries(root):
    """Relative paths of everything under root (no .git), dirs and others apart."""
    dirs, files = [""], []
    for dp, dn, fn in os.walk(root):
        rel = os.path.relpath(dp, root)
        rel = "" if rel == "." else rel
        if rel == "":
            dn[:] = [d for d in dn if d != ".git"]
        for d in dn:
            p = os.path.join(rel, d)
            (files if os.path.islink(os.path.join(root, p)) else dirs).append(p)
        files.extend(os.path.join(rel, f) for f in fn)
    return sorted(dirs), sorted(files)


def gen_op(rng, dirs, files):
    name = "n%d" % rng.randrange(40)
    d = rng.choice(dirs)
    newpath = os.path.join(d, name)
    f = rng.choice(files) if files else newpath
    anyp = rng.choice(dirs[1:] + files) if len(dirs) > 1 or files else newpath
    k = rng.randrange(13)
    if k == 0:
        return ("create", newpath, rng.randbytes(rng.randrange(0, 3000)))
    if k == 1:
        return ("pwrite", f, rng.randrange(0, 5000), rng.randbytes(rng.randrange(1, 2000)))
    if k == 2:
        return ("truncate", f, rng.randrange(0, 6000))
    if k == 3:
        return ("append", f, rng.randbytes(rng.randrange(1, 500)))
    if k in (4, 5):
        return ("rename", anyp, os.path.join(rng.choice(dirs), name))
    if k == 6:
        return ("unlink", f)
    if k == 7:
        return ("mkdir", newpath)
    if k == 8:
        return ("rmdir", rng.choice(dirs[1:]) if len(dirs) > 1 else newpath)
    if k == 9:
        return ("link", f, newpath)
    if k == 10:
        return ("symlink", rng.choice(["../x", name, f, "/nonexistent"]), newpath)
    if k == 11:
        return ("chmod", anyp, rng.choice([0o644, 0o600, 0o755, 0o700]))
    return ("read", f)


def apply(root, op):
    p = lambda rel: os.path.join(root, rel)  # noqa: E731
    kind = op[0]
    try:
        if kind == "create":
            fd = os.open(p(op[1]), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, op[2])
            os.close(fd)
        # O_NOFOLLOW everywhere a path is opened: a random symlink may point out of the
        # tree, and the test must never write outside its own trees.
        elif kind == "pwrite":
            fd = os.open(p(op[1]), os.O_WRONLY | os.O_NOFOLLOW)
            os.pwrite(fd, op[3], op[2])
            os.close(fd)
        elif kind == "truncate":
            fd = os.open(p(op[1]), os.O_WRONLY | os.O_NOFOLLOW)
            os.ftruncate(fd, op[2])
            os.close(fd)
        elif kind == "append":
            fd = os.open(p(op[1]), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            os.write(fd, op[2])
            os.close(fd)
        elif kind == "rename":
            os.rename(p(op[1]), p(op[2]))
        elif kind == "unlink":
            os.unlink(p(op[1]))
        elif kind == "mkdir":
            os.mkdir(p(op[1]))
        elif kind == "rmdir":
            os.rmdir(p(op[1]))
        elif kind == "link":
            os.link(p(op[1]), p(op[2]), follow_symlinks=False)
        elif kind == "symlink":
            os.symlink(op[1], p(op[2]))
        elif kind == "chmod":
            if os.path.islink(p(op[1])):
                return ("skip",)
            os.chmod(p(op[1]), op[2])
        elif kind == "read":
            fd = os.open(p(op[1]), os.O_RDONLY | os.O_NOFOLLOW)
            n = len(os.read(fd, 1 << 20))
            os.close(fd)
            return ("ok", n)
        return ("ok",)
    except OSError as e:
        return ("err", errno.errorcode.get(e.errno, e.errno))


def run_seed(seed, nops, c):
    fx = fslib.Fixture()
    rng = random.Random(seed)
    try:
        for i in range(nops):
            dirs, files = entries(fx.plain)
            op = gen_op(rng, dirs, files)
            want = apply(fx.plain, op)
            got = apply(fx.root, op)
            if want != got:
                c.ok(False, "seed %d op %d %r: plain %r, view %r" % (seed, i, op[:3], want, got))
                return
            if i % BATCH == BATCH - 1 or i == nops - 1:
                diff = fslib.diff_snapshots(fslib.snapshot(fx.root), fslib.snapshot(fx.plain))
                if diff:
                    c.ok(False, "seed %d after op %d %r: trees differ:\n  %s" %
                         (seed, i, op[:3], "\n  ".join(diff[:10])))
                    return
        c.ok(True, "seed %d" % seed)
        # The same state after a remount.
        before = fslib.snapshot(fx.root)
        fx.arb("workspace", "unmount", fx.name)
        fx.arb("workspace", "mount", fx.name)
        diff = fslib.diff_snapshots(fslib.snapshot(fx.root), before)
        c.ok(not diff, "seed %d: remount changed the tree:\n  %s" % (seed, "\n  ".join(diff[:10])))
    finally:
        fx.cleanup()


def main():
    args = sys.argv[1:]
    nops = 1500
    if "--ops" in args:
        i = args.index("--ops")
        nops = int(args[i + 1])
        del args[i:i + 2]
    seeds = [int(a) for a in args] or CI_SEEDS
    c = fslib.Checks()
    for seed in seeds:
        run_seed(seed, nops, c)
    c.finish()


if __name__ == "__main__":
    main()
