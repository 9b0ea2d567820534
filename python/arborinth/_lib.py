"""The C library through ctypes: loading it, the declarations of include/arborinth.h, and
turning a failure into an exception that carries the library's message."""
import ctypes
import ctypes.util
import errno
import os

from .errors import ArborinthError, ArborinthInputError

SONAME = "libarborinth.so.0"


def _candidates():
    env = os.environ.get("ARBORINTH_LIBRARY")
    if env:
        yield env
        return
    found = ctypes.util.find_library("arborinth")
    if found:
        yield found
    yield SONAME
    # A source checkout: python/arborinth/ next to build/lib/.
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "build", "lib", SONAME)


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("libarborinth not found (set ARBORINTH_LIBRARY or install it): " +
                      "; ".join(errors))


lib = _load()
c_char_pp = ctypes.POINTER(ctypes.c_char_p)


class RunResult(ctypes.Structure):
    _fields_ = [("exit_status", ctypes.c_int), ("timed_out", ctypes.c_int),
                ("oom_kills", ctypes.c_int64), ("forks_refused", ctypes.c_int64),
                ("session", ctypes.c_int64), ("memory_limit", ctypes.c_int64),
                ("pids_limit", ctypes.c_int64)]


class AuditFilter(ctypes.Structure):
    _fields_ = [("since_ns", ctypes.c_int64), ("until_ns", ctypes.c_int64),
                ("path_glob", ctypes.c_char_p), ("kinds", ctypes.c_uint),
                ("session", ctypes.c_int64), ("failed", ctypes.c_int), ("all", ctypes.c_int),
                ("ops", c_char_pp), ("after_seq", ctypes.c_int64),
                ("upto_seq", ctypes.c_int64), ("by_seq", ctypes.c_int),
                ("no_sync", ctypes.c_int)]


class AuditRow(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_int64), ("time_ns", ctypes.c_int64),
                ("kind", ctypes.c_char_p), ("op", ctypes.c_char_p),
                ("path", ctypes.c_char_p), ("path2", ctypes.c_char_p),
                ("result", ctypes.c_int), ("pid", ctypes.c_int64),
                ("comm", ctypes.c_char_p), ("exe", ctypes.c_char_p),
                ("session", ctypes.c_int64), ("size", ctypes.c_int64),
                ("count", ctypes.c_int64), ("off_lo", ctypes.c_int64),
                ("off_hi", ctypes.c_int64), ("argv_json", ctypes.c_char_p),
                ("method", ctypes.c_char_p), ("host", ctypes.c_char_p),
                ("decision", ctypes.c_char_p), ("status", ctypes.c_int64),
                ("jail", ctypes.c_char_p), ("mode", ctypes.c_int64),
                ("mtime_ns", ctypes.c_int64), ("backend", ctypes.c_char_p),
                ("reason", ctypes.c_char_p), ("port", ctypes.c_int64),
                ("bytes_up", ctypes.c_int64), ("bytes_down", ctypes.c_int64),
                ("duration_ns", ctypes.c_int64)]


class Checkpoint(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint), ("commit", ctypes.c_char * 41),
                ("tree", ctypes.c_char * 41), ("time_ns", ctypes.c_int64),
                ("kind", ctypes.c_char * 16), ("session", ctypes.c_int64),
                ("message", ctypes.c_char * 256), ("hashed", ctypes.c_size_t),
                ("reused", ctypes.c_size_t)]


class DiffStat(ctypes.Structure):
    _fields_ = [("files", ctypes.c_size_t), ("insertions", ctypes.c_size_t),
                ("deletions", ctypes.c_size_t)]


class Merge(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("branch", ctypes.c_char * 256),
                ("commit", ctypes.c_char * 41)]


