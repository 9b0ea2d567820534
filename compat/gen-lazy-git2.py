#!/usr/bin/env python3
"""compat/gen-lazy-git2.py: the forwarder lines at the end of compat/git2_lazy.c.

Reads the prototypes of the named libgit2 functions (names on stdin, one per line) from its
headers and prints a GIT_FWD(ret, name, (params), (args)) line for each, or
GIT_FREE(name, (params), arg) for one that returns nothing (they all free or dispose of an
object). When arborinth starts calling a libgit2 function it did not call before, its link
fails naming it; then:

    (grep -o 'git_[a-z0-9_]*, (' compat/git2_lazy.c | cut -d, -f1; echo git_new_function) |
        python3 compat/gen-lazy-git2.py /usr/include/git2

and put the lines printed in place of the list (git_libgit2_shutdown is written by hand),
then run clang-format -i compat/git2_lazy.c.
The compiler checks every line against git2.h: a wrong prototype does not build.
"""
import os
import re
import sys


def params_split(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(p):
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", p)  # a function pointer: int (*cb)(...)
    if m:
        return m.group(1)
    m = re.search(r"(\w+)\s*(\[\s*\w*\s*\])?$", p)
    return m.group(1)


def main():
    inc = sys.argv[1]
    names = [l.strip() for l in sys.stdin if l.strip()]
    protos = {}
    for dirpath, _, files in os.walk(inc):
        for f in files:
            if not f.endswith(".h"):
                continue
            text = open(os.path.join(dirpath, f)).read()
            text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
            for m in re.finditer(r"GIT_EXTERN\(([^)]*)\)\s*(git_\w+)\s*\(([^;]*?)\)\s*;", text, re.S):
                protos[m.group(2)] = (" ".join(m.group(1).split()), " ".join(m.group(3).split()))
    for n in sorted(set(names)):
        if n not in protos:
            sys.exit("no prototype for %s" % n)
        ret, params = protos[n]
        ps = params_split(params)
        if ps == ["void"] or not ps:
            plist, args = "void", ""
        else:
            if any(p == "..." for p in ps):
                sys.exit("%s is variadic: write its forwarder by hand" % n)
            plist, args = ", ".join(ps), ", ".join(param_name(p) for p in ps)
        if n == "git_libgit2_shutdown":
            continue  # by hand: nothing to shut down before the library was opened
        if ret == "void":
            print("GIT_FREE(%s, (%s), %s)" % (n, plist, args))
        else:
            print("GIT_FWD(%s, %s, (%s), (%s))" % (ret, n, plist, args))


main()
