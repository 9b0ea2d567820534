"""Helpers for the proxy's integration tests and benchmark (standard library only).

Starts the fake upstream and the proxy harness as real processes, makes a test CA with the
openssl command, and speaks HTTP over real sockets (TCP to the relay, or the Unix socket).
"""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from arbtest import Checks  # noqa: E402,F401  (the shared harness)


class Arb:
    """The arborinth CLI in a test repository (made by make_repo), without the host's keys."""

    def __init__(self, exe, repo, checks):
        self.exe, self.repo, self.C = exe, repo, checks

    def __call__(self, *args, env=None, timeout=120):
        e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        e.update(env or {})
        return subprocess.run([self.exe] + list(args), capture_output=True, text=True, env=e,
                              cwd=self.repo, timeout=timeout)

    def make_repo(self, *workspaces):
        """A git repository with one commit, and workspaces created in it."""
        os.makedirs(self.repo)
        q = dict(cwd=self.repo, check=True, stdout=subprocess.DEVNULL)
        git = ["git", "-c", "user.email=t@e", "-c", "user.name=t"]
        subprocess.run(["git", "init", "-q", "-b", "main"], **q)
        with open(os.path.join(self.repo, "README"), "w") as f:
            f.write("hello\n")
        subprocess.run(git + ["add", "README"], **q)
        subprocess.run(git + ["commit", "-qm", "a"], **q)
        for name in workspaces:
            self.C.eq(0, self("workspace", "create", name).returncode, "workspace create " + name)

    def one_line_error(self, cp, code, pattern, what):
        self.C.one_line_error(cp, code, pattern, what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_ports(n):
    """n distinct free ports: each socket is held until all are chosen (free_port() called n
    times may give the same port twice: the kernel hands a closed one out again)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, argv, env=None, stdout=subprocess.PIPE):
        p = subprocess.Popen(argv, stdout=stdout, stderr=None, env=env, text=True)
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)


def start_upstream(procs, logfile, tls=None, also=None):
    argv = [sys.executable, os.path.join(HERE, "fake_upstream.py"), "--log", logfile]
    if tls:
        argv += ["--tls", tls[0], tls[1]]
    if also:
        argv += ["--also", also]
    p = procs.start(argv)
    port = int(p.stdout.readline())
    return p, port


def start_harness(procs, harness, sock, backends, env, relay=False, records=None):
    argv = [harness, "--socket", sock]
    if relay:
        argv.append("--relay")
    if records:
        argv += ["--records", records]
    for b in backends:
        argv += ["--backend", b]
    p = procs.start(argv, env=env)
    line = p.stdout.readline()
    if not line:
        raise RuntimeError("proxy harness did not start")
    return p, json.loads(line)


def make_ca(d, name, hosts):
    """A CA and a server certificate for hosts (DNS names); returns (ca, cert, key)."""
    ca_key, ca = os.path.join(d, name + "-ca.key"), os.path.join(d, name + "-ca.pem")
    key, csr, cert = (os.path.join(d, name + s) for s in (".key", ".csr", ".pem"))
    ext = os.path.join(d, name + ".ext")
    q = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    ca_key, "-out", ca, "-days", "2", "-subj", "/CN=arborinth test CA " + name],
                   **q)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
                    csr, "-subj", "/CN=" + hosts[0]], **q)
    with open(ext, "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + h for h in hosts) + "\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
                    "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext], **q)
    return ca, cert, key


def unix_conn(path, timeout=30):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def tcp_conn(port, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Response:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self):
        return json.loads(self.body)


class Reader:
    """Reads HTTP/1.1 responses from a socket, keeping leftovers for keep-alive."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def head(self):
        status = self.line().decode()
        parts = status.split(" ", 2)
        headers = []
        while True:
            line = self.line()
            if not line:
                break
            k, v = line.decode().split(":", 1)
            headers.append((k.strip(), v.strip()))
        return int(parts[1]), parts[2] if len(parts) > 2 else "", headers

    def chunks(self):
        """Yields each chunk's data as it arrives."""
        while True:
            size = int(self.line().split(b";")[0], 16)
            if size == 0:
                while self.line():
                    pass
                return
            d = self.exactly(size)
            self.exactly(2)
            yield d

    def response(self, head_only=False):
        status, reason, headers = self.head()
        r = Response(status, reason, headers, b"")
        if head_only or status in (204, 304):
            return r
        if (r.header("transfer-encoding") or "").lower() == "chunked":
            r.body = b"".join(self.chunks())
        elif r.header("content-length") is not None:
            r.body = self.exactly(int(r.header("content-length")))
        else:
            while True:
                try:
                    self._fill()
                except EOFError:
                    break
            r.body, self.buf = self.buf, b""
        return r


def request(method, path, host, headers=(), body=None, chunked=False, version="HTTP/1.1"):
    lines = ["%s %s %s" % (method, path, version)]
    if host is not None:
        lines.append("Host: " + host)
    lines += ["%s: %s" % kv for kv in headers]
    payload = b""
    if body is not None:
        if chunked:
            lines.append("Transfer-Encoding: chunked")
            step = 1 << 16
            payload = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + step]), body[i:i + step])
                               for i in range(0, len(body), step)) + b"0\r\n\r\n"
        else:
            lines.append("Content-Length: %d" % len(body))
            payload = body
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def wait_for(pred, timeout=10.0, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
