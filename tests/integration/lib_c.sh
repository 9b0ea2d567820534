#!/usr/bin/env bash
# libarborinth from C, as a program outside the project uses it: the library as installed by
# `cmake --install` (soname libarborinth.so.0, only the header's arb_* symbols exported, a
# pkg-config file), examples/box_example.c compiled against the installed header and library
# with `pkg-config --cflags --libs arborinth` and run with the installed helpers; and the
# build tree's own box_example.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/lib.sh"

command -v pkg-config >/dev/null || skip "pkg-config is not installed"
LIB="$ARB_BUILD/lib/libarborinth.so.0"
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
expect_eq "libarborinth.so.0" "$soname" "the soname"
others=$(nm -D --defined-only "$LIB" | awk '$2 ~ /[TDBR]/ {print $3}' | grep -v '^arb_' || true)
expect_eq "" "$others" "only arb_* symbols are exported"
declared=$(grep -o '^ARB_EXTERN [^(]*\barb_[a-z_]*(' "$ARB_SRC/include/arborinth.h" |
	sed -E 's/.*\b(arb_[a-z_]*)\($/\1/' | sort)
exported=$(nm -D --defined-only "$LIB" | awk '{print $3}' | grep '^arb_' | sort)
expect_eq "$declared" "$exported" "the exports are exactly the header's functions"

cmake --install "$ARB_BUILD" --prefix "$T/inst" >"$T/install.log" 2>&1 && pass ||
	fail "cmake --install: $(tail -5 "$T/install.log")"
for f in bin/arborinth bin/arborinth_fs bin/arborinth_box_init include/arborinth.h \
	lib/libarborinth.so.0 lib/pkgconfig/arborinth.pc; do
	[ -e "$T/inst/$f" ] || [ -e "$T/inst/lib/x86_64-linux-gnu/${f#lib/}" ] && pass ||
		fail "installed $f"
done
pcdir=$(dirname "$(find "$T/inst" -name arborinth.pc | head -1)")
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs arborinth) && pass || fail "pkg-config"
# The sanitizer build's library wants its runtime in the program too.
[[ "$(ldd "$LIB")" == *libasan* ]] && flags="$flags -fsanitize=address,undefined"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror "$ARB_SRC/examples/box_example.c" $flags -o "$T/box_example" \
	2>"$T/cc.log" && pass || fail "compiling against the installed library: $(cat "$T/cc.log")"

mkrepo "$T/repo" >/dev/null
libdir=$(dirname "$(find "$T/inst" -name libarborinth.so.0 | head -1)")
OUT=$(cd "$T/repo" && LD_LIBRARY_PATH=$libdir ARBORINTH_HELPER_DIR=$T/inst/bin \
	"$T/box_example" 2>&1) && pass || fail "the installed example: $OUT"
expect_match "^exit status 0, session [0-9]+, output: hello from the box$" "$OUT" "it ran a box"
expect_match "audit: fs +create +greeting.txt \(pid [0-9]+, sh\)" "$OUT" "it read the audit"
expect_match "^deleted example-" "$OUT" "it deleted its workspace"
deps=$(LD_LIBRARY_PATH=$libdir ldd "$T/box_example")
[[ "$deps" == *"$libdir/libarborinth.so.0"* ]] && pass ||
	fail "the example used the installed library: $(grep arborinth <<<"$deps")"

# Errors: a clear message, a non-zero status, nothing left.
OUT=$(cd / && LD_LIBRARY_PATH=$libdir "$T/box_example" "$T/nope" 2>&1) && fail "no repository" || pass
expect_match "^box_example: project: " "$OUT" "a missing project is an error with the message"
OUT=$(cd "$T/repo" && "$ARB_BUILD/examples/box_example" 2>&1) && pass || fail "build tree example: $OUT"
expect_match "output: hello from the box" "$OUT" "the build tree's example"
[ -z "$(ls "$T/repo/.git/arborinth/workspaces")" ] && pass || fail "no workspace left"
finish