P = ctypes.c_void_p
# arb_gc_fn: (arg, removed, what, path, bytes)
GcFn = ctypes.CFUNCTYPE(None, P, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_uint64)
_protos = {
    "arb_error_last": (ctypes.c_char_p, []),
    "arb_error_is_input": (ctypes.c_int, []),
    "arb_free": (None, [P]),
    "arb_version": (None, [ctypes.POINTER(ctypes.c_int)] * 3),
    "arb_project_open": (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_char_p]),
    "arb_project_free": (None, [P]),
    "arb_project_root": (ctypes.c_char_p, [P]),
    "arb_workspace_create": (ctypes.c_int, [ctypes.POINTER(P), P, ctypes.c_char_p,
                                            ctypes.c_char_p, ctypes.c_uint]),
    "arb_workspace_get": (ctypes.c_int, [ctypes.POINTER(P), P, ctypes.c_char_p]),
    "arb_workspace_list": (ctypes.c_int, [ctypes.POINTER(ctypes.POINTER(P)),
                                          ctypes.POINTER(ctypes.c_size_t), P]),
    "arb_workspace_list_free": (None, [ctypes.POINTER(P), ctypes.c_size_t]),
    "arb_workspace_free": (None, [P]),
    "arb_workspace_name": (ctypes.c_char_p, [P]),
    "arb_workspace_id": (ctypes.c_char_p, [P]),
    "arb_workspace_base_commit": (ctypes.c_char_p, [P]),
    "arb_workspace_branch": (ctypes.c_char_p, [P]),
    "arb_workspace_root": (ctypes.c_char_p, [P]),
    "arb_workspace_workdir": (ctypes.c_char_p, [P]),
    "arb_workspace_home": (ctypes.c_char_p, [P]),
    "arb_workspace_io": (ctypes.c_char_p, [P]),
    "arb_workspace_transport": (ctypes.c_char_p, [P]),
    "arb_workspace_created_ns": (ctypes.c_int64, [P]),
    "arb_workspace_notes": (ctypes.c_char_p, [P]),
    "arb_workspace_mounted": (ctypes.c_int, [P]),
    "arb_workspace_daemon_pid": (ctypes.c_int64, [P]),
    "arb_workspace_mount": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint]),
    "arb_workspace_unmount": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_workspace_delete": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_new": (ctypes.c_int, [ctypes.POINTER(P), P, ctypes.c_char_p]),
    "arb_box_free": (None, [P]),
    "arb_box_set_jail": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_add_mount": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_add_env": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_set_network": (ctypes.c_int, [P, ctypes.c_int]),
    "arb_box_add_backend": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_set_api_key_file": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_allow_host": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_add_grant": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_add_binds_file": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_box_set_no_tool_managers": (ctypes.c_int, [P, ctypes.c_int]),
    "arb_box_set_limit": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p]),
    "arb_box_set_stdio": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    "arb_box_explain": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), P, c_char_pp]),
    "arb_box_run": (ctypes.c_int, [ctypes.POINTER(RunResult), P, c_char_pp]),
    "arb_audit_open": (ctypes.c_int, [ctypes.POINTER(P), P, ctypes.c_char_p,
                                      ctypes.POINTER(AuditFilter)]),
    "arb_audit_next": (ctypes.c_int, [P, ctypes.POINTER(ctypes.POINTER(AuditRow))]),
    "arb_audit_free": (None, [P]),
    "arb_audit_op_known": (ctypes.c_int, [ctypes.c_char_p]),
    "arb_checkpoint_create": (ctypes.c_int, [ctypes.POINTER(Checkpoint), P, ctypes.c_char_p,
                                             ctypes.c_char_p]),
    "arb_checkpoint_list": (ctypes.c_int, [ctypes.POINTER(ctypes.POINTER(Checkpoint)),
                                           ctypes.POINTER(ctypes.c_size_t), P,
                                           ctypes.c_char_p]),
    "arb_checkpoint_of_session": (ctypes.c_int, [ctypes.POINTER(Checkpoint), P,
                                                 ctypes.c_char_p, ctypes.c_int64,
                                                 ctypes.c_char_p]),
    "arb_rewind": (ctypes.c_int, [ctypes.POINTER(Checkpoint), P, ctypes.c_char_p,
                                  ctypes.c_char_p, ctypes.c_int64]),
    "arb_restore": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64,
                                   c_char_pp, ctypes.c_size_t]),
    "arb_diffstat": (ctypes.c_int, [ctypes.POINTER(DiffStat), P, ctypes.c_char_p,
                                    ctypes.c_char_p, ctypes.c_char_p]),
    "arb_diff": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                c_char_pp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]),
    "arb_merge": (ctypes.c_int, [ctypes.POINTER(Merge), P, ctypes.c_char_p]),
    "arb_apply": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t), P, ctypes.c_char_p]),
    "arb_export": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), P,
                                  ctypes.c_char_p]),
    "arb_workspace_name_check": (ctypes.c_int, [ctypes.c_char_p]),
    "arb_workspace_fork": (ctypes.c_int, [ctypes.POINTER(P), P, ctypes.c_char_p,
                                          ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]),
    "arb_workspace_purge": (ctypes.c_int, [P, ctypes.c_char_p]),
    "arb_workspace_remove": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint]),
    "arb_project_gc": (ctypes.c_int, [P, ctypes.c_uint, GcFn, P,
                                      ctypes.POINTER(ctypes.c_uint64)]),
    "arb_projects_list": (ctypes.c_int, [ctypes.POINTER(c_char_pp),
                                         ctypes.POINTER(ctypes.c_size_t)]),
    "arb_projects_free": (None, [c_char_pp, ctypes.c_size_t]),
    "arb_projects_prune": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t)]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def enc(s):
    """A str or path as bytes for the library (None stays None)."""
    if s is None:
        return None
    return os.fsencode(s)


def dec(b):
    return None if b is None else os.fsdecode(b)


def check(rc):
    """Raises the library's failure (rc < 0) as an exception; returns rc otherwise."""
    if rc >= 0:
        return rc
    msg = dec(lib.arb_error_last()) or os.strerror(-rc)
    cls = ArborinthInputError if lib.arb_error_is_input() else ArborinthError
    raise cls(msg, errno=-rc if -rc in errno.errorcode else None)


def argv(args):
    """A NULL-terminated char *[] (and the buffers it points to, to keep alive)."""
    bufs = [enc(a) for a in args]
    arr = (ctypes.c_char_p * (len(bufs) + 1))(*bufs, None)
    return ctypes.cast(arr, c_char_pp), (arr, bufs)
