"""The Python package (python/arborinth) over libarborinth, in real mounts and real boxes
(standard library unittest). Run by tests/integration/lib_python.sh from a venv the package
was pip-installed into, against the build's library (ARBORINTH_LIBRARY)."""
import os
import socket
import subprocess
import threading
import unittest

from pkgtest import ProjectCase
from arborinth import ArborinthError, ArborinthInputError, Project, library_version
from arborinth.shell import JailBackend, MountSpec


class Api(ProjectCase):
    prefix = "arb-pyapi."

    def test_project(self):
        self.assertEqual(str(self.p.repo_root_path), os.path.realpath(self.repo))
        self.assertEqual(library_version()[0], 0)
        sub = os.path.join(self.repo, "sub")
        os.makedirs(sub, exist_ok=True)
        self.assertEqual(Project(sub).repo_root_path, self.p.repo_root_path)
        with self.assertRaises(ArborinthInputError):
            Project(os.path.join(self.t, "missing"))
        with self.assertRaises(ArborinthError) as cm:
            Project(self.t)  # a folder, not in a repository
        self.assertIn("git", str(cm.exception))

    def test_workspaces(self):
        ws = self.p.create_workspace("py-list")
        self.assertTrue((ws.workdir_path / "README").exists())
        self.assertEqual(self.p.workspace("py-list"), ws)
        self.assertIn(ws, self.p.workspaces)
        self.assertTrue(ws.mounted)
        self.assertTrue(ws.io.startswith("daemon"), ws.io)
        self.assertEqual(ws.branch, "arborinth/py-list")
        with self.assertRaises(ArborinthInputError):
            self.p.create_workspace("py-io", io="fast")
        for bad in ("../x", "a/b", "", ".hidden", "a b"):
            with self.assertRaises(ArborinthInputError, msg=bad):
                self.p.create_workspace(bad)
        with self.assertRaises(ArborinthInputError):
            self.p.create_workspace("py-list")  # taken
        names = [w.name for w in self.p.workspaces]
        self.assertEqual(names.count("py-list"), 1, "a refused create left nothing")
        ws.unmount()
        self.assertFalse(ws.mounted)
        ws.mount()
        self.assertTrue(ws.mounted)
        ws.delete()
        with self.assertRaises(ArborinthInputError):
            self.p.workspace("py-list")

    def test_shell_box(self):
        ws = self.p.create_workspace("py-box")
        r = ws.shell(["sh", "-c", "echo made > made.txt; cat made.txt; echo e >&2; exit 3"],
                     capture_output=True)
        self.assertEqual(r.returncode, 3)
        self.assertEqual((r.stdout, r.stderr), (b"made\n", b"e\n"))
        self.assertGreater(r.session, 0)
        self.assertEqual((ws.workdir_path / "made.txt").read_text(), "made\n")
        self.assertFalse(os.path.exists(os.path.join(self.repo, "made.txt")),
                         "the origin checkout is untouched")
        # The host's home is hidden in the box; control: --jail none sees it.
        home = os.path.expanduser("~")
        probe = ["sh", "-c", "ls -a \"$1\" | wc -l", "sh", home]
        boxed = ws.shell(probe, capture_output=True, text=True)
        host = ws.shell(probe, jail_backend=JailBackend.NONE, capture_output=True, text=True)
        self.assertEqual(subprocess.run(probe, capture_output=True, text=True).stdout,
                         host.stdout)
        self.assertNotEqual(boxed.stdout, host.stdout)
        # input, env, text
        r = ws.shell(["sh", "-c", "read x; echo \"$x $GREETING\""], input="hi",
                     env={"GREETING": "there"}, capture_output=True, text=True)
        self.assertEqual(r.stdout, "hi there\n")
        ws.delete()

    def test_export(self):
        ws = self.p.create_workspace("py-export")
        ws.shell(["sh", "-c", "echo c > c.txt && git add c.txt && "
                  "git -c user.email=a@b -c user.name=a commit -qm c"])
        head = subprocess.run(["git", "--git-dir", os.path.join(ws.workdir_path, ".git"),
                               "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        self.assertEqual(ws.export()["commit"], head.strip())  # the session's end exported it
        # A box naming another store in its alternates: refused, one line naming it.
        ws.shell(["sh", "-c", "echo /nonexistent/objects >> .git/objects/info/alternates"],
                 capture_output=True)
        with self.assertRaises(ArborinthError) as cm:
            ws.export()
        self.assertIn("objects/info/alternates", str(cm.exception))
        ws.delete()

    def test_mounts_and_network(self):
        ws = self.p.create_workspace("py-mounts")
        src = os.path.join(self.t, "data")
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "in.txt"), "w") as f:
            f.write("data\n")
        ro = MountSpec.from_spec("ro:%s:/mnt" % src)
        r = ws.shell(["sh", "-c", "cat /mnt/in.txt; touch /mnt/new"], mount_specs=[ro],
                     capture_output=True, text=True)
        self.assertEqual(r.stdout, "data\n")
        self.assertNotEqual(r.returncode, 0, "a read-only mount refuses writes")
        r = ws.shell(["sh", "-c", "touch /mnt/new"], mount_specs=["rw:%s:/mnt" % src])
        self.assertEqual(r.returncode, 0, "control: read-write")
        self.assertTrue(os.path.exists(os.path.join(src, "new")))
        for bad in ("ro", "xx:/a:/b", "tmpfs:/a:/b", "ro:rel:/b"):
            with self.assertRaises(ArborinthInputError, msg=bad):
                MountSpec.from_spec(bad)
        with self.assertRaises(ArborinthInputError):
            ws.shell(["true"], mount_specs=["ro:/nonexistent-src:/mnt"])
        # No route to the host's loopback from the box; control: on the host.
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)

        def serve():
            conn, _ = srv.accept()
            conn.close()
        threading.Thread(target=serve, daemon=True).start()
        port = srv.getsockname()[1]
        reach = ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', %d), 3)"
                 % port]
        self.assertNotEqual(ws.shell(reach, capture_output=True).returncode, 0)
        self.assertEqual(ws.shell(reach, jail_backend=JailBackend.NONE).returncode, 0)
        srv.close()
        text = ws.shell(["true"], mount_specs=[ro], explain=True)
        self.assertIn("== inputs ==", text)
        self.assertIn("/mnt", text)
        ws.delete()

    def test_limits(self):
        ws = self.p.create_workspace("py-limits")
        r = ws.shell(["sleep", "30"], limits={"timeout": "1s"})
        self.assertEqual((r.returncode, r.timed_out), (124, True))
        with self.assertRaises(ArborinthInputError):
            ws.shell(["true"], limits={"timeout": "soon"})
        with self.assertRaises(ArborinthInputError):
            ws.shell(["true"], limits={"speed": "1"})
        with self.assertRaises(ArborinthInputError):
            ws.shell(["true"], jail_backend=JailBackend.NONE, mount_specs=["tmpfs:/mnt"])
        ws.delete()

    def test_audit_and_checkpoints(self):
        ws = self.p.create_workspace("py-audit")
        r = ws.shell(["sh", "-c", "echo one > a.txt; mkdir d; mv a.txt d/b.txt"])
        self.assertEqual(r.returncode, 0)
        rows = list(ws.audit(session=r.session))
        ops = [(x["kind"], x["op"], x["path"]) for x in rows]
        self.assertEqual(ops[0][:2], ("exec", "exec"))
        self.assertEqual(ops[-1][:2], ("exec", "exit"))
        self.assertIn(("fs", "create", "a.txt"), ops)
        self.assertIn(("fs", "rename", "a.txt"), ops)
        fs = [x for x in rows if x["kind"] == "fs"]
        self.assertTrue(all(x["pid"] > 0 and x["comm"] and x["session"] == r.session
                            for x in fs), fs)
        self.assertEqual([x for x in ws.audit(kinds=["net"])], [])
        self.assertEqual({x["op"] for x in ws.audit(ops=["rename", "mkdir"])},
                         {"rename", "mkdir"})
        with self.assertRaises(ArborinthInputError):
            list(ws.audit(ops=["teleport"]))
        with self.assertRaises(ArborinthInputError):
            list(ws.audit(kinds=["disk"]))
        cks = ws.checkpoints()
        self.assertEqual([c["kind"] for c in cks][-2:], ["start", "end"])
        c = ws.checkpoint("by hand")
        self.assertEqual((c["kind"], c["message"]), ("manual", "by hand"))
        self.assertEqual(ws.diffstat()["files"], 1)
        self.assertIn("+one", ws.diff())
        self.assertEqual(ws.diff(stat=False, name_status=True).split(), ["A", "d/b.txt"])
        before = ws.rewind(before_session=r.session)
        self.assertEqual(before["kind"], "rewind")
        self.assertFalse((ws.workdir_path / "d").exists())
        self.assertEqual(ws.diff(), "")
        rows = list(ws.audit(kinds=["fs"]))
        self.assertEqual(rows[-1]["op"], "rewind", "one audit row for the rewind")
        self.assertIn("before session %d" % r.session, rows[-1]["path"])
        ws.restore(["d"], at=before["seq"])
        self.assertEqual((ws.workdir_path / "d" / "b.txt").read_text(), "one\n")
        ws.rewind("base")
        ws.rewind(before["seq"])
        self.assertEqual((ws.workdir_path / "d" / "b.txt").read_text(), "one\n")
        with self.assertRaises(ArborinthInputError):
            ws.rewind("no-such-checkpoint")
        with self.assertRaises(ArborinthInputError):
            ws.rewind()
        fork = self.p.fork_workspace("py-fork", "py-audit")
        self.assertEqual((fork.workdir_path / "d" / "b.txt").read_text(), "one\n")
        fork.delete()
        ws.delete()


if __name__ == "__main__":
    unittest.main(verbosity=2)
