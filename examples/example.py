#!/usr/bin/env python3
"""examples/example.py: arborinth from Python. Creates a workspace of the git repository in
the current directory (or argv[1]), runs a command in a box over its view, reads what the
audit log recorded of it, and deletes the workspace.

    pip install ./python      # or PYTHONPATH=python, with libarborinth built or installed
    python3 examples/example.py [REPO]
"""
import os
import sys

from arborinth import Project
from arborinth.shell import JailBackend, MountSpec


def main():
    project = Project(sys.argv[1] if len(sys.argv) > 1 else None)
    print("project", project.repo_root_path)
    ws = project.create_workspace("example-py-%d" % os.getpid())
    try:
        print("workspace", ws.name, "view", ws.workdir_path)
        result = ws.shell(["sh", "-c", "echo hello from the box > greeting.txt; cat greeting.txt;"
                           " ls /mnt >/dev/null && echo docs are at /mnt"],
                          jail_backend=JailBackend.BUBBLEWRAP,
                          mount_specs=[MountSpec.from_spec("ro:/usr/share/doc:/mnt")],
                          capture_output=True, text=True)
        print("exit status", result.returncode, "output:", result.stdout.strip())
        for row in ws.audit(kinds=["fs", "exec"], session=result.session):
            print("audit:", row["kind"], row["op"], row["path"] or "-", "pid", row["pid"],
                  row["comm"])
        return result.returncode
    finally:
        ws.delete()
        print("deleted", ws.name)


if __name__ == "__main__":
    sys.exit(main())
