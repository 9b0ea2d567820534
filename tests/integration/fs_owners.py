"""tests/integration/fs_owners.py: the view is right for every caller (needs root).

A workspace is mounted with --allow-other and the same sequence of operations runs as three
identities (two unprivileged users, one of them in a shared group, then root) on the view and
on a native ext4 directory holding the same base tree, set up alike by root: creating files,
directories, links, FIFOs and device nodes (in a sticky directory and in a set-group-ID one,
under two umasks), chmod, chown and chgrp of one's own and of others' files, utimens with
explicit times and with "now", writes to others' files and to a set-ID file, hard links to
others' files, unlink and rename in the sticky directory, changes to base files. Every
result (the stat of what was made or changed, or the errno) must be the same on both, and so
must the trees at the end (type, mode, owner, group, size of every entry), except where the
docs/workspaces.md says the view differs (a 0/0 character device, user.arborinth.* xattrs). Controls: a
private mount refuses the other users; the native run really shows both outcomes (refusals
and successes) for each unprivileged user. Without user_allow_other in /etc/fuse.conf, a
user that is not root gets a one-line error from create --allow-other and no workspace.
"""
import errno
import json
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fslib import Checks, Fixture, skip  # noqa: E402

SHARED_GID = 2000
IDS = [("u1", 1001, 1001, [1001, SHARED_GID]), ("u2", 1002, 1002, [1002]),
       ("root", 0, 0, [0])]


def st(p):
    s = os.lstat(p)
    return [stat.S_IFMT(s.st_mode), oct(stat.S_IMODE(s.st_mode)), s.st_uid, s.st_gid,
            s.st_size if stat.S_ISREG(s.st_mode) else None]


def setup(top):
    """As root, in both trees: the places the identities work in."""
    os.chmod(top, 0o755)
    os.mkdir(top + "/shared", 0o755)
    os.chmod(top + "/shared", 0o1777)
    os.mkdir(top + "/sg", 0o755)
    os.chown(top + "/sg", 0, SHARED_GID)
    os.chmod(top + "/sg", 0o2777)
    os.mkdir(top + "/closed", 0o755)
    for name, mode in (("rootfile", 0o644), ("open666", 0o666), ("setid", 0o6777)):
        with open(top + "/shared/" + name, "w") as f:
            f.write("root's\n")
        os.chmod(top + "/shared/" + name, mode)


