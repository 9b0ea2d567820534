#!/usr/bin/env python3
"""OpenCode on Vertex AI (label e2e): `arborinth opencode NAME --vertex` with the real OpenCode
from npm (opencode-ai, or ARB_NPM_PREFIX), its bundled google-vertex-anthropic provider, and
the fakes of Google's token endpoint and Vertex (e2e_fake_google.py).

`opencode run` completes a prompt through the box (streamRawPredict at the project and region
given on the host); every Vertex call carried the token the host minted from its ADC; the
ADC's secrets and the minted token are nowhere in the box (its environment, /proc, home, tmp,
cache, view) or the output (control: the same dump shows the box's OpenCode config with the
placeholder); the placeholder is useless outside (the fake refuses it; control: it takes the
minted token); a bearer other than the placeholder, and the token refresh URL the config
names, are refused by the proxy and audited (control: OpenCode's calls with the placeholder
pass); --net works through the host's loopback
with the placeholder in a file; bad input (no project, no region, an unknown ADC type, another
provider or model, an OpenCode binary without the provider) is one line before any box.
As root, the main run is repeated as an ordinary user."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, install_clients, need_box, search_files  # noqa: E402

need_box()
C = Checks()
REPLY = "ARBORINTH-VERTEX-OPENCODE-1618"
PROJECT, REGION = "proj-oc", "us-east5"
SECRET = "CLIENT-SECRET-" + os.urandom(6).hex()
RT = "1//REFRESH-" + os.urandom(8).hex()
VPATH = "/v1/projects/%s/locations/%s/publishers/anthropic/models/" % (PROJECT, REGION)
PROMPT = ["run", "Say the magic words."]


def start_google(E):
    log = os.path.join(E.t, "google.log")
    p = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "e2e_fake_google.py"), "--log", log, "--reply", REPLY, "--client-secret",
        SECRET, "--refresh-token", RT], stdout=subprocess.PIPE, text=True)
    E.procs.append(p)
    return "http://127.0.0.1:%d" % int(p.stdout.readline()), log


def entries(log):
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def vertex_env(adc, **more):
    e = {"GOOGLE_APPLICATION_CREDENTIALS": adc, "GOOGLE_CLOUD_PROJECT": PROJECT,
         "CLOUD_ML_REGION": REGION}
    e.update(more)
    return {k: v for k, v in e.items() if v is not None}


def post(url, bearer):
    """A rawPredict straight at the fake Vertex (outside any box): the HTTP status."""
    req = urllib.request.Request(url + VPATH + "m:rawPredict", method="POST", data=json.dumps(
        {"anthropic_version": "vertex-2023-10-16", "max_tokens": 5,
         "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"Authorization": "Bearer " + bearer, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def wrapper(E, prefix, real):
    """A --client that dumps what the box holds, tries a stolen bearer at the relay, then runs
    the real OpenCode (inside the npm tree, so the launcher binds it with the client)."""
    path = os.path.join(prefix, "node_modules", ".bin", "arb-vxoc-wrap-%d" % os.getpid())
    body = ('{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":'
            '[{"role":"user","content":"hi"}]}')
    with open(path, "w") as f:
        f.write("""#!/bin/sh
echo DUMP-BEGIN
env
cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'
ls -la "$HOME" "$HOME/.config" 2>&1
cat "$HOME/.config/gcloud/application_default_credentials.json" 2>&1
echo DUMP-END
curl -sS -o /dev/null -w "stolen-bearer %%{http_code}\\n" -H "authorization: Bearer ya29.stolen" \
  -H "content-type: application/json" -d '%s' "http://127.0.0.1:8717%sm:rawPredict"
curl -sS -o /dev/null -w "refresh-path %%{http_code}\n" -d grant_type=refresh_token \
  "http://127.0.0.1:8717/v1/arborinth-no-google-token-refresh"
