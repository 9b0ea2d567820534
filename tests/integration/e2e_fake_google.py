#!/usr/bin/env python3
"""A local stand-in for Google's OAuth token endpoint, IAM Credentials and Vertex AI's
Anthropic publisher (standard library, plus the openssl command to verify JWTs).

    e2e_fake_google.py --log FILE --reply TEXT --client-secret S --refresh-token R...
                       [--sa-pubkey PEM] [--expires-in N]

Prints "PORT\\n" when listening on 127.0.0.1. Every request is one JSON line in --log
(method, path, headers, form or JSON body, time); every token minted is logged as
{"minted": TOKEN, "how": ..., "sub": ..., "time": ...} (sub: the refresh token of a
refresh grant). --refresh-token may be given more than once (accounts of one client).

  POST /token     grant_type=refresh_token (client_secret and refresh_token must match), or
                  urn:ietf:params:oauth:grant-type:jwt-bearer with an RS256 assertion signed
                  by --sa-pubkey's key (aud must be this URL); {access_token, expires_in}
  POST /v1/projects/-/serviceAccounts/SA:generateAccessToken
                  IAM Credentials: needs a Bearer this server minted and scope cloud-platform;
                  {accessToken, expireTime}
  POST /v1/projects/P/locations/R/publishers/anthropic/models/M:rawPredict
                  (and :streamRawPredict): needs a Bearer this server minted and
                  anthropic_version vertex-2023-10-16; the Anthropic answer of e2e_fake_models
                  (an SSE stream for streamRawPredict); with --refuse-vertex always 401
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_fake_models as M  # noqa: E402

MINTED = {}
A = None
N = [0]


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def jwt_ok(assertion, aud):
    try:
        h, c, s = assertion.split(".")
        head, claims = json.loads(b64d(h)), json.loads(b64d(c))
    except ValueError:
        return False
    if head.get("alg") != "RS256" or claims.get("aud") != aud or not A.sa_pubkey:
        return False
    with tempfile.NamedTemporaryFile() as sig, tempfile.NamedTemporaryFile() as data:
        sig.write(b64d(s))
        sig.flush()
        data.write(("%s.%s" % (h, c)).encode())
        data.flush()
        cp = subprocess.run(["openssl", "dgst", "-sha256", "-verify", A.sa_pubkey,
                             "-signature", sig.name, data.name], capture_output=True)
    return cp.returncode == 0 and "cloud-platform" in claims.get("scope", "")


class Handler(M.Handler):
    def mint(self, how, sub=""):
        time.sleep(0.3)  # a real endpoint is slow: widens any race between minters
        with M.LOCK:
            N[0] += 1
            tok = "ya29.fake-%d-%s" % (N[0], os.urandom(8).hex())
            MINTED[tok] = time.time() + A.expires_in
        M.log({"minted": tok, "how": how, "sub": sub, "time": time.time()})
        return tok

    def bearer_ok(self):
        auth = self.headers.get("Authorization", "")
        with M.LOCK:
            return auth.startswith("Bearer ") and MINTED.get(auth[7:], 0) > time.time()

    def handle_any(self):
        raw = self.body()
        path = self.path.split("?", 1)[0]
        ctype = self.headers.get("Content-Type", "")
        body = None
        if ctype.startswith("application/x-www-form-urlencoded"):
            body = dict(urllib.parse.parse_qsl(raw.decode()))
        elif raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        M.log({"method": self.command, "path": path,
               "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
               "time": time.time()})
        if self.command == "POST" and path == "/token" and isinstance(body, dict):
            g = body.get("grant_type")
            if g == "refresh_token" and body.get("client_secret") == A.client_secret and \
                    body.get("refresh_token") in A.refresh_token:
                return self.send_json(200, {"access_token": self.mint(
                                            "refresh_token", body["refresh_token"]),
                                            "expires_in": A.expires_in,
                                            "token_type": "Bearer"})
            url = "http://127.0.0.1:%d/token" % self.server.server_address[1]
            if g == "urn:ietf:params:oauth:grant-type:jwt-bearer" and \
                    jwt_ok(body.get("assertion", ""), url):
                return self.send_json(200, {"access_token": self.mint("jwt-bearer"),
                                            "expires_in": A.expires_in,
                                            "token_type": "Bearer"})
            return self.send_json(400, {"error": "invalid_grant"})
        if self.command == "POST" and path.endswith(":generateAccessToken"):
            if not self.bearer_ok() or not isinstance(body, dict) or \
                    "https://www.googleapis.com/auth/cloud-platform" not in body.get("scope", []):
                return self.send_json(401, {"error": {"code": 401, "message": "no"}})
            exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + A.expires_in))
            return self.send_json(200, {"accessToken": self.mint("impersonation"),
                                        "expireTime": exp})
        parts = path.split("/")
        if self.command == "POST" and len(parts) == 10 and parts[1:3] == ["v1", "projects"] \
                and parts[4] == "locations" and parts[6:8] == ["publishers", "anthropic"] \
                and parts[8] == "models" and ":" in parts[9]:
            if not self.bearer_ok() or A.refuse_vertex:
                return self.send_json(401, {"error": {"code": 401, "message": "bad token"}})
            model, verb = parts[9].split(":", 1)
            if not isinstance(body, dict) or body.get("anthropic_version") != \
                    "vertex-2023-10-16" or verb not in ("rawPredict", "streamRawPredict"):
                return self.send_json(400, {"error": {"code": 400, "message": "bad request"}})
            if model == "count-tokens":
                return self.send_json(200, {"input_tokens": 12})
            return self.anthropic(model, verb == "streamRawPredict" or
                                  bool(body.get("stream")), body)
        self.send_json(404, {"error": {"code": 404, "message": "no such path " + path}})

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--reply", required=True)
    ap.add_argument("--client-secret", required=True)
    ap.add_argument("--refresh-token", required=True, action="append")
    ap.add_argument("--sa-pubkey")
    ap.add_argument("--expires-in", type=int, default=3600)
    ap.add_argument("--refuse-vertex", action="store_true", help="answer every Vertex call 401")
    A = ap.parse_args()
    M.LOG = open(A.log, "a")
    M.REPLY = A.reply
    srv = M.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
