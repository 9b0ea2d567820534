#!/usr/bin/env python3
"""The interface a user meets (label cli), on a real workspace (a real FUSE view):

- `diff` and `log` colour and page as git does on a terminal (a pty): the pager
  ($ARBORINTH_PAGER, a command that marks each line) is used and the output is coloured;
  controls: NO_COLOR (paged, no colour), --no-pager (coloured, not paged), a pipe (neither),
  --color=always into a pipe (colour, no pager), --color=never on the pty, PAGER=cat (none);
- `diff --json`, `restore --json`, `apply --json` and a launcher's `--explain --json` parse
  as JSON and agree with the text output (--name-status, --stat, the messages);
- `restore` of a path that never existed is one line naming the path and the checkpoint,
  exit 1, the view as it was (no directory made for it); controls: a path of the checkpoint
  comes back, a path only in the view goes (as documented);
- `claude NAME --explain` without the client, without a credential and for a workspace that
  does not exist yet: exit 0, says what is missing and what would be created, still shows the
  box, creates nothing; --json without --explain is a usage error.
Run as root, the same checks run again as an ordinary user (useradd, runuser).
"""
import json
import os
import pty
import select
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402

C = fslib.Checks()
ARB = fslib.ARB
ESC = "\x1b["
MARK = "P|"


def on_pty(args, env=None, timeout=60, stdin_tty=False):
    """args with stdout and stderr (and stdin_tty: stdin) on a new pty: (exit status, what
    the terminal got)."""
    e = dict(os.environ)
    e.update(env or {})
    e = {k: v for k, v in e.items() if v is not None}
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdin=slave if stdin_tty else subprocess.DEVNULL, stdout=slave,
                         stderr=slave, env=e, close_fds=True)
    os.close(slave)
    out = b""
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the pty
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            # Drain what is left, then stop.
            while select.select([master], [], [], 0.1)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                out += chunk
            break
    os.close(master)
    rc = p.wait(timeout=10)
    return rc, out.decode("utf-8", "replace").replace("\r\n", "\n")


def base_env():
    # A pager that marks each line, so the terminal shows whether it was used; LESS and
    # PAGER not inherited.
    return {"ARBORINTH_PAGER": "sed 's/^/%s/'" % MARK, "PAGER": None, "NO_COLOR": None,
            "TERM": "xterm"}


