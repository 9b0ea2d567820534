"""The Python package's careful delete, gc and the user's projects (Project.remove_workspace,
Workspace.remove, Project.gc, arborinth.projects, prune_projects) over libarborinth, against
real workspaces: a busy view and unsaved work refused (each with its control), gc's dry run
changing nothing on disk, then the same gc doing what it said. Run by
tests/integration/lib_python.sh as root and as an ordinary user, with XDG_STATE_HOME set to a
folder of its own (the list of projects)."""
import errno
import json
import os
import pathlib
import shutil
import subprocess
import time
import unittest

from pkgtest import ProjectCase, git, make_repo
import arborinth
from arborinth import ArborinthError, ArborinthInputError, Project


def tree_state(top):
    """Every path under top with its type, size and mtime (no link followed)."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[p] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


class RemoveGc(ProjectCase):
    prefix = "arb-pygc."

    def names(self):
        return [w.name for w in self.p.workspaces]

    def test_unsaved_refused(self):
        ws = self.p.create_workspace("py-unsaved")
        (ws.workdir_path / "new.txt").write_text("work\n")
        with self.assertRaises(ArborinthError) as cm:
            ws.remove()
        self.assertEqual(cm.exception.errno, errno.ENOTEMPTY)
        self.assertEqual(str(cm.exception),
                         "py-unsaved has 1 changed file not in a commit; use --force to "
                         "delete anyway")
        self.assertEqual((ws.workdir_path / "new.txt").read_text(), "work\n")
        self.assertIn("py-unsaved", self.names())
        # purge asks for force the same way
        with self.assertRaises(ArborinthError):
            self.p.remove_workspace("py-unsaved", purge=True)
        self.assertIn("py-unsaved", self.names())
        # Control: with force it goes; its history stays readable without purge.
        ws.remove(force=True)
        self.assertNotIn("py-unsaved", self.names())
        self.assertIsInstance(list(ws.audit()), list)
        # A clean workspace goes without force; purge takes its history too.
        clean = self.p.create_workspace("py-clean")
        self.p.remove_workspace("py-clean", purge=True)
        self.assertNotIn("py-clean", self.names())
        with self.assertRaises(ArborinthInputError):
            list(clean.audit())
        for bad in ("../x", "", "a/b"):
            with self.assertRaises(ArborinthInputError, msg=bad):
                self.p.remove_workspace(bad)
        with self.assertRaises(ArborinthInputError):
            self.p.remove_workspace("py-never-made")

    def test_busy_refused(self):
        ws = self.p.create_workspace("py-busy")
        sleeper = subprocess.Popen(["sleep", "60"], cwd=ws.workdir_path)
        try:
            for _ in range(50):
                if os.readlink("/proc/%d/cwd" % sleeper.pid) == str(ws.workdir_path):
                    break
                time.sleep(0.1)
            with self.assertRaises(ArborinthError) as cm:
                ws.remove(force=True)  # force does not override a busy view
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            self.assertRegex(str(cm.exception),
                             r"^cannot delete py-busy: its view is busy: .*pid %d \(sleep\)"
                             % sleeper.pid)
            self.assertTrue(ws.mounted)
            self.assertEqual((ws.workdir_path / "README").read_text(), "origin\n")
        finally:
            sleeper.kill()
            sleeper.wait()
        ws.remove()  # control: nothing holds it now
        self.assertNotIn("py-busy", self.names())

    def test_gc_dry_run(self):
        for i in (1, 2):  # two commits no other test's workspace is based on
            (self.p.repo_root_path / "more.txt").write_text("more %d\n" % i)
            git(self.repo, "add", "more.txt")
            git(self.repo, "commit", "-qm", "more")
        keep = self.p.create_workspace("py-keep")
        # Made last, its objects view is the newest, which a delete keeps for the next
        # workspace: gc's to reclaim.
        old = self.p.create_workspace("py-old", rev="HEAD~1")
        self.assertEqual(old.shell(["true"]).returncode, 0)  # a box: its objects view made
        self.assertNotEqual(old.base_commit, keep.base_commit)
        old.remove()
        # A ref and a remote of no workspace, as an older version's delete could leave.
        git(self.repo, "update-ref", "refs/arborinth/py-gone", "HEAD")
        state = os.path.join(self.repo, ".git", "arborinth")
        before = tree_state(state)
        dry = self.p.gc(dry_run=True)
        self.assertEqual(tree_state(state), before, "the dry run changed nothing on disk")
        self.assertTrue(dry["dry_run"])
        self.assertEqual(dry["projects_dropped"], 0)
        json.dumps(dry)  # what gc --json prints: plain Python objects
        gone = [i for i in dry["items"] if i["removed"]]
        self.assertIn("refs/arborinth/py-gone", [i["path"] for i in gone])
        views = [i for i in gone if i["what"] == "objects view"]
        self.assertEqual([os.path.basename(i["path"]) for i in views], [old.base_commit], dry)
        self.assertTrue(os.path.isdir(views[0]["path"]))
        self.assertGreater(dry["bytes"], 0)
        self.assertEqual(dry["bytes"], sum(i["bytes"] for i in gone))
        # Control: the real gc removes what the dry run named, and says the same.
        real = self.p.gc()
        self.assertFalse(real["dry_run"])
        self.assertEqual([(i["what"], i["path"]) for i in real["items"] if i["removed"]],
                         [(i["what"], i["path"]) for i in gone])
        self.assertEqual(real["bytes"], dry["bytes"])
        self.assertFalse(os.path.exists(views[0]["path"]))
        self.assertNotEqual(tree_state(state), before)
        r = subprocess.run(["git", "-C", self.repo, "rev-parse", "-q", "--verify",
                            "refs/arborinth/py-gone"], stdout=subprocess.DEVNULL)
        self.assertNotEqual(r.returncode, 0, "the stale ref went")
        self.assertEqual((keep.workdir_path / "more.txt").read_text(), "more 2\n")
        with self.assertRaises(ArborinthError):
            Project(os.path.join(self.t, "no-such")).gc()
        keep.remove()

    def test_projects(self):
        self.assertIn(self.p.repo_root_path, arborinth.projects())
        t2, repo2 = make_repo("arb-pygc2.")
        try:
            Project(repo2).create_workspace("py-other").delete()
            roots = arborinth.projects()
            self.assertIn(Project(repo2).repo_root_path, roots)
        finally:
            shutil.rmtree(t2)
        self.assertNotIn(pathlib.Path(os.path.realpath(repo2)), arborinth.projects(),
                         "a gone project is left out")
        reg = os.path.join(os.environ["XDG_STATE_HOME"], "arborinth", "projects")
        with open(reg) as f:
            self.assertIn(repo2, f.read(), "still in the list until pruned")
        self.assertEqual(self.p.gc(dry_run=True)["projects_dropped"], 0)
        with open(reg) as f:
            self.assertIn(repo2, f.read(), "a dry run drops nothing")
        self.assertEqual(self.p.gc()["projects_dropped"], 1)
        with open(reg) as f:
            self.assertNotIn(repo2, f.read())
        self.assertEqual(arborinth.prune_projects(), 0)
        self.assertIn(self.p.repo_root_path, arborinth.projects())


if __name__ == "__main__":
    unittest.main(verbosity=2)
