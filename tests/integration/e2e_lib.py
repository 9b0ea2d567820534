"""Shared set-up for the e2e tests (launchers, bind files, grants, plugins): a private temp
directory outside /tmp (boxes have their own /tmp), a repository, a fake $HOME holding
secrets and client settings, the fake model API, and a check counter."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

ARB = os.environ["ARB"]
ARB_SRC = os.environ["ARB_SRC"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from arbtest import Checks, skip  # noqa: E402,F401  (the shared harness)


def need_box():
    if not shutil.which("bwrap"):
        skip("bwrap is not installed")
    if subprocess.run(["bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind",
                       "/", "/", "true"], capture_output=True).returncode != 0:
        skip("bwrap cannot create user, pid and network namespaces here")
    if not os.path.exists("/dev/fuse"):
        skip("no /dev/fuse for the workspace view")


class Env:
    """The test's world. Call close() (or use `with`) to unmount and remove everything."""

    def __init__(self, name):
        base = os.environ.get("ARB_JAIL_TMPDIR", "/var/tmp")
        self.t = tempfile.mkdtemp(prefix="arb-%s." % name, dir=base)
        self.procs = []
        self.repo = os.path.join(self.t, "repo")
        self.home = os.path.join(self.t, "home")
        self.bin = os.path.join(self.t, "bin")
        os.makedirs(self.bin)
        self.make_repo()
        self.make_home()
        self.path = self.bin + ":/usr/local/bin:/usr/bin:/bin"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def make_repo(self):
        os.makedirs(self.repo)
        q = dict(cwd=self.repo, check=True, stdout=subprocess.DEVNULL)
        g = ["git", "-c", "user.email=t@e", "-c", "user.name=t"]
        subprocess.run(["git", "init", "-q", "-b", "main"], **q)
        with open(os.path.join(self.repo, "README"), "w") as f:
            f.write("first\n")
        subprocess.run(g + ["add", "README"], **q)
        subprocess.run(g + ["commit", "-qm", "first"], **q)
        with open(os.path.join(self.repo, "README"), "w") as f:
            f.write("second\n")
        subprocess.run(g + ["commit", "-qam", "second"], **q)

    def write(self, rel, text, mode=0o644):
        p = os.path.join(self.t, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    def make_home(self):
        """Secrets a box must never see, and settings the launchers import."""
        self.secrets = {
            "home/.ssh/id_ed25519": "SECRET-SSH-KEY\n",
            "home/.claude/.credentials.json": '{"claudeAiOauth": {"accessToken": "SECRET-OAUTH"}}',
            "home/.codex/auth.json": '{"OPENAI_API_KEY": "SECRET-CODEX-AUTH"}',
            "home/.local/share/opencode/auth.json": '{"anthropic": {"key": "SECRET-OC"}}',
            "home/.npmrc": "//registry.npmjs.org/:_authToken=SECRET-NPM\n",
        }
        for rel, text in self.secrets.items():
            self.write(rel, text, 0o600)
        self.write("home/.claude/settings.json", '{"model": "claude-host-model"}')
        self.write("home/.codex/config.toml", 'model = "gpt-host-model"\n'
                   'model_reasoning_effort = "high"\n\n[projects."/x"]\nmodel = "not-this"\n')
        self.write("home/.config/opencode/opencode.json",
                   '{"model": "anthropic/claude-host-oc"}')

    def env(self, extra=None):
        e = {k: v for k, v in os.environ.items()
             if not k.endswith("_API_KEY") and not k.startswith(("XDG_", "CODEX_", "OPENCODE_"))
             and k not in ("ANTHROPIC_MODEL",)}
        e.update({"HOME": self.home, "PATH": self.path, "TMPDIR": self.t})
        e.update(extra or {})
        return e

    def arb(self, *args, env=None, timeout=300, cwd=None):
        return subprocess.run([ARB] + list(args), capture_output=True, text=True,
                              env=self.env(env), cwd=cwd or self.repo, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def start_models(self, reply, extra=()):
        self.models_log = os.path.join(self.t, "models.log")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "e2e_fake_models.py"),
                              "--log", self.models_log, "--reply", reply, *extra],
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        self.models_port = int(p.stdout.readline())
        return "http://127.0.0.1:%d" % self.models_port

    def models_requests(self):
        if not os.path.exists(self.models_log):
            return []
        with open(self.models_log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def ws(self, name):
        return os.path.join(self.repo, ".git", "arborinth", "workspaces", name)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        # Unmount the views (deepest first), then remove everything.
        mounts = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mp = line.split()[4]
                if mp.startswith(self.t):
                    mounts.append(mp)
        for mp in sorted(mounts, reverse=True):
            if subprocess.run(["fusermount3", "-u", "-z", mp], capture_output=True).returncode:
                subprocess.run(["umount", "-l", mp], capture_output=True)
        for root, _, files in os.walk(self.t):
            if "daemon.pid" in files:
                try:
                    with open(os.path.join(root, "daemon.pid")) as f:
                        os.kill(int(f.read().strip()), signal.SIGTERM)
                except (OSError, ValueError):
                    pass
        if os.environ.get("ARB_KEEP_TMP") != "1":
            shutil.rmtree(self.t, ignore_errors=True)
        else:
            print("kept " + self.t, file=sys.stderr)


CLIENT_PACKAGES = ["@anthropic-ai/claude-code", "@openai/codex", "opencode-ai"]


def install_clients(E, C, packages=None):
    """The three agent clients (or packages) from the npm registry into a test-local prefix
    (or ARB_NPM_PREFIX): the prefix. Skips when the registry is unreachable."""
    packages = packages or CLIENT_PACKAGES
    prefix = os.environ.get("ARB_NPM_PREFIX")
    if prefix:
        return prefix
    if not shutil.which("npm"):
        skip("npm is not installed (apt-get install npm)")
    prefix = os.path.join(E.t, "npm")
    os.makedirs(prefix)
    cp = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix] +
                        packages, capture_output=True, text=True, timeout=900,
                        env=dict(os.environ, npm_config_update_notifier="false"))
    if cp.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=120)
        if ping.returncode != 0:
            skip("the npm registry is unreachable (npm ping: %s)" %
                 (ping.stderr.strip().splitlines() or ["?"])[-1])
        print(cp.stdout[-3000:], cp.stderr[-3000:], file=sys.stderr)
        C.ok(False, "npm install %s failed although the registry answers" % " ".join(packages))
        C.finish()
    return prefix


def search_files(roots, needle):
    """Files under roots (not following links) whose bytes contain needle."""
    hits = []
    nb = needle.encode()
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                p = os.path.join(dirpath, f)
                try:
                    if os.path.isfile(p) and not os.path.islink(p):
                        with open(p, "rb") as fh:
                            if nb in fh.read():
                                hits.append(p)
                except OSError:
                    pass
    return hits
