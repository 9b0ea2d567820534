#!/usr/bin/env python3
"""Checkpoints, log, diff, rewind and restore on real mounts (label ckpt).

A session (`arborinth shell`, a real bubblewrap box when bwrap works, else --jail none)
creates, edits, renames, chmods and deletes files, directories and symlinks through shell
commands: a directory moved then written in, a base directory deleted, a file replaced by a
directory and a directory by a file, a symlink retargeted, a file made executable and one not.
Copies of the view are taken before and after (content, executable bit, link targets: what
git holds). Then:
- log lists the session with its start/end checkpoints and what it changed; diff (--stat,
  --name-status, a patch, --session, paths) reports exactly those changes;
- rewind --before-session gives back the earlier copy byte for byte; rewind --to the undo
  checkpoint gives back the later one; both survive an unmount/mount and a daemon killed
  with -9; the rewind is one audit row;
- restore gives single paths back (a file, a directory, a path that did not exist) through
  the view, each change audited;
- a second checkpoint with nothing changed hashes nothing (the cache), one with one file
  changed hashes one;
- rewind is refused while a session runs (control: it works once the session ended);
- bad input: one line on stderr, exit 2 (usage) or 1, nothing changed.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402

C = fslib.Checks()

SESSION = r"""
set -e
echo edited >> src/main.c
rm src/lib/b.txt
rm -r docs/img
mv src/lib/deep moved
echo new >> moved/er/c.txt
echo fresh > moved/er/d.txt
mkdir -p brand/new/dir
printf 'x\0y' > brand/new/dir/bin
chmod +x README
rm src/lib/a.txt && mkdir src/lib/a.txt && echo inside > src/lib/a.txt/f
rm -r docs && echo 'now a file' > docs
ln -s ../README brand/link
mkfifo brand/fifo
mkdir -p order/a order/a0/b
echo x > order/a/x; echo y > order/a-b; echo z > order/a.txt; echo w > order/a0/b/w
printf 'g' > order/gx && chmod 654 order/gx
"""


def gitish(root):
    """What a checkpoint holds of a tree: files (exec bit, content), symlinks (target)."""
    return fslib.snapshot(root, git_holds=True)


def same(want, got, what):
    diff = fslib.diff_snapshots(got, want)
    C.ok(not diff, what + (": " + "; ".join(diff[:6]) if diff else ""))


def git_tree_of(view):
    """The tree git itself makes of the view's files (a fresh index, ignored files too)."""
    tmp = fslib.run("mktemp", "-d").stdout.strip()
    try:
        env = dict(os.environ, GIT_DIR=os.path.join(tmp, "g"), GIT_WORK_TREE=view)
        subprocess.run(["git", "init", "-q", "--bare", env["GIT_DIR"]], check=True)
        subprocess.run(["git", "-c", "core.fsmonitor=false", "add", "-A", "-f", "."],
                       cwd=view, env=env, check=True, capture_output=True)
        return subprocess.run(["git", "write-tree"], cwd=view, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()
    finally:
        subprocess.run(["rm", "-rf", tmp])


def one_line_error(cp, code, pattern, what):
    C.one_line_error(cp, code, pattern, what)


def box_args():
    ok = subprocess.run(["bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                         "true"], capture_output=True).returncode == 0 if os.path.exists(
        "/usr/bin/bwrap") else False
    return [] if ok else ["--jail", "none"]


def audit_rows(fx, *extra):
    cp = fx.arb("audit", fx.name, "--json", *extra)
    return [json.loads(x) for x in cp.stdout.splitlines() if x.strip()]


def daemon_pid(fx):
    try:
        with open(os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name, "run",
                               "daemon.pid")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def main():
    fx = fslib.Fixture()
    try:
        run_all(fx)
    finally:
        fx.cleanup()
    C.finish()


def run_all(fx):
    view = fx.root
    jail = box_args()
    before = gitish(view)
    cp = fx.arb("shell", fx.name, *jail, "--", "sh", "-c", SESSION, check=False)
    C.eq(0, cp.returncode, "the session ran (%s)" % cp.stderr[-500:])
    after = gitish(view)
    C.ok(before != after, "control: the session changed the view")
    # The checkpoint's tree is the one git makes of the same files, byte for byte (entry
    # order, modes): git write-tree of a fresh index of the view.
    made = json.loads(fx.arb("checkpoint", fx.name, "-m", "tree", "--json").stdout)["tree"]
    C.eq(git_tree_of(view), made, "a checkpoint's tree is git write-tree's of the same view")

    # --- log: the session with its checkpoints and what it changed ---
    log = json.loads(fx.arb("log", fx.name, "--json").stdout)
    ses = log["sessions"]
    C.eq(1, len(ses), "log: one session")
    s = ses[0] if ses else {}
    C.ok(s.get("start_checkpoint") and s.get("end_checkpoint") and s.get("exit") == 0,
         "log: the session's start and end checkpoints and exit status (%r)" % s)
    C.ok("sh" in " ".join(s.get("argv", [])), "log: the session's command")
    ch = s.get("changes") or {}
    C.ok(ch.get("files", 0) >= 10, "log: what the session changed (%r)" % ch)
    text = fx.arb("log", fx.name).stdout
    C.ok("session 1" in text and "exit 0" in text and "files changed" in text,
         "log: readable lines (%r)" % text[:300])

    # --- diff ---
    ns = fx.arb("diff", fx.name, "--session", "1", "--name-status").stdout
    for want in ("M\tsrc/main.c", "D\tsrc/lib/b.txt", "D\tdocs/img/pic.bin", "A\tbrand/link",
                 "A\tmoved/er/d.txt", "M\tREADME", "A\tsrc/lib/a.txt/f", "A\tdocs",
                 "A\tbrand/new/dir/bin"):
        C.ok(want in ns, "diff --name-status has %r (%r)" % (want, ns))
    C.ok("\tsrc/lib/deep/er/c.txt" in ns, "diff: the moved directory's edited file")
    C.ok("fifo" not in ns, "diff: a FIFO is not something git holds")
    patch = fx.arb("diff", fx.name, "--", "src/main.c").stdout
    C.ok("diff --git a/src/main.c b/src/main.c" in patch and "+edited" in patch,
         "diff -- PATH: a patch of that path only (%r)" % patch[:200])
    C.ok("README" not in patch, "diff -- PATH: nothing else")
    st = fx.arb("diff", fx.name, "base", "view", "--stat").stdout
    C.ok("files changed" in st, "diff --stat (%r)" % st[-200:])
    C.eq("", fx.arb("diff", fx.name, str(s.get("end_checkpoint")), "view").stdout,
         "diff END view: nothing since the session ended")

    # --- rewind before the session, and back ---
    cp = fx.arb("rewind", fx.name, "--before-session", "1", "--json", check=False)
    C.eq(0, cp.returncode, "rewind --before-session 1 (%s)" % cp.stderr)
    undo = json.loads(cp.stdout)["undo"]["checkpoint"] if cp.returncode == 0 else 0
    same(before, gitish(view), "rewind --before-session: the tree from before, byte for byte")
    C.ok(not os.path.lexists(os.path.join(view, "brand")), "rewind: new paths are gone")
    rows = [r for r in audit_rows(fx) if r.get("op") == "rewind"]
    C.eq(1, len(rows), "rewind is one audit row")
    C.eq(1, len(audit_rows(fx, "--op", "rewind")), "audit --op rewind finds it")
    # git in the view agrees: the workspace is clean against its base again.
    g = fslib.run("git", "-C", view, "status", "--porcelain", check=False)
    C.eq("", g.stdout, "git status in the view is clean after the rewind (%r)" % g.stderr)
    fx.arb("workspace", "unmount", fx.name)
    fx.arb("workspace", "mount", fx.name)
    same(before, gitish(view), "rewind survives an unmount and mount")
    cp = fx.arb("rewind", fx.name, "--to", str(undo), check=False)
    C.eq(0, cp.returncode, "rewind --to the undo checkpoint (%s)" % cp.stderr)
    same(after, gitish(view), "rewind --to undo: the tree after the session, byte for byte")
    pid = daemon_pid(fx)
    C.ok(pid > 0, "the view's daemon runs")
    if pid:
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        fx.arb("workspace", "mount", fx.name)
        same(after, gitish(view), "the rewound tree survives the daemon killed with -9")

    # --- the replaced layers are removed ---
    wsdir = os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name)
    for _ in range(50):
        left = [n for n in os.listdir(wsdir) if n.startswith("layer.old")]
        if not left:
            break
        time.sleep(0.1)
    C.eq([], left, "no replaced layer is left behind")
    C.ok(os.path.isdir(os.path.join(wsdir, "layer")), "control: the layer itself is there")

    # --- checkpoints hash what changed only ---
    c1 = json.loads(fx.arb("checkpoint", fx.name, "-m", "one", "--json").stdout)
    time.sleep(2.2)  # past the cache's racy window
    fx.arb("checkpoint", fx.name, "-m", "warm")
    out = fx.arb("checkpoint", fx.name, "-m", "again").stdout
    C.ok("0 files hashed" in out, "a checkpoint with nothing changed hashes nothing (%r)" % out)
    with open(os.path.join(view, "README"), "a") as f:
        f.write("one more line\n")
    out = fx.arb("checkpoint", fx.name, "-m", "one more").stdout
    C.ok("1 files hashed" in out, "one file changed: one file hashed (%r)" % out)
    C.eq("one", c1.get("message"), "checkpoint --json: the message")

    # --- a checkpoint's objects go into one pack; small packs are taken into the next ---
    gitdir = os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name, "checkpoints.git")
    for i in range(16):
        with open(os.path.join(view, "README"), "a") as f:
            f.write("line %d\n" % i)
        fx.arb("checkpoint", fx.name, "-m", "pack %d" % i)
    packs = [n for n in os.listdir(os.path.join(gitdir, "objects", "pack"))
             if n.endswith(".pack")]
    C.ok(1 <= len(packs) <= 6, "16 more checkpoints leave a few packs, not 16 (%d)" % len(packs))
    fk = fslib.run("git", "--git-dir", gitdir, "fsck", "--no-dangling", check=False)
    C.eq(0, fk.returncode, "git fsck: every checkpoint's objects are there (%s)" % fk.stderr[-300:])
    # A pack of git's own (with deltas, as a gc in the view makes) stays as it is.
    fslib.run("git", "--git-dir", gitdir, "repack", "-a", "-d", "-l", "-q")
    for i in range(4):
        with open(os.path.join(view, "README"), "a") as f:
            f.write("after repack %d\n" % i)
        fx.arb("checkpoint", fx.name, "-m", "after repack %d" % i)
    fk = fslib.run("git", "--git-dir", gitdir, "fsck", "--no-dangling", check=False)
    C.eq(0, fk.returncode, "git fsck after a repack and more checkpoints (%s)" % fk.stderr[-300:])

    # --- restore: single paths back, each change through the view ---
    n0 = len(audit_rows(fx))
    cp = fx.arb("restore", fx.name, "README", "src/lib", "brand", "--at", str(c1["checkpoint"]),
                check=False)
    C.eq(0, cp.returncode, "restore (%s)" % cp.stderr)
    now = gitish(view)
    for k, v in after.items():
        if k.startswith(("README", "src/lib/", "brand/")):
            C.eq(v, now.get(k), "restore: %s as at the checkpoint" % k)
    cp = fx.arb("restore", fx.name, "brand", "--before-session", "1", check=False)
    C.eq(0, cp.returncode, "restore of a path the earlier state lacks (%s)" % cp.stderr)
    C.ok(not os.path.lexists(os.path.join(view, "brand")), "restore: that path is removed")
    C.ok(len(audit_rows(fx)) > n0, "restore's changes are in the audit")

    # --- rewind refused while a session runs ---
    flag = os.path.join(view, ".hold")
    with open(flag, "w") as f:
        f.write("1")
    p = subprocess.Popen([fslib.ARB, "--workdir", fx.repo, "shell", fx.name, *jail, "--", "sh",
                          "-c", "while [ -e .hold ]; do sleep 0.1; done"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    cp = fx.arb("rewind", fx.name, "--to", "1", check=False)
    one_line_error(cp, 1, "is running", "rewind while a session runs")
    os.unlink(flag)
    p.wait(timeout=60)
    C.eq(0, fx.arb("rewind", fx.name, "--to", "1", check=False).returncode,
         "control: rewind once the session ended")
    # A session whose shell was killed (-9: no exit row) does not block rewind.
    with open(flag, "w") as f:
        f.write("1")
    p = subprocess.Popen([fslib.ARB, "--workdir", fx.repo, "shell", fx.name, "--jail", "none",
                          "--", "sh", "-c", "while [ -e .hold ]; do sleep 0.1; done"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    one_line_error(fx.arb("rewind", fx.name, "--to", "1", check=False), 1, "is running",
                   "rewind while a --jail none session runs")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    os.unlink(flag)
    time.sleep(0.5)
    C.eq(0, fx.arb("rewind", fx.name, "--to", "1", check=False).returncode,
         "a session whose shell was killed does not block rewind")
    bad_input(fx, view)
    nested_git(fx, view)
    fork(fx, view, s, after)
    numbering(fx)


def numbering(fx):
    """The next checkpoint number comes from NAME/checkpoint.last and a probe of the refs
    after it; without the hint, a garbage one, or one whose ref is gone, from all the refs.
    Each checkpoint's parent is the one before it, whichever way it was found."""
    name = "num"
    fx.arb("workspace", "create", name)
    ws = os.path.join(fx.repo, ".git", "arborinth", "workspaces", name)
    hint = os.path.join(ws, "checkpoint.last")
    gitdir = os.path.join(ws, "checkpoints.git")  # the checkpoint store, out of the box's reach

    def ckpt(what):
        cp = fx.arb("checkpoint", name, "-m", what, "--json", check=False)
        C.eq(0, cp.returncode, "checkpoint %s (%s)" % (what, cp.stderr))
        return json.loads(cp.stdout)["checkpoint"] if cp.returncode == 0 else 0

    def rev(spec):
        return fslib.run("git", "--git-dir", gitdir, "rev-parse", "-q", "--verify", spec,
                         check=False).stdout.strip()

    def parent_is(n, what):
        C.eq(rev("refs/arborinth/checkpoints/%d" % (n - 1)),
             rev("refs/arborinth/checkpoints/%d^" % n),
             "%s: its parent is checkpoint %d" % (what, n - 1))

    n = ckpt("hinted")
    with open(hint) as f:
        C.eq("%d\n" % n, f.read(), "checkpoint.last holds the number just taken")
    os.unlink(hint)
    C.eq(n + 1, ckpt("no hint"), "without the hint: the number after the highest ref")
    parent_is(n + 1, "without the hint")
    for text, what in (("1\n", "an old hint"), ("x\n", "a garbage hint"),
                       ("999999\n", "a hint whose ref is gone")):
        with open(hint, "w") as f:
            f.write(text)
        n = ckpt(what)
        C.eq(n, int(open(hint).read()), "%s: the hint is right again" % what)
        parent_is(n, what)
        C.eq("", rev("refs/arborinth/checkpoints/%d" % (n + 1)), "%s: nothing after it" % what)
    # Another process's checkpoint after the hint's (the hint left as it was): the last one.
    with open(hint) as f:
        saved = f.read()
    C.eq(n + 1, ckpt("another's"), "another process's checkpoint")
    with open(hint, "w") as f:
        f.write(saved)
    C.eq(n + 2, ckpt("after another's"), "a ref after the hint's is counted")
    parent_is(n + 2, "after another's")
    # Packed by git pack-refs in the view: found there too.
    fslib.run("git", "--git-dir", gitdir, "pack-refs", "--all")
    C.eq(n + 3, ckpt("packed"), "refs packed by git pack-refs are counted")
    parent_is(n + 3, "packed")
    os.unlink(hint)
    fslib.run("git", "--git-dir", gitdir, "pack-refs", "--all")
    C.eq(n + 4, ckpt("packed, no hint"), "packed refs without the hint are counted")
    fx.arb("workspace", "delete", name, "--force")


def nested_git(fx, view):
    """A directory named .git below the root (a nested repository) is left out, as git does."""
    # Made by a box: the view hides nested .git entries from everyone else (fs/hostgit.c).
    # Without bwrap (--jail none runs on the host), straight into the upper layer.
    jail = box_args()
    if jail:
        view = os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name, "layer")
        os.makedirs(os.path.join(view, "nested", ".git"))
        for rel, text in (("nested/.git/HEAD", "ref: refs/heads/x\n"), ("nested/f", "f\n")):
            with open(os.path.join(view, rel), "w") as f:
                f.write(text)
    else:
        fx.arb("shell", fx.name, "--", "sh", "-c",
               "mkdir -p nested/.git && echo 'ref: refs/heads/x' >nested/.git/HEAD && "
               "echo f >nested/f")
    cp = fx.arb("checkpoint", fx.name, "-m", "nested", "--json", check=False)
    C.eq(0, cp.returncode, "a checkpoint with a nested .git (%s)" % cp.stderr)
    tree = json.loads(cp.stdout)["tree"] if cp.returncode == 0 else ""
    gitdir = os.path.join(fx.repo, ".git", "arborinth", "workspaces", fx.name, "checkpoints.git")
    ls = fslib.run("git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", tree,
                   "nested", check=False).stdout.split()
    C.eq(["nested/f"], ls, "the nested .git is left out, its siblings kept")


def fork(fx, view, s, after):
    """A new workspace from a checkpoint, independent of its source afterwards."""
    end = str(s.get("end_checkpoint"))
    cp = fx.arb("workspace", "create", "fork", "--from", "%s@%s" % (fx.name, end), check=False)
    C.eq(0, cp.returncode, "workspace create --from NAME@CKPT (%s)" % cp.stderr)
    fork_view = fx.view("fork")
    same(after, gitish(fork_view), "the fork's view is the checkpoint's tree, byte for byte")
    C.eq("", fx.arb("diff", "fork").stdout, "the fork's base is that state: no diff")
    with open(os.path.join(view, "only-in-source"), "w") as f:
        f.write("x\n")
    C.ok(not os.path.exists(os.path.join(fork_view, "only-in-source")),
         "the fork does not see later changes of its source")
    cp = fx.arb("workspace", "create", "fork2", "--from", "fork", check=False)
    C.eq(0, cp.returncode, "a fork of a fork, from its view now (%s)" % cp.stderr)
    fx.arb("workspace", "delete", fx.name, "--force")
    fx.arb("workspace", "unmount", "fork")
    fx.arb("workspace", "mount", "fork")
    same(after, gitish(fork_view), "the fork works with its source deleted")
    fsck = fslib.git(fx.repo, "fsck", "--no-dangling", check=False)
    C.eq(0, fsck.returncode, "the origin's object store is whole (%s)" % fsck.stderr[-300:])
    g = fslib.run("git", "-C", fork_view, "log", "--oneline", "-1", check=False)
    C.ok(g.returncode == 0 and "forked from" in g.stdout,
         "git in the fork sees its base commit (%r)" % g.stdout)
    for args, code, pattern in (
            (["workspace", "create", "fork", "--from", "fork2"], 1, "already exists"),
            (["workspace", "create", "f3", "--from", "nope"], 1, "nope"),
            (["workspace", "create", "f3", "--from", "fork@99"], 1, "no checkpoint 99"),
            (["workspace", "create", "f3", "--from", "@1"], 2, "--from needs"),
            (["workspace", "create", "f3", "--from", "fork", "--rev", "HEAD"], 2, "without")):
        one_line_error(fx.arb(*args, check=False), code, pattern, " ".join(args))
    C.ok(not os.path.exists(os.path.join(fx.repo, ".git", "arborinth", "workspaces", "f3")),
         "failed forks created nothing")


def bad_input(fx, view):
    """Each bad input: one line on stderr, exit 2 (usage) or 1, nothing changed."""
    snap = gitish(view)
    for args, code, pattern in (
            (["rewind", fx.name], 2, "exactly one of --to"),
            (["rewind", fx.name, "--to", "1", "--before-session", "1"], 2, "exactly one"),
            (["rewind", fx.name, "--to", "999"], 1, "no checkpoint 999"),
            (["rewind", fx.name, "--to", "nonsense"], 1, "neither a checkpoint"),
            (["rewind", fx.name, "--before-session", "x"], 1, "not a session number"),
            (["rewind", fx.name, "--before-session", "77"], 1, "session 77"),
            (["rewind", "nope", "--to", "1"], 1, "nope"),
            (["restore", fx.name, "--at", "1"], 2, "missing PATH"),
            (["restore", fx.name, "../x", "--at", "1"], 1, "not a path inside the workdir"),
            (["restore", fx.name, ".git/config", "--at", "1"], 1, "not a path inside"),
            (["checkpoint", fx.name, "-m", "two\nlines"], 2, "one line"),
            (["checkpoint"], 2, "missing workspace NAME"),
            (["checkpoint", "bad/name"], 2, "name"),
            (["diff", fx.name, "a", "b", "c"], 2, "unexpected argument"),
            (["diff", fx.name, "--stat", "--name-status"], 2, "go alone"),
            (["log", fx.name, "extra"], 2, "unexpected argument")):
        one_line_error(fx.arb(*args, check=False), code, pattern, " ".join(args))
    same(snap, gitish(view), "bad input changed nothing")


if __name__ == "__main__":
    main()
