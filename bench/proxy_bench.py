#!/usr/bin/env python3
"""Credential proxy overhead: per-request latency and streaming throughput, through the
in-box relay and the host proxy vs straight to the same local upstream, side by side.

    bench/proxy_bench.py [--build DIR] [--rounds N] [--requests N] [--mib N]

DIR is a build directory holding tests/proxy_harness (default: build). The upstream is the
tests' fake model API (Python, plain HTTP on loopback); both paths use the same client code
and the same keep-alive connection pattern, so the difference is what the relay + proxy add.
Prints a Markdown table of medians over the rounds.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "proxy"))
from proxytest import Procs, Reader, free_port, request, start_harness, start_upstream  # noqa


def latency(port, host, headers, n, fresh):
    """Median seconds per request (GET /v1/models) over n requests."""
    times = []
    s = None
    rd = None
    for _ in range(n):
        t0 = time.perf_counter()
        if fresh or s is None:
            if s:
                s.close()
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            rd = Reader(s)
        s.sendall(request("GET", "/v1/models", host, headers))
        r = rd.response()
        times.append(time.perf_counter() - t0)
        assert r.status == 200, r.status
    s.close()
    return statistics.median(times)


def throughput(port, host, headers, nbytes):
    """Bytes per second for one streamed response of nbytes (with Content-Length)."""
    s = socket.create_connection(("127.0.0.1", port))
    buf = bytearray(1 << 20)
    body = b"{}"
    t0 = time.perf_counter()
    s.sendall(request("POST", "/v1/messages", host, headers + [("x-test-mode", "big"),
                      ("x-test-bytes", str(nbytes))], body))
    # Read the head, then count body bytes until Content-Length is reached.
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(65536)
    head, rest = head.split(b"\r\n\r\n", 1)
    got = len(rest)
    view = memoryview(buf)
    while got < nbytes:
        k = s.recv_into(view)
        if not k:
            raise RuntimeError("short response")
        got += k
    dt = time.perf_counter() - t0
    s.close()
    assert b" 200 " in head.split(b"\r\n")[0]
    return nbytes / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--mib", type=int, default=512)
    a = ap.parse_args()
    harness = os.path.join(a.build, "tests", "proxy_harness")
    procs = Procs()
    with tempfile.TemporaryDirectory() as t:
        try:
            _, up = start_upstream(procs, os.path.join(t, "up.log"))
            port = free_port()
            env = dict(os.environ, ANTHROPIC_API_KEY="sk-ant-bench-key")
            _, info = start_harness(procs, harness, os.path.join(t, "proxy.sock"),
                                    ["anthropic=http://127.0.0.1:%d,port=%d" % (up, port)], env,
                                    relay=True)
            ph = info["placeholders"]["anthropic"]
            direct = ("127.0.0.1:%d" % up, [("x-api-key", "sk-ant-bench-key")])
            proxied = ("127.0.0.1:%d" % port, [("x-api-key", ph)])
            rows = {k: [] for k in ("ka_direct", "ka_proxy", "fresh_direct", "fresh_proxy",
                                    "tp_direct", "tp_proxy")}
            nbytes = a.mib << 20
            # Warm up both paths.
            latency(up, *direct, 50, False)
            latency(port, *proxied, 50, False)
            for _ in range(a.rounds):
                rows["ka_direct"].append(latency(up, *direct, a.requests, False))
                rows["ka_proxy"].append(latency(port, *proxied, a.requests, False))
                rows["fresh_direct"].append(latency(up, *direct, a.requests // 4, True))
                rows["fresh_proxy"].append(latency(port, *proxied, a.requests // 4, True))
                rows["tp_direct"].append(throughput(up, *direct, nbytes))
                rows["tp_proxy"].append(throughput(port, *proxied, nbytes))
        finally:
            procs.stop_all()
    m = {k: statistics.median(v) for k, v in rows.items()}
    print("| measure | direct | relay + proxy | added | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for name, d, p in (("request, keep-alive connection", "ka_direct", "ka_proxy"),
                       ("request, new connection each", "fresh_direct", "fresh_proxy")):
        print("| %s (median) | %.3f ms | %.3f ms | %+.3f ms | %.2f |"
              % (name, m[d] * 1e3, m[p] * 1e3, (m[p] - m[d]) * 1e3, m[p] / m[d]))
    print("| streamed response, %d MiB (median) | %.0f MB/s | %.0f MB/s | | %.2f |"
          % (a.mib, m["tp_direct"] / 1e6, m["tp_proxy"] / 1e6, m["tp_proxy"] / m["tp_direct"]))
    print()
    print("rounds: %d; requests per round: %d keep-alive, %d new-connection; raw medians: %s"
          % (a.rounds, a.requests, a.requests // 4,
             json.dumps({k: [round(x, 6) for x in v] for k, v in rows.items()})))


if __name__ == "__main__":
    main()
