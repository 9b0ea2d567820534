"""tests/lib/arbtest.py: what every Python test shares (standard library only): a check
counter that reports each failure and exits non-zero at the end, the one-line-error check of
the project's rule for bad input, and the skip rule (exit 77, a failure under
ARBORINTH_TEST_MUST_RUN=1). The area harnesses (integration/fslib.py, e2e_lib.py,
proxy/proxytest.py) import it; a test script finds it with

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
"""
import os
import sys


def skip(reason):
    if os.environ.get("ARBORINTH_TEST_MUST_RUN") == "1":
        print("FAIL (skip not allowed): " + reason, file=sys.stderr)
        sys.exit(1)
    print("SKIP: " + reason, file=sys.stderr)
    sys.exit(77)


class Checks:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what):
        self.n += 1
        if not cond:
            self.failed += 1
            print("FAIL: " + what, file=sys.stderr, flush=True)
        return cond

    def eq(self, want, got, what):
        return self.ok(want == got, "%s: expected %r, got %r" % (what, want, got))

    def one_line_error(self, cp, code, pattern, what):
        """cp (a finished subprocess, text mode) exited with code and said one line on
        stderr holding pattern."""
        self.eq(code, cp.returncode, what + ": exit status (stderr %r)" % cp.stderr)
        lines = [ln for ln in cp.stderr.splitlines() if ln.strip()]
        self.eq(1, len(lines), what + ": one line on stderr (%r)" % cp.stderr)
        self.ok(pattern in cp.stderr, "%s: %r in %r" % (what, pattern, cp.stderr))

    def finish(self):
        if self.failed:
            print("%d of %d checks failed" % (self.failed, self.n), file=sys.stderr)
            sys.exit(1)
        print("all %d checks passed" % self.n)


def git(repo, *args):
    """git in repo with a fixed identity, its output dropped; raises on failure."""
    import subprocess
    subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=repo,
                   check=True, stdout=subprocess.DEVNULL)


def make_repo(prefix):
    """A fresh temp dir (under ARB_JAIL_TMPDIR, else /var/tmp: boxes and views need a file
    system that is not tmpfs's) holding repo/, a repository on branch main with one commit of
    README. Returns (dir, repo); the caller removes dir."""
    import tempfile
    base = os.environ.get("ARB_JAIL_TMPDIR", "/var/tmp")
    t = tempfile.mkdtemp(prefix=prefix, dir=base)
    repo = os.path.join(t, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    with open(os.path.join(repo, "README"), "w") as f:
        f.write("origin\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "first")
    return t, repo
