#!/usr/bin/env python3
"""Logins through the proxy on the host (label proxy): Claude Code's .credentials.json and
Codex's auth.json kept on the host, placeholders in the box's copy, the real token swapped in,
refreshes made on the host against a local OAuth token endpoint (e2e_fake_models.py --oauth:
single-use refresh tokens) and written back with the file's mode, the box's own refresh
requests answered by the proxy, every login error, and 8 proxies racing for one refresh.

    login_test.py HARNESS TMPDIR
"""
import json
import os
import stat
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from proxytest import Checks, Procs, Reader, read_log, request, unix_conn  # noqa: E402

C = Checks()
FAKE = os.path.join(HERE, "..", "integration", "e2e_fake_models.py")
HOST = "127.0.0.1:8713"


def start_fake(procs, t, seeds, expires_in=3600, extra=()):
    log = os.path.join(t, "fake-%d.log" % len(procs.procs))
    argv = [sys.executable, FAKE, "--log", log, "--reply", "LOGIN-REPLY",
            "--oauth-expires-in", str(expires_in)] + list(extra)
    for s in seeds:
        argv += ["--oauth", ",".join(str(x) for x in s)]
    p = procs.start(argv)
    return int(p.stdout.readline()), log


def oauth_state(port):
    s = unix_or_tcp(port)
    s.sendall(request("GET", "/oauth-state", "127.0.0.1:%d" % port))
    return json.loads(Reader(s).response().body)


def unix_or_tcp(port):
    import socket
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def harness(procs, argv_extra, sock, check=True):
    argv = [sys.argv[1], "--socket", sock] + argv_extra
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.procs.append(p)
    line = p.stdout.readline()
    if not line:
        err = p.stderr.read()
        p.wait()
        return None, err
    return p, json.loads(line)


def stop_harness(p):
    p.terminate()
    out = p.stdout.read()
    p.wait(10)
    last = [json.loads(x) for x in out.splitlines() if x.strip()]
    return last[-1]["refreshes"] if last else None


def claude_file(path, access, refresh, expires_ms, mode=0o640, extra=None):
    data = {"claudeAiOauth": {"accessToken": access, "refreshToken": refresh,
                              "expiresAt": expires_ms,
                              "scopes": ["user:inference", "user:profile"],
                              "subscriptionType": "max", "rateLimitTier": "tier-x"}}
    data.update(extra or {})
    with open(path, "w") as f:
        json.dump(data, f)
    os.chmod(path, mode)


def messages(sock, bearer, extra=()):
    s = unix_conn(sock)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": []}).encode()
    s.sendall(request("POST", "/v1/messages", HOST, [("Authorization", "Bearer " + bearer),
                                                    ("anthropic-beta", "oauth-2025-04-20"),
                                                    ("Content-Type", "application/json")] +
                      list(extra), body))
    r = Reader(s).response()
    s.close()
    return r


def box_refresh(sock, rt, host=HOST, path="/v1/oauth/token"):
    s = unix_conn(sock)
    body = json.dumps({"grant_type": "refresh_token", "refresh_token": rt,
                       "client_id": "x"}).encode()
    s.sendall(request("POST", path, host, [("Content-Type", "application/json")], body))
    r = Reader(s).response()
    s.close()
    return r


def now_ms():
    return int(time.time() * 1000)