def ops(top, tag, uid):
    """The sequence; returns [name, result] pairs (a stat, "ok", or an errno name)."""
    out = []
    S = top + "/shared"
    f, d, sgf, sgd = S + "/f_" + tag, S + "/d_" + tag, top + "/sg/f_" + tag, top + "/sg/d_" + tag
    other = 1002 if uid != 1002 else 1001

    def do(name, fn):
        try:
            v = fn()
            out.append([name, v if v is not None else "ok"])
        except OSError as e:
            out.append([name, errno.errorcode.get(e.errno, str(e.errno))])

    def create(p, mode):
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
        return st(p)

    def append(p):
        with open(p, "a") as fh:
            fh.write("more\n")
        return st(p)

    os.umask(0o022)
    do("create", lambda: create(f, 0o666))
    do("mkdir", lambda: (os.mkdir(d, 0o777), st(d))[1])
    do("symlink", lambda: (os.symlink("f_" + tag, S + "/l_" + tag), st(S + "/l_" + tag))[1])
    do("mkfifo", lambda: (os.mkfifo(S + "/p_" + tag, 0o666), st(S + "/p_" + tag))[1])
    do("mknod chr", lambda: (os.mknod(S + "/c_" + tag, stat.S_IFCHR | 0o600, os.makedev(1, 3)),
                             st(S + "/c_" + tag))[1])
    do("create in set-gid dir", lambda: create(sgf, 0o666))
    do("create set-gid file in set-gid dir", lambda: create(sgf + "x", 0o2755))
    do("mkdir in set-gid dir", lambda: (os.mkdir(sgd, 0o777), st(sgd))[1])
    do("create in a closed dir", lambda: create(top + "/closed/x_" + tag, 0o644))
    os.umask(0o077)
    do("create under umask 077", lambda: create(f + ".u", 0o666))
    do("mkdir under umask 077", lambda: (os.mkdir(d + ".u", 0o777), st(d + ".u"))[1])
    os.umask(0o022)
    do("chmod own", lambda: (os.chmod(f, 0o640), st(f))[1])
    do("chmod own set-uid", lambda: (os.chmod(f, 0o4755), st(f))[1])
    do("write own set-uid", lambda: append(f))
    do("chmod other's", lambda: (os.chmod(S + "/rootfile", 0o600), st(S + "/rootfile"))[1])
    do("chown own away", lambda: (os.chown(f + ".u", other, -1), st(f + ".u"))[1])
    do("chown own to self", lambda: (os.chown(f, uid, -1), st(f))[1])
    do("chgrp own to shared group", lambda: (os.chown(f, -1, SHARED_GID), st(f))[1])
    do("chgrp own to a foreign group", lambda: (os.chown(f, -1, 3000), st(f))[1])
    do("utime own", lambda: (os.utime(f, (1, 2)), os.stat(f).st_mtime)[1])
    do("utime other's explicit", lambda: os.utime(S + "/open666", (1, 2)))
    do("utime other's now, writable", lambda: os.utime(S + "/open666", None))
    do("utime other's now, read-only", lambda: os.utime(S + "/rootfile", None))
    do("write other's read-only", lambda: append(S + "/rootfile"))
    do("write other's writable", lambda: append(S + "/open666"))
    do("write other's set-id", lambda: append(S + "/setid"))
    do("hard link other's", lambda: os.link(S + "/rootfile", S + "/h_" + tag))
    do("hard link own", lambda: (os.link(f, S + "/h_" + tag), st(S + "/h_" + tag))[1])
    do("rename other's", lambda: os.rename(S + "/open666", S + "/moved_" + tag))
    do("rename own", lambda: (os.rename(d, d + ".r"), st(d + ".r"))[1])
    do("chmod base file", lambda: (os.chmod(top + "/src/main.c", 0o600),
                                   st(top + "/src/main.c"))[1])
    do("write base file", lambda: append(top + "/docs/guide.md"))
    do("chmod set-gid dir", lambda: os.chmod(top + "/sg", 0o777))
    do("unlink other's", lambda: os.unlink(S + "/rootfile"))
    do("unlink own", lambda: os.unlink(S + "/h_" + tag))
    do("rmdir own", lambda: os.rmdir(d + ".u"))
    return out


def as_identity(ident, fn):
    """Runs fn() in a child with ident's uid, gid and groups; returns its JSON result."""
    _, uid, gid, groups = ident
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            data = json.dumps(fn()).encode()
            os.write(w, data)
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b"null")


