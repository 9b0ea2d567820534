"""tests/integration/fs_ops.py: every operation on the view against the same on a plain dir.

Each step runs on both trees; the outcome (result or errno) must match, and after every step
the two trees must be identical (names, types, modes, sizes, contents, link targets).
"""
import ctypes
import errno
import fcntl
import mmap
import os
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fslib  # noqa: E402

libc = ctypes.CDLL(None, use_errno=True)
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
AT_FDCWD = -100


def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pwrite(path, off, data):
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def unlinked_open(p):
    # A file that is open, then unlinked, keeps working.
    fd = os.open(p + "/src/lib/b.txt", os.O_RDONLY)
    os.unlink(p + "/src/lib/b.txt")
    data = os.pread(fd, 100, 0)
    os.close(fd)
    fd = os.open(p + "/tmpfile", os.O_RDWR | os.O_CREAT, 0o644)
    os.unlink(p + "/tmpfile")
    os.pwrite(fd, b"still here", 0)
    data += os.pread(fd, 100, 0)
    os.close(fd)
    return data


def reader_follows_copy_up(p):
    # A reader opened on the unmodified file, then a writer: the reader sees the new bytes.
    r = os.open(p + "/data/reader.bin", os.O_RDONLY)
    w = os.open(p + "/data/reader.bin", os.O_WRONLY)
    os.pwrite(w, b"NEWDATA", 4000)
    os.close(w)
    # Drop the cached pages: the bytes must come from the file behind the reader's handle.
    os.posix_fadvise(r, 0, 0, os.POSIX_FADV_DONTNEED)
    got = os.pread(r, 16, 3996)
    os.close(r)
    return got


def shared_mmap(p):
    path = p + "/docs/guide.md"
    fd = os.open(path, os.O_RDWR)
    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    m[0:6] = b"MAPPED"
    m.flush()
    m.close()
    os.close(fd)
    return read(path)[:10]


