#!/usr/bin/env python3
"""`arborinth merge` and `arborinth apply` on real mounts (label ckpt): a workspace's work
brought into the origin.

- merge: a commit made in the view (git run through `arborinth shell`, as an agent does)
  fast-forwards the origin's branch and its working tree; with the origin ahead on another
  file it becomes a merge commit with both parents; a conflicting edit is refused with the
  path listed, and so is a merge that an uncommitted origin change is in the way of: HEAD,
  index and working tree unchanged each time; a hook in the origin never runs; a detached
  origin HEAD is refused.
- apply: committed and uncommitted changes of the workspace land in the origin's working tree
  as unstaged changes (the index untouched); refused whole, nothing written, when an origin
  file differs from the base or an untracked file is where the workspace adds one.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402

C = fslib.Checks()
FILES = {"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n", "dir/c.txt": "sea\n"}


def state(repo):
    """HEAD, index and working tree of the origin (to prove nothing changed)."""
    head = og(repo, "rev-parse", "HEAD").stdout.strip()
    index = hashlib.sha256(open(os.path.join(repo, ".git", "index"), "rb").read()).hexdigest()
    tree = {k: v for k, v in fslib.snapshot(repo, skip_git=True).items()
            if k != ".arborinth" and not k.startswith(".arborinth/")}
    return head, index, tree


def og(repo, *args):
    """git in the origin by the test itself, its hooks off (they are there to catch
    arborinth running them)."""
    return fslib.git(repo, "-c", "core.hooksPath=/nonexistent", *args)


def one_line_error(cp, pattern, what):
    C.one_line_error(cp, 1, pattern, what)


def in_view(fx, name, script):
    """A shell command in the workspace (its git included), as an agent runs it."""
    cp = fx.arb("shell", name, "--jail", "none", "--", "sh", "-c",
                "git -c user.email=agent@example.com -c user.name=agent " + script
                if script.startswith("commit") else script, check=False)
    C.eq(0, cp.returncode, "in %s: %s (%s)" % (name, script[:40], cp.stderr[-300:]))


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def main():
    fx = fslib.Fixture(repo_files=FILES)
    try:
        run_all(fx)
    finally:
        fx.cleanup()
    C.finish()


def run_all(fx):
    repo = fx.repo
    hook = os.path.join(repo, ".git", "hooks")
    os.makedirs(hook, exist_ok=True)
    for h in ("post-merge", "post-checkout", "pre-commit", "post-commit"):
        write(os.path.join(hook, h), "#!/bin/sh\ntouch %s/HOOK-RAN-%s\n" % (fx.tmp, h))
        os.chmod(os.path.join(hook, h), 0o755)

    # --- fast-forward ---
    view = fx.root
    write(os.path.join(view, "b.txt"), "bee\nbuzz\n")
    in_view(fx, fx.name, "git add b.txt && git -c user.email=a@e -c user.name=a commit -qm "
            "'agent: buzz'")
    cp = fx.arb("merge", fx.name, "--json", check=False)
    C.eq(0, cp.returncode, "merge, fast-forward (%s)" % cp.stderr)
    C.ok('"fast-forward"' in cp.stdout, "merge --json says fast-forward (%r)" % cp.stdout)
    C.eq("bee\nbuzz\n", read(os.path.join(repo, "b.txt")), "the origin's file after the merge")
    C.eq("agent: buzz", og(repo, "log", "-1", "--format=%s").stdout.strip(),
         "the origin's branch is at the workspace's commit")
    C.eq("", og(repo, "status", "--porcelain").stdout, "the origin is clean after it")
    cp = fx.arb("merge", fx.name, check=False)
    C.ok(cp.returncode == 0 and "already has" in cp.stdout, "merge again: up to date")

    # --- a merge commit: the origin moved on another file ---
    write(os.path.join(repo, "dir/c.txt"), "sea\nshore\n")
    og(repo, "commit", "-qam", "origin: shore")
    os.unlink(os.path.join(fx.tmp, "HOOK-RAN-post-commit")) if os.path.exists(
        os.path.join(fx.tmp, "HOOK-RAN-post-commit")) else None
    write(os.path.join(view, "a.txt"), "one\ntwo\nthree\nfour\n")
    in_view(fx, fx.name, "git -c user.email=a@e -c user.name=a commit -qam 'agent: four'")
    cp = fx.arb("merge", fx.name, check=False)
    C.eq(0, cp.returncode, "merge with both sides moved (%s)" % cp.stderr)
    parents = og(repo, "log", "-1", "--format=%P").stdout.split()
    C.eq(2, len(parents), "a merge commit with two parents")
    C.ok(read(os.path.join(repo, "a.txt")).endswith("four\n") and
         read(os.path.join(repo, "dir/c.txt")) == "sea\nshore\n",
         "both sides' changes are in the origin's working tree")
    C.eq("", og(repo, "status", "--porcelain").stdout, "clean after the merge commit")

    # --- a conflict changes nothing ---
    write(os.path.join(repo, "a.txt"), "ONE\ntwo\nthree\nfour\n")
    og(repo, "commit", "-qam", "origin: ONE")
    write(os.path.join(view, "a.txt"), "uno\ntwo\nthree\nfour\n")
    in_view(fx, fx.name, "git -c user.email=a@e -c user.name=a commit -qam 'agent: uno'")
    before = state(repo)
    cp = fx.arb("merge", fx.name, check=False)
    one_line_error(cp, "conflicts in: a.txt", "merge with a conflict")
    C.ok(state(repo) == before, "the conflict left HEAD, index and working tree as they were")

    # --- an uncommitted origin change in the way changes nothing ---
    og(repo, "reset", "-q", "--hard", "HEAD~1")
    write(os.path.join(repo, "a.txt"), "local edit\n")
    before = state(repo)
    cp = fx.arb("merge", fx.name, check=False)
    one_line_error(cp, "in the way of the merge", "merge with a local change in the way")
    C.ok(state(repo) == before, "the refused merge left everything as it was")
    C.eq("local edit\n", read(os.path.join(repo, "a.txt")), "the local edit is kept")
    og(repo, "checkout", "-q", "--", "a.txt")
    hooks = [h for h in os.listdir(fx.tmp) if h.startswith("HOOK-RAN")]
    C.eq([], hooks, "no hook of the origin ran")
    og(repo, "checkout", "-q", "--detach")
    one_line_error(fx.arb("merge", fx.name, check=False), "not on a branch",
                   "merge into a detached HEAD")
    og(repo, "checkout", "-q", "main")

    # --- apply: committed and uncommitted work, unstaged ---
    fx.create("ap")
    av = fx.view("ap")
    write(os.path.join(av, "b.txt"), "bee\nbuzz\nmore\n")
    in_view(fx, "ap", "git -c user.email=a@e -c user.name=a commit -qam 'agent: more'")
    write(os.path.join(av, "new/file.txt"), "brand new\n")
    os.unlink(os.path.join(av, "dir/c.txt"))
    base = og(repo, "rev-parse", "HEAD").stdout.strip()
    ws_base = fx.arb("workspace", "info", "ap", "--json").stdout
    C.ok(base in ws_base, "control: the origin is at the workspace's base")
    write(os.path.join(repo, "new/file.txt"), "untracked in the way\n")
    before = state(repo)
    one_line_error(fx.arb("apply", "ap", check=False), "new/file.txt",
                   "apply with an untracked file in the way")
    C.ok(state(repo) == before, "the refused apply wrote nothing")
    os.unlink(os.path.join(repo, "new/file.txt"))
    os.rmdir(os.path.join(repo, "new"))
    write(os.path.join(repo, "b.txt"), "edited in the origin\n")
    before = state(repo)
    one_line_error(fx.arb("apply", "ap", check=False), "b.txt",
                   "apply over a file modified in the origin")
    C.ok(state(repo) == before, "the refused apply wrote nothing (modified file)")
    og(repo, "checkout", "-q", "--", "b.txt")
    index_before = state(repo)[1]
    cp = fx.arb("apply", "ap", check=False)
    C.eq(0, cp.returncode, "apply (%s)" % cp.stderr)
    C.eq("bee\nbuzz\nmore\n", read(os.path.join(repo, "b.txt")), "apply: the committed change")
    C.eq("brand new\n", read(os.path.join(repo, "new/file.txt")), "apply: the new file")
    C.ok(not os.path.exists(os.path.join(repo, "dir/c.txt")), "apply: the deletion")
    C.eq(index_before, state(repo)[1], "apply left the origin's index alone")
    st = og(repo, "status", "--porcelain").stdout
    C.ok(" M b.txt" in st and " D dir/c.txt" in st and "?? new/" in st,
         "the changes are unstaged in the origin (%r)" % st)
    for args, pattern in ((["merge", "nope"], "nope"), (["apply", "nope"], "nope")):
        one_line_error(fx.arb(*args, check=False), pattern, " ".join(args))
    cp = fx.arb("apply", check=False)
    C.eq(2, cp.returncode, "apply without NAME: usage")


if __name__ == "__main__":
    main()
