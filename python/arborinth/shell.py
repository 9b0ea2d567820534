"""Running commands in a workspace: the jail backends, mount specifications and the result."""
import enum
import os

from .errors import ArborinthInputError

MOUNT_TYPES = ("ro", "rw", "overlay", "tmpfs", "dev", "proc")


class JailBackend(enum.Enum):
    """BUBBLEWRAP: a box (system folders read-only, real home hidden, seccomp, no network).
    NONE: on the host as it is, with no isolation (for comparison)."""
    BUBBLEWRAP = "bubblewrap"
    NONE = "none"


class MountSpec:
    """A mount in the box: TYPE:DEST or TYPE:SRC:DEST. ro and rw without SRC bind DEST itself;
    tmpfs, dev and proc take DEST only; overlay lets the box write to SRC with the changes kept
    in the workspace. Paths are absolute."""

    def __init__(self, type, dest, source=None):
        if type not in MOUNT_TYPES:
            raise ArborinthInputError("mount type %r is not one of %s" %
                                      (type, ", ".join(MOUNT_TYPES)))
        if type in ("tmpfs", "dev", "proc") and source is not None:
            raise ArborinthInputError("a %s mount takes a destination only" % type)
        for p in (dest, source):
            if p is not None and not os.path.isabs(p):
                raise ArborinthInputError("mount path %r is not absolute" % p)
        self.type, self.dest, self.source = type, dest, source

    @classmethod
    def from_spec(cls, spec):
        parts = spec.split(":")
        if len(parts) == 2:
            return cls(parts[0], parts[1])
        if len(parts) == 3:
            return cls(parts[0], parts[2], parts[1])
        raise ArborinthInputError("mount spec %r is not TYPE:DEST or TYPE:SRC:DEST" % spec)

    def to_spec(self):
        if self.source is None:
            return "%s:%s" % (self.type, self.dest)
        return "%s:%s:%s" % (self.type, self.source, self.dest)

    def __repr__(self):
        return "MountSpec.from_spec(%r)" % self.to_spec()

    def __eq__(self, other):
        return isinstance(other, MountSpec) and self.to_spec() == other.to_spec()


class ShellResult:
    """What a run gave: returncode (128+N for signal N, 124 after a timeout), stdout and
    stderr when captured (bytes, or str with text=True), the audit session, and what the
    limits did."""

    def __init__(self, args, returncode, stdout=None, stderr=None, session=0, timed_out=False,
                 oom_kills=0, forks_refused=0):
        self.args, self.returncode = list(args), returncode
        self.stdout, self.stderr = stdout, stderr
        self.session, self.timed_out = session, timed_out
        self.oom_kills, self.forks_refused = oom_kills, forks_refused

    def check_returncode(self):
        import subprocess
        if self.returncode:
            raise subprocess.CalledProcessError(self.returncode, self.args, self.stdout,
                                                self.stderr)

    def __repr__(self):
        return "ShellResult(args=%r, returncode=%r)" % (self.args, self.returncode)
