#!/usr/bin/env python3
"""The vertex backend (label e2e): Google access tokens minted on the host from Application
Default Credentials, against local fakes of the token endpoint, IAM Credentials and Vertex
(e2e_fake_google.py), in real boxes.

Each ADC type (authorized_user, service_account with an RSA key, impersonated_service_account)
mints a token the fake Vertex sees as the request's bearer (rawPredict, and streamRawPredict
as SSE); the ADC file, its secrets and the minted token are not in the box (env, home,
/proc; control: the same search finds the relay's variable); a path outside the project's
Anthropic publisher is refused; 8 concurrent requests on an expiring token mint once; bad
input (an unknown ADC type, no project, no region) is one line, non-zero, before the box.
With the real Claude Code (installed from npm as e2e_real_clients does, or ARB_NPM_PREFIX),
`arborinth claude --vertex` completes a prompt against the fakes."""
import json
import re
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import Checks, Env, install_clients, need_box, search_files  # noqa: E402

need_box()
C = Checks()
REPLY = "ARBORINTH-VERTEX-REPLY-2718"
PROJECT, REGION = "proj-1", "us-east5"
SECRET = "CLIENT-SECRET-" + os.urandom(6).hex()
RT = "1//REFRESH-" + os.urandom(8).hex()
PATH = "/projects/%s/locations/%s/publishers/anthropic/models/claude-x" % (PROJECT, REGION)


def start_google(E, expires_in, pub, *extra):
    log = os.path.join(E.t, "google-%d%s.log" % (expires_in, "".join(extra)))
    p = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "e2e_fake_google.py"), "--log", log, "--reply", REPLY, "--client-secret",
        SECRET, "--refresh-token", RT, "--sa-pubkey", pub, "--expires-in", str(expires_in), *extra],
        stdout=subprocess.PIPE, text=True)
    E.procs.append(p)
    return "http://127.0.0.1:%d" % int(p.stdout.readline()), log


def entries(log):
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def adc_files(E, url, pem, sub="adc"):
    user = {"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
            "client_secret": SECRET, "refresh_token": RT, "token_uri": url + "/token"}
    sa = {"type": "service_account", "project_id": PROJECT, "private_key_id": "kid1",
          "private_key": pem, "client_email": "sa@%s.iam.gserviceaccount.com" % PROJECT,
          "token_uri": url + "/token"}
    imp = {"type": "impersonated_service_account", "delegates": [],
           "service_account_impersonation_url": url + "/v1/projects/-/serviceAccounts/"
           "target@%s.iam.gserviceaccount.com:generateAccessToken" % PROJECT,
           "source_credentials": user}
    out = {}
    for name, obj in (("authorized_user", user), ("service_account", sa),
                      ("impersonated_service_account", imp), ("bad", {"type": "external"})):
        out[name] = E.write("%s/%s.json" % (sub, name), json.dumps(obj), 0o600)
    return out


def box_curl(verb, extra=""):
    return ('curl -sS -w " %%{http_code}" -H "content-type: application/json" -d '
            '\'{"anthropic_version":"vertex-2023-10-16","max_tokens":10,"messages":'
            '[{"role":"user","content":"hi"}]}\' "$ANTHROPIC_VERTEX_BASE_URL%s%s:%s"' %
            (extra, PATH if not extra else "", verb))


def shell(E, url, adc, script, env=None):
    e = {"GOOGLE_APPLICATION_CREDENTIALS": adc}
    e.update(env or {})
    return E.arb("shell", "w", "--backend", "vertex=%s,project=%s,region=%s" %
                 (url, PROJECT, REGION), "--", "sh", "-c", script, env=e, timeout=120)


