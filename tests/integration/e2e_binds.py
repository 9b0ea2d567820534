#!/usr/bin/env python3
"""Bind files, grants and plugins through the CLI (label e2e), in real boxes.

Bind files: ro/rw/tmpfs/path/env and include order seen from inside a box (with controls:
without the file the same probes fail), errors with FILE:LINE:COL, credential paths and
guards refused. Grants: `grant list`, a grant's mounts, PATH and variables in a box (control:
without it the tool is not found), a bind file wins over a grant. Plugins: dispatch with
arguments and exit status, built-ins cannot be overridden, unknown names list built-ins and
plugins, failures are reported with the plugin's name and status."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, need_box  # noqa: E402

need_box()
C = Checks()
PROBE = r'''
import json, os, subprocess, sys
r = {"env": dict(os.environ)}
def w(p):
    try:
        with open(p, "a") as f: f.write("x")
        return True
    except OSError: return False
def rd(p):
    try:
        with open(p) as f: return f.read()
    except OSError as e: return "ERR " + e.__class__.__name__
def run(c):
    try: return subprocess.run(c, capture_output=True, text=True).stdout.strip()
    except OSError as e: return "ERR " + e.__class__.__name__
for k, v in json.loads(sys.argv[1]).items():
    r[k] = eval(v)
print(json.dumps(r))
'''


def probe(E, name, *opts, **exprs):
    cp = E.arb("shell", name, *opts, "--", "/usr/bin/python3", "-c", PROBE, json.dumps(exprs))
    rep = json.loads(cp.stdout) if cp.returncode == 0 and cp.stdout.strip() else None
    return cp, rep


def test_binds(E):
    h = E.home
    E.write("home/tools/bin/mytool", "#!/bin/sh\necho mytool-ran\n", 0o755)
    E.write("home/data/file", "data\n")
    E.write("home/inc/inctool/bin/inctool", "#!/bin/sh\necho inctool-ran\n", 0o755)
    E.write("binds/inc.toml", 'ro = ["~/inc/inctool"]\npath = ["~/inc/inctool/bin"]\n'
            'env = { ORDER = "included", ONLY_INC = "yes" }\n')
    main = E.write("binds/main.toml",
                   '# the project\'s bind file\n'
                   'ro = ["~/tools"]\n'
                   'rw = ["~/data"]\n'
                   'tmpfs = ["~/scratch"]\n'
                   'path = ["~/tools/bin"]\n'
                   'include = ["inc.toml"]\n'
                   '[env]\nORDER = "main"\nMY_VAR = "hello world"\n')
    ex = dict(tool="run(['mytool'])", inctool="run(['inctool'])",
              data=f"rd('{h}/data/file')", write_data=f"w('{h}/data/file')",
              write_tools=f"w('{h}/tools/new')", scratch=f"w('{h}/scratch/f')",
              order="os.environ.get('ORDER')", only_inc="os.environ.get('ONLY_INC')",
              my="os.environ.get('MY_VAR')", path="os.environ['PATH']")
    cp, r = probe(E, "b1", "--binds", main, **ex)
    if not C.eq(0, cp.returncode, "shell --binds (%s)" % cp.stderr):
        return
    C.eq("mytool-ran", r["tool"], "ro dir and its path entry: tool runs")
    C.eq("inctool-ran", r["inctool"], "included file's mount and path")
    C.eq("data\n", r["data"], "rw dir readable")
    C.eq(True, r["write_data"], "rw dir writable")
    C.eq(False, r["write_tools"], "ro dir not writable")
    C.eq(True, r["scratch"], "tmpfs writable")
    C.ok(not os.path.exists(os.path.join(h, "scratch", "f")), "tmpfs is not the host's")
    with open(os.path.join(h, "data", "file")) as f:
        C.eq("data\nx", f.read(), "rw write reached the host")
    C.eq("main", r["order"], "the including file's env wins over the included one")
    C.eq("yes", r["only_inc"], "included env")
    C.eq("hello world", r["my"], "env table")
    C.ok(r["path"].startswith(f"{h}/tools/bin:{h}/inc/inctool/bin:"),
         "PATH: own entries, then the included file's, then the box's (%s)" % r["path"])
    # Controls: without the file, the same probes fail.
    cp, r = probe(E, "b1", **ex)
    C.eq(0, cp.returncode, "control box (%s)" % cp.stderr)
    if r:
        C.ok(r["tool"].startswith("ERR"), "control: no tool without the bind file")
        C.ok(r["data"].startswith("ERR"), "control: ~/data hidden without the bind file")
        C.eq(None, r["my"], "control: no MY_VAR")
    # --explain lists them with their origin.
    cp = E.arb("shell", "b1", "--binds", main, "--explain", "--", "true")
    C.ok(f"--binds {main}:2:7" in cp.stdout, "--explain names FILE:LINE:COL of a mount")
    # Errors: one line, FILE:LINE:COL, exit 2, nothing run.
    bad = E.write("binds/bad.toml", 'ro = ["~/tools"]\n\nrw = ["~/data", 42]\n')
    cp = E.arb("shell", "b1", "--binds", bad, "--", "true")
    C.one_line_error(cp, 2, f"{bad}:3:17: 'rw' takes strings only, found a number or date",
                     "bind file syntax error")
    unc = E.write("binds/unc.toml", 'ro = ["~/tools"]\npath = ["~/data"]\n')
    cp = E.arb("shell", "b1", "--binds", unc, "--", "true")
    C.one_line_error(cp, 2, f"{unc}:2:9: path: {h}/data is not covered", "uncovered path")
    sec = E.write("binds/sec.toml", 'ro = ["~/.ssh"]\n')
    cp = E.arb("shell", "b1", "--binds", sec, "--", "cat", f"{h}/.ssh/id_ed25519")
    C.one_line_error(cp, 2, "would expose host credentials", "credential dir refused")
    C.ok("SECRET" not in cp.stdout, "credential not printed")
    sec2 = E.write("binds/sec2.toml", 'ro = ["~/.claude"]\n')
    cp = E.arb("shell", "b1", "--binds", sec2, "--", "true")
    C.one_line_error(cp, 2, ".claude/.credentials.json", "folder holding credentials refused")
    home = E.write("binds/home.toml", 'rw = ["~"]\n')
    cp = E.arb("shell", "b1", "--binds", home, "--", "true")
    C.eq(2, cp.returncode, "binding all of $HOME refused (%s)" % cp.stderr)
    guard = E.write("binds/guard.toml", f'rw = ["{E.repo}/.git/arborinth"]\n')
    cp = E.arb("shell", "b1", "--binds", guard, "--", "true")
    C.one_line_error(cp, 2, "guard", "mount under a guard refused")
    cyc = E.write("binds/cyc.toml", 'include = ["cyc.toml"]\n')
    cp = E.arb("shell", "b1", "--binds", cyc, "--", "true")
    C.one_line_error(cp, 2, "include cycle", "include cycle")
    cp = E.arb("shell", "b1", "--binds", "/nonexistent.toml", "--", "true")
    C.one_line_error(cp, 2, "/nonexistent.toml: cannot read", "missing bind file")
    cp = E.arb("shell", "b1", "--jail", "none", "--binds", main, "--", "true")
    C.eq(2, cp.returncode, "--binds with --jail none refused")


def test_grants(E):
    h = E.home
    cp = E.arb("grant", "list")
    C.eq(0, cp.returncode, "grant list")
    for g in ("node", "python", "rust", "go"):
        C.ok("\n%s\n" % g in "\n" + cp.stdout, "grant list shows %s" % g)
    C.ok("ro ~/.rustup" in cp.stdout and "env CARGO_TARGET_DIR={cache}/cargo-target" in cp.stdout,
         "grant list shows the entries")
    cp = E.arb("grant", "list", "--json")
    C.ok(cp.returncode == 0 and {g["name"] for g in json.loads(cp.stdout)} >=
         {"node", "python", "rust", "go"}, "grant list --json")
    cp = E.arb("grant", "bogus")
    C.eq(2, cp.returncode, "grant bogus: usage error")
    # A fake rust toolchain in the fake home, not on PATH.
    E.write("home/.cargo/bin/cargo", "#!/bin/sh\necho fake-cargo $CARGO_NET_OFFLINE\n", 0o755)
    E.write("home/.cargo/credentials.toml", '[registry]\ntoken = "SECRET-CARGO"\n', 0o600)
    E.write("home/.rustup/toolchains/stable/lib/x", "x")
    ex = dict(cargo="run(['cargo'])", target="os.environ.get('CARGO_TARGET_DIR')",
              rustup=f"os.path.isdir('{h}/.rustup/toolchains/stable')",
              wr=f"w('{h}/.rustup/x')", cred=f"rd('{h}/.cargo/credentials.toml')")
    cp, r = probe(E, "g1", "--grant", "rust", **ex)
    if C.eq(0, cp.returncode, "shell --grant rust (%s)" % cp.stderr):
        C.eq("fake-cargo true", r["cargo"], "grant: cargo on PATH, offline")
        C.ok(r["target"] and r["target"].endswith("/cargo-target"), "grant: target dir in cache")
        C.eq(True, r["rustup"], "grant: ~/.rustup visible")
        C.eq(False, r["wr"], "grant: ~/.rustup read-only")
        C.ok(r["cred"].startswith("ERR"), "grant: cargo's credentials not visible")
    cp, r = probe(E, "g1", **ex)
    if C.eq(0, cp.returncode, "control box"):
        C.ok(r["cargo"].startswith("ERR"), "control: no cargo without the grant")
        C.eq(False, r["rustup"], "control: no ~/.rustup without the grant")
    over = E.write("binds/over.toml", 'env = { CARGO_NET_OFFLINE = "false" }\n')
    cp, r = probe(E, "g1", "--binds", over, "--grant", "rust", **ex)
    C.ok(r and r["cargo"] == "fake-cargo false", "a bind file wins over a grant")
    cp = E.arb("shell", "g1", "--grant", "cobol", "--", "true")
    C.eq(2, cp.returncode, "unknown grant")
    C.ok("unknown grant 'cobol'" in cp.stderr, "unknown grant message")
    for g in ("node", "python", "go"):
        cp = E.arb("shell", "g1", "--grant", g, "--", "true")
        C.eq(0, cp.returncode, "grant %s on a home without it (%s)" % (g, cp.stderr))


def test_plugins(E):
    pdir = os.path.join(E.t, "plugins")
    E.write("plugins/arborinth-hello", "#!/bin/sh\necho \"hello plugin: $*\"\n", 0o755)
    E.write("plugins/arborinth-fail", "#!/bin/sh\necho failing >&2\nexit 3\n", 0o755)
    E.write("plugins/arborinth-shell", "#!/bin/sh\necho PLUGIN-SHELL\n", 0o755)
    E.write("plugins/arborinth-notexec", "#!/bin/sh\necho no\n", 0o644)
    E.write("plugins/arborinth-killed", "#!/bin/sh\nkill -TERM $$\n", 0o755)
    env = {"PATH": pdir + ":" + E.path}
    cp = E.arb("hello", "a", "b c", env=env)
    C.eq(0, cp.returncode, "plugin runs")
    C.eq("hello plugin: a b c\n", cp.stdout, "plugin gets its arguments")
    cp = E.arb("fail", env=env)
    C.eq(3, cp.returncode, "plugin exit status passed through")
    C.ok("failing" in cp.stderr and "plugin fail" in cp.stderr and "exit status 3" in cp.stderr,
         "plugin failure reported with its name and status (%r)" % cp.stderr)
    cp = E.arb("killed", env=env)
    C.eq(128 + 15, cp.returncode, "plugin killed by a signal")
    C.ok("plugin killed" in cp.stderr and "signal 15" in cp.stderr, "signal reported")
    cp = E.arb("shell", "--help", env=env)
    C.ok(cp.returncode == 0 and "PLUGIN-SHELL" not in cp.stdout and "usage: arborinth shell" in
         cp.stdout, "a plugin cannot override a built-in")
    cp = E.arb("nosuch", env=env)
    C.one_line_error(cp, 2, "unknown command 'nosuch'", "unknown command")
    C.ok("built-in: help, project, workspace, shell" in cp.stderr and "claude" in cp.stderr,
         "unknown command lists built-ins (%r)" % cp.stderr)
    C.ok("plugins on PATH: fail, hello, killed" in cp.stderr, "and the plugins found (%r)"
         % cp.stderr)
    C.ok("notexec" not in cp.stderr, "a file that is not executable is no plugin")
    cp = E.arb("notexec", env=env)
    C.eq(2, cp.returncode, "non-executable plugin not run")
    cp = E.arb("nosuch", env={"PATH": "/usr/bin:/bin"})
    C.ok("plugins on PATH: none" in cp.stderr, "no plugins: says none")


def main():
    with Env("e2e-binds") as E:
        cp = E.arb("workspace", "create", "b1")
        C.eq(0, cp.returncode, "workspace create (%s)" % cp.stderr)
        cp = E.arb("workspace", "create", "g1")
        C.eq(0, cp.returncode, "workspace create g1")
        test_binds(E)
        test_grants(E)
        test_plugins(E)
    C.finish()


if __name__ == "__main__":
    main()
