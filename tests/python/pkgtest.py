"""tests/python/pkgtest.py: what the Python package's unittest suites share (test_api.py,
test_remove_gc.py, test_sessions.py): a repository of their own (tests/lib/arbtest.py's
make_repo, under ARB_JAIL_TMPDIR or /var/tmp) opened as cls.p, its folder cls.t and checkout
cls.repo; every workspace left is deleted and the folder removed at the end."""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from arbtest import git, make_repo  # noqa: E402,F401 (git: for the suites)
from arborinth import Project  # noqa: E402


class ProjectCase(unittest.TestCase):
    prefix = "arb-py."  # of the temp folder, per suite

    @classmethod
    def setUpClass(cls):
        cls.t, cls.repo = make_repo(cls.prefix)
        cls.p = Project(cls.repo)

    @classmethod
    def tearDownClass(cls):
        for ws in cls.p.workspaces:
            ws.delete()
        shutil.rmtree(cls.t, ignore_errors=True)
