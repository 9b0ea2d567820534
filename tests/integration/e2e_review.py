"""tests/integration/e2e_review.py: `arborinth review`, the page in a real headless Chromium.

Boxes write files named and filled with HTML/JS payloads, commit with such a message and run
commands whose argv holds them; a fork and a conflicting workspace stand beside. The page
shows them as text (no payload runs, sets a global or fetches the URL a watcher serves);
the forest, a timeline, a side-by-side diff, a comment on a line and the message it makes
(the same as `review send`); a merge through the page works (control) and one that
conflicts is refused with the command's text. Requests without the token, with a foreign
Origin or Host, or not as POST JSON are refused with 403 and change nothing (controls: with
them the same request works). As root, another user of the machine is refused even with the
token. Screenshots go to $ARB_BUILD/test-artifacts/review/.
"""
import http.client
import http.server
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import fslib  # noqa: E402
from fslib import ARB, git, run  # noqa: E402

import cdp  # noqa: E402

fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


class Watch(http.server.BaseHTTPRequestHandler):
    hits = []

    def do_GET(self):
        Watch.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


def request(port, method, path, headers=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Host": "127.0.0.1:%d" % port}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict(r.getheaders()), data


def main():
    fslib.require_fuse()
    if not cdp.find_chromium():
        fslib.skip("no chromium")
    tmp = tempfile.mkdtemp(prefix="arb-review-")
    repo = os.path.join(tmp, "repo")
    art = os.path.join(os.environ.get("ARB_BUILD", tmp), "test-artifacts", "review")
    os.makedirs(art, exist_ok=True)
    watcher = http.server.HTTPServer(("127.0.0.1", 0), Watch)
    threading.Thread(target=watcher.serve_forever, daemon=True).start()
    wurl = "http://127.0.0.1:%d" % watcher.server_address[1]
    server = browser = None
    names = []
    try:
        fslib.make_repo(repo, {"a.txt": "line1\nline2\nline3\n", "b.txt": "b\n-- x\n++ y\n"})

        def arb(*args, check=True):
            return run(ARB, *args, cwd=repo, check=check)

        pay_name = '"><svg onload=window.__pwned=2>.txt'
        pay_line = '<img src=%s/hit-diff onerror="window.__pwned=3">' % wurl
        script = (
            "printf 'line1\\n%%s\\nline3\\n' '%s' > a.txt && "
            "printf '%%s\\n' '</script><script>window.__pwned=1</script>' "
            "'<img src=%s/hit-content onerror=window.__pwned=4>' > '%s' && "
            "echo x > '<img src=x onerror=window.__pwned=5>.md' && printf 'b\\n' > b.txt && "
            "echo y > \"$(printf 'bad\\377name')\" && "
            "git add -A && "
            "git -c user.email=a@b -c user.name=x commit -qm "
            "'<img src=x onerror=window.__pwned=6>' && echo '<script>window.__pwned=7</script>'"
        ) % (pay_line, wurl, pay_name)
        arb("workspace", "create", "w1")
        names.append("w1")
        arb("shell", "w1", "--", "sh", "-c", script)
        arb("workspace", "create", "w2", "--from", "w1")
        names.append("w2")
        arb("workspace", "create", "w3")
        names.append("w3")
        arb("shell", "w3", "--", "sh", "-c",
            "printf 'line1\\nother\\nline3\\n' > a.txt && "
            "git -c user.email=a@b -c user.name=x commit -qam conflict")

        server = subprocess.Popen([ARB, "review", "w1"], cwd=repo, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        url = server.stdout.readline().strip()
        check(url.startswith("http://127.0.0.1:") and "/?t=" in url, "review prints its URL")
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("t=")[1]
        check(len(token) == 32, "the token is 128 bits (32 hex digits)")
        base = "http://127.0.0.1:%d" % port
        tok = {"X-Arborinth-Token": token}
        post_ok = dict(tok, **{"Origin": base, "Content-Type": "application/json"})

        # The server's refusals, and their controls.
        st, h, _ = request(port, "GET", "/")
        check(st == 403, "the page without the token: 403")
        st, h, _ = request(port, "GET", "/?t=" + "0" * 32)
        check(st == 403, "the page with a wrong token: 403")
        st, h, body = request(port, "GET", "/?t=" + token)
        check(st == 200 and b"review.js" in body, "the page with the token: 200")
        check("script-src 'self'" in h.get("Content-Security-Policy", "") and
              "default-src 'none'" in h.get("Content-Security-Policy", ""), "strict CSP")
        st, h, _ = request(port, "GET", "/?t=" + token, {"Host": "evil.example:%d" % port})
        check(st == 403, "a foreign Host (DNS rebinding): 403")
        st, h, _ = request(port, "GET", "/api/forest")
        check(st == 403, "the API without the token header: 403")
        st, h, body = request(port, "GET", "/api/forest", tok)
        check(st == 200 and h.get("Content-Type") == "application/json" and
              h.get("X-Content-Type-Options") == "nosniff", "the API with the token: JSON, nosniff")
        forest = json.loads(body)
        byname = {w["name"]: w for w in forest["workspaces"]}
        check(byname["w2"]["forked_from"] == "w1" and byname["w1"]["forked_from"] is None,
              "the forest: w2 forked from w1")

        comment = json.dumps({"ws": "w1", "path": "a.txt", "side": "new", "line_start": 2,
                              "line_end": 2, "hunk": "-line2", "text": "refused?"})

        def count():
            return len(json.loads(request(port, "GET", "/api/comments?ws=w1", tok)[2])["comments"])

        for what, hdrs in (
                ("without the token", {"Origin": base, "Content-Type": "application/json"}),
                ("with a foreign Origin", dict(post_ok, Origin="http://evil.example")),
                ("cross-site per Sec-Fetch-Site", dict(tok, **{"Sec-Fetch-Site": "cross-site",
                                                              "Content-Type": "application/json"})),
                ("as a form", dict(post_ok, **{"Content-Type": "text/plain"})),
                ("without Origin or Sec-Fetch-Site", dict(tok, **{"Content-Type": "application/json"}))):
            st, _, _ = request(port, "POST", "/api/comments", hdrs, comment)
            check(st == 403 and count() == 0, "a comment %s: 403, nothing stored" % what)
        st, _, _ = request(port, "POST", "/api/action", {"Origin": base,
                                                          "Content-Type": "application/json"},
                           json.dumps({"action": "delete", "ws": "w2"}))
        check(st == 403 and os.path.isdir(json.loads(arb("workspace", "info", "w2", "--json")
                                                     .stdout)["workdir"]),
              "delete without the token: 403, w2 still there")
        st, _, _ = request(port, "GET", "/api/action?action=delete&ws=w2", tok)
        check(st == 404 and arb("workspace", "info", "w2", check=False).returncode == 0,
              "an action as GET: refused, w2 still there")

        # A box: without --net its 127.0.0.1 is its own; with --net it shares the host's
        # network (the same probe connects: the control) and the token is what stops it.
        probe = ("import http.client\n"
                 "c=http.client.HTTPConnection('127.0.0.1',%d,timeout=10)\n"
                 "try:\n c.request('GET','/api/forest')\n print(c.getresponse().status)\n"
                 "except Exception as e: print('refused', type(e).__name__)\n" % port)
        out = arb("shell", "w2", "--", "python3", "-c", probe).stdout.strip()
        check(out.startswith("refused"), "a box (no --net) cannot reach the server: " + out)
        out = arb("shell", "w2", "--net", "--", "python3", "-c", probe).stdout.strip()
        check(out == "403", "a box with --net reaches it (control) but without the token: " + out)

        # Another user of the machine: refused at the connection, token or not.
        if os.geteuid() == 0 and shutil.which("runuser"):
            user = "arbreview"
            if subprocess.run(["id", user], capture_output=True).returncode != 0:
                subprocess.run(["useradd", "-M", user], capture_output=True)
            try:
                pwd.getpwnam(user)
                probe = ("import http.client,sys\n"
                         "c=http.client.HTTPConnection('127.0.0.1',%d,timeout=10)\n"
                         "try:\n c.request('GET','/api/forest',headers={'X-Arborinth-Token':'%s'})\n"
                         " print(c.getresponse().status)\n"
                         "except Exception as e: print('refused', type(e).__name__)\n"
                         % (port, token))
                out = subprocess.run(["runuser", "-u", user, "--", "python3", "-c", probe],
                                     capture_output=True, text=True).stdout.strip()
                check(out.startswith("refused"), "another user, even with the token: " + out)
            except KeyError:
                print("note: no other user to probe with")

        # --port and --open (xdg-open found on PATH gets the URL); a NAME that is no
        # workspace is refused with one line.
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "xdg-open"), "w") as f:
            f.write("#!/bin/sh\necho \"$1\" > %s/opened\n" % tmp)
        os.chmod(os.path.join(bindir, "xdg-open"), 0o755)
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            free = so.getsockname()[1]
        other = subprocess.Popen([ARB, "review", "--open", "--port", str(free)], cwd=repo,
                                 stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, PATH=bindir + ":" + os.environ["PATH"]))
        ourl = other.stdout.readline().strip()
        for _ in range(50):
            if os.path.exists(os.path.join(tmp, "opened")):
                break
            time.sleep(0.1)
        other.terminate()
        other.wait(10)
        check(ourl.startswith("http://127.0.0.1:%d/?t=" % free) and ourl != url,
              "--port: the port asked for, a new token")
        check(open(os.path.join(tmp, "opened")).read().strip() == ourl, "--open runs xdg-open URL")
        bad = arb("review", "nosuch", check=False)
        check(bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1,
              "review of no such workspace: one line, non-zero: " + bad.stderr.strip())

        # The page in Chromium.
        browser = cdp.Browser()
        browser.goto(base + "/")
        browser.wait("document.readyState === 'complete' && document.body.innerText.length > 0")
        check("token" in browser.eval("document.body.innerText") and
              browser.eval("!document.getElementById('forest')"),
              "in the browser, the page without the token is refused")
        browser.goto(url)
        browser.wait("document.body.dataset.ready === '1'")
        browser.wait("document.querySelectorAll('#timeline li.session').length > 0")
        browser.screenshot(os.path.join(art, "timeline.png"))
        text = browser.eval("document.body.innerText")
        check("w2" in browser.eval("document.querySelector('#forest li[data-ws=\"w1\"] ul').innerText"),
              "the forest shows w2 under w1")
        files = browser.eval("[...document.querySelectorAll('#timeline ul.files li')]"
                             ".map((x) => x.textContent)")
        check(pay_name in files and "a.txt" in files,
              "the timeline lists the files written, a payload name as text: %r" % files)
        check("<script>window.__pwned=7</script>" in text, "a payload argv shows as text")
        check("bad\\xffname" in files, "a name that is not UTF-8 shows with its byte escaped")
        browser.eval("arborinthReview.showDiff({ws: 'w1'})")
        browser.wait("document.querySelectorAll('#diff table.sbs').length >= 3")
        browser.screenshot(os.path.join(art, "diff.png"))
        text = browser.eval("document.getElementById('diff').innerText")
        check(pay_line in text, "a payload line shows as text in the diff")
        check("</script><script>window.__pwned=1</script>" in text, "payload content as text")
        check("<img src=x onerror=window.__pwned=5>.md" in text, "a payload name in the diff")
        check(browser.eval("[...document.querySelectorAll('#diff td.del')].map((t) => "
                           "t.textContent).join('|')") == "line2|-- x|++ y",
              "removed lines that look like file headers stay lines of b.txt")
        check(browser.eval("document.querySelectorAll('#diff td.del').length") >= 1 and
              browser.eval("document.querySelectorAll('#diff td.add').length") >= 1,
              "side by side: removed and added cells")
        # Between two workspaces: w3's view against w1's.
        browser.eval("arborinthReview.showDiff({ws: 'w3', other: 'w1'})")
        browser.wait("document.getElementById('diff-title').textContent.includes('w3 → w1')")
        browser.wait("document.querySelectorAll('#diff table.sbs').length >= 4")
        dels = browser.eval("[...document.querySelectorAll('#diff td.del')].map((t) => t.textContent)")
        adds = browser.eval("[...document.querySelectorAll('#diff td.add')].map((t) => t.textContent)")
        check("other" in dels and pay_line in adds, "the diff between w3 and w1, side by side")
        browser.screenshot(os.path.join(art, "between.png"))
        browser.eval("arborinthReview.showDiff({ws: 'w1'})")
        browser.wait("document.getElementById('diff-title').textContent.includes('base')")
        browser.wait("document.querySelectorAll('#diff table.sbs').length >= 3")
        # A comment on line 2 of a.txt (the new side).
        browser.eval("""(() => {
          const f = [...document.querySelectorAll('#diff .file')].find(
            (x) => x.querySelector('h3').textContent === 'M a.txt');
          const td = [...f.querySelectorAll('td.no')].filter((t) => t.textContent === '2')[1];
          td.click();
          document.querySelector('.comment-form textarea').value = 'Why <b>this</b> line?';
          document.querySelector('.comment-form button.save').click();
        })()""")
        browser.wait("document.getElementById('message').textContent.includes('Why <b>this</b>')")
        browser.eval("document.querySelector('#tabs button[data-tab=comments]').click()")
        browser.screenshot(os.path.join(art, "comments.png"))
        msg = browser.eval("document.getElementById('message').textContent")
        check("a.txt, line 2 (after the change)" in msg and "> +" + pay_line in msg,
              "the message: file, line, quoted hunk")
        # A comment on lines 1-3 of a.txt: a click, then a shift-click.
        browser.eval("""(() => {
          const f = [...document.querySelectorAll('#diff .file')].find(
            (x) => x.querySelector('h3').textContent === 'M a.txt');
          const nos = [...f.querySelectorAll('td.no')];
          nos.filter((t) => t.textContent === '1')[1].click();
          nos.filter((t) => t.textContent === '3')[1].dispatchEvent(
            new MouseEvent('click', {shiftKey: true, bubbles: true}));
          document.querySelector('.comment-form textarea').value = 'all three';
          document.querySelector('.comment-form button.save').click();
        })()""")
        browser.wait("document.getElementById('message').textContent.includes('all three')")
        msg = browser.eval("document.getElementById('message').textContent")
        check("2. a.txt, lines 1-3 (after the change)" in msg, "a comment on a range of lines")
        sent = arb("review", "send", "w1").stdout
        check(sent == msg, "review send prints the same message")
        js = json.loads(arb("review", "send", "--json", "w1").stdout)
        check(js["comments"][0]["path"] == "a.txt" and js["comments"][0]["line_start"] == 2,
              "review send --json: the comment's file and line")
        # The launchers pass the same message as the client's first prompt (--explain shows
        # the argv): the last argument, after --prompt for opencode.
        env = dict(os.environ, ANTHROPIC_API_KEY="sk-test", OPENAI_API_KEY="sk-test")
        for client in ("claude", "codex", "opencode"):
            ex = subprocess.run([ARB, client, "w1", "--client", "/bin/echo", "--review",
                                 "--explain"], cwd=repo, env=env, capture_output=True, text=True)
            line = [x for x in ex.stdout.split("\n  directory")[0].splitlines()
                    if x.strip().startswith("command")]
            check(ex.returncode == 0 and line and "Review comments on your work" in ex.stdout and
                  (client != "opencode" or "--prompt 'Review comments" in ex.stdout),
                  "%s --review: the message is the client's prompt %s" % (client, ex.stderr[-300:]))
        ex = subprocess.run([ARB, "claude", "w2", "--client", "/bin/echo", "--review",
                             "--explain"], cwd=repo, env=env, capture_output=True, text=True)
        check(ex.returncode != 0 and "no review comments" in ex.stderr,
              "--review with no comments: refused with one line")
        # The comparison: `arborinth compare --json` when this build has it.
        have_compare = run(ARB, "compare", "--help", check=False).returncode == 0
        browser.eval("arborinthReview.state.checked.clear(); arborinthReview.state.checked.add('w1');"
                     "arborinthReview.state.checked.add('w3'); arborinthReview.showCompare()")
        if have_compare:
            browser.wait("document.querySelectorAll('#compare table.cmp tr').length === 3")
            check("a.txt" in browser.eval("document.getElementById('compare').innerText"),
                  "the comparison of w1 and w3 names the file both changed")
        else:
            try:
                browser.wait("!!document.getElementById('compare-unavailable')")
            except AssertionError:
                print(browser.eval("document.getElementById('status').textContent + '|' + "
                                   "document.getElementById('compare').innerText"))
                raise
            check(True, "the comparison says it is unavailable (no compare command here)")
        browser.screenshot(os.path.join(art, "compare.png"))
        # Merge: w1 (control) goes through; w3 conflicts and is refused, origin unchanged.
        browser.eval("arborinthReview.act('merge')")
        browser.wait("document.getElementById('status').textContent.includes('merged')")
        head = git(repo, "rev-parse", "HEAD").stdout.strip()
        check(git(repo, "log", "-1", "--format=%s").stdout.strip() ==
              "<img src=x onerror=window.__pwned=6>",
              "merge of w1 from the page (control): the origin has its commit")
        browser.eval("arborinthReview.pick('w3').then(() => arborinthReview.act('merge'))")
        browser.wait("document.getElementById('status').className === 'error'")
        status = browser.eval("document.getElementById('status').textContent")
        browser.screenshot(os.path.join(art, "merge-refused.png"))
        check("merge refused" in status and "a.txt" in status,
              "merge of w3 refused on the conflict, with the command's text: " + status)
        check(git(repo, "rev-parse", "HEAD").stdout.strip() == head, "the origin did not move")
        cli = arb("merge", "w3", check=False)
        check(cli.returncode != 0, "the command refuses it too")
        # Delete w3 (unsaved work) is refused as `workspace delete` without --force is.
        browser.eval("arborinthReview.act('delete')")
        browser.wait("document.getElementById('status').textContent.includes('delete refused')")
        check(arb("workspace", "info", "w3", check=False).returncode == 0,
              "delete of w3 from the page refused, w3 still there: " +
              browser.eval("document.getElementById('status').textContent"))
        # Rewind w3 to its base (control for an action that works).
        browser.eval("document.getElementById('rewind-to').value = 'base';"
                     "arborinthReview.act('rewind')")
        browser.wait("document.getElementById('status').textContent.includes('is back at')")
        with open(os.path.join(json.loads(arb("workspace", "info", "w3", "--json").stdout)
                               ["workdir"], "a.txt")) as f:
            check(f.read() == "line1\nline2\nline3\n", "rewind of w3 to base from the page")
        # Nothing from the data ran or fetched anything.
        check(browser.eval("typeof window.__pwned") == "undefined", "no payload script ran")
        check(browser.eval("document.querySelectorAll('img, svg, iframe').length") == 0,
              "no element from the data")
        check(Watch.hits == [], "the watcher saw no request: %r" % Watch.hits)
        # Controls: the watcher sees what the browser fetches; a global set in the page shows.
        browser.eval("window.__pwned = 'control'")
        check(browser.eval("window.__pwned") == "control", "control: a page global is seen")
        browser.goto(wurl + "/control")
        browser.wait("document.readyState === 'complete'")
        check(Watch.hits == ["/control"], "control: the watcher sees a fetch: %r" % Watch.hits)
        # The server stops cleanly on SIGTERM (and a sanitizer build reports nothing).
        server.terminate()
        err = server.communicate(timeout=20)[1]
        check(server.returncode == 0 and "Sanitizer" not in err,
              "the server exits 0 on SIGTERM: %d %s" % (server.returncode, err[-2000:]))
        server = None
    finally:
        if browser:
            browser.close()
        if server:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
        watcher.shutdown()
        for n in names:
            run(ARB, "workspace", "delete", "--force", n, cwd=repo, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    if fails:
        print("%d check(s) failed" % len(fails))
        sys.exit(1)


def as_user():
    """Root runs the whole test again as an ordinary user (as tests/integration/fs_user.sh)."""
    user = "arbtest"
    if os.environ.get("ARB_REVIEW_NESTED") or os.geteuid() != 0 or not shutil.which("runuser"):
        return
    if subprocess.run(["id", user], capture_output=True).returncode != 0 and \
            subprocess.run(["useradd", "-m", user], capture_output=True).returncode != 0:
        print("note: cannot create user %s; not run as an ordinary user" % user)
        return
    os.chmod("/dev/fuse", 0o666)
    d = tempfile.mkdtemp(prefix="arb-review-user-")
    os.chmod(d, 0o755)
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        # The program and what sits beside it (helpers, the proxy library), where the user
        # reaches them.
        for f in ("arborinth", "arborinth_fs", "arborinth_box_init", "arborinth_proxy"):
            if os.path.exists(os.path.join(os.path.dirname(ARB), f)):
                shutil.copy(os.path.join(os.path.dirname(ARB), f), d)
        for f in ("e2e_review.py", "cdp.py", "fslib.py", "../lib/arbtest.py"):
            shutil.copy(os.path.join(here, f), d)
        subprocess.run(["chown", "-R", user, d], check=True)
        print("--- again as the ordinary user %s ---" % user, flush=True)
        r = subprocess.run(["runuser", "-u", user, "--", "env", "HOME=/home/" + user,
                            "TMPDIR=" + d, "ARB=" + os.path.join(d, "arborinth"),
                            "ARB_BUILD=" + d, "ARB_REVIEW_NESTED=1", "python3",
                            os.path.join(d, "e2e_review.py")])
        if r.returncode != 0:
            print("FAIL the test as the ordinary user %s (%d)" % (user, r.returncode))
            sys.exit(1)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
    as_user()