def adc_runs(E, url, log, adcs):
    for kind in ("authorized_user", "service_account", "impersonated_service_account"):
        n = len(entries(log))
        cp = shell(E, url, adcs[kind], box_curl("rawPredict") + "; echo; " +
                   box_curl("streamRawPredict"))
        C.eq(0, cp.returncode, kind + ": box ran (%r)" % cp.stderr[-500:])
        C.ok(REPLY in cp.stdout and cp.stdout.count(" 200") == 2,
             kind + ": rawPredict answered (%r)" % cp.stdout[:300])
        C.ok("event: content_block_delta" in cp.stdout, kind + ": streamRawPredict is SSE")
        new = entries(log)[n:]
        minted = [e["minted"] for e in new if "minted" in e]
        calls = [e for e in new if e.get("path", "").endswith("Predict")]
        C.eq(2, len(calls), kind + ": two Vertex calls")
        C.ok(minted and all(c["headers"].get("authorization") == "Bearer " + minted[-1]
                            for c in calls),
             kind + ": the fake Vertex saw the minted bearer (%r, %r)" %
             (minted, [c["headers"].get("authorization") for c in calls]))
        how = {"authorized_user": "refresh_token", "service_account": "jwt-bearer",
               "impersonated_service_account": "impersonation"}[kind]
        C.ok(how in [e.get("how") for e in new if "minted" in e], kind + ": minted by " + how)
        if kind == "impersonated_service_account":
            gen = [e for e in new if e.get("path", "").endswith(":generateAccessToken")]
            C.ok(gen and gen[0]["headers"].get("authorization", "").startswith("Bearer ya29."),
                 "impersonation: IAM Credentials got the source token")
        C.ok(all(m not in cp.stdout + cp.stderr for m in minted), kind + ": no token in output")


def leak_run(E, url, log, adcs):
    adc = adcs["authorized_user"]
    script = ('env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; cat %s; ls -la "$HOME"; '
              'cat "$HOME/.config/gcloud/application_default_credentials.json"; ' % adc
              + box_curl("rawPredict"))
    cp = shell(E, url, adc, script)
    minted = [e["minted"] for e in entries(log) if "minted" in e]
    C.ok("ANTHROPIC_VERTEX_BASE_URL=" in cp.stdout,
         "leak: control: the box's environment dump shows the relay's variable")
    for what, s in (("client secret", SECRET), ("refresh token", RT),
                    ("minted token", minted[-1])):
        C.ok(s not in cp.stdout, "leak: the %s is not in the box's env, /proc or files" % what)
    C.eq([], search_files([os.path.join(E.ws("w"), d) for d in ("home", "tmp")], minted[-1]),
         "leak: no file the box could write holds the token")
    C.ok("GOOGLE_APPLICATION_CREDENTIALS" not in cp.stdout, "leak: no ADC variable in the box")


def refused_runs(E, url, log, adcs):
    other = "/projects/other/locations/%s/publishers/anthropic/models/m" % REGION
    n = len(entries(log))
    cp = shell(E, url, adcs["authorized_user"],
               box_curl("predict") + "; echo; " + box_curl("rawPredict", other) + "; echo; " +
               box_curl("rawPredict", "/projects/%s/locations/%s/publishers/google/models/g" %
                        (PROJECT, REGION)) + "; echo; " + box_curl("rawPredict"))
    codes = re.findall(r"(?m) (\d{3})$", cp.stdout)
    C.eq(["403", "403", "403", "200"], codes[:3] + codes[-1:],
         "refused: :predict, another project, another publisher; control: rawPredict passes")
    calls = [e for e in entries(log)[n:] if "Predict" in e.get("path", "")
             or e.get("path", "").endswith(":predict")]
    C.eq(1, len(calls), "refused: only the allowed call reached Vertex")
    au = E.arb("audit", "--json", "w")
    C.ok("not a Vertex anthropic rawPredict" in au.stdout or "403" in au.stdout,
         "refused: the refusal is audited (%r)" % au.stdout[-300:])


