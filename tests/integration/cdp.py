"""tests/integration/cdp.py: a headless Chromium driven over the DevTools protocol, with a
WebSocket client written on the standard library (RFC 6455, text frames only): enough to
load a page, run script in it, wait for a condition and take screenshots.
"""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.s = socket.create_connection((u.hostname, u.port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.hostname, u.port, key))
                       .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            c = self.s.recv(1)
            if not c:
                raise ConnectionError("DevTools closed the connection")
            head += c
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError("no WebSocket: %r" % head[:200])

    def _exact(self, n):
        out = b""
        while len(out) < n:
            c = self.s.recv(n - len(out))
            if not c:
                raise ConnectionError("DevTools closed the connection")
            out += c
        return out

    def send(self, text, op=0x1):
        data = text.encode() if isinstance(text, str) else text
        hdr = bytearray([0x80 | op])
        n = len(data)
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr.append(0x80 | 126)
            hdr += n.to_bytes(2, "big")
        else:
            hdr.append(0x80 | 127)
            hdr += n.to_bytes(8, "big")
        mask = os.urandom(4)
        hdr += mask
        self.s.sendall(bytes(hdr) + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._exact(2), "big")
            elif n == 127:
                n = int.from_bytes(self._exact(8), "big")
            payload = self._exact(n)
            op = b0 & 0x0F
            if op == 0x9:
                self.send(payload, 0xA)
                continue
            if op == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Browser:
    """chromium --headless with one page; eval() runs script there (awaiting promises)."""

    def __init__(self):
        exe = find_chromium()
        if not exe:
            raise FileNotFoundError("no chromium")
        self.profile = tempfile.mkdtemp(prefix="arb-cdp-")
        args = [exe, "--headless=new", "--disable-gpu", "--no-first-run",
                "--disable-dev-shm-usage", "--remote-debugging-port=0",
                "--user-data-dir=" + self.profile, "--window-size=1400,1000", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        port = None
        deadline = time.time() + 30
        while port is None and time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            self.close()
            raise RuntimeError("chromium did not start its DevTools server")
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        page = [t for t in targets if t.get("type") == "page"][0]
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == my:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("script failed: %s" % json.dumps(r["exceptionDetails"])[:500])
        return r["result"].get("value")

    def goto(self, url):
        self.call("Page.navigate", url=url)

    def wait(self, expr, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                v = self.eval(expr)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError("timed out waiting for: " + expr)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