def test_claude(procs, t):
    a0, r0 = "sk-ant-oat01-REAL-seed-a", "sk-ant-ort01-REAL-seed-r"
    # The host token has 303 s left: fresh now, inside the 300 s margin in a few seconds.
    exp = time.time() + 303
    port, log = start_fake(procs, t, [(a0, r0, exp)])
    up = "http://127.0.0.1:%d" % port
    cred = os.path.join(t, "claude-creds.json")
    claude_file(cred, a0, r0, int(exp * 1000), extra={"mcpOAuth": {"keep": "me"}})
    sock = os.path.join(t, "c.sock")
    p, ready = harness(procs, ["--backend", "anthropic=" + up, "--login",
                               "anthropic=claude:%s@%s/v1/oauth/token" % (cred, up)], sock)
    if not C.ok(p is not None, "claude: the proxy starts with a login (%r)" % (ready,)):
        return
    ph = ready["placeholders"]["anthropic"]
    box = json.loads(ready["login_files"]["anthropic"])
    o = box.get("claudeAiOauth", {})
    C.eq(ph, o.get("accessToken"), "claude: the box's access token is the placeholder")
    C.ok(o.get("refreshToken", "").startswith("arb-refresh-placeholder-"),
         "claude: the box's refresh token is a placeholder")
    C.ok(o.get("expiresAt", 0) > now_ms() + 300 * 86400 * 1000,
         "claude: the box's login does not expire for months")
    C.eq(["user:inference", "user:profile"], o.get("scopes"), "claude: scopes copied")
    C.eq("max", o.get("subscriptionType"), "claude: plan copied")
    text = ready["login_files"]["anthropic"]
    C.ok("REAL" not in text and "mcpOAuth" not in text,
         "claude: no real token and nothing else of the host file in the box's copy")

    r = messages(sock, ph)
    C.eq(200, r.status, "claude: a model call with the placeholder is answered")
    calls = [e for e in read_log(log) if e["path"] == "/v1/messages"]
    C.eq("Bearer " + a0, calls[-1]["headers"].get("authorization"),
         "claude: the upstream got the host's access token")
    C.eq("oauth-2025-04-20", calls[-1]["headers"].get("anthropic-beta"),
         "claude: the client's beta header passes")
    C.ok("x-api-key" not in calls[-1]["headers"], "claude: no x-api-key upstream")
    r = messages(sock, a0)
    C.eq(401, r.status, "claude: the real token itself is refused from the box")

    # The box's own refresh: answered with placeholders, never sent upstream.
    r = box_refresh(sock, o["refreshToken"])
    C.eq(200, r.status, "claude: the box's refresh is answered")
    C.eq(ph, r.json().get("access_token"), "claude: ... with the placeholder")
    C.eq(o["refreshToken"], r.json().get("refresh_token"), "claude: ... and its refresh one")
    r = box_refresh(sock, r0)
    C.eq(400, r.status, "claude: a refresh with anything else is refused (the real one too)")
    C.eq(0, oauth_state(port)["refreshes"], "claude: no box refresh reached the endpoint")
    C.ok(not [e for e in read_log(log) if e["path"] == "/v1/oauth/token"],
         "claude: the token endpoint saw nothing from the box")

    # The host token nears expiry during the session: the proxy refreshes on the host.
    time.sleep(max(0, exp - 300 - time.time()) + 0.5)
    r = messages(sock, ph)
    C.eq(200, r.status, "claude: a call after the token neared expiry is answered")
    st = oauth_state(port)
    C.eq(1, st["refreshes"], "claude: the proxy refreshed once")
    with open(cred) as f:
        host = json.load(f)
    ho = host["claudeAiOauth"]
    C.ok(ho["accessToken"] != a0 and ho["accessToken"] in st["access"],
         "claude: the host file holds the new access token")
    C.ok(ho["refreshToken"] in st["refresh"], "claude: ... and the rotated refresh token")
    C.ok(ho["expiresAt"] > now_ms() + 3000 * 1000, "claude: ... and its new expiry")
    C.eq({"keep": "me"}, host.get("mcpOAuth"), "claude: other fields of the host file stay")
    C.eq(0o640, stat.S_IMODE(os.stat(cred).st_mode), "claude: the file keeps its mode")
    calls = [e for e in read_log(log) if e["path"] == "/v1/messages"]
    C.eq("Bearer " + ho["accessToken"], calls[-1]["headers"].get("authorization"),
         "claude: the call went up with the new token")
    r = messages(sock, ph)
    C.eq(1, oauth_state(port)["refreshes"], "claude: a fresh token is not refreshed again")

    # The host's own client refreshes the file: the proxy takes its token, no refresh.
    st = oauth_state(port)
    claude_file(cred, a0 + "-gone", ho["refreshToken"], ho["expiresAt"], mode=0o640)
    # Written by the host's client 11 min ago: a refused token in it may be refreshed.
    os.utime(cred, (time.time() - 660, time.time() - 660))
    r = messages(sock, ph)
    C.eq(401, r.status, "claude: a token the upstream refuses gives the box its 401")
    r = messages(sock, ph)
    C.eq(200, r.status, "claude: after a refused token the next call refreshes and works")
    C.eq(st["refreshes"] + 1, oauth_state(port)["refreshes"],
         "claude: ... with exactly one more refresh")
    C.eq({"anthropic": 2}, stop_harness(p), "claude: the proxy counts its two refreshes")