def locks(p):
    with open(p + "/README", "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(f, fcntl.LOCK_UN)
        fcntl.flock(f, fcntl.LOCK_UN)
    return "locked"


def hardlink_shares(p):
    os.link(p + "/src/main.c", p + "/main-link.c")
    write(p + "/main-link.c", "changed through the link\n", "a")
    a, b = os.stat(p + "/src/main.c"), os.stat(p + "/main-link.c")
    return (read(p + "/src/main.c"), a.st_ino == b.st_ino, a.st_nlink, b.st_nlink)


def fallocate(p):
    fd = os.open(p + "/falloc", os.O_RDWR | os.O_CREAT, 0o644)
    os.posix_fallocate(fd, 0, 65536)
    os.close(fd)
    return os.stat(p + "/falloc").st_size


def xattrs(p):
    """The view has no extended attributes (README, Known limits): every call is refused."""
    out = []
    for fn in (lambda: os.setxattr(p + "/README", "user.k", b"v"),
               lambda: os.getxattr(p + "/README", "user.k"),
               lambda: os.listxattr(p + "/src/main.c"),
               lambda: os.removexattr(p + "/README", "user.k")):
        try:
            fn()
            out.append("ok")
        except OSError as e:
            out.append(errno.errorcode[e.errno])
    return out


def rmdir_lower_after_emptying(p):
    for n in os.listdir(p + "/src/lib/deep/er"):
        os.unlink(p + "/src/lib/deep/er/" + n)
    os.rmdir(p + "/src/lib/deep/er")
    os.rmdir(p + "/src/lib/deep")
    return sorted(os.listdir(p + "/src/lib"))


def getdents(fd, size):
    """One getdents64(2) call with a small buffer: names, so a listing spans several calls."""
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(217, fd, buf, size)  # SYS_getdents64 on x86-64
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    names, pos = [], 0
    while pos < n:
        reclen = int.from_bytes(buf.raw[pos + 16:pos + 18], "little")
        name = buf.raw[pos + 19:pos + reclen].split(b"\0", 1)[0].decode()
        if name not in (".", ".."):
            names.append(name)
        pos += reclen
    return names


def readdir_while_changing(p):
    # Entries that do not change while a directory is read appear exactly once, even when
    # others are added and removed between two getdents calls of the same reader.
    d = p + "/rd"
    os.mkdir(d)
    for i in range(200):
        write(d + "/f%03d" % i, "")
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    seen = getdents(fd, 1024)
    for i in range(0, 200, 4):
        os.unlink(d + "/f%03d" % i)
    for i in range(60):
        write(d + "/g%03d" % i, "")
    while True:
        chunk = getdents(fd, 1024)
        if not chunk:
            break
        seen += chunk
    os.close(fd)
    unchanged = ["f%03d" % i for i in range(200) if i % 4]
    once = all(seen.count(n) == 1 for n in unchanged)
    return (once, len(seen) == len(set(seen)), sorted(os.listdir(d)) == sorted(
        ["f%03d" % i for i in range(200) if i % 4] + ["g%03d" % i for i in range(60)]))


def create_readonly_and_write(p):
    # open(O_CREAT, 0444) gives a writable descriptor; opening the file for writing later
    # does not (for a non-root user: fs_user runs these steps as one).
    fd = os.open(p + "/ro-new.txt", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o444)
    n = os.write(fd, b"data")
    os.close(fd)
    try:
        os.close(os.open(p + "/ro-new.txt", os.O_WRONLY))
        again = "reopened"
    except PermissionError:
        again = "EACCES"
    return (n, read(p + "/ro-new.txt"), again if os.getuid() else "root")


def write_after_unlink(p):
    # A base file opened for writing, then removed, is still written through the descriptor.
    fd = os.open(p + "/data/spare.txt", os.O_RDWR)
    os.unlink(p + "/data/spare.txt")
    os.pwrite(fd, b"AFTER", 0)
    os.ftruncate(fd, 50)
    got = os.pread(fd, 100, 0)
    os.fsync(fd)
    os.close(fd)
    return got


def write_after_chmod(p):
    # A descriptor opened for writing keeps writing after the file is made read-only.
    fd = os.open(p + "/docs/guide.md", os.O_RDWR)
    os.chmod(p + "/docs/guide.md", 0o444)
    os.pwrite(fd, b"STILL", 0)
    os.close(fd)
    os.chmod(p + "/docs/guide.md", 0o644)
    return read(p + "/docs/guide.md")[:8]


def seek_data_hole(p):
    out = []
    for name in ("/src/lib/a.txt", "/sparse"):
        path = p + name
        if name == "/sparse":
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            os.pwrite(fd, b"end", 1 << 20)
            os.close(fd)
        fd = os.open(path, os.O_RDONLY)
        try:
            out.append((os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE)))
        finally:
            os.close(fd)
    return out


def recreate_dir(p):
    os.mkdir(p + "/docs2")
    write(p + "/docs2/x", "x")
    os.unlink(p + "/docs2/x")
    os.rmdir(p + "/docs2")
    for n in os.listdir(p + "/docs/img"):
        os.unlink(p + "/docs/img/" + n)
    os.rmdir(p + "/docs/img")
    os.mkdir(p + "/docs/img")
    return os.listdir(p + "/docs/img")


