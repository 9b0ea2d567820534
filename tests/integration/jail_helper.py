#!/usr/bin/env python3
"""tests/integration/jail_helper.py: network and terminal probes for the jail tests.

Python standard library only; runs inside a box (as /tmp/helper.py) and on the host. Each
probe prints "ok" (or a result) when it succeeded, else the errno name, and exits 0 or 1.

  helper.py tcp HOST PORT          connect, send "ping", expect "pong"
  helper.py udp HOST PORT WORD     send one datagram
  helper.py dns NAME               resolve NAME (prints the address)
  helper.py abstract NAME          connect to the abstract unix socket @NAME
  helper.py loopback               TCP server and client on 127.0.0.1 in this process
  helper.py serve DIR              host side: TCP, UDP, abstract-socket and DNS listeners;
                                   writes DIR/env (PORT=...), logs datagrams to DIR/udp.log
  helper.py pty TIMEOUT SEND -- ARGV...
                                   runs ARGV on a new pseudo-terminal (its controlling
                                   terminal), writes SEND (escapes allowed) once it started,
                                   prints everything it printed, then "[exit N]"
  helper.py interactive -- ARGV... an interactive shell session under a pty (see jail_pty.sh)
"""
import errno
import os
import select
import signal
import socket
import struct
import sys
import threading
import time


def fail(e):
    print(errno.errorcode.get(e.errno, str(e)) if getattr(e, "errno", None) else str(e))
    sys.exit(1)


def tcp(host, port):
    try:
        with socket.create_connection((host, int(port)), timeout=3) as s:
            s.sendall(b"ping")
            if s.recv(4) != b"pong":
                print("no-reply")
                sys.exit(1)
    except OSError as e:
        fail(e)
    print("ok")


def udp(host, port, word):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(word.encode(), (host, int(port)))
    except OSError as e:
        fail(e)
    print("ok")


def dns(name):
    try:
        infos = socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
    except socket.gaierror as e:
        print("gaierror", e.errno)
        sys.exit(1)
    print(infos[0][4][0])


def abstract(name):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect("\0" + name)
            s.sendall(b"ping")
            if s.recv(4) != b"pong":
                print("no-reply")
                sys.exit(1)
    except OSError as e:
        fail(e)
    print("ok")


def serve_stream(srv):
    def handle(c):
        with c:
            try:
                if c.recv(4) == b"ping":
                    c.sendall(b"pong")
            except OSError:
                pass

    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def loopback():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    threading.Thread(target=serve_stream, args=(srv,), daemon=True).start()
    tcp("127.0.0.1", srv.getsockname()[1])


def dns_answer(q):
    """A minimal DNS server reply: A 10.1.2.3 for *.arb-test.example, else NXDOMAIN."""
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
        i += q[i] + 1
    question = q[12:i + 5]
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    name = ".".join(labels).lower()
    ok = name.endswith("arb-test.example")
    answers = 1 if ok and qtype == 1 else 0
    head = struct.pack("!HHHHHH", qid, 0x8180 if ok else 0x8183, 1, answers, 0, 0)
    body = question
    if answers:
        body += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + bytes([10, 1, 2, 3])
    return head + body


def serve(d):
    tcp_srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp_srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp_srv.bind(("127.0.0.1", 0))
    tcp_srv.listen()
    udp_srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp_srv.bind(("127.0.0.1", 0))
    abs_name = "arb-jail-test-%d" % os.getpid()
    abs_srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abs_srv.bind("\0" + abs_name)
    abs_srv.listen()
    dns_srv, dns_ip = None, "127.0.0.77"
    try:
        dns_srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        dns_srv.bind((dns_ip, 53))
    except OSError:
        dns_srv = None
    for srv in (tcp_srv, abs_srv):
        threading.Thread(target=serve_stream, args=(srv,), daemon=True).start()

    def udp_loop():
        while True:
            data, _ = udp_srv.recvfrom(512)
            with open(os.path.join(d, "udp.log"), "ab") as f:
                f.write(data + b"\n")

    def dns_loop():
        while True:
            q, addr = dns_srv.recvfrom(512)
            try:
                dns_srv.sendto(dns_answer(q), addr)
            except Exception:
                pass

    threading.Thread(target=udp_loop, daemon=True).start()
    if dns_srv:
        threading.Thread(target=dns_loop, daemon=True).start()
    with open(os.path.join(d, "env.tmp"), "w") as f:
        f.write("TCP_PORT=%d\nUDP_PORT=%d\nABSTRACT=%s\nDNS_IP=%s\n" % (
            tcp_srv.getsockname()[1], udp_srv.getsockname()[1], abs_name,
            dns_ip if dns_srv else ""))
    os.rename(os.path.join(d, "env.tmp"), os.path.join(d, "env"))
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