def paged(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and all(ln.startswith(MARK) for ln in lines)


def test_pager(fx):
    wd = ["--workdir", fx.repo]
    for cmd in (["diff", fx.name], ["log", fx.name]):
        what = " ".join(cmd[:1])
        rc, out = on_pty([ARB] + wd + cmd, base_env())
        C.eq(0, rc, what + " on a pty: exit (%r)" % out[-300:])
        C.ok(paged(out), what + " on a pty goes to the pager (%r)" % out[:200])
        C.ok(ESC in out, what + " on a pty is coloured (%r)" % out[:200])
        env = dict(base_env(), NO_COLOR="1")
        rc, out = on_pty([ARB] + wd + cmd, env)
        C.ok(paged(out) and ESC not in out, what + ": NO_COLOR: paged, no colour (%r)" % out[:200])
        rc, out = on_pty([ARB, "--no-pager"] + wd + cmd, base_env())
        C.ok(not paged(out) and MARK not in out and ESC in out,
             what + ": --no-pager: coloured, not paged (%r)" % out[:200])
        rc, out = on_pty([ARB] + wd + cmd + ["--color=never"], base_env())
        C.ok(paged(out) and ESC not in out, what + ": --color=never on a pty (%r)" % out[:200])
        rc, out = on_pty([ARB] + wd + cmd, dict(base_env(), ARBORINTH_PAGER=None, PAGER="cat"))
        C.ok(MARK not in out and ESC in out, what + ": PAGER=cat is no pager (%r)" % out[:200])
        cp = fslib.run(ARB, *wd, *cmd, env={k: v for k, v in base_env().items() if v})
        C.ok(MARK not in cp.stdout and ESC not in cp.stdout and cp.stdout.strip(),
             what + ": into a pipe: neither pager nor colour (%r)" % cp.stdout[:200])
        cp = fslib.run(ARB, *wd, *cmd, "--color=always",
                       env={k: v for k, v in base_env().items() if v})
        C.ok(MARK not in cp.stdout and ESC in cp.stdout,
             what + ": --color=always into a pipe: colour, no pager (%r)" % cp.stdout[:200])
    cp = fslib.run(ARB, *wd, "diff", fx.name, "--color=sometimes", check=False)
    C.eq(2, cp.returncode, "--color=sometimes is a usage error")
    C.ok("'sometimes'" in cp.stderr and len(cp.stderr.strip().splitlines()) == 1,
         "--color=sometimes: one line (%r)" % cp.stderr)
    # A file whose content moves the cursor: escaped on the terminal, pager or not.
    with open(os.path.join(fx.root, "evil.txt"), "w") as f:
        f.write("a\x1b[2Jb\n")
    for pre in ([], ["--no-pager"]):
        rc, out = on_pty([ARB] + pre + wd + ["diff", fx.name, "--", "evil.txt"], base_env())
        C.ok("\x1b[2J" not in out and "evil.txt" in out,
             "diff %s: a file's escape sequence is not sent to the terminal (%r)" %
             (pre, out[:300]))
    os.unlink(os.path.join(fx.root, "evil.txt"))


def test_diff_json(fx):
    cp = fx.arb("diff", fx.name, "--json")
    d = json.loads(cp.stdout)
    C.eq(["workspace", "from", "to", "files", "insertions", "deletions"], list(d),
         "diff --json: fields")
    C.eq((fx.name, "base", "view"), (d["workspace"], d["from"], d["to"]), "diff --json: names")
    ns = fx.arb("diff", fx.name, "--name-status").stdout
    want = []
    for ln in ns.splitlines():
        parts = ln.split("\t")
        want.append((parts[0][0], parts[-1], parts[1] if len(parts) == 3 else None))
    got = [(f["status"], f["path"], f["old_path"]) for f in d["files"]]
    C.eq(sorted(want), sorted(got), "diff --json files = --name-status")
    C.ok(any(f["status"] == "R" for f in d["files"]), "diff --json: a rename with old_path")
    stat = fx.arb("diff", fx.name, "--stat").stdout.strip().splitlines()[-1]
    C.ok(("%d insertion" % d["insertions"]) in stat and ("%d deletion" % d["deletions"]) in stat,
         "diff --json totals = --stat's (%r, %r)" % (stat, d))
    C.eq(d["insertions"], sum(f["insertions"] for f in d["files"]), "totals are the sum")
    cp = fx.arb("diff", fx.name, "--json", "--stat", check=False)
    C.eq(2, cp.returncode, "--json with --stat is a usage error")
    cp = fx.arb("diff", fx.name, "base", "1", "--json", "--", "README")
    d = json.loads(cp.stdout)
    C.eq(["README"], [f["path"] for f in d["files"]], "diff --json FROM TO -- PATH")


def test_restore(fx):
    view = fx.root
    before = fslib.snapshot(view)
    for paths, shown in ((["never-was"], "never-was"), (["no/such/dir/f"], "no/such/dir/f"),
                         (["README", "never-was"], "never-was")):
        cp = fx.arb("restore", fx.name, *paths, "--at", "1", check=False)
        C.eq(1, cp.returncode, "restore %s: exit 1" % paths)
        lines = cp.stderr.strip().splitlines()
        C.eq(1, len(lines), "restore %s: one line (%r)" % (paths, cp.stderr))
        C.ok("'%s'" % shown in cp.stderr and "checkpoint 1" in cp.stderr,
             "restore %s: names the path and the checkpoint (%r)" % (paths, cp.stderr))
        C.ok(not fslib.diff_snapshots(before, fslib.snapshot(view)),
             "restore %s: nothing changed" % paths)
    C.ok(not os.path.lexists(os.path.join(view, "no")), "no directory made for it")
    cp = fx.arb("restore", fx.name, "never-was", "--at", "base", check=False)
    C.ok(cp.returncode == 1 and "'never-was'" in cp.stderr and "checkpoint base" in cp.stderr,
         "restore --at base of a path that never existed (%r)" % cp.stderr)
    # Controls: a path of the checkpoint comes back; one only in the view goes.
    with open(os.path.join(view, "only-now"), "w") as f:
        f.write("x\n")
    cp = fx.arb("restore", fx.name, "README", "only-now", "--at", "1", "--json")
    r = json.loads(cp.stdout)
    C.eq({"workspace": fx.name, "from": "1", "paths": ["README", "only-now"]}, r,
         "restore --json")
    C.ok(not os.path.lexists(os.path.join(view, "only-now")), "control: a path only in the view goes")
    with open(os.path.join(view, "README")) as f:
        C.eq("changed\n", f.read(), "control: README as at checkpoint 1")
    txt = fx.arb("restore", fx.name, "README", "--at", "1").stdout
    C.ok("restored 1 path of %s from 1" % fx.name in txt, "restore text (%r)" % txt)


def test_apply(fx):
    d = json.loads(fx.arb("diff", fx.name, "--json").stdout)
    cp = fx.arb("apply", fx.name, "--json")
    a = json.loads(cp.stdout)
    C.eq(["workspace", "files"], list(a), "apply --json: fields")
    C.eq(len(d["files"]), a["files"], "apply --json: the paths the diff lists")
    st = fslib.git(fx.repo, "status", "--porcelain").stdout
    C.ok("README" in st, "apply wrote the origin's working tree (%r)" % st)
    fslib.git(fx.repo, "checkout", "--", ".")
    fslib.git(fx.repo, "clean", "-fdq")


def test_explain(fx):
    home = os.path.join(fx.tmp, "emptyhome")
    os.makedirs(home, exist_ok=True)
    env = {"HOME": home, "PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "",
           "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude")}
    ws = os.path.join(fx.repo, ".git", "arborinth", "workspaces", "later")
    cp = fslib.run(ARB, "--workdir", fx.repo, "claude", "later", "--explain", env=env,
                   check=False)
    C.eq(0, cp.returncode, "--explain without client, credential, workspace (%s)" % cp.stderr)
    out = cp.stdout
    C.ok("client: missing: " in out and "not on PATH" in out, "says the client is missing")
    C.ok("credential: missing: " in out and "claude auth login" in out,
         "says the credential is missing, with the client's login command (%r)" % out[:600])
    C.ok("'later' does not exist yet: a launch creates it at HEAD" in out,
         "says what would be created")
    C.ok("== mounts by destination" in out and "workspaces/later/workdir" in out,
         "still shows the box")
    C.ok(not os.path.exists(ws), "--explain created nothing")
    cp = fslib.run(ARB, "--workdir", fx.repo, "claude", "later", "--explain", "--json", env=env,
                   check=False)
    C.eq(0, cp.returncode, "--explain --json (%s)" % cp.stderr)
    j = json.loads(cp.stdout)
    C.eq(["command", "workspace", "notes", "box"], list(j), "--explain --json fields")
    C.eq(("claude", "later"), (j["command"], j["workspace"]), "--explain --json names")
    notes = {n["about"]: n for n in j["notes"]}
    C.ok(notes.get("client", {}).get("missing") and notes.get("credential", {}).get("missing"),
         "--explain --json: client and credential missing (%r)" % j["notes"])
    C.ok(notes.get("workspace", {}).get("missing") is False and
         "does not exist yet" in notes["workspace"]["text"], "--explain --json: workspace note")
    for n in j["notes"]:
        C.ok(n["text"] in out, "--explain --json note is the text's (%r)" % n["text"])
    C.ok(j["box"].startswith("== inputs ==") and out.index("== inputs ==") > 0 and
         "workspaces/later/workdir" in j["box"] and "== mounts by destination" in j["box"],
         "--explain --json box is the text's box")
    cp = fslib.run(ARB, "--workdir", fx.repo, "claude", "later", "--json", env=env, check=False)
    C.eq(2, cp.returncode, "--json without --explain: usage error")
    C.ok(not os.path.exists(ws), "nothing created")
    # Control: with a key, a client and the workspace, nothing is missing.
    cp = fslib.run(ARB, "--workdir", fx.repo, "claude", fx.name, "--explain", "--json",
                   "--client", "/bin/true", env=dict(env, ANTHROPIC_API_KEY="k"), check=False)
    j = json.loads(cp.stdout)
    C.ok(not any(n["missing"] for n in j["notes"]) and
         [n["about"] for n in j["notes"]] == ["credential"], "control: nothing missing (%r)" %
         j["notes"])


