#!/usr/bin/env bash
# scripts/demo.sh: the main job on a built-in example. Installs what it needs, builds, makes a
# small demo repository, creates a workspace, runs a command in it and shows the result.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/deps.sh"
bash "$top/scripts/build.sh" "$top/build" >/dev/null
A="$top/build/cli/arborinth"
demo=$(mktemp -d /tmp/arborinth-demo.XXXXXX)
trap '"$A" --workdir "$demo/repo" workspace delete demo >/dev/null 2>&1 || true; rm -rf "$demo"' EXIT

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

mkdir -p "$demo/repo" && cd "$demo/repo"
git init -q -b main
git config user.email demo@example.com && git config user.name demo
printf 'Demo project\n' >README.md
mkdir -p src && printf 'int main(void) { return 0; }\n' >src/main.c
git add -A && git commit -qm "initial commit"

run "$A" project info
run "$A" workspace create demo
run "$A" workspace list
run "$A" shell demo --jail none -- sh -c 'pwd; ls -la'
run git --git-dir=.arborinth/workspaces/demo/git log --oneline
run git fetch -q arborinth/demo
run git branch -a
run git status --short