exec %s "$@"
""" % (body, VPATH, real))
    os.chmod(path, 0o755)
    return path


def check_leaks(E, name, cp, log, what):
    minted = [e["minted"] for e in entries(log) if "minted" in e]
    roots = [os.path.join(E.ws(name), d) for d in ("home", "tmp", "cache", "layer")]
    for label, s in (("client secret", SECRET), ("refresh token", RT)) + tuple(
            ("minted token %s" % m[:14], m) for m in minted):
        C.ok(s not in cp.stdout and s not in cp.stderr, what + ": no %s in the output" % label)
        C.eq([], search_files(roots, s), what + ": no file the box could write holds the " +
             label)
    C.ok(search_files([os.path.join(E.ws(name), "home")], REPLY),
         what + ": control: the same search finds the reply in OpenCode's session files")


def check_calls(E, cp, log, n, what):
    C.eq(0, cp.returncode, what + ": exit status (%r)" % cp.stderr[-2000:])
    C.ok(REPLY in cp.stdout, what + ": prints the reply (%r)" % cp.stdout[-600:])
    new = entries(log)[n:]
    minted = [e["minted"] for e in entries(log) if "minted" in e]
    calls = [e for e in new if e.get("path", "").endswith(("Predict", ":predict"))]
    C.ok(calls and all(c["path"].startswith(VPATH) and c["path"].endswith(":streamRawPredict")
                       for c in calls),
         what + ": streamRawPredict at the host's project and region (%r)" %
         [c.get("path") for c in new])
    C.ok(minted and all(c["headers"].get("authorization") == "Bearer " + minted[-1]
                        for c in calls),
         what + ": every Vertex call carried the host-minted token")
    C.eq([], [e for e in new if e.get("path") == "/token" and "placeholder" in json.dumps(e)],
         what + ": the token endpoint saw nothing of the box")
    return calls


def main_run(E, url, log, adc, prefix, real):
    wrap = wrapper(E, prefix, real)
    n = len(entries(log))
    cp = E.arb("opencode", "ocv", "--vertex", "--upstream", url, "--client", wrap, "--",
               *PROMPT, env=vertex_env(adc), timeout=300)
    check_calls(E, cp, log, n, "opencode --vertex")
    dump = cp.stdout.split("DUMP-BEGIN", 1)[-1].split("DUMP-END", 1)[0]
    m = re.search(r'"access_token":"([^"]+)"', dump)
    C.ok("OPENCODE_CONFIG_CONTENT=" in dump and m and "google-vertex-anthropic" in dump,
         "opencode --vertex: control: the dump shows the box's config with its placeholder")
    C.ok("GOOGLE_APPLICATION_CREDENTIALS" not in dump and adc not in dump,
         "opencode --vertex: no ADC variable or path in the box")
    check_leaks(E, "ocv", cp, log, "opencode --vertex")
    ph = m.group(1) if m else "none"
    minted = [e["minted"] for e in entries(log) if "minted" in e]
    C.eq(401, post(url, ph), "the placeholder is useless outside: the fake Vertex refuses it")
    C.eq(200, post(url, minted[-1]), "control: the fake Vertex takes the minted token")
    C.ok("stolen-bearer 401" in cp.stdout,
         "a bearer other than the placeholder is refused at the relay (%r)" %
         re.findall(r"stolen-bearer \d+", cp.stdout))
    C.ok("refresh-path 403" in cp.stdout,
         "the token refresh URL the box's config names is refused at the relay (%r)" %
         re.findall(r"refresh-path \d+", cp.stdout))
    au = E.arb("audit", "ocv", "--kind", "net")
    C.ok(re.search(r"POST /v1/arborinth-no-google-token-refresh +403", au.stdout),
         "the refused path is audited")
    C.ok("does not hold this box's placeholder" in au.stdout and "401" in au.stdout,
         "the refused bearer is audited (%r)" % au.stdout[-600:])
    C.ok(re.search(r"streamRawPredict.*200|200.*streamRawPredict", au.stdout),
         "control: the audit shows OpenCode's own calls passing")
    C.ok(os.path.exists(os.path.join(E.ws("ocv"), "home")), "the workspace has its home")
    os.unlink(wrap)


def net_run(E, url, log, adc):
    """--net: the proxy on the host's loopback, the placeholder in the box's key file
    ({file:...} in OpenCode's config); the real binary (the launcher checks it bundles the
    provider)."""
    n = len(entries(log))
    cp = E.arb("opencode", "ocn", "--vertex", "--net", "--upstream", url, "--", *PROMPT,
               env=vertex_env(adc), timeout=300)
    check_calls(E, cp, log, n, "opencode --vertex --net")
    check_leaks(E, "ocn", cp, log, "opencode --vertex --net")
    ex = E.arb("opencode", "ocn", "--vertex", "--net", "--upstream", url, "--explain",
               env=vertex_env(adc))
    C.ok(ex.returncode == 0 and '"access_token":"{file:' in ex.stdout and
         "placeholder-" not in ex.stdout,
         "opencode --vertex --net: the box's config reads the placeholder from a file (%r)" %
         ex.stdout[-400:])


def bad_runs(E, url, adc):
    bad = E.write("adc/external.json", json.dumps({"type": "external_account",
                                                   "token_url": url + "/token"}), 0o600)
    for what, env, args, code, pat in (
            ("no project", vertex_env(adc, GOOGLE_CLOUD_PROJECT=None), [], 2,
             "no Google Cloud project"),
            ("no region", vertex_env(adc, CLOUD_ML_REGION=None), [], 2, "no region"),
            ("another provider", vertex_env(adc), ["--provider", "anthropic"], 2,
             "is not google-vertex-anthropic"),
            ("another provider's model", vertex_env(adc), ["--model", "openai/gpt-5"], 2,
             "is not of provider google-vertex-anthropic"),
            ("unknown ADC type", vertex_env(bad), [], 1, "unknown ADC type 'external_account'"),
            ("missing ADC", vertex_env(os.path.join(E.t, "adc", "missing.json")), [], 1,
             "missing.json")):
        cp = E.arb("opencode", "bad", "--vertex", "--upstream", url, *args, "--", "run", "x",
                   env=env, timeout=120)
        C.one_line_error(cp, code, pat, "opencode --vertex, " + what)
    # An OpenCode binary that does not bundle the provider (any ELF file without it).
    old = os.path.join(E.t, "oldoc", "opencode")
    os.makedirs(os.path.dirname(old))
    shutil.copy("/bin/true", old)
    cp = E.arb("opencode", "bad", "--vertex", "--client", old, "--", "run", "x",
               env=vertex_env(adc), timeout=120)
    C.one_line_error(cp, 1, "does not bundle the @ai-sdk/google-vertex/anthropic provider",
                     "opencode --vertex, a client without the provider")
    C.ok(not os.path.exists(E.ws("bad")), "bad input: no workspace was made")
    cp = E.arb("codex", "bad", "--vertex", env=vertex_env(adc))
    C.one_line_error(cp, 2, "--vertex is for claude and opencode", "codex --vertex")


def user_run(E, url, log, adc, prefix):
    """The main run again as an ordinary user (fs_user.sh's way): their own ADC file,
    repository, arborinth and npm tree."""
    if os.getuid() != 0 or not shutil.which("runuser") or \
            not os.path.exists("/usr/bin/fusermount3") or \
            not os.stat("/usr/bin/fusermount3").st_mode & 0o4000:
        print("as an ordinary user: skipped (not root, or no setuid fusermount3)")
        return
    user = "arbtest"
    if subprocess.run(["id", user], capture_output=True).returncode != 0 and \
            subprocess.run(["useradd", "-m", user], capture_output=True).returncode != 0:
        print("as an ordinary user: skipped (cannot create %s)" % user)
        return
    os.chmod("/dev/fuse", 0o666)
    os.chmod(E.t, 0o755)
    u = os.path.join(E.t, "user")
    os.makedirs(u)
    build = os.path.dirname(os.path.dirname(os.environ["ARB"]))
    ubuild = os.path.join(u, "build")
    # The build tree may sit where the user cannot reach: a copy of what runs.
    shutil.copytree(build, ubuild, symlinks=True, ignore=shutil.ignore_patterns(
        "*.o", "*.a", "CMakeFiles", "tests", "docs"))
    shutil.copytree(os.path.join(prefix, "node_modules"), os.path.join(u, "npm", "node_modules"),
                    symlinks=True)
    uadc = os.path.join(u, "adc.json")
    shutil.copy(adc, uadc)
    uhome = os.path.join(u, "home")
    os.makedirs(uhome)
    repo = os.path.join(u, "repo")
    subprocess.run(["sh", "-c", "git init -q -b main %s && cd %s && echo hi > f && git add f && "
                    "git -c user.email=a@b -c user.name=a commit -qm i" % (repo, repo)],
                   check=True, capture_output=True)
    subprocess.run(["chown", "-R", user, u], check=True)
    env = ["env", "-i", "HOME=" + uhome, "TMPDIR=" + u, "PATH=%s:/usr/bin:/bin" %
           os.path.join(u, "npm", "node_modules", ".bin")] + [
        "%s=%s" % kv for kv in vertex_env(uadc).items()] + [
        "%s=%s" % (k, v) for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")]
    arb = os.path.join(ubuild, os.path.relpath(os.environ["ARB"], build))
    n = len(entries(log))
    cp = subprocess.run(["runuser", "-u", user, "--"] + env + [
        arb, "opencode", "ocu", "--vertex", "--upstream", url, "--", *PROMPT],
        capture_output=True, text=True, cwd=repo, timeout=300)
    C.eq(0, cp.returncode, "as %s: opencode --vertex exit status (%r)" % (user, cp.stderr[-1500:]))
    C.ok(REPLY in cp.stdout, "as %s: prints the reply" % user)
    new = entries(log)[n:]
    minted = [e["minted"] for e in new if "minted" in e]
    calls = [e for e in new if e.get("path", "").endswith("Predict")]
    C.ok(minted and calls and all(c["headers"].get("authorization") == "Bearer " + minted[-1]
                                  for c in calls),
         "as %s: the Vertex calls carried the token minted from their ADC" % user)
    ws = os.path.join(repo, ".git", "arborinth", "workspaces", "ocu")
    C.eq([], search_files([ws], minted[-1] if minted else "ya29.") + search_files([ws], SECRET),
         "as %s: no file of the workspace holds the token or the ADC's secret" % user)


def main():
    with Env("e2e-vxoc") as E:
        url, log = start_google(E)
        adc = E.write("adc/authorized_user.json", json.dumps({
            "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
            "client_secret": SECRET, "refresh_token": RT, "token_uri": url + "/token"}), 0o600)
        prefix = install_clients(E, C, ["opencode-ai"])
        E.path = os.path.join(prefix, "node_modules", ".bin") + ":" + E.path
        real = os.path.realpath(shutil.which("opencode", path=E.path) or "opencode")
        bad_runs(E, url, adc)
        main_run(E, url, log, adc, prefix, real)
        net_run(E, url, log, adc)
        user_run(E, url, log, adc, prefix)
    C.finish()


if __name__ == "__main__":
    main()