def test_refused(procs, t):
    """An upstream that refuses every token: one refresh of the host's login, not one per
    request; the box gets a 401 naming the reason; one more refresh once the file is old."""
    a0, r0 = "sk-ant-oat01-REAL-refused-a", "sk-ant-ort01-REAL-refused-r"
    exp = time.time() + 3600
    port, log = start_fake(procs, t, [(a0, r0, exp)], extra=["--oauth-refuse-all"])
    up = "http://127.0.0.1:%d" % port
    cred = os.path.join(t, "refused-creds.json")
    claude_file(cred, a0, r0, int(exp * 1000))
    os.utime(cred, (time.time() - 3600, time.time() - 3600))  # the login is an hour old
    sock = os.path.join(t, "r.sock")
    recs = os.path.join(t, "refused-records.jsonl")
    p, ready = harness(procs, ["--records", recs, "--backend", "anthropic=" + up, "--login",
                               "anthropic=claude:%s@%s/v1/oauth/token" % (cred, up)], sock)
    if not C.ok(p is not None, "refused: the proxy starts (%r)" % (ready,)):
        return
    ph = ready["placeholders"]["anthropic"]
    answers = [messages(sock, ph) for _ in range(25)]
    C.eq([401] * 25, [r.status for r in answers], "refused: 25 box requests, 25 refusals")
    C.eq(1, oauth_state(port)["refreshes"], "refused: the host's login was refreshed once")
    ups = [e for e in read_log(log) if e["path"] == "/v1/messages"]
    C.eq(2, len(ups), "refused: two calls went upstream (the old token, the refreshed one)")
    body = answers[-1].json()
    C.ok("refreshed" in json.dumps(body) and "not refreshed again" in json.dumps(body),
         "refused: the box's 401 names the reason (%r)" % (body,))
    with open(cred) as f:
        host = json.load(f)["claudeAiOauth"]
    C.ok(host["refreshToken"] in oauth_state(port)["refresh"],
         "refused: the host file keeps the one unspent refresh token")
    # Once the file is older than the interval, the refused token is refreshed once more.
    os.utime(cred, (time.time() - 660, time.time() - 660))
    answers = [messages(sock, ph) for _ in range(5)]
    C.eq(2, oauth_state(port)["refreshes"], "refused: one more refresh 10 min later, not 5")
    C.eq({"anthropic": 2}, stop_harness(p), "refused: the proxy counts two refreshes")
    rows = [r for r in read_log(recs) if "not refreshed again" in (r.get("reason") or "")]
    C.eq(27, len(rows), "refused: each refusal by the proxy is one audited row with its reason")