def refused_token_run(E, pub):
    """A Vertex that refuses every token (401): the proxy does not mint again for each of the
    box's requests (a token is minted again at most once per 10 minutes, as logins are)."""
    url, log = start_google(E, 3600, pub, "--refuse-vertex")
    adcs3 = adc_files(E, url, open(os.path.join(E.t, "sa.pem")).read(), "adc3")
    cp = shell(E, url, adcs3["authorized_user"], "date +%s.%N; " + "; echo; ".join(
        [box_curl("rawPredict")] * 4))
    t0 = float(cp.stdout.split("\n")[0])
    C.eq(4, len(re.findall(r"(?m) 401$", cp.stdout)), "refused token: the box got the 401s (%r)" % cp.stdout)
    es = entries(log)
    C.eq(4, len([e for e in es if "Predict" in e.get("path", "")]), "refused token: 4 calls")
    C.eq(0, len([e for e in es if "minted" in e and e["time"] > t0]),
         "refused token: no new mint for the box's requests (control: single_flight mints)")


def loopback_run(E, url, log, adcs):
    """With --net the proxy listens on the host's loopback, open to every local process: a
    Vertex request there without the box's placeholder is refused (control: over the box's
    relay the same request passes, in adc_runs)."""
    n = len(entries(log))
    cp = E.arb("shell", "w", "--net", "--backend", "vertex=%s,project=%s,region=%s" %
               (url, PROJECT, REGION), "--", "sh", "-c", box_curl("rawPredict"),
               env={"GOOGLE_APPLICATION_CREDENTIALS": adcs["authorized_user"]}, timeout=120)
    C.ok(cp.stdout.rstrip().endswith(" 401") and "placeholder" in cp.stdout,
         "loopback: a Vertex request without the placeholder is refused (%r %r)" %
         (cp.stdout[-300:], cp.stderr[-300:]))
    C.eq([], [e for e in entries(log)[n:] if "Predict" in e.get("path", "")],
         "loopback: nothing reached Vertex")


def single_flight(E, pub, adcs):
    # Tokens live 302 s: with the 5 min margin they need minting again 2 s later.
    url, log = start_google(E, 302, pub)
    adcs2 = adc_files(E, url, open(os.path.join(E.t, "sa.pem")).read(), "adc2")
    script = ("sleep 3; date +%s.%N > $HOME/t0; for i in 1 2 3 4 5 6 7 8; do (" +
              box_curl("rawPredict") + " > $HOME/out.$i) & done; wait; cat $HOME/t0 "
              "$HOME/out.*")
    cp = shell(E, url, adcs2["authorized_user"], script)
    lines = cp.stdout.split("\n")
    t0 = float(lines[0])
    C.eq(8, cp.stdout.count(" 200"), "single flight: 8 requests answered (%r)" % cp.stderr[-300:])
    es = entries(log)
    after = [e for e in es if "minted" in e and e["time"] > t0]
    C.eq(1, len(after), "single flight: one mint for 8 concurrent requests on an old token")
    calls = [e["headers"]["authorization"] for e in es if "Predict" in e.get("path", "")]
    C.ok(len(set(calls)) == 1 and after and calls[0] == "Bearer " + after[0]["minted"],
         "single flight: all 8 carried the new token")


