"""One Python process, many ws.shell() calls (one after the other, then two and eight at once
from threads): each box is its own session, with its own rows and checkpoints (standard
library unittest). Run by tests/integration/lib_sessions.sh against the build's library
(ARBORINTH_LIBRARY), in a repository it makes under ARB_JAIL_TMPDIR or /var/tmp."""
import os
import subprocess
import threading
import unittest

from pkgtest import ProjectCase


def script(tag):
    # A pause first and between the writes: the boxes run at once overlap.
    return ["sh", "-c", "sleep 0.3; echo {0} > {0}-a.txt; mkdir {0}-d; sleep 0.3; "
            "echo {0} > {0}-d/f".format(tag)]


class Sessions(ProjectCase):
    prefix = "arb-pysess."

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ws = cls.p.create_workspace("py-sessions")

    def run_at_once(self, tags):
        results, errors = {}, []

        def one(tag):
            try:
                results[tag] = self.ws.shell(script(tag), capture_output=True)
            except Exception as e:  # reported below, with the tag
                errors.append("%s: %r" % (tag, e))
        threads = [threading.Thread(target=one, args=(tag,)) for tag in tags]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        return results

    def check(self, results, alone):
        ws = self.ws
        for tag, r in results.items():
            self.assertEqual(r.returncode, 0, (tag, r.stderr))
        sessions = [r.session for r in results.values()]
        self.assertEqual(len(set(sessions)), len(sessions), "each box its own session")
        self.assertTrue(all(s > 0 for s in sessions), sessions)
        by_session = {r.session: tag for tag, r in results.items()}
        # Every file row of a box's files carries that box's session.
        for row in ws.audit(kinds=["fs"]):
            tag = row["path"].split("-")[0]
            if tag in results:
                self.assertEqual(row["session"], results[tag].session, row)
        for tag, r in results.items():
            # The README's ws.audit(session=result.session): exactly that box's writes.
            rows = list(ws.audit(session=r.session))
            fs = {row["path"] for row in rows if row["kind"] == "fs"}
            self.assertEqual(fs, {tag + "-a.txt", tag + "-d", tag + "-d/f"}, (tag, rows))
            execs = sorted(row["op"] for row in rows if row["kind"] == "exec")
            self.assertEqual(execs, ["exec", "exit"], (tag, rows))
        # Each session's start and end checkpoints.
        ckpts = ws.checkpoints()
        for s, tag in by_session.items():
            mine = {c["kind"]: c for c in ckpts if c["session"] == s}
            self.assertEqual(set(mine), {"start", "end"}, (tag, mine))
            self.assertLess(mine["start"]["seq"], mine["end"]["seq"])
            names = self.diff(mine["start"]["seq"], mine["end"]["seq"])
            want = ["A\t%s-a.txt" % tag, "A\t%s-d/f" % tag]
            if alone:
                self.assertEqual(names, want, tag)
            else:
                self.assertTrue(set(want) <= set(names), (tag, names))

    def diff(self, a, b):
        out = subprocess.run([os.environ["ARB"], "diff", "py-sessions", str(a), str(b),
                              "--name-status"], cwd=self.repo, check=True,
                             capture_output=True, text=True).stdout
        return out.splitlines()

    def test_1_sequential(self):
        results = {}
        for tag in ("seq0", "seq1"):
            results[tag] = self.ws.shell(script(tag), capture_output=True)
        self.check(results, alone=True)

    def test_2_two_at_once(self):
        self.check(self.run_at_once(["two0", "two1"]), alone=False)

    def test_3_eight_at_once(self):
        self.check(self.run_at_once(["eight%d" % i for i in range(8)]), alone=False)

    def test_4_verify(self):
        out = subprocess.run([os.environ["ARB"], "audit", "py-sessions", "--verify"],
                             cwd=self.repo, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"^audit of 'py-sessions': ok, \d+ rows", out.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
