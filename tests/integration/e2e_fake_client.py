#!/usr/bin/python3
"""A stand-in agent client (copied as claude, codex or opencode by e2e_launch.py). Run by a
launcher inside the box, it prints one JSON report of what it sees: argv, cwd, environment,
mounts, which of the paths listed in $E2E_CHECK (a JSON array, passed with --env) exist, the
result of one model call through the relay with the key it was given,
and every file and process environment it can read (for the host to search for the key).
It also leaves a marker in its config directory and reports the one a previous run left."""
import json
import os
import sys
import urllib.request

ROLE = os.path.basename(sys.argv[0])
CHECK = json.loads(os.environ.get("E2E_CHECK", "[]"))
rep = {"role": ROLE, "argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
rep["exists"] = {p: os.path.exists(p) for p in CHECK}
with open("/proc/self/mountinfo") as f:
    rep["mounts"] = [line.split()[4] for line in f]
try:
    with open("README") as f:
        rep["readme"] = f.read()
except OSError as e:
    rep["readme"] = "error: %s" % e


def call(url, headers, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers=dict(headers, **{"content-type": "application/json"}))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
    except OSError as e:
        return [0, str(e)]


env = os.environ
if ROLE == "claude":
    conf = env.get("CLAUDE_CONFIG_DIR", "")
    rep["call"] = call(env.get("ANTHROPIC_BASE_URL", "") + "/v1/messages",
                       {"x-api-key": env.get("ANTHROPIC_API_KEY", "")},
                       {"model": "m", "max_tokens": 5, "messages": []})
elif ROLE == "codex":
    conf = env.get("CODEX_HOME", "")
    rep["call"] = call("http://127.0.0.1:8714/v1/responses",
                       {"authorization": "Bearer " + env.get("OPENAI_API_KEY", "")},
                       {"model": "m", "input": "hi"})
else:
    conf = os.path.join(env.get("HOME", ""), ".config", "opencode")
    cfg = json.loads(env.get("OPENCODE_CONFIG_CONTENT", "{}"))
    rep["opencode_config"] = cfg
    prov = list(cfg.get("provider", {}).values())
    opts = prov[0]["options"] if prov else {}
    rep["call"] = call(opts.get("baseURL", "") + "/messages", {"x-api-key": opts.get("apiKey", "")},
                       {"model": "m", "max_tokens": 5, "messages": []})

# Sessions persist per workspace: the marker a previous run left in the config directory.
marker = os.path.join(conf, "e2e-marker") if conf else ""
try:
    with open(marker) as f:
        rep["marker_before"] = f.read()
except OSError:
    rep["marker_before"] = None
try:
    os.makedirs(conf, exist_ok=True)
    with open(marker, "a") as f:
        f.write("run\n")
    rep["marker_written"] = True
except OSError as e:
    rep["marker_written"] = str(e)

seen = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("environ", "cmdline"):
            try:
                with open(os.path.join("/proc", pid, name), "rb") as fh:
                    seen.append(fh.read().decode("latin-1"))
            except OSError:
                pass
for root in (os.getcwd(), "/tmp", env.get("HOME", "/"), "/run"):
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
print(json.dumps(rep))