def bad_runs(E, url, adcs):
    mark = os.path.join(E.t, "ran")
    cp = shell(E, url, adcs["bad"], "touch " + mark)
    C.one_line_error(cp, cp.returncode if cp.returncode else 1, "unknown ADC type 'external'",
                     "bad ADC type")
    C.ok(cp.returncode != 0 and not os.path.exists(mark), "bad ADC type: the box never ran")
    cp = shell(E, url, os.path.join(E.t, "adc", "missing.json"), "touch " + mark)
    C.ok(cp.returncode != 0 and "missing.json" in cp.stderr and not os.path.exists(mark),
         "missing ADC file: named, no box (%r)" % cp.stderr)
    env = {"GOOGLE_APPLICATION_CREDENTIALS": adcs["authorized_user"], "CLOUD_ML_REGION": REGION}
    cp = E.arb("claude", "nv", "--vertex", "--upstream", url, env=env)
    C.one_line_error(cp, 2, "no Google Cloud project", "claude --vertex without a project")
    env = {"GOOGLE_APPLICATION_CREDENTIALS": adcs["authorized_user"],
           "ANTHROPIC_VERTEX_PROJECT_ID": PROJECT}
    cp = E.arb("claude", "nv", "--vertex", "--upstream", url, env=env)
    C.one_line_error(cp, 2, "no region", "claude --vertex without a region")
    C.ok(not os.path.exists(E.ws("nv")), "bad input: no workspace was made")
    cp = E.arb("claude", "nv", "--vertex", "--net", "--upstream", url, env=dict(
        env, CLOUD_ML_REGION=REGION))
    C.one_line_error(cp, 2, "--vertex does not go with --net", "claude --vertex --net")
    cp = E.arb("shell", "w", "--backend", "vertex=%s,region=%s" % (url, REGION), "--", "true")
    C.ok(cp.returncode != 0 and "no project" in cp.stderr, "--backend vertex without project")


def claude_run(E, url, log, adcs):
    n = len(entries(log))
    env = {"GOOGLE_APPLICATION_CREDENTIALS": adcs["authorized_user"],
           "ANTHROPIC_VERTEX_PROJECT_ID": PROJECT, "CLOUD_ML_REGION": REGION}
    cp = E.arb("claude", "cv", "--vertex", "--upstream", url, "--", "-p",
               "Say the magic words.", env=env, timeout=300)
    C.eq(0, cp.returncode, "claude --vertex: exit status (%r)" % cp.stderr[-2000:])
    C.ok(REPLY in cp.stdout, "claude --vertex: prints the reply (%r)" % cp.stdout[-500:])
    new = entries(log)[n:]
    # The ADC file's token may be one an earlier box minted: the boxes share it.
    minted = ["Bearer " + e["minted"] for e in entries(log) if "minted" in e]
    calls = [e for e in new if "Predict" in e.get("path", "")]
    sent = set(c["headers"].get("authorization") for c in calls)
    C.ok(calls and len(sent) == 1 and sent <= set(minted),
         "claude --vertex: Vertex calls carried a minted token (%r)" %
         [c.get("path") for c in new])
    C.eq([], search_files([os.path.join(E.ws("cv"), d) for d in ("home", "tmp")],
                          sent.pop()[7:] if len(sent) == 1 else "ya29."),
         "claude --vertex: no file the box could write holds the token")
    C.ok(search_files([os.path.join(E.ws("cv"), "home")], "ARBORINTH-VERTEX"),
         "claude --vertex: control: the same search finds the reply in its session files")


def main():
    with Env("e2e-vertex") as E:
        pem_path = os.path.join(E.t, "sa.pem")
        pub = os.path.join(E.t, "sa.pub")
        subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                        "rsa_keygen_bits:2048", "-out", pem_path], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", pem_path, "-pubout", "-out", pub], check=True)
        url, log = start_google(E, 3600, pub)
        adcs = adc_files(E, url, open(pem_path).read())
        # The real Claude Code from npm (or ARB_NPM_PREFIX), as e2e_real_clients does.
        prefix = install_clients(E, C)
        E.path = os.path.join(prefix, "node_modules", ".bin") + ":" + E.path
        C.eq(0, E.arb("workspace", "create", "w").returncode, "workspace create")
        adc_runs(E, url, log, adcs)
        leak_run(E, url, log, adcs)
        refused_runs(E, url, log, adcs)
        loopback_run(E, url, log, adcs)
        single_flight(E, pub, adcs)
        refused_token_run(E, pub)
        bad_runs(E, url, adcs)
        claude_run(E, url, log, adcs)
    C.finish()


if __name__ == "__main__":
    main()
