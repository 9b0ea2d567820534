#!/usr/bin/env python3
"""tests/integration/docs_pages.py: the command pages (docs/commands/) against the real parser.

For every command the options its parser accepts (`arborinth --list-options CMD [SUB]`, which
prints the getopt table cli_getopt is given, so nothing is kept twice) must be the options its
page lists, and the other way round; every command `arborinth --help` lists has a page with
the same summary and every page a command; `--help` is the text made from the page; the man
pages render without warnings. Controls: a page with an option taken out, and one with an
option added, are both caught by the same comparison.
"""
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ["ARB_SRC"]
ARB = os.environ["ARB"]
BUILD = os.environ["ARB_BUILD"]
sys.path.insert(0, os.path.join(SRC, "scripts"))
import docgen  # noqa: E402

PAGES = os.path.join(SRC, "docs", "commands")
GLOBAL = {"--workdir", "--help", "-h"}  # cli_getopt adds them to every command (arborinth.md)
fails = 0


def check(ok, what):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    fails += 0 if ok else 1


def run(*args, cwd):
    return subprocess.run([ARB, *args], cwd=cwd, capture_output=True, text=True)


def parser_options(page, cwd):
    """The options the code accepts for the page's command: the union over its sub-commands."""
    if not page.cmd:
        cp = run("--list-options", cwd=cwd)
        return set(cp.stdout.split()) if cp.returncode == 0 else None
    words = [docgen.synopsis_words(l)[0] or [] for l in page.synopsis]
    subs = {w[1] for w in words if len(w) > 1}
    bare = any(len(w) <= 1 for w in words)  # the command itself, as `review` beside `review send`
    got = set()
    for sub in sorted(subs) + ([None] if bare or not subs else []):
        cp = run("--list-options", page.cmd, *([sub] if sub else []), cwd=cwd)
        if cp.returncode != 0:
            print(cp.stderr, end="")
            return None
        got |= set(cp.stdout.split())
    return got


def compare(code, documented):
    """(in the code, not on the page), (on the page, not in the code)."""
    return sorted(code - documented), sorted(documented - code)


def main():
    with tempfile.TemporaryDirectory() as empty:  # not a repository: nothing can act
        pages = docgen.load(sorted(os.path.join(PAGES, f) for f in os.listdir(PAGES)
                                   if f.endswith(".md")))
        byname = {p.cmd: p for p in pages}
        # Commands and summaries: `arborinth --help` lists the table in cli/main.c.
        out = run("--help", cwd=empty).stdout
        listed = dict(re.findall(r"^  ([a-z][a-z0-9-]*) +(\S.*)$",
                                 out.split("Commands:\n")[1].split("\n\n")[0], re.M))
        for cmd, summary in listed.items():
            check(cmd in byname, "command %s has a page" % cmd)
            if cmd in byname:
                check(byname[cmd].summary == summary,
                      "%s: the page's summary is --help's (%r, %r)"
                      % (cmd, byname[cmd].summary, summary))
        for p in pages:
            if p.cmd:
                check(p.cmd in listed, "page %s is a command --help lists" % p.name)
        overview = "\n".join(byname[""].section("COMMANDS"))
        for cmd in listed:
            check("`arborinth %s`" % cmd in overview, "arborinth.md's COMMANDS names %s" % cmd)
        # Options, both ways.
        shell = None
        for p in pages:
            code = parser_options(p, empty)
            check(code is not None, "%s: --list-options ran" % p.name)
            if code is None:
                continue
            if p.cmd:
                code -= GLOBAL
            missing, extra = compare(code, set(p.option_names()))
            check(not missing, "%s: every option of the parser is on the page %s"
                  % (p.name, missing or ""))
            check(not extra, "%s: every option on the page is the parser's %s"
                  % (p.name, extra or ""))
            if p.cmd == "shell":
                shell = (code, set(p.option_names()))
            # --help is the page's text.
            cp = run(*(["help"] if not p.cmd else [p.cmd, "--help"]), cwd=empty)
            want = docgen.help_text(p)
            if p.cmd:
                check(cp.returncode == 0 and cp.stdout == want,
                      "%s --help is made from the page" % (p.cmd))
            else:
                check(cp.returncode == 0 and want.split("\nOptions:\n")[1] in cp.stdout,
                      "arborinth --help has the page's global options")
            man = os.path.join(BUILD, "docs", "man", p.name + ".1")
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", man],
                               capture_output=True, text=True)
            check(os.path.exists(man) and r.returncode == 0 and not r.stderr,
                  "%s.1 renders without warnings %s" % (p.name, r.stderr.strip()))
        # Controls: the comparison catches an option taken out of a page and one added.
        code, doc = shell
        check(compare(code, doc - {"--jail"}) == (["--jail"], []),
              "control: a page without --jail is caught")
        check(compare(code, doc | {"--frobnicate"}) == ([], ["--frobnicate"]),
              "control: a page with an option the parser lacks is caught")
        # And the parser's side is real: an option the table lacks is refused by the command.
        cp = run("shell", "x", "--frobnicate", cwd=empty)
        check(cp.returncode == 2 and "--frobnicate" in cp.stderr and
              "--frobnicate" not in run("--list-options", "shell", cwd=empty).stdout,
              "control: what --list-options omits, the command refuses")
    # The format is enforced: a page that is not in it is an error naming its line.
    good = "# arborinth-x(1) -- x\n\n## SYNOPSIS\n`arborinth x`\n\n## DESCRIPTION\nX.\n"
    bad = {"a title without (1)": good.replace("(1)", ""),
           "an option without a colon": good + "\n## OPTIONS\n* `--json`\n  Json.\n",
           "an option without a description": good + "\n## OPTIONS\n* `--json`:\n",
           "an option not in backticks": good + "\n## OPTIONS\n* --json:\n  Json.\n",
           "no DESCRIPTION": good.replace("## DESCRIPTION", "## DESCRIPTIONS")}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "arborinth-x.md")
        for what, text in [("control: a page in the format", None)] + list(bad.items()):
            with open(path, "w") as f:
                f.write(good + "\n## OPTIONS\n* `-j`, `--json` *X*:\n  Json.\n"
                        if text is None else text)
            try:
                page = docgen.Page(path)
                err = None
            except docgen.PageError as e:
                err = str(e)
            if text is None:
                check(err is None and page.option_names() == ["-j", "--json"], what)
            else:
                check(err is not None and err.startswith(path + ":"),
                      "a page with %s is refused (%s)" % (what, err))
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
