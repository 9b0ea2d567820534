#!/usr/bin/env python3
"""Vertex tokens shared by the boxes of one user (label proxy): every box has its own
arborinth_proxy, and they mint one token per credential between them (proxy/token_cache.c),
against the local fake of Google's token endpoint and Vertex (e2e_fake_google.py).

- 8 boxes started together on one ADC file: one mint; their tokens then expire (a short
  expires_in) and a burst from all 8 mints once more, and every call carries that token;
- a Vertex that answers 401: a young token is kept (control: no mint for one box's 401s),
  and one aged past 10 minutes in the shared file is minted again once for 4 boxes;
- the ADC file rewritten with another account: the next box mints from it (never the old
  account's token); control: the box after it takes that new token without a mint;
- a truncated cache file: ignored, one mint, the file whole again;
- the box sees nothing of the cache folder, in ~/.local/state and in $XDG_RUNTIME_DIR,
  even through a --mount of the folder above it (masked, nothing written through it);
  control: the same mount shows a file beside it, and a write beside it reaches the host.

Run as root, then again as an ordinary user (created with useradd)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, need_box  # noqa: E402

need_box()
C = Checks()
HERE = os.path.dirname(os.path.abspath(__file__))
REPLY = "ARBORINTH-VERTEX-SHARE-REPLY"
PROJECT, REGION = "proj-1", "us-east5"
SECRET = "CLIENT-SECRET-" + os.urandom(6).hex()
RT1 = "1//REFRESH-ONE-" + os.urandom(8).hex()
RT2 = "1//REFRESH-TWO-" + os.urandom(8).hex()
PATH = "/projects/%s/locations/%s/publishers/anthropic/models/claude-x" % (PROJECT, REGION)
W = 20  # seconds a token is fresh for (expires_in = 300 s margin + W)
CURL = ('curl -sS -w " %{http_code}" -H "content-type: application/json" -d '
        '\'{"anthropic_version":"vertex-2023-10-16","max_tokens":10,"messages":'
        '[{"role":"user","content":"hi"}]}\' "$ANTHROPIC_VERTEX_BASE_URL' + PATH +
        ':rawPredict"; echo; ')


def codes(out, code):
    return len(re.findall(r"(?m) %d$" % code, out))


def start_google(E, expires_in, *extra):
    log = os.path.join(E.t, "google-%d%s.log" % (expires_in, "".join(extra)))
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "e2e_fake_google.py"), "--log",
                          log, "--reply", REPLY, "--client-secret", SECRET, "--refresh-token",
                          RT1, "--refresh-token", RT2, "--expires-in", str(expires_in), *extra],
                         stdout=subprocess.PIPE, text=True)
    E.procs.append(p)
    return "http://127.0.0.1:%d" % int(p.stdout.readline()), log


def entries(log):
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def mints(log, after=0.0):
    return [e for e in entries(log) if "minted" in e and e["time"] > after]


def calls(log, after=0.0):
    return [e for e in entries(log) if e.get("path", "").endswith(":rawPredict") and
            e["time"] > after]


def adc(E, name, url, rt):
    return E.write("adc/%s.json" % name, json.dumps({
        "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
        "client_secret": SECRET, "refresh_token": rt, "token_uri": url + "/token"}), 0o600)


def box_args(url, extra=(), ws="w"):
    return ["shell", ws, "--backend", "vertex=%s,project=%s,region=%s" % (url, PROJECT, REGION),
            *extra, "--", "sh", "-c"]


def env_of(E, adc_file, runtime=None):
    e = E.env({"GOOGLE_APPLICATION_CREDENTIALS": adc_file})
    if runtime:
        e["XDG_RUNTIME_DIR"] = runtime
    return e


def shell(E, url, adc_file, script, extra=(), runtime=None):
    return subprocess.run([os.environ["ARB"]] + box_args(url, extra) + [script],
                          capture_output=True, text=True, env=env_of(E, adc_file, runtime),
                          cwd=E.repo, timeout=120, stdin=subprocess.DEVNULL)


def boxes(E, url, adc_file, n, script, go):
    """n boxes (each in a workspace of its own, with its own arborinth_proxy), started
    together; each prints "ready" once its proxy holds a token, then waits for the host to
    make `go` in its /tmp."""
    gate = "echo ready; while [ ! -e /tmp/%s ]; do sleep 0.05; done; " % go
    ps = [subprocess.Popen([os.environ["ARB"]] + box_args(url, ws="s%d" % i) + [gate + script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env_of(E, adc_file), cwd=E.repo, stdin=subprocess.DEVNULL)
          for i in range(n)]
    E.procs.extend(ps)
    ready = [p.stdout.readline().strip() for p in ps]
    C.eq(["ready"] * n, ready, "%d boxes started (%r)" % (n, [
        p.stderr.read()[-300:] for p in ps if p.poll() is not None]))
    return ps


def release(E, ps, go):
    t0 = time.time()
    for i in range(len(ps)):
        open(os.path.join(E.ws("s%d" % i), "tmp", go), "w").close()
    outs = [p.communicate(timeout=120) for p in ps]
    C.ok(all(p.returncode == 0 for p in ps), "the boxes ran (%r)" % [
        o[1][-300:] for o, p in zip(outs, ps) if p.returncode])
    return t0, [o[0] for o in outs]


def cache_dir(E, runtime=None):
    if runtime:
        return os.path.join(runtime, "arborinth", "tokens")
    return os.path.join(E.home, ".local", "state", "arborinth", "tokens")


def cache_files(E, runtime=None):
    d = cache_dir(E, runtime)
    return sorted(f for f in os.listdir(d) if f.startswith("vertex-")) if os.path.isdir(d) else []


def shared(E, url, log):
    """8 boxes, one mint; the token expires, a burst from the 8 mints once."""
    a = adc(E, "shared", url, RT1)
    ps = boxes(E, url, a, 8, CURL, "go1")
    m = mints(log)
    C.eq(1, len(m), "8 boxes on one ADC file: one mint between their 8 proxies (%r)" % m)
    st = os.stat(os.path.join(cache_dir(E), cache_files(E)[0]))
    C.ok(st.st_mode & 0o777 == 0o600 and os.stat(cache_dir(E)).st_mode & 0o777 == 0o700,
         "the cache file is 0600 in a 0700 folder (%o)" % st.st_mode)
    time.sleep(max(0.0, m[0]["time"] + W + 1 - time.time()) if m else 0)
    t0, outs = release(E, ps, "go1")
    C.eq(8, sum(codes(o, 200) for o in outs), "8 calls answered (%r)" % outs)
    after = mints(log, t0)
    C.eq(1, len(after), "the token expired: a burst from 8 boxes mints once (%r)" % after)
    bearers = [c["headers"].get("authorization") for c in calls(log, t0)]
    C.ok(len(bearers) == 8 and after and set(bearers) == {"Bearer " + after[0]["minted"]},
         "all 8 calls carried the new token (%r)" % bearers)


def age_entry(path, ms):
    with open(path) as f:
        j = json.load(f)
    j["minted_ms"] -= ms
    tmp = path + ".test"
    with open(tmp, "w") as f:
        json.dump(j, f)
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)
    return j["token"]


def refused(E):
    """A Vertex that refuses every token: 4 boxes mint again once, and only once the shared
    entry is 10 minutes old."""
    url, log = start_google(E, 3600, "--refuse-vertex")
    a = adc(E, "refused", url, RT1)
    before = set(cache_files(E))
    cp = shell(E, url, a, CURL + CURL)
    C.eq(2, codes(cp.stdout, 401), "refused: the box got Vertex's 401s (%r)" % cp.stdout)
    C.eq(1, len(mints(log)), "refused: control: a young token is not minted again for 401s")
    new = sorted(set(cache_files(E)) - before)
    C.eq(1, len(new), "refused: the ADC file has its own cache file")
    old = age_entry(os.path.join(cache_dir(E), new[0]), 11 * 60 * 1000)
    ps = boxes(E, url, a, 4, CURL + CURL, "go2")
    t0, outs = release(E, ps, "go2")
    C.eq(8, sum(codes(o, 401) for o in outs), "refused: 8 calls refused (%r)" % outs)
    after = mints(log, t0)
    C.eq(1, len(after), "refused: a token 10 min old minted again once for 4 boxes (%r)" %
         after)
    bearers = set(c["headers"].get("authorization") for c in calls(log, t0))
    C.ok(after and bearers == {"Bearer " + old, "Bearer " + after[0]["minted"]},
         "refused: the boxes sent the old token, then the one new one (%r)" % bearers)


def switched(E, url, log):
    """The user logs in with another account: the ADC file changes, its cache with it."""
    a = adc(E, "switch", url, RT1)
    t0 = time.time()
    cp = shell(E, url, a, CURL)
    first = mints(log, t0)
    C.ok(codes(cp.stdout, 200) == 1 and len(first) == 1 and first[0]["sub"] == RT1,
         "switch: the first account's token (%r)" % first)
    adc(E, "switch", url, RT2)
    t1 = time.time()
    cp = shell(E, url, a, CURL)
    second = mints(log, t1)
    bearers = [c["headers"].get("authorization") for c in calls(log, t1)]
    C.ok(codes(cp.stdout, 200) == 1 and len(second) == 1 and second[0]["sub"] == RT2,
         "switch: the rewritten ADC file mints from the new account (%r)" % second)
    C.ok(second and bearers == ["Bearer " + second[0]["minted"]] and
         "Bearer " + first[0]["minted"] not in bearers,
         "switch: the box never sent the old account's token (%r)" % bearers)
    t2 = time.time()
    cp = shell(E, url, a, CURL)
    bearers = [c["headers"].get("authorization") for c in calls(log, t2)]
    C.ok(codes(cp.stdout, 200) == 1 and not mints(log, t2) and second and
         bearers == ["Bearer " + second[0]["minted"]],
         "switch: control: the next box takes the new account's token without a mint")
    return a


def corrupt(E, url, log, a):
    path = max((os.path.join(cache_dir(E), f) for f in cache_files(E)), key=os.path.getmtime)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text[:len(text) // 2])
    t0 = time.time()
    cp = shell(E, url, a, CURL)
    m = mints(log, t0)
    C.ok(codes(cp.stdout, 200) == 1 and len(m) == 1, "corrupt: a truncated cache file is minted over "
         "(%r %r)" % (cp.stdout, cp.stderr[-300:]))
    with open(path) as f:
        C.ok(m and json.load(f)["token"] == m[0]["minted"], "corrupt: the file is whole again")


def walls(E, url, log, a, runtime=None):
    """The cache folder through a --mount of the folder above it: masked; control: a file
    beside it shows, and a write beside it reaches the host."""
    where = "runtime" if runtime else "state"
    cp = shell(E, url, a, CURL, runtime=runtime)
    C.ok(codes(cp.stdout, 200) == 1, "%s: the box ran (%r)" % (where, cp.stderr[-300:]))
    d = cache_dir(E, runtime)
    files = cache_files(E, runtime)
    C.ok(files, "%s: control: the host holds the cache in %s" % (where, d))
    top = os.path.dirname(os.path.dirname(d))  # .../state or $XDG_RUNTIME_DIR
    with open(os.path.join(top, "beside"), "w") as f:
        f.write("BESIDE-VISIBLE\n")
    tok = json.load(open(os.path.join(d, files[0])))["token"] if files else "ya29.none"
    probe = ('ls -a {d}; cat {d}/* 2>&1; cat /mnt/top/arborinth/tokens/* 2>&1; '
             'ls -a /mnt/top/arborinth/tokens; cat /mnt/top/beside; '
             'echo planted > /mnt/top/arborinth/tokens/{f} 2>&1; '
             'ln -s /etc/passwd /mnt/top/arborinth/tokens/link 2>&1; '
             'echo written > /mnt/top/written; echo done').format(d=d, f=files[0] if files
                                                                      else "x")
    cp = shell(E, url, a, probe, ("--mount", "rw:%s:/mnt/top" % top), runtime)
    C.ok("done" in cp.stdout, "%s: the probe ran (%r)" % (where, cp.stderr[-500:]))
    C.ok("BESIDE-VISIBLE" in cp.stdout, "%s: control: the mount shows the file beside" % where)
    C.ok(tok not in cp.stdout and "ya29." not in cp.stdout,
         "%s: the box reads no token, at the host path or through the mount (%r)" %
         (where, cp.stdout[-500:]))
    C.eq(files, cache_files(E, runtime), "%s: nothing planted in the host's cache folder" % where)
    C.ok(not os.path.lexists(os.path.join(d, "link")) and
         json.load(open(os.path.join(d, files[0])))["token"] == tok,
         "%s: no link, the entry intact" % where)
    C.ok(os.path.exists(os.path.join(top, "written")),
         "%s: control: a write beside the folder reaches the host" % where)
    # A box without any backend hides the folder too (its bind files or mounts may show it).
    plain = subprocess.run([os.environ["ARB"], "shell", "w", "--mount", "rw:%s:/mnt/top" % top,
                            "--", "sh", "-c", probe], capture_output=True, text=True,
                           env=env_of(E, a, runtime), cwd=E.repo, timeout=120,
                           stdin=subprocess.DEVNULL)
    C.ok("done" in plain.stdout and "BESIDE-VISIBLE" in plain.stdout,
         "%s: control: the probe ran in a box without a backend (%r)" % (where,
                                                                        plain.stderr[-500:]))
    C.ok(tok not in plain.stdout and "ya29." not in plain.stdout,
         "%s: a box without a backend reads no token either (%r)" % (where, plain.stdout[-500:]))


def main():
    with Env("vx-share") as E:
        for ws in ["w"] + ["s%d" % i for i in range(8)]:
            C.eq(0, E.arb("workspace", "create", ws).returncode, "workspace create " + ws)
        url, log = start_google(E, 300 + W)
        shared(E, url, log)
        refused(E)
        url2, log2 = start_google(E, 3600)
        a = switched(E, url2, log2)
        corrupt(E, url2, log2, a)
        walls(E, url2, log2, a)
        runtime = os.path.join(E.t, "run")
        os.mkdir(runtime, 0o700)
        walls(E, url2, log2, a, runtime)


def as_user():
    """This test again as an ordinary user (root only): the binaries and scripts copied where
    the user can read them."""
    if os.environ.get("ARB_VX_SHARE_NESTED") or os.geteuid() != 0 or \
            not shutil.which("runuser") or os.environ.get("ARB_VX_SHARE_NO_USER"):
        return
    user = "arbvx"
    if subprocess.run(["id", user], capture_output=True).returncode != 0 and \
            subprocess.run(["useradd", "-m", user], capture_output=True).returncode != 0:
        C.ok(False, "useradd %s" % user)
        return
    os.chmod("/dev/fuse", 0o666)
    base = os.environ.get("ARB_JAIL_TMPDIR", "/var/tmp")
    top = subprocess.run(["mktemp", "-d", "-p", base, "arb-vxu.XXXXXX"], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        os.chmod(top, 0o755)
        bindir = os.path.join(top, "bin")
        src = os.path.join(top, "src")
        os.makedirs(bindir)
        os.makedirs(os.path.join(src, "tests", "integration"))
        os.makedirs(os.path.join(src, "tests", "lib"))
        exe = os.path.dirname(os.environ["ARB"])
        for f in ("arborinth", "arborinth_box_init", "arborinth_fs", "arborinth_proxy"):
            if os.path.exists(os.path.join(exe, f)):
                shutil.copy2(os.path.join(exe, f), bindir)
        for f in ("proxy_vertex_share.py", "e2e_lib.py", "e2e_fake_google.py",
                  "e2e_fake_models.py"):
            shutil.copy2(os.path.join(HERE, f), os.path.join(src, "tests", "integration"))
        shutil.copy2(os.path.join(HERE, "..", "lib", "arbtest.py"),
                     os.path.join(src, "tests", "lib"))
        subprocess.run(["chown", "-R", user, top], check=True)
        env = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/" + user,
               "ARB=" + os.path.join(bindir, "arborinth"), "ARB_SRC=" + src,
               "ARB_JAIL_TMPDIR=" + top, "ARB_VX_SHARE_NESTED=1"]
        env += ["%s=%s" % (k, os.environ[k]) for k in ("ASAN_OPTIONS", "LSAN_OPTIONS",
                                                       "UBSAN_OPTIONS") if k in os.environ]
        cp = subprocess.run(["runuser", "-u", user, "--", "env", "-i"] + env +
                            ["python3", os.path.join(src, "tests", "integration",
                                                     "proxy_vertex_share.py")],
                            capture_output=True, text=True, timeout=400)
        C.ok(cp.returncode == 0 and "checks passed" in cp.stdout,
             "as %s: every check held (%s %s)" % (user, cp.stdout[-1500:], cp.stderr[-1500:]))
        print("as %s: %s" % (user, cp.stdout.strip().splitlines()[-1:]), file=sys.stderr)
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
    as_user()
    C.finish()
