#!/usr/bin/env python3
"""Runs inside a box (arborinth shell --backend anthropic): calls the model API through the
relay the way real clients do, looks for leaks, and prints one JSON report on stdout.

    box_client.py DIRECT_PORT
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

rep = {}
base = os.environ.get("ANTHROPIC_BASE_URL", "")
ph = os.environ.get("ANTHROPIC_API_KEY", "")
rep["base"] = base
rep["placeholder"] = ph
rep["openai_base"] = os.environ.get("OPENAI_BASE_URL", "")


def post(path, body, headers):
    req = urllib.request.Request(base + path, data=body, method="POST",
                                 headers=dict({"content-type": "application/json"}, **headers))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


# python3 urllib: a plain request and a refusal
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
st, out = post("/v1/messages", body, {"x-api-key": ph, "anthropic-version": "2023-06-01"})
rep["urllib_status"] = st
rep["urllib_sha_ok"] = st == 200 and json.loads(out)["sha256"] == hashlib.sha256(body).hexdigest()
st, out = post("/v1/complete", body, {"x-api-key": ph})
rep["refused_path"] = [st, json.loads(out)["error"]["message"]]
st, out = post("/v1/messages", body, {"x-api-key": "sk-ant-guess"})
rep["refused_key"] = [st, json.loads(out)["error"]["message"]]

# streaming: record when each event arrives
req = urllib.request.Request(base + "/v1/messages", method="POST",
                             data=json.dumps({"stream": True, "events": 5, "gap_ms": 200}).encode(),
                             headers={"x-api-key": ph, "content-type": "application/json"})
times = []
with urllib.request.urlopen(req, timeout=30) as r:
    for line in r:
        if line.startswith(b"data:"):
            times.append(time.time())
rep["sse_recv"] = times

# curl and node
try:
    cp = subprocess.run(["curl", "-sS", "-N", base + "/v1/models", "-H", "x-api-key: " + ph],
                        capture_output=True, text=True, timeout=30)
    rep["curl"] = cp.stdout
except FileNotFoundError:
    rep["curl"] = "missing"
js = ("fetch(process.env.ANTHROPIC_BASE_URL + '/v1/messages', {method: 'POST', headers: "
      "{'x-api-key': process.env.ANTHROPIC_API_KEY, 'content-type': 'application/json'}, "
      "body: JSON.stringify({stream: true, events: 3, gap_ms: 50})}).then(async r => { "
      "console.log(r.status); console.log(await r.text()); })")
try:
    cp = subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=30)
    rep["node"] = cp.stdout
except FileNotFoundError:
    rep["node"] = "missing"

# no route around the relay: the upstream itself is not reachable from the box
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    rep["direct"] = "connected"
except OSError as e:
    rep["direct"] = "refused: " + type(e).__name__

# what the box can see, for the host to search for the key
seen = []
for d in ("/proc",):
    for pid in os.listdir(d):
        if pid.isdigit():
            for f in ("environ", "cmdline"):
                try:
                    with open(os.path.join(d, pid, f), "rb") as fh:
                        seen.append(fh.read().decode("latin-1"))
                except OSError:
                    pass
for root in (os.getcwd(), "/tmp", os.environ.get("HOME", "/"), "/run"):
    for dirpath, dirnames, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            try:
                if os.path.isfile(p) and os.path.getsize(p) < (4 << 20):
                    with open(p, "rb") as fh:
                        seen.append(fh.read().decode("latin-1"))
            except OSError:
                pass
rep["visible"] = "\n".join(seen)
rep["env"] = dict(os.environ)
print(json.dumps(rep))
