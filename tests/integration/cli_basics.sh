#!/usr/bin/env bash
# CLI surface: help, version, unknown commands/options, project info in and out of repos.
. "$(dirname "$0")/lib.sh"

expect_status 0 "--help" -- "$ARB" --help
expect_match "workspace" "$OUT" "--help lists commands"
expect_status 0 "--version" -- "$ARB" --version
expect_match "^arborinth [0-9]+\.[0-9]+\.[0-9]+$" "$OUT" "--version format"
expect_status 0 "help workspace" -- "$ARB" help workspace
expect_match "workspace create NAME" "$OUT" "help workspace"
expect_status 0 "workspace --help" -- "$ARB" workspace --help
expect_match "workspace create NAME" "$OUT" "workspace --help"
expect_status 0 "workspace create --help" -- "$ARB" workspace create --help
expect_status 0 "help project info" -- "$ARB" help project info
expect_match "project info" "$OUT" "help project info"

expect_status 2 "unknown command" -- "$ARB" frobnicate
expect_match "unknown command 'frobnicate'" "$ERR" "unknown command message"
expect_one_line_error "unknown command"
expect_status 2 "unknown global option" -- "$ARB" --frob
expect_match "unknown option '--frob'" "$ERR" "unknown option message"
expect_status 2 "unknown sub-command" -- "$ARB" workspace frob
expect_match "unknown sub-command 'workspace frob'" "$ERR" "unknown sub-command message"
expect_status 2 "unknown command option" -- "$ARB" workspace list --frob
expect_match "unknown option '--frob'" "$ERR" "unknown command option message"
expect_status 2 "missing value" -- "$ARB" workspace create x --rev
expect_match "needs a value" "$ERR" "missing option value message"
expect_status 2 "help unknown" -- "$ARB" help frobnicate
expect_status 2 "no command" -- "$ARB"

# project info
mkrepo "$T/repo"
expect_status 0 "project info" -- "$ARB" project info --workdir "$T/repo"
expect_match "^root: +$T/repo$" "$(printf '%s\n' "$OUT" | head -1)" "project info root"
expect_match "on main" "$OUT" "project info branch"
expect_match "workspaces: 0" "$OUT" "project info count"
head=$(git -C "$T/repo" rev-parse HEAD)
expect_status 0 "project info --json" -- "$ARB" --workdir "$T/repo/src/lib" project info --json
expect_eq "$head" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["head"]["commit"])')" "json head commit"
expect_eq "$T/repo" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])')" "json root from a subdirectory"
expect_eq "$T/repo/.git" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["git_dir"])')" "json git dir"
# project info must not create state
[ ! -e "$T/repo/.git/arborinth" ] && pass || fail "project info created .arborinth"

git -C "$T/repo" checkout -q --detach HEAD
expect_status 0 "detached" -- "$ARB" project info --workdir "$T/repo"
expect_match "\(detached\)" "$OUT" "detached HEAD shown"

mkdir -p "$T/plain"
expect_status 1 "outside a repository" -- "$ARB" project info --workdir "$T/plain"
expect_match "not inside a git repository" "$ERR" "outside message"
expect_one_line_error "outside a repository"
expect_status 1 "not a directory" -- "$ARB" project info --workdir "$T/repo/README"
expect_match "not a directory" "$ERR" "not a directory message"
expect_one_line_error "not a directory"
expect_status 1 "missing directory" -- "$ARB" project info --workdir "$T/nope"
expect_match "No such file or directory" "$ERR" "missing directory message"
git init -q --bare "$T/bare.git"
expect_status 1 "bare repository" -- "$ARB" project info --workdir "$T/bare.git"
expect_match "bare repository" "$ERR" "bare message"
expect_one_line_error "bare repository"

# A closed stdout is reported, not ignored.
if [ -w /dev/full ]; then
	got=0; "$ARB" project info --workdir "$T/repo" --json >/dev/full 2>/dev/null || got=$?
	expect_eq 1 "$got" "write error on stdout"
fi

finish
