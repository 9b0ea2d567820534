#!/usr/bin/env python3
r"""compat/gen-lazy-proxy.py: the forwarder lines at the end of compat/proxy_lazy_libs.c.

Reads the prototypes of the named libcurl, OpenSSL and nghttp2 functions (names on stdin, one
per line) from their headers, as clang sees them (its JSON syntax tree), and prints a
LAZY_FWD(lib, ret, name, (params), (args)) line for each, LAZY_FREE(...) for one that frees
or disposes of an object and returns nothing, LAZY_VOID(...) for another returning nothing.
The variadic ones (curl_easy_setopt, curl_easy_getinfo, curl_share_setopt, EVP_PKEY_Q_keygen)
are written by hand. When arborinth_proxy starts calling a function of these libraries it did
not call before, its link fails naming it; then:

    (python3 -c 'import re; print("\n".join(re.findall(r"(\w+),\s*\(",
        open("compat/proxy_lazy_libs.c").read())))'; echo new_function) |
        python3 compat/gen-lazy-proxy.py

and put the lines printed in place of the list, then run clang-format -i
compat/proxy_lazy_libs.c. The compiler checks every line against the headers: a wrong
prototype does not build.
"""
import json
import re
import subprocess
import sys

HEADERS = ["curl/curl.h", "nghttp2/nghttp2.h", "openssl/err.h", "openssl/evp.h",
           "openssl/pem.h", "openssl/ssl.h", "openssl/x509v3.h"]
BY_HAND = {"curl_easy_setopt", "curl_easy_getinfo", "curl_share_setopt", "EVP_PKEY_Q_keygen"}
# Functions whose first parameter newer headers declare const (curl 8's curl_url_get): the
# forwarder takes it const, which builds against both (proxy_lazy_libs.c renames the header's
# declaration of these).
CONST_FIRST = {"curl_url_get"}


def lib_of(name):
    if name.startswith("curl_"):
        return "LIB_CURL"
    if name.startswith("nghttp2_"):
        return "LIB_NGHTTP2"
    if name.startswith(("SSL_", "TLS_")):
        return "LIB_SSL"
    return "LIB_CRYPTO"


def param(t, i):
    # A function pointer (or any declarator the name goes inside of): through typeof.
    return "__typeof__(%s) a%d" % (t, i) if "(" in t or "[" in t else "%s a%d" % (t, i)


def main():
    names = sorted({l.strip().split("@")[0] for l in sys.stdin if l.strip()})
    src = "".join("#include <%s>\n" % h for h in HEADERS)
    out = subprocess.run(["clang", "-x", "c", "-fsyntax-only", "-Xclang", "-ast-dump=json", "-"],
                         input=src, capture_output=True, text=True, check=True).stdout
    decls = {}
    for d in json.loads(out).get("inner", []):
        if d.get("kind") == "FunctionDecl" and d.get("name") in names:
            decls.setdefault(d["name"], d)
    for n in names:
        if n in BY_HAND:
            continue
        d = decls.get(n)
        if not d:
            sys.exit("no prototype for %s" % n)
        ps = [p["type"]["qualType"] for p in d.get("inner", []) if p["kind"] == "ParmVarDecl"]
        if d.get("variadic"):
            sys.exit("%s is variadic: write its forwarder by hand" % n)
        ft = d["type"]["qualType"]
        ret = ft[: ft.index("(")].strip() if not ps else ft[: len(ft) - len("(%s)" % ", ".join(ps))].strip()
        if n in CONST_FIRST and ps and not ps[0].startswith("const "):
            ps[0] = "const " + ps[0]
        plist = ", ".join(param(t, i) for i, t in enumerate(ps)) or "void"
        args = ", ".join("a%d" % i for i in range(len(ps)))
        lib = lib_of(n)
        if ret == "void" and re.search(r"(free|cleanup|_del)(_all)?$", n):
            print("LAZY_FREE(%s, %s, (%s), (%s))" % (lib, n, plist, args))
        elif ret == "void":
            print("LAZY_VOID(%s, %s, (%s), (%s))" % (lib, n, plist, args))
        else:
            print("LAZY_FWD(%s, %s, %s, (%s), (%s))" % (lib, ret, n, plist, args))


main()