def refused_without_fuse_conf(fx, c):
    """Not root and no user_allow_other: a one-line error, and no workspace is left."""
    with open("/etc/fuse.conf") as f:
        if any(line.strip().startswith("user_allow_other") for line in f):
            return
    home = os.path.join(fx.tmp, "u1home")
    os.mkdir(home)
    os.chown(home, 1001, 1001)

    def attempt():
        env = dict(os.environ, HOME=home)
        repo = os.path.join(home, "r")
        for cmd in (["git", "init", "-q", repo], ["git", "-C", repo, "commit", "-q",
                                                  "--allow-empty", "-m", "i"]):
            subprocess.run(cmd, env=dict(env, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x",
                                         GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x"),
                           check=True)
        arb = [os.environ["ARB"], "--workdir", repo, "workspace"]
        p = subprocess.run(arb + ["create", "w", "--allow-other"], env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        listed = subprocess.run(arb + ["list"], env=env, text=True, stdout=subprocess.PIPE)
        return [p.returncode, p.stderr, listed.stdout]

    status, err, listed = as_identity(IDS[0], attempt)
    c.eq(1, status, "create --allow-other without user_allow_other, not root")
    c.ok("user_allow_other" in err and len(err.strip().splitlines()) == 1,
         "one line naming user_allow_other: %r" % err)
    c.eq("", listed, "no workspace left behind")


def reserved(view, native, c):
    """Where the view must differ (docs/workspaces.md, Known limits): the names it keeps for itself."""
    def attempt(top):
        out = []
        for name, fn in (
                ("0/0 character device", lambda: os.mknod(top + "/wh", stat.S_IFCHR | 0o600,
                                                          os.makedev(0, 0))),
                ("user.arborinth.* xattr", lambda: os.setxattr(top + "/shared",
                                                               "user.arborinth.x", b"1"))):
            try:
                fn()
                out.append([name, "ok"])
            except OSError as e:
                out.append([name, errno.errorcode[e.errno]])
        return out

    got_native = attempt(native)
    got_view = attempt(view)
    c.eq([["0/0 character device", "ok"], ["user.arborinth.* xattr", "ok"]], got_native,
         "reserved names work natively")
    c.eq("EPERM", got_view[0][1], "the view refuses a 0/0 character device")
    c.eq(errno.errorcode[errno.EOPNOTSUPP], got_view[1][1], "the view refuses user.arborinth.* xattrs (it has none)")


def tree(top):
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [n for n in dirnames if n != ".git"]
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, top)] = st(p)
    return out


def main():
    if os.geteuid() != 0:
        skip("needs root (runs operations as several users)")
    fx = Fixture()
    c = Checks()
    try:
        for p in (fx.tmp, fx.repo):
            os.chmod(p, 0o755)
        view = fx.root
        native = os.path.join(fx.tmp, "native")
        shutil.copytree(fx.plain, native, symlinks=True)
        u1 = IDS[0]

        # Control: the private view (the default) is the owner's only.
        denied = as_identity(u1, lambda: [os.path.exists(view + "/README"),
                                          os.access(view, os.R_OK)])
        c.eq([False, False], denied, "a private view is closed to other users")
        fx.arb("workspace", "unmount", "w")
        p = fx.arb("workspace", "mount", "w", "--allow-other", check=False)
        c.eq(0, p.returncode, "mount --allow-other (%s)" % p.stderr)
        c.eq(0o711, stat.S_IMODE(os.stat(os.path.dirname(view)).st_mode),
             "the workspace folder is searchable by others, not listable")

        for top in (view, native):
            setup(top)
        for ident in IDS:
            got_view = as_identity(ident, lambda: ops(view, ident[0], ident[1]))
            got_native = as_identity(ident, lambda: ops(native, ident[0], ident[1]))
            c.ok(got_native is not None and got_view is not None, ident[0] + ": ran")
            for a, b in zip(got_view or [], got_native or []):
                c.eq(b, a, "%s: %s (view vs native)" % (ident[0], a[0]))
            if ident[1] != 0:
                results = [r for _, r in got_native or []]
                c.ok("EPERM" in results and "EACCES" in results and
                     any(isinstance(r, list) for r in results),
                     ident[0] + ": the native run shows refusals and successes")
        reserved(view, native, c)
        tv, tn = tree(view), tree(native)
        for k in sorted((set(tv) | set(tn)) - {"wh"}):
            c.eq(tn.get(k), tv.get(k), "final tree: " + k)

        refused_without_fuse_conf(fx, c)

        # Back to private: other users are refused again.
        fx.arb("workspace", "unmount", "w")
        fx.arb("workspace", "mount", "w")
        c.eq(0o700, stat.S_IMODE(os.stat(os.path.dirname(view)).st_mode),
             "a private mount closes the workspace folder again")
    finally:
        fx.cleanup()
    c.finish()


main()