FAKE_CLAUDE = """#!/bin/sh
mkdir -p "$CLAUDE_CONFIG_DIR/projects/-work"
printf '{}\\n' > "$CLAUDE_CONFIG_DIR/projects/-work/$SESSION_NAME.jsonl"
echo "Resume this session with: claude --resume $SESSION_NAME"
"""


def test_resume_hint(fx):
    """After an interactive run, the launcher names its own command to resume the session
    (the client's hint would run it outside the box). Controls: not a terminal, no hint; a
    session file whose name is not a UUID, no hint."""
    client = os.path.join(fx.tmp, "fake-claude")
    with open(client, "w") as f:
        f.write(FAKE_CLAUDE)
    os.chmod(client, 0o755)
    uuid = "0123abcd-4567-89ef-0123-456789abcdef"
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        up = "http://127.0.0.1:%d" % srv.getsockname()[1]
        args = [ARB, "--workdir", fx.repo, "claude", fx.name, "--client", client, "--upstream",
                up]
        env = {"ANTHROPIC_API_KEY": "k", "SESSION_NAME": uuid, "https_proxy": None,
               "HTTPS_PROXY": None, "http_proxy": None, "all_proxy": None}
        rc, out = on_pty(args + ["--env", "SESSION_NAME=" + uuid], env, stdin_tty=True)
        C.eq(0, rc, "fake claude on a terminal (%r)" % out[-400:])
        want = "arborinth: resume this session in its box: arborinth --workdir %s claude %s " \
               "-- --resume %s" % (fx.repo, fx.name, uuid)
        C.ok(want in out, "the hint names the launcher's command (%r)" % out[-400:])
        cp = fslib.run(*args, "--env", "SESSION_NAME=" + uuid,
                       env={k: v for k, v in env.items() if v})
        C.ok(cp.returncode == 0 and "resume this session" not in cp.stderr,
             "control: not a terminal, no hint (%r)" % cp.stderr)
        rc, out = on_pty(args + ["--env", "SESSION_NAME=not-a-uuid"], env, stdin_tty=True)
        C.ok(rc == 0 and "resume this session" not in out,
             "control: a name that is not a UUID gives no hint (%r)" % out[-300:])