def test_errors(procs, t):
    up = "http://127.0.0.1:9"
    sock = os.path.join(t, "e.sock")
    cases = []
    missing = os.path.join(t, "nope.json")
    cases.append(("missing", missing, "does not exist"))
    bad = os.path.join(t, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    cases.append(("malformed", bad, "is not a Claude Code subscription login file"))
    empty = os.path.join(t, "empty.json")
    with open(empty, "w") as f:
        json.dump({"other": 1}, f)
    cases.append(("no login", empty, "no claudeAiOauth"))
    cases.append(("a directory", t, "not a regular file"))
    # Expired, and the endpoint refuses the refresh token.
    port, _ = start_fake(procs, t, [("sk-ant-oat01-REAL-x", "sk-ant-ort01-REAL-y")])
    exp = os.path.join(t, "expired.json")
    claude_file(exp, "sk-ant-oat01-REAL-old", "sk-ant-ort01-REAL-unknown", now_ms() - 1000)
    for what, path, want in cases + [("expired, refresh refused", exp, "could not be refreshed")]:
        url = "http://127.0.0.1:%d/v1/oauth/token" % port if path == exp else up
        p, err = harness(procs, ["--backend", "anthropic=" + up, "--login",
                                 "anthropic=claude:%s@%s" % (path, url)], sock)
        C.ok(p is None, "error %s: the proxy does not start" % what)
        if p is None:
            C.ok(want in err and "claude auth login" in err and (path in err or path == t),
                 "error %s: one line naming the file and the fix (%r)" % (what, err))
            C.ok("REAL" not in err, "error %s: no token in the message" % what)
            C.eq(1, len(err.strip().splitlines()), "error %s: one line" % what)
    p, err = harness(procs, ["--backend", "anthropic=" + up, "--login",
                             "anthropic=claude:%s@http://example.com/token" % exp], sock)
    C.ok(p is None and "must be https" in (err or ""),
         "error: a plain-http token endpoint off loopback is refused (%r)" % err)
    C.eq("sk-ant-oat01-REAL-old",
         json.load(open(exp))["claudeAiOauth"]["accessToken"],
         "error: a failed refresh leaves the host file as it was")


def test_race(procs, t):
    """8 proxies (8 boxes) start on one expired login with a single-use refresh token."""
    a0, r0 = "sk-ant-oat01-REAL-race-a", "sk-ant-ort01-REAL-race-r"
    port, log = start_fake(procs, t, [(a0, r0, time.time() - 10)], expires_in=304)
    up = "http://127.0.0.1:%d" % port
    cred = os.path.join(t, "race.json")
    claude_file(cred, a0, r0, now_ms() - 10000, mode=0o600)
    results = [None] * 8
    socks = [os.path.join(t, "r%d.sock" % i) for i in range(8)]

    def start(i):
        results[i] = harness(procs, ["--backend", "anthropic=" + up, "--login",
                                     "anthropic=claude:%s@%s/v1/oauth/token" % (cred, up)],
                             socks[i])
    ths = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    started = [r for r in results if r[0] is not None]
    C.eq(8, len(started), "race: all 8 proxies start (%r)" %
         [r[1] for r in results if r[0] is None])
    st = oauth_state(port)
    C.eq(1, st["refreshes"], "race: one refresh for 8 proxies")
    C.eq(0, st.get("reused", 0), "race: the spent refresh token was never sent again")
    C.eq(0o600, stat.S_IMODE(os.stat(cred).st_mode), "race: the file keeps mode 0600")
    codes = []

    def call(i):
        codes.append(messages(socks[i], results[i][1]["placeholders"]["anthropic"]).status)
    # The refreshed token (304 s) nears expiry: all 8 need a refresh at once, mid-session.
    time.sleep(5)
    ths = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    C.eq([200] * 8, sorted(codes), "race: 8 concurrent calls after expiry all answered")
    st = oauth_state(port)
    C.eq(2, st["refreshes"], "race: one more refresh for 8 concurrent calls")
    C.eq(0, st.get("reused", 0), "race: still no refresh token sent twice")
    tokens = {e["headers"].get("authorization") for e in read_log(log)
              if e["path"] == "/v1/messages"}
    C.ok(all(t_[7:] in st["access"] for t_ in tokens),
         "race: every call went up with a token the endpoint issued")
    counts = [stop_harness(r[0]) for r in started]
    C.eq(2, sum(c.get("anthropic", 0) for c in counts if c),
         "race: the proxies made two refreshes between them")


def test_codex(procs, t):
    sys.path.insert(0, os.path.join(HERE, "..", "integration"))
    import e2e_fake_models as fm
    exp = int(time.time()) + 3600
    acct = {"chatgpt_account_id": "acct-REAL-0001", "chatgpt_plan_type": "pro"}
    access = fm.jwt({"exp": exp, "https://api.openai.com/auth": acct})
    # The host's id token carries more of the user's identity than the box may see.
    idt = fm.jwt({"exp": exp, "email": "dev@example.com", "name": "Dev REAL-name",
                  "sub": "auth0|REAL-sub", "email_verified": True, "aud": ["app_REAL"],
                  "iss": "https://auth.openai.com", "auth_provider": "google",
                  "https://api.openai.com/profile": {"email": "dev@example.com"},
                  "https://api.openai.com/auth": dict(acct, chatgpt_user_id="user-REAL-1",
                                                      organizations=[{"id": "org-REAL"}],
                                                      chatgpt_subscription_active_until=1)})
    rt = "rt-REAL-codex-seed"
    port, log = start_fake(procs, t, [(access, rt, exp)])
    up = "http://127.0.0.1:%d" % port
    auth = os.path.join(t, "auth.json")
    with open(auth, "w") as f:
        json.dump({"OPENAI_API_KEY": None, "tokens": {"id_token": idt, "access_token": access,
                                                      "refresh_token": rt,
                                                      "account_id": "acct-REAL-0001"},
                   "last_refresh": "2026-01-01T00:00:00Z"}, f)
    sock = os.path.join(t, "x.sock")
    p, ready = harness(procs, ["--backend", "chatgpt=%s/backend-api,port=8715,"
                               "allow=POST:/codex/responses*" % up,
                               "--login", "chatgpt=codex:%s@%s/oauth/token" % (auth, up)], sock)
    if not C.ok(p is not None, "codex: the proxy starts with a ChatGPT login (%r)" % (ready,)):
        return
    ph = ready["placeholders"]["chatgpt"]
    text = ready["login_files"]["chatgpt"]
    box = json.loads(text)
    C.ok("REAL" not in text, "codex: no real token or account in the box's auth.json")
    C.eq(ph, box["tokens"]["access_token"], "codex: the box's access token is the placeholder")
    claims = fm_claims(box["tokens"]["id_token"])
    C.eq("pro", claims["https://api.openai.com/auth"].get("chatgpt_plan_type"),
         "codex: the box's id token keeps the plan")
    C.eq(box["tokens"]["account_id"],
         claims["https://api.openai.com/auth"].get("chatgpt_account_id"),
         "codex: ... and carries the placeholder account")
    C.eq(["email", "exp", "https://api.openai.com/auth", "iat"], sorted(claims),
         "codex: the box's id token has only e-mail, plan and account, issue and expiry")
    C.eq(["chatgpt_account_id", "chatgpt_plan_type"],
         sorted(claims["https://api.openai.com/auth"]), "codex: ... in its auth claim too")
    C.eq("dev@example.com", claims["email"], "codex: ... the host's e-mail")
    # CONTROL: the host's id token does carry the claims the box's lacks.
    hc = fm_claims(idt)
    C.ok({"name", "sub", "aud"} <= set(hc) and "chatgpt_user_id" in
         hc["https://api.openai.com/auth"], "codex: (control) the host's id token has them")
    s = unix_conn(sock)
    s.sendall(request("POST", "/codex/responses", "127.0.0.1:8715",
                      [("Authorization", "Bearer " + ph),
                       ("chatgpt-account-id", box["tokens"]["account_id"]),
                       ("Content-Type", "application/json")],
                      json.dumps({"model": "gpt-5", "stream": False}).encode()))
    r = Reader(s).response()
    C.eq(200, r.status, "codex: a model call with the placeholders is answered")
    call = [e for e in read_log(log) if e["path"].endswith("/responses")][-1]
    C.eq("/backend-api/codex/responses", call["path"], "codex: at the ChatGPT path")
    C.eq("Bearer " + access, call["headers"].get("authorization"),
         "codex: the upstream got the real access token")
    C.eq("acct-REAL-0001", call["headers"].get("chatgpt-account-id"),
         "codex: ... and the real account id")
    r = box_refresh(sock, box["tokens"]["refresh_token"], "127.0.0.1:8715", "/oauth/token")
    C.eq(200, r.status, "codex: the box's refresh is answered by the proxy")
    C.eq(box["tokens"]["id_token"], r.json().get("id_token"), "codex: ... with placeholders")
    C.eq(0, oauth_state(port)["refreshes"], "codex: nothing reached the token endpoint")
    stop_harness(p)


def fm_claims(jwt):
    import base64
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def main():
    t = sys.argv[2]
    procs = Procs()
    try:
        test_claude(procs, t)
        test_refused(procs, t)
        test_errors(procs, t)
        test_race(procs, t)
        test_codex(procs, t)
    finally:
        procs.stop_all()
    C.finish()


if __name__ == "__main__":
    main()
