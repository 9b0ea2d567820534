"""arborinth: workspaces without clones, boxes and an audit trail for untrusted code on a git
repository. Python bindings (ctypes, standard library only) over libarborinth.

    from arborinth import Project
    from arborinth.shell import JailBackend, MountSpec
"""
import ctypes
import os
import pathlib
import tempfile

from . import _lib
from ._lib import check, dec, enc, lib
from .errors import ArborinthError, ArborinthInputError
from .shell import JailBackend, MountSpec, ShellResult

__all__ = ["Project", "Workspace", "ArborinthError", "ArborinthInputError", "JailBackend",
           "MountSpec", "ShellResult", "library_version", "projects", "prune_projects"]

_KINDS = {"fs": 1, "exec": 2, "net": 4}


def library_version():
    v = [ctypes.c_int(), ctypes.c_int(), ctypes.c_int()]
    lib.arb_version(*[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


def projects():
    """The roots of the user's projects (every repository arborinth keeps state for), as
    `workspace list --all` reads them: entries that no longer name a project of this user's
    are left out."""
    arr = _lib.c_char_pp()
    n = ctypes.c_size_t()
    check(lib.arb_projects_list(ctypes.byref(arr), ctypes.byref(n)))
    try:
        return [pathlib.Path(dec(arr[i])) for i in range(n.value)]
    finally:
        lib.arb_projects_free(arr, n)


def prune_projects():
    """Drops entries of gone projects from the user's list; returns how many."""
    n = ctypes.c_size_t()
    check(lib.arb_projects_prune(ctypes.byref(n)))
    return n.value


class Project:
    """The git repository containing `workdir` (default: the current directory)."""

    def __init__(self, workdir=None):
        if workdir is not None and not os.path.isdir(workdir):
            raise ArborinthInputError("%s is not a directory" % workdir)
        self._h = ctypes.c_void_p()
        check(lib.arb_project_open(ctypes.byref(self._h), enc(workdir)))

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            lib.arb_project_free(h)
            self._h = None

    @property
    def repo_root_path(self):
        return pathlib.Path(dec(lib.arb_project_root(self._h)))

    def create_workspace(self, name, rev=None, dirty=False, io=None):
        """A new workspace at `rev` (default HEAD), its view mounted. dirty: carry the
        checkout's uncommitted changes too. io: "daemon" (default) or "passthrough" (files
        created in the view written by the kernel straight into the upper layer; root)."""
        h = ctypes.c_void_p()
        check(lib.arb_workspace_create(ctypes.byref(h), self._h, enc(name), enc(rev),
                                       (1 if dirty else 0) | _io_flag(io)))
        return Workspace._wrap(self, h)

    def fork_workspace(self, name, source, checkpoint=None):
        """A new workspace whose base is workspace `source`'s checkpoint (default: its view
        now), independent of it afterwards."""
        h = ctypes.c_void_p()
        check(lib.arb_workspace_fork(ctypes.byref(h), self._h, enc(name), enc(source),
                                     enc(None if checkpoint is None else str(checkpoint)), 0))
        return Workspace._wrap(self, h)

    def workspace(self, name):
        h = ctypes.c_void_p()
        check(lib.arb_workspace_get(ctypes.byref(h), self._h, enc(name)))
        return Workspace._wrap(self, h)

    def remove_workspace(self, name, force=False, purge=False):
        """`workspace delete NAME`: refuses (ArborinthError, errno ENOTEMPTY, the library's
        message counting them; nothing changed) when the workspace has commits no ref of the
        origin reaches or files not in its branch's last commit, unless force. Always refused
        (EBUSY) while a session of it runs or processes keep its view busy. purge: its audit
        history goes too."""
        check(lib.arb_workspace_remove(self._h, enc(name),
                                       (1 if force else 0) | (2 if purge else 0)))

    def gc(self, dry_run=False, purge=False):
        """`arborinth gc`: reclaims what no workspace uses. dry_run: changes nothing, says
        what would go. purge: also folders of no workspace and the audit history of deleted
        workspaces. Returns what `gc --json` prints: {"dry_run", "bytes", "items": [{"removed",
        "what", "path", "bytes"}], "projects_dropped"} (gone projects dropped from the user's
        list, as gc does, unless dry_run)."""
        items = []

        def item(_arg, removed, what, path, size):
            items.append({"removed": bool(removed), "what": dec(what), "path": dec(path),
                          "bytes": size})
        fn = _lib.GcFn(item)
        total = ctypes.c_uint64()
        check(lib.arb_project_gc(self._h, (1 if dry_run else 0) | (2 if purge else 0), fn,
                                 None, ctypes.byref(total)))
        return {"dry_run": bool(dry_run), "bytes": total.value, "items": items,
                "projects_dropped": 0 if dry_run else prune_projects()}

    @property
    def workspaces(self):
        arr = ctypes.POINTER(ctypes.c_void_p)()
        n = ctypes.c_size_t()
        check(lib.arb_workspace_list(ctypes.byref(arr), ctypes.byref(n), self._h))
        try:
            return [Workspace._snapshot(self, arr[i]) for i in range(n.value)]
        finally:
            lib.arb_workspace_list_free(arr, n)


def _io_flag(io):
    if io is None:
        return 0
    if io not in ("daemon", "passthrough"):
        raise ArborinthInputError("io %r is not daemon or passthrough" % io)
    return 4 if io == "passthrough" else 8


class Workspace:
    """A workspace of a Project: a copy-on-write view of a commit at `workdir_path`."""

    @classmethod
    def _wrap(cls, project, h):
        try:
            return cls._snapshot(project, h)
        finally:
            lib.arb_workspace_free(h)

    @classmethod
    def _snapshot(cls, project, h):
        ws = cls.__new__(cls)
        ws.project = project
        ws.name = dec(lib.arb_workspace_name(h))
        ws.id = dec(lib.arb_workspace_id(h))
        ws.base_commit = dec(lib.arb_workspace_base_commit(h))
        ws.branch = dec(lib.arb_workspace_branch(h))
        ws.root_path = pathlib.Path(dec(lib.arb_workspace_root(h)))
        ws.workdir_path = pathlib.Path(dec(lib.arb_workspace_workdir(h)))
        ws.home_path = pathlib.Path(dec(lib.arb_workspace_home(h)))
        ws.created_ns = lib.arb_workspace_created_ns(h)
        ws.io = dec(lib.arb_workspace_io(h))  # as it was when got: None when not mounted
        ws.transport = dec(lib.arb_workspace_transport(h))  # io_uring or /dev/fuse, likewise
        ws.notes = dec(lib.arb_workspace_notes(h))  # create's, e.g. LFS files left as pointers
        return ws

    def __repr__(self):
        return "Workspace(%r, base=%s)" % (self.name, self.base_commit[:12])

    def __eq__(self, other):
        return isinstance(other, Workspace) and self.id == other.id

    @property
    def mounted(self):
        h = ctypes.c_void_p()
        check(lib.arb_workspace_get(ctypes.byref(h), self.project._h, enc(self.name)))
        try:
            return bool(lib.arb_workspace_mounted(h))
        finally:
            lib.arb_workspace_free(h)

    def mount(self, allow_other=False, io=None):
        check(lib.arb_workspace_mount(self.project._h, enc(self.name),
                                      (2 if allow_other else 0) | _io_flag(io)))

    def unmount(self):
        check(lib.arb_workspace_unmount(self.project._h, enc(self.name)))

    def delete(self):
        """Deletes the workspace whatever it holds (arb_workspace_delete); remove() is the
        command line's careful delete."""
        check(lib.arb_workspace_delete(self.project._h, enc(self.name)))

    def remove(self, force=False, purge=False):
        """`workspace delete`: Project.remove_workspace(self.name, force, purge)."""
        self.project.remove_workspace(self.name, force=force, purge=purge)

    def _box(self, project, jail_backend, mount_specs, env, network, backends, api_key_file,
             grants, binds, allow_hosts, limits, tool_managers):
        box = ctypes.c_void_p()
        check(lib.arb_box_new(ctypes.byref(box), project, enc(self.name)))
        try:
            jail = JailBackend(jail_backend).value
            check(lib.arb_box_set_jail(box, enc(jail)))
            for m in mount_specs or ():
                spec = m.to_spec() if isinstance(m, MountSpec) else MountSpec.from_spec(m).to_spec()
                check(lib.arb_box_add_mount(box, enc(spec)))
            items = env.items() if isinstance(env, dict) else ((e, None) for e in env or ())
            for k, v in items:
                check(lib.arb_box_add_env(box, enc(k if v is None else "%s=%s" % (k, v))))
            if network:
                check(lib.arb_box_set_network(box, 1))
            for b in backends or ():
                check(lib.arb_box_add_backend(box, enc(b)))
            if api_key_file is not None:
                check(lib.arb_box_set_api_key_file(box, enc(api_key_file)))
            for g in grants or ():
                check(lib.arb_box_add_grant(box, enc(g)))
            for f in binds or ():
                check(lib.arb_box_add_binds_file(box, enc(f)))
            for h in allow_hosts or ():
                check(lib.arb_box_allow_host(box, enc(h)))
            for k, v in (limits or {}).items():
                check(lib.arb_box_set_limit(box, enc(k), enc(str(v))))
            if not tool_managers:
                check(lib.arb_box_set_no_tool_managers(box, 1))
        except BaseException:
            lib.arb_box_free(box)
            raise
        return box

    def shell(self, args=None, jail_backend=JailBackend.BUBBLEWRAP, mount_specs=(), env=None,
              network=False, backends=(), api_key_file=None, grants=(), binds=(),
              allow_hosts=(), limits=None, tool_managers=True, capture_output=False,
              input=None, stdin=None, stdout=None, stderr=None, text=False, check=False,
              explain=False):
        """Runs args (default: $SHELL, else sh) in the workspace and waits, as `arborinth
        shell` does: in a box by default, with a session and checkpoints in the audit log.

        mount_specs: MountSpec objects or "TYPE:SRC:DEST" strings; env: a dict, or names and
        NAME=VALUE strings; backends: credential-proxy backend specs ("anthropic"); limits:
        {"timeout": "30s", "memory": "512M", "cpus": 1, "pids": 200}. stdin, stdout, stderr:
        None (inherited), a file object or descriptor; capture_output gives stdout and stderr
        on the result; input: bytes (or str with text) for stdin. explain: the resolved box
        as text instead of a run. Threads may each run one at once: every call is a session
        of its own (result.session), with its own rows and checkpoints."""
        if args is None:
            args = [os.environ.get("SHELL") or "sh"]
        if isinstance(args, (str, bytes)):
            raise ArborinthInputError("args is a list of words, not a string")
        # A project handle of the run's own: a handle is for one thread at a time, and
        # threads may each run a box of this workspace at once (each its own session).
        project = ctypes.c_void_p()
        _lib.check(lib.arb_project_open(ctypes.byref(project),
                                        enc(str(self.project.repo_root_path))))
        box = None
        files = []
        try:
            box = self._box(project, jail_backend, mount_specs, env, network, backends,
                            api_key_file, grants, binds, allow_hosts, limits, tool_managers)
            cargv, keep = _lib.argv(args)
            if explain:
                out = ctypes.c_void_p()
                _lib.check(lib.arb_box_explain(ctypes.byref(out), box, cargv))
                try:
                    return ctypes.string_at(out).decode()
                finally:
                    lib.arb_free(out)

            def fd_of(f):
                if f is None:
                    return -1
                return f if isinstance(f, int) else f.fileno()
            fds = [fd_of(stdin), fd_of(stdout), fd_of(stderr)]
            if input is not None:
                f = tempfile.TemporaryFile()
                f.write(input.encode() if isinstance(input, str) else input)
                f.seek(0)
                files.append(f)
                fds[0] = f.fileno()
            caps = {}
            if capture_output:
                for i in (1, 2):
                    caps[i] = tempfile.TemporaryFile()
                    files.append(caps[i])
                    fds[i] = caps[i].fileno()
            for f in (stdout, stderr):
                if f is not None and not isinstance(f, int):
                    f.flush()
            _lib.check(lib.arb_box_set_stdio(box, *fds))
            res = _lib.RunResult()
            _lib.check(lib.arb_box_run(ctypes.byref(res), box, cargv))
            del keep

            def read(i):
                if i not in caps:
                    return None
                caps[i].seek(0)
                data = caps[i].read()
                return data.decode(errors="replace") if text else data
            result = ShellResult(args, res.exit_status, read(1), read(2), res.session,
                                 bool(res.timed_out), res.oom_kills, res.forks_refused)
        finally:
            lib.arb_box_free(box)
            lib.arb_project_free(project)
            for f in files:
                f.close()
        if check:
            result.check_returncode()
        return result

    def audit(self, kinds=None, since_ns=0, until_ns=0, path_glob=None, session=0,
              failed=False, all=False, ops=None):
        """The workspace's audit timeline, oldest first, as dicts (kind, op, path, path2,
        result, pid, comm, exe, session, size, count, off_lo, off_hi, time_ns, seq, and for
        net rows method, host, decision, status). kinds: some of "fs", "exec", "net"."""
        f = _lib.AuditFilter(since_ns=since_ns, until_ns=until_ns, path_glob=enc(path_glob),
                             session=session, failed=1 if failed else 0, all=1 if all else 0)
        for k in kinds or ():
            if k not in _KINDS:
                raise ArborinthInputError("audit kind %r is not fs, exec or net" % k)
            f.kinds |= _KINDS[k]
        keep = None
        if ops:
            for op in ops:
                if not lib.arb_audit_op_known(enc(op)):
                    raise ArborinthInputError("unknown audit operation %r" % op)
            f.ops, keep = _lib.argv(list(ops))
        it = ctypes.c_void_p()
        _lib.check(lib.arb_audit_open(ctypes.byref(it), self.project._h, enc(self.name),
                                      ctypes.byref(f)))
        try:
            row = ctypes.POINTER(_lib.AuditRow)()
            while _lib.check(lib.arb_audit_next(it, ctypes.byref(row))) == 1:
                r = row.contents
                d = {name: getattr(r, name) for name, _ in _lib.AuditRow._fields_}
                yield {k: dec(v) if isinstance(v, bytes) else v for k, v in d.items()}
        finally:
            lib.arb_audit_free(it)
            del keep

    def checkpoint(self, message=None):
        c = _lib.Checkpoint()
        _lib.check(lib.arb_checkpoint_create(ctypes.byref(c), self.project._h, enc(self.name),
                                             enc(message)))
        return _ckpt_dict(c)

    def checkpoints(self):
        arr = ctypes.POINTER(_lib.Checkpoint)()
        n = ctypes.c_size_t()
        _lib.check(lib.arb_checkpoint_list(ctypes.byref(arr), ctypes.byref(n), self.project._h,
                                           enc(self.name)))
        try:
            return [_ckpt_dict(arr[i]) for i in range(n.value)]
        finally:
            lib.arb_free(arr)

    def rewind(self, to=None, before_session=None):
        """The view becomes checkpoint `to` (N, "#N", "base", a revision) or the state
        before session `before_session`; returns the checkpoint taken of the state before
        (rewind to its "seq" to undo)."""
        c = _lib.Checkpoint()
        _lib.check(lib.arb_rewind(ctypes.byref(c), self.project._h, enc(self.name),
                                  enc(None if to is None else str(to)), before_session or 0))
        return _ckpt_dict(c)

    def restore(self, paths, at=None, before_session=None):
        """Paths (relative to the workdir) get back what they had at checkpoint `at` or
        before session `before_session`."""
        cpaths, keep = _lib.argv(list(paths))
        _lib.check(lib.arb_restore(self.project._h, enc(self.name),
                                   enc(None if at is None else str(at)), before_session or 0,
                                   cpaths, len(keep[1])))

    def diff(self, from_="base", to="view", paths=(), stat=False, name_status=False):
        """git's diff between two states ("base", "view", a checkpoint, a revision) as text."""
        fmt = 2 if stat else 1 if name_status else 0
        cpaths, keep = _lib.argv(list(paths))
        with tempfile.TemporaryFile() as f:
            _lib.check(lib.arb_diff(self.project._h, enc(self.name), enc(str(from_)),
                                    enc(str(to)), cpaths, len(keep[1]), fmt, f.fileno()))
            f.seek(0)
            return f.read().decode(errors="replace")

    def diffstat(self, from_="base", to="view"):
        st = _lib.DiffStat()
        _lib.check(lib.arb_diffstat(ctypes.byref(st), self.project._h, enc(self.name),
                                    enc(str(from_)), enc(str(to))))
        return {"files": st.files, "insertions": st.insertions, "deletions": st.deletions}

    def merge(self):
        """Merges the workspace's branch into the origin's current branch; returns
        {"result": "up-to-date"|"fast-forward"|"merge-commit", "branch", "commit"}."""
        m = _lib.Merge()
        _lib.check(lib.arb_merge(ctypes.byref(m), self.project._h, enc(self.name)))
        return {"result": ("up-to-date", "fast-forward", "merge-commit")[m.kind],
                "branch": m.branch.decode(), "commit": m.commit.decode()}

    def apply(self):
        """The workspace's changes into the origin's working tree (unstaged); returns how
        many files changed."""
        n = ctypes.c_size_t()
        _lib.check(lib.arb_apply(ctypes.byref(n), self.project._h, enc(self.name)))
        return n.value

    def export(self):
        """The workspace's branch, checked, into the export that `git fetch arborinth/NAME`
        reads; returns {"commit": id, "objects": objects copied}."""
        commit = ctypes.create_string_buffer(41)
        n = ctypes.c_size_t()
        _lib.check(lib.arb_export(commit, ctypes.byref(n), self.project._h, enc(self.name)))
        return {"commit": commit.value.decode(), "objects": n.value}

def _ckpt_dict(c):
    return {"seq": c.seq, "commit": c.commit.decode(), "tree": c.tree.decode(),
            "time_ns": c.time_ns,
            "kind": c.kind.decode(), "session": c.session,
            "message": c.message.decode(errors="replace")}
