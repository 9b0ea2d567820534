"""tests/integration/fs_fsmonitor.py: git's fsmonitor answered by the view's daemon (fs/fsmon.c).

A new workspace's .git/config names the daemon's hook (core.fsmonitor) and turns on the
untracked cache. One seeded random sequence of file system operations (fs_random.py's:
creates, writes, truncates, renames of files and directories, links, symlinks, mkdir, rmdir,
chmod) is applied to the view, with `git add`, `git commit` and `git stash` now and then; after
every few operations `git status` run as configured must print exactly what it prints without
the fsmonitor and the untracked cache (on a copy of the index, so neither run changes what the
other sees). Then: the hook's token survives unmount and mount (the answer is a list, not
"/"), a daemon killed with -9 starts a new journal ("/"), and the hook's files are read-only.

usage: fs_fsmonitor.py [SEED ...] [--ops N]   (default: the fixed CI seeds)
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402
import fs_random  # noqa: E402

CI_SEEDS = [11, 12, 13]
EVERY = 7  # operations between two status comparisons


def status(view, plain_index):
    """git status with the fsmonitor, and without it on a copy of the index."""
    args = ("status", "--porcelain=v1", "-uall", "--no-renames")
    with_fsm = fslib.git(view, *args).stdout
    idx = os.path.join(view, ".git", "index")
    shutil.copyfile(idx, plain_index)
    without = fslib.git(view, "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                        *args, env={"GIT_INDEX_FILE": plain_index}).stdout
    return with_fsm, without


def split(raw):
    parts = raw.split(b"\0")
    return parts[0].decode(), [x.decode() for x in parts[1:] if x]


def hook(view, token):
    """What git gets from the hook (the daemon's answer, or "/" for a git before 2.43)."""
    p = subprocess.run([".git/arborinth-fsmonitor", "2", token], cwd=view,
                       stdout=subprocess.PIPE, check=True)
    return split(p.stdout)


_nonce = [0]


def answer(view, token):
    """The daemon's own answer to token: the file the hook prints."""
    _nonce[0] += 1
    with open(os.path.join(view, ".git", "arborinth-fsmonitor-q%s.%d" % (token, _nonce[0])),
              "rb") as f:
        return split(f.read())


def git_has_fake_lstat():
    """git 2.43 fixed check_removed() reading an unfilled stat for fsmonitor-valid paths."""
    v = fslib.git(".", "version").stdout.split()[2].split(".")
    return (int(v[0]), int(v[1])) >= (2, 43)


def git_step(rng, view):
    k = rng.randrange(3)
    if k == 0:
        fslib.git(view, "add", "-A")
    elif k == 1:
        fslib.git(view, "add", "-A")
        fslib.git(view, "-c", "user.name=tester", "-c", "user.email=t@example.com", "commit",
                  "-qm", "step", "--allow-empty")
    else:
        fslib.git(view, "stash", "-q", "--include-untracked", check=False)
        fslib.git(view, "stash", "pop", "-q", check=False)


def run_seed(seed, nops, c):
    fx = fslib.Fixture()
    rng = random.Random(seed)
    view = fx.root
    plain_index = os.path.join(fx.tmp, "index.plain")
    try:
        c.eq(".git/arborinth-fsmonitor", fslib.git(view, "config", "core.fsmonitor").stdout.strip(),
             "core.fsmonitor names the daemon's hook")
        for i in range(nops):
            dirs, files = fs_random.entries(view)
            op = fs_random.gen_op(rng, dirs, files)
            fs_random.apply(view, op)
            if rng.randrange(25) == 0:
                git_step(rng, view)
            if i % EVERY == EVERY - 1 or i == nops - 1:
                a, b = status(view, plain_index)
                if a != b:
                    c.ok(False, "seed %d after op %d %r: status with fsmonitor:\n%s\nwithout:\n%s"
                         % (seed, i, op[:3], a, b))
                    return
        c.ok(True, "seed %d: %d operations, status agrees" % (seed, nops))

        # The hook: the daemon's answer, or "/" for a git that would misread it.
        tok, _ = answer(view, "")
        _, paths = hook(view, tok)
        c.eq([] if git_has_fake_lstat() else ["/"], paths,
             "seed %d: the hook answers git %s" % (seed, fslib.git(".", "version").stdout.strip()))

        # The token survives unmount and mount: an answer, not "/".
        tok, _ = answer(view, "")
        tok, paths = answer(view, tok)
        c.eq([], paths, "seed %d: nothing changed since the last answer" % seed)
        fx.arb("workspace", "unmount", fx.name)
        fx.arb("workspace", "mount", fx.name)
        with open(os.path.join(view, "after-remount.txt"), "w") as f:
            f.write("x\n")
        tok2, paths = answer(view, tok)
        c.eq(["after-remount.txt"], paths, "seed %d: the token survives a remount" % seed)
        a, b = status(view, plain_index)
        c.eq(b, a, "seed %d: status agrees after the remount" % seed)

        # A killed daemon's journal is gone: its tokens get "/".
        pidfile = os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name, "run", "daemon.pid")
        with open(pidfile) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not os.path.exists("/proc/%d" % pid):
                break
            time.sleep(0.05)
        fx.arb("workspace", "mount", fx.name)
        _, paths = answer(view, tok2)
        c.eq(["/"], paths, "seed %d: after kill -9, old tokens mean a full scan" % seed)
        a, b = status(view, plain_index)
        c.eq(b, a, "seed %d: status agrees after kill -9" % seed)
    finally:
        fx.cleanup()


def made_up_files(c):
    fx = fslib.Fixture()
    try:
        g = os.path.join(fx.root, ".git")
        for name in ("arborinth-fsmonitor", "arborinth-fsmonitor-qx.1"):
            p = os.path.join(g, name)
            def append():
                fd = os.open(p, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, b"x")
                finally:
                    os.close(fd)
            for how in (append, lambda: os.truncate(p, 0), lambda: os.chmod(p, 0o777)):
                try:
                    how()
                    c.ok(False, "%s: changed" % name)
                except OSError:
                    c.ok(True, "%s: read-only" % name)
        c.ok(not any(n.startswith("arborinth-fsmonitor") for n in os.listdir(g)),
             "the made-up files are not listed")
        c.ok(not any(n.startswith("arborinth-fsmonitor") for n in
                     os.listdir(os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name, "git"))),
             "nor written into the gitdir")
    finally:
        fx.cleanup()


def main():
    args = sys.argv[1:]
    nops = 300
    if "--ops" in args:
        i = args.index("--ops")
        nops = int(args[i + 1])
        del args[i:i + 2]
    if shutil.which("git") is None:
        fslib.skip("no git")
    seeds = [int(a) for a in args] or CI_SEEDS
    c = fslib.Checks()
    made_up_files(c)
    for seed in seeds:
        run_seed(seed, nops, c)
    c.finish()


if __name__ == "__main__":
    main()