STEPS = [
    ("read lower file", lambda p: read(p + "/src/lib/a.txt")),
    ("SEEK_DATA and SEEK_HOLE", seek_data_hole),
    ("readlink lower", lambda p: os.readlink(p + "/link")),
    ("read through dir symlink", lambda p: read(p + "/dirlink/b.txt")),
    ("dangling symlink", lambda p: read(p + "/dangling")),
    ("listdir root", lambda p: sorted(x for x in os.listdir(p) if x != ".git")),
    ("create O_EXCL", lambda p: os.close(os.open(p + "/new.txt", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640))),
    ("create O_EXCL existing lower", lambda p: os.open(p + "/README", os.O_CREAT | os.O_EXCL | os.O_WRONLY)),
    ("write new file", lambda p: write(p + "/new.txt", "new content\n")),
    ("O_TRUNC lower", lambda p: write(p + "/src/lib/b.txt", "truncated\n")),
    ("O_APPEND lower", lambda p: write(p + "/README", "appended\n", "a")),
    ("pwrite into lower", lambda p: pwrite(p + "/docs/guide.md", 3, b"XYZ")),
    ("truncate grow", lambda p: os.truncate(p + "/src/main.c", 100)),
    ("truncate shrink", lambda p: os.truncate(p + "/docs/img/pic.bin", 10)),
    ("ftruncate", lambda p: os.truncate(p + "/new.txt", 3)),
    ("unlink lower", lambda p: os.unlink(p + "/empty")),
    ("unlink missing", lambda p: os.unlink(p + "/empty")),
    ("unlink upper", lambda p: os.unlink(p + "/new.txt")),
    ("unlink dir", lambda p: os.unlink(p + "/src")),
    ("mkdir", lambda p: os.mkdir(p + "/newdir", 0o750)),
    ("mkdir existing lower", lambda p: os.mkdir(p + "/src")),
    ("rmdir lower non-empty", lambda p: os.rmdir(p + "/src/lib/deep")),
    ("rmdir file", lambda p: os.rmdir(p + "/README")),
    ("rmdir lower after emptying", rmdir_lower_after_emptying),
    ("recreate deleted dir is empty", recreate_dir),
    ("rename lower file", lambda p: os.rename(p + "/src/lib/a.txt", p + "/a-moved.txt")),
    ("rename over lower file", lambda p: os.rename(p + "/a-moved.txt", p + "/src/lib/b.txt")),
    ("rename missing", lambda p: os.rename(p + "/nope", p + "/nope2")),
    ("rename NOREPLACE existing", lambda p: renameat2(p + "/README", p + "/run.sh", RENAME_NOREPLACE)),
    ("rename NOREPLACE free", lambda p: renameat2(p + "/README", p + "/README2", RENAME_NOREPLACE)),
    ("rename EXCHANGE files", lambda p: renameat2(p + "/README2", p + "/run.sh", RENAME_EXCHANGE)),
    ("rename EXCHANGE file/dir", lambda p: renameat2(p + "/run.sh", p + "/docs", RENAME_EXCHANGE)),
    ("rename EXCHANGE back", lambda p: renameat2(p + "/run.sh", p + "/docs", RENAME_EXCHANGE)),
    ("rename lower dir", lambda p: os.rename(p + "/src/lib", p + "/lib-moved")),
    ("moved dir children", lambda p: (sorted(os.listdir(p + "/lib-moved")), read(p + "/lib-moved/b.txt"))),
    ("rename partly modified dir", lambda p: (write(p + "/src/extra.c", "x"), os.rename(p + "/src", p + "/source"))),
    ("moved dir, modified child", lambda p: sorted(os.listdir(p + "/source"))),
    ("rename dir back to old name", lambda p: os.rename(p + "/source", p + "/src")),
    ("rename dir over empty dir", lambda p: os.rename(p + "/lib-moved", p + "/newdir")),
    ("rename dir over non-empty", lambda p: os.rename(p + "/newdir", p + "/src")),
    ("rename dir over file", lambda p: os.rename(p + "/newdir", p + "/link")),
    ("rename dir into itself", lambda p: os.rename(p + "/src", p + "/src/inner")),
    ("rename dir exchange with dir", lambda p: renameat2(p + "/src", p + "/newdir", RENAME_EXCHANGE)),
    ("nested moved dirs", lambda p: (os.rename(p + "/newdir", p + "/docs/nd"), sorted(os.listdir(p + "/docs/nd")))),
    ("symlink", lambda p: os.symlink("../target/x", p + "/sym")),
    ("symlink existing", lambda p: os.symlink("x", p + "/sym")),
    ("readlink new", lambda p: os.readlink(p + "/sym")),
    ("hard link lower file", hardlink_shares),
    ("hard link dir", lambda p: os.link(p + "/docs", p + "/docs-link")),
    ("chmod lower", lambda p: os.chmod(p + "/docs/guide.md", 0o600)),
    ("chmod dir", lambda p: os.chmod(p + "/docs", 0o700)),
    ("chown same", lambda p: os.chown(p + "/link", os.getuid(), os.getgid(), follow_symlinks=False)),
    ("utime", lambda p: os.utime(p + "/src/main.c", (1000000000, 1000000000))),
    ("utime result", lambda p: int(os.stat(p + "/src/main.c").st_mtime)),
    ("fsync", lambda p: (lambda fd: (os.fsync(fd), os.fdatasync(fd), os.close(fd)))(os.open(p + "/src/main.c", os.O_RDWR))),
    ("mkfifo", lambda p: os.mkfifo(p + "/fifo", 0o600)),
    ("fallocate", fallocate),
    ("shared mmap", shared_mmap),
    ("write after chmod 0444", write_after_chmod),
    ("write after unlink", write_after_unlink),
    ("create 0444 and write", create_readonly_and_write),
    ("readdir while changing", readdir_while_changing),
    ("reader follows copy-up", reader_follows_copy_up),
    ("locks", locks),
    ("name 255", lambda p: write(p + "/" + "n" * 255, "long")),
    ("name 256", lambda p: write(p + "/" + "n" * 256, "too long")),
    ("unlinked but open", unlinked_open),
    ("deep create", lambda p: (os.makedirs(p + "/a/b/c/d"), write(p + "/a/b/c/d/e", "deep"))),
]


