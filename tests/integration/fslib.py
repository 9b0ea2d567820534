"""tests/integration/fslib.py: shared helpers for the view tests (Python standard library only).

A Fixture makes a private temp dir with a small repository, creates a real workspace with the
built arborinth (a real FUSE mount) and a plain copy of the same tree to compare against. Its
cleanup deletes the workspace (unmounting it) and the temp dir.
"""
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile

ARB = os.environ["ARB"]
COMMIT_DATE = "2024-01-02T03:04:05Z"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from arbtest import Checks, skip  # noqa: E402,F401  (the shared harness)


def require_fuse():
    if not os.path.exists("/dev/fuse"):
        skip("no /dev/fuse")


def run(*args, cwd=None, check=True, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(args, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr))
    return p


def git(repo, *args, **kw):
    return run("git", "-C", repo, *args, **kw)


def make_repo(path, files=None):
    """A repository with nested directories, an executable, symlinks and an empty-ish tree."""
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "tester")
    files = files or {
        "README": "hello\n",
        "src/main.c": "int main(void) { return 0; }\n",
        "src/lib/a.txt": "a" * 100 + "\n",
        "src/lib/b.txt": "b\n",
        "src/lib/deep/er/c.txt": "c\n",
        "docs/guide.md": "# guide\n" * 50,
        "docs/img/pic.bin": "".join(chr(i % 128) for i in range(5000)),
        "empty": "",
        "data/reader.bin": "".join(chr(65 + i % 26) for i in range(8000)),
        "data/spare.txt": "spare base file\n" * 20,
    }
    for name, content in files.items():
        full = os.path.join(path, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(content)
    with open(os.path.join(path, "run.sh"), "w") as f:
        f.write("#!/bin/sh\necho run\n")
    os.chmod(os.path.join(path, "run.sh"), 0o755)
    os.symlink("README", os.path.join(path, "link"))
    os.symlink("src/lib", os.path.join(path, "dirlink"))
    os.symlink("nowhere", os.path.join(path, "dangling"))
    git(path, "add", "-A")
    env = {"GIT_COMMITTER_DATE": COMMIT_DATE, "GIT_AUTHOR_DATE": COMMIT_DATE}
    git(path, "commit", "-q", "-m", "base", env=env)


def snapshot(root, skip_git=True, git_holds=False):
    """Every path under root: type, mode, size, content digest or link target. git_holds:
    only what a git tree holds of it (files with their executable bit, symlinks)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if skip_git and rel == ".":
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            key = os.path.normpath(os.path.join(rel, name))
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(full))
            elif git_holds:
                if stat.S_ISREG(st.st_mode):
                    with open(full, "rb") as f:
                        out[key] = ("file", bool(st.st_mode & 0o100),
                                    hashlib.sha256(f.read()).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                out[key] = ("dir", stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[key] = ("file", stat.S_IMODE(st.st_mode), st.st_size, digest)
            else:
                out[key] = ("other", stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return out


def diff_snapshots(a, b):
    lines = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            lines.append("%s: view=%r plain=%r" % (k, a.get(k), b.get(k)))
    return lines


def tree_digest(root):
    """One digest of a whole directory tree, .git included (to prove it did not change)."""
    h = hashlib.sha256()
    snap = snapshot(root, skip_git=False)
    for k in sorted(snap):
        h.update(repr((k, snap[k])).encode())
    return h.hexdigest()


class Fixture:
    def __init__(self, name="w", repo_files=None):
        require_fuse()
        self.tmp = tempfile.mkdtemp(prefix="arb-fs-")
        self.repo = os.path.join(self.tmp, "repo")
        make_repo(self.repo, repo_files)
        self.plain = os.path.join(self.tmp, "plain")
        shutil.copytree(self.repo, self.plain, symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
        self.name = name
        self.create(name)

    def create(self, name):
        # ARB_TEST_IO=passthrough: the same checks on a view whose upper files the kernel
        # reads and writes itself (workspace create --io passthrough).
        io = ["--io", os.environ["ARB_TEST_IO"]] if os.environ.get("ARB_TEST_IO") else []
        run(ARB, "--workdir", self.repo, "workspace", "create", name, *io)
        return self.view(name)

    def view(self, name=None):
        return os.path.join(self.repo, ".git", "arborinth", "workspaces", name or self.name, "workdir")

    @property
    def root(self):
        return self.view()

    def arb(self, *args, check=True):
        return run(ARB, "--workdir", self.repo, *args, check=check)

    def sanitizer_reports(self):
        """Reports a view daemon's sanitizer wrote to its log (run/fs.log)."""
        out = []
        wsdir = os.path.join(self.repo, ".git", "arborinth", "workspaces")
        for name in os.listdir(wsdir):
            log = os.path.join(wsdir, name, "run", "fs.log")
            if os.path.exists(log):
                with open(log, errors="replace") as f:
                    text = f.read()
                if "Sanitizer" in text:
                    out.append(text)
        return out

    def cleanup(self):
        for name in os.listdir(os.path.join(self.repo, ".git", "arborinth", "workspaces")):
            if not name.startswith("."):
                self.arb("workspace", "unmount", name, check=False)
        reports = self.sanitizer_reports()
        for name in os.listdir(os.path.join(self.repo, ".git", "arborinth", "workspaces")):
            if not name.startswith("."):
                self.arb("workspace", "delete", name, "--force", check=False)
        if reports:
            print("FAIL: sanitizer report in a daemon log:\n" + "\n".join(reports),
                  file=sys.stderr)
            subprocess.run(["rm", "-rf", self.tmp])
            sys.exit(1)
        if os.environ.get("ARB_KEEP_TMP") != "1":
            subprocess.run(["rm", "-rf", self.tmp])


