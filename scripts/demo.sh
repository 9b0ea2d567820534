#!/usr/bin/env bash
# scripts/demo.sh: the main job on a built-in example. Installs what it needs, builds, makes a
# small demo repository, creates a workspace (a copy-on-write view, no clone), lets a command
# change it inside the bubblewrap box, and shows the result: the origin untouched, the audit
# trail of every write (and its hash chain verified), the session's checkpoints and diff, the
# work fetched back with git and merged into the origin's branch.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# ARBORINTH=arborinth: use an installed command (the Debian package) instead of building one.
if [ -n "${ARBORINTH:-}" ]; then
	A=$ARBORINTH
else
	bash "$top/scripts/deps.sh" --build
	echo "building (scripts/build.sh into build/)" >&2
	bash "$top/scripts/build.sh" "$top/build" >/dev/null
	A="$top/build/cli/arborinth"
fi
demo=$(mktemp -d /tmp/arborinth-demo.XXXXXX)
cleanup() {
	"$A" --workdir "$demo/repo" workspace delete demo >/dev/null 2>&1 || true
	rm -rf "$demo"
}
trap cleanup EXIT

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() {
	say "$*"
	"$@"
}

mkdir -p "$demo/repo" && cd "$demo/repo"
git init -q -b main
git config user.email demo@example.com && git config user.name demo
printf 'Demo project\n' >README.md
mkdir -p src && printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' >src/main.c
git add -A && git commit -qm "initial commit"

run "$A" project info
run "$A" workspace create demo
run ls -la .git/arborinth/workspaces/demo/workdir
# The "agent": edits, builds and commits inside the box (no network, real home hidden).
run "$A" shell demo -- sh -c '
	printf "Demo project, improved by an agent\n" > README.md
	sed -i "s/hello/hello from the box/" src/main.c
	cc -o /tmp/hello src/main.c && /tmp/hello
	git add -A && git -c user.name=agent -c user.email=agent@example.com commit -qm "agent: improve greeting"
	if curl -s -m 2 -o /dev/null https://example.com; then echo "network: reachable"; else echo "network: none (no route out of the box)"; fi
	echo "home: $HOME ($(ls -A "$HOME" | wc -l) entries)"'
run "$A" audit demo
run "$A" audit demo --verify
# Each session is a diff between two checkpoints; any of them can be gone back to.
run "$A" log demo
run "$A" diff demo --session 1 --stat
run git status --short
run git fetch -q arborinth/demo
run git log --oneline --all
run git diff --stat main arborinth/demo/arborinth/demo
# Bring the agent's commit home into the origin's branch (a fast-forward here).
run "$A" merge demo
run git log --oneline -1