def run_all(fx):
    view = fx.root
    with open(os.path.join(view, "README"), "w") as f:
        f.write("changed\n")
    fx.arb("checkpoint", fx.name)
    os.rename(os.path.join(view, "src/lib/a.txt"), os.path.join(view, "src/lib/a2.txt"))
    with open(os.path.join(view, "new.txt"), "w") as f:
        f.write("one\ntwo\n")
    os.unlink(os.path.join(view, "src/lib/b.txt"))
    test_pager(fx)
    test_diff_json(fx)
    test_restore(fx)
    test_apply(fx)
    test_explain(fx)
    test_resume_hint(fx)


def as_user():
    """The same checks as an ordinary user (root only): 0 ran and passed, 1 failed, None
    could not run."""
    user = "arbtest"
    if not shutil.which("runuser") or not os.path.exists("/dev/fuse"):
        return None
    if subprocess.run(["id", user], capture_output=True).returncode != 0 and \
            subprocess.run(["useradd", "-m", user], capture_output=True).returncode != 0:
        return None
    fm = shutil.which("fusermount3")
    if not fm or not os.stat(fm).st_mode & 0o4000:
        return None
    os.chmod("/dev/fuse", 0o666)
    top = fslib.run("mktemp", "-d").stdout.strip()
    os.chmod(top, 0o755)
    try:
        build = os.path.dirname(ARB)
        for name in ("arborinth", "arborinth_proxy", "arborinth_box_init", "arborinth_fs"):
            if os.path.exists(os.path.join(build, name)):
                shutil.copy2(os.path.join(build, name), top)
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("cli_interface.py", "fslib.py", "../lib/arbtest.py"):
            shutil.copy2(os.path.join(here, name), top)
        subprocess.run(["chown", "-R", user, top], check=True)
        cp = subprocess.run(["runuser", "-u", user, "--", "env", "HOME=/home/" + user,
                             "TMPDIR=" + top, "ARB=" + os.path.join(top, "arborinth"),
                             "ARB_AS_USER=1", "python3", os.path.join(top, "cli_interface.py")],
                            capture_output=True, text=True, timeout=300)
        print(cp.stdout, end="")
        print(cp.stderr, end="", file=sys.stderr)
        return 0 if cp.returncode == 0 else 1
    finally:
        subprocess.run(["rm", "-rf", top])


def main():
    fx = fslib.Fixture()
    try:
        run_all(fx)
    finally:
        fx.cleanup()
    if os.getuid() == 0 and not os.environ.get("ARB_AS_USER"):
        r = as_user()
        if r is None:
            print("note: the ordinary-user run could not be set up here")
        else:
            C.eq(0, r, "the same checks as an ordinary user")
    C.finish()


if __name__ == "__main__":
    main()