def outcome(fn, root):
    try:
        r = fn(root)
        return ("ok", r)
    except OSError as e:
        return ("err", errno.errorcode.get(e.errno, e.errno))


def stat_checks(fx, c):
    v = fx.root
    st = os.stat(v + "/src/lib/a.txt")
    want = int(time.mktime(time.strptime(fslib.COMMIT_DATE, "%Y-%m-%dT%H:%M:%SZ"))) - time.timezone
    c.eq(want, int(st.st_mtime), "lower file mtime = commit time")
    c.eq(want, int(st.st_ctime), "lower file ctime = commit time")
    c.eq(101, st.st_size, "lower file size = blob size")
    c.eq(0o755, stat.S_IMODE(os.stat(v + "/run.sh").st_mode), "executable mode from tree")
    c.eq(os.getuid(), st.st_uid, "uid of the mounter")
    inos = [os.lstat(os.path.join(d, n)).st_ino for d, ds, fs in os.walk(v) for n in ds + fs]
    c.eq(len(inos), len(set(inos)), "inode numbers unique")
    before = os.stat(v + "/src/main.c").st_ino
    write(v + "/src/main.c", "x", "a")
    c.eq(before, os.stat(v + "/src/main.c").st_ino, "copy-up keeps the inode number")
    try:
        os.mknod(v + "/wh", stat.S_IFCHR | 0o600, os.makedev(0, 0))
        c.ok(False, "mknod of a 0/0 char device is refused")
    except OSError as e:
        c.eq(errno.EPERM, e.errno, "mknod 0/0 refused with EPERM")
    sv = os.statvfs(v)
    c.eq(255, sv.f_namemax, "statfs namemax")
    c.eq([errno.errorcode[errno.EOPNOTSUPP]] * 4, xattrs(v), "no xattrs: set, get, list, remove refused")


def main():
    c = fslib.Checks()
    fx = fslib.Fixture()
    try:
        stat_checks(fx, c)
        # Bring the plain copy to the same state as the view after stat_checks.
        write(fx.plain + "/src/main.c", "x", "a")
        for name, fn in STEPS:
            got = outcome(fn, fx.root)
            want = outcome(fn, fx.plain)
            c.eq(want, got, name)
            diff = fslib.diff_snapshots(fslib.snapshot(fx.root), fslib.snapshot(fx.plain))
            c.ok(not diff, "%s: trees differ:\n  %s" % (name, "\n  ".join(diff[:10])))
        # Everything above survives an unmount and a remount.
        before = fslib.snapshot(fx.root)
        fx.arb("workspace", "unmount", fx.name)
        c.ok(not os.path.exists(fx.root + "/README2"), "unmounted view is empty")
        fx.arb("workspace", "mount", fx.name)
        diff = fslib.diff_snapshots(fslib.snapshot(fx.root), before)
        c.ok(not diff, "remount keeps everything:\n  " + "\n  ".join(diff[:10]))
    finally:
        fx.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