def spawn(argv):
    """Starts argv on a new pty as its controlling terminal; returns (pid, master fd)."""
    pid, fd = os.forkpty()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    return pid, fd


def read_until(fd, want, timeout, buf):
    """Reads from fd into buf (a bytearray) until `want` (bytes) appears; True if it did."""
    end = time.time() + timeout
    while want not in buf:
        left = end - time.time()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return want in buf
        if not chunk:
            return want in buf
        buf += chunk
    return True


def drain(fd, buf, timeout):
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk


def pty_run(timeout, send, argv):
    pid, fd = spawn(argv)
    buf = bytearray()
    if send:
        time.sleep(0.3)
        os.write(fd, send.encode().decode("unicode_escape").encode("latin-1"))
    end = time.time() + float(timeout)
    status = None
    while time.time() < end:
        drain(fd, buf, 0.1)
        p, st = os.waitpid(pid, os.WNOHANG)
        if p:
            status = st
            break
    drain(fd, buf, 0.2)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    sys.stdout.write(buf.decode(errors="replace").replace("\r", ""))
    print("[exit %d]" % os.waitstatus_to_exitcode(status))


def interactive(argv):
    """Drives an interactive shell in the box; prints one line per check: NAME ok|FAIL ..."""
    pid, fd = spawn(argv)
    buf = bytearray()
    results = []

    def check(name, cond, detail=""):
        results.append("%s %s%s" % (name, "ok" if cond else "FAIL", "" if cond else
                                    " " + detail[-400:].replace("\n", "\\n")))

    def cmd(line, want, timeout=10):
        start = len(buf)
        os.write(fd, line.encode() + b"\n")
        ok = read_until(fd, want.encode(), timeout, buf)
        return ok, buf[start:].decode(errors="replace")

    ok = read_until(fd, b"$ ", 15, buf) or read_until(fd, b"# ", 1, buf)
    check("prompt", ok, buf.decode(errors="replace"))
    text = buf.decode(errors="replace")
    check("job-control-enabled", "no job control" not in text and "cannot set terminal" not in text,
          text)
    ok, out = cmd("echo marker-$((40+2))", "marker-42")
    check("echo", ok, out)
    ok, out = cmd("sleep 300 & jobs", "Running")
    check("background-job", ok, out)
    ok, out = cmd("kill %1; wait; echo killed-$?", "killed-")
    check("kill-job", ok, out)
    # Ctrl-Z stops a foreground job; fg brings it back; Ctrl-C ends it.
    os.write(fd, b"sleep 300\n")
    time.sleep(0.5)
    os.write(fd, b"\x1a")
    ok = read_until(fd, b"Stopped", 10, buf)
    check("ctrl-z", ok, buf.decode(errors="replace"))
    ok, out = cmd("jobs -l", "Stopped")
    check("stopped-job", ok, out)
    os.write(fd, b"fg\n")
    time.sleep(0.5)
    os.write(fd, b"\x03")
    ok, out = cmd("echo after-ctrl-c-$?", "after-ctrl-c-130")
    check("fg-ctrl-c", ok, out)
    # Window resize reaches the box: stty sees the new size.
    import fcntl
    import termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    ok, out = cmd("stty size", "33 101")
    check("resize", ok, out)
    ok, out = cmd("trap 'echo got-winch' WINCH; kill -WINCH $$; echo sent", "got-winch")
    check("winch-trap", ok, out)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    ok, out = cmd("echo resized", "got-winch")
    check("winch-from-resize", ok, out)
    os.write(fd, b"exit 7\n")
    drain(fd, buf, 1)
    _, status = os.waitpid(pid, 0)
    check("exit-status", os.waitstatus_to_exitcode(status) == 7, str(status))
    print("\n".join(results))
    sys.exit(0 if all(" ok" in r for r in results) else 1)


def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        sys.exit(2)
    what = a[0]
    if what == "tcp":
        tcp(a[1], a[2])
    elif what == "udp":
        udp(a[1], a[2], a[3])
    elif what == "dns":
        dns(a[1])
    elif what == "abstract":
        abstract(a[1])
    elif what == "loopback":
        loopback()
    elif what == "serve":
        serve(a[1])
    elif what == "pty":
        pty_run(a[1], a[2], a[a.index("--") + 1:])
    elif what == "interactive":
        interactive(a[a.index("--") + 1:])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
