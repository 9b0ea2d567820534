#!/usr/bin/env bash
# The README as a newcomer meets it: at most 10 KB, every relative link in it, in
# BENCHMARKS.md and in docs/ names a file that exists, and its "A first session" commands,
# run as they are written, do what it says (a workspace, a box's commit, log and diff, the
# merge, the delete), as root and as an ordinary user. Controls: the size and link checks
# fail on a file made to fail them.
. "$(dirname "$0")/lib.sh"
README="$ARB_SRC/README.md"

# readme_size FILE: fails when FILE is over 10 KB.
readme_size() { [ "$(stat -c %s "$1")" -le 10240 ]; }
expect_status 0 "README.md is at most 10 KB ($(stat -c %s "$README") bytes)" -- readme_size "$README"
head -c 10241 /dev/zero >"$T/big.md"
expect_status 1 "control: a 10241-byte file fails the size check" -- readme_size "$T/big.md"

# Links other branches add (the command pages, the folders' page): remove from this list
# once they are in the tree.
pending=''
# broken_links FILE...: prints each relative link whose target does not exist.
broken_links() {
	python3 - "$ARB_SRC" "$pending" "$@" <<'PY'
import os, re, sys
top, pending, bad = sys.argv[1], sys.argv[2].split(), 0
for f in sys.argv[3:]:
    text = re.sub(r"```.*?```", "", open(f).read(), flags=re.S)
    for t in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", t) or t.startswith("#"):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(f), t.split("#")[0]))
        rel = os.path.relpath(path, top) + ("/" if t.split("#")[0].endswith("/") else "")
        if not os.path.exists(path) and rel not in pending:
            print(f"{os.path.relpath(f, top)}: {t}")
            bad = 1
sys.exit(bad)
PY
}
expect_status 0 "README.md, BENCHMARKS.md and docs/ link only to files that exist" -- \
	broken_links "$README" "$ARB_SRC/BENCHMARKS.md" $(find "$ARB_SRC/docs" -name '*.md')
[ -z "$OUT" ] || printf '%s\n' "$OUT" >&2
printf 'see [x](no-such-page.md)\n' >"$T/broken.md"
expect_status 1 "control: a link to a missing page is found" -- broken_links "$T/broken.md"
expect_match "no-such-page.md" "$OUT" "control: and named"

# The first session, exactly as the README shows it.
awk '/^## A first session/{s=1} s&&/^```sh/{b=1;next} b&&/^```/{exit} b' "$README" >"$T/session.sh"
expect_match "workspace create try1" "$(cat "$T/session.sh")" "the README has a first session"
chmod 0755 "$T"
mkdir "$T/bin"
cp "$ARB" "$T/bin/arborinth"
chmod -R a+rX "$T/bin" "$T/session.sh"
# run_session DIR [USER]: a repository in DIR, the session in it, then what it left.
run_session() {
	local d=$1
	shift
	"$@" sh -c "mkdir -p '$d' && cd '$d' && git init -q -b main && git config user.email u@example.com &&
		git config user.name u && echo hello >README && git add README && git commit -qm init &&
		PATH='$T/bin':\$PATH bash -e '$T/session.sh'"
}
check_session() {
	local d=$1 who=$2
	expect_match "fast-forward of arborinth/try1" "$OUT" "$who: merge reports the fast-forward"
	expect_match "exit 0 +1 file changed, \+1 -0" "$OUT" "$who: log shows the session"
	expect_match "^\+# edited in the box" "$OUT" "$who: diff shows the box's line"
	expect_eq "box edit" "$(git -c safe.directory='*' -C "$d" log -1 --format=%s)" "$who: the box's commit is on main"
	expect_eq "# edited in the box" "$(tail -n1 "$d/README")" "$who: and in the working tree"
	expect_eq "" "$(git -c safe.directory='*' -C "$d" for-each-ref refs/arborinth)" "$who: delete left no ref"
	expect_eq "" "$(ls "$d/.git/arborinth/workspaces" 2>/dev/null)" "$who: nor a workspace folder"
}
me=$(id -un)
expect_status 0 "the first session as $me" -- run_session "$T/repo" env HOME="$T"
check_session "$T/repo" "$me"

if [ "$(id -u)" != 0 ]; then
	finish # already an ordinary user
	exit 0
fi
[ -e /dev/fuse ] && command -v runuser >/dev/null || skip "needs /dev/fuse and runuser to run it as an ordinary user"
user=arbtest
id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
chmod 0666 /dev/fuse
mkdir "$T/u" && chown "$user" "$T/u"
expect_status 0 "the first session as $user" -- \
	run_session "$T/u/repo" runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$T/u"
check_session "$T/u/repo" "$user"
finish
