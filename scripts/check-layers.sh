#!/usr/bin/env bash
# scripts/check-layers.sh: the architecture's rules, checked on the sources (CI runs it next
# to the format check). Exit 1 with one line per violation.
#
#  1. Each folder includes only the modules below it (docs/internals.md):
#       util   -> (nothing)
#       audit  -> util             binds -> util
#       jail   -> util             proxy -> util
#       fs     -> audit util
#       ckpt   -> util                (the checkpoint store: git object and pack writer)
#       core   -> ckpt fs audit util
#       lib    -> include core fs jail proxy binds audit util   (libarborinth: the public API)
#       agents -> include lib core jail proxy binds util  (the vendor clients; in libarborinth,
#                 on lib's private box hooks, so agents/ may include lib/*_internal.h)
#       cli    -> include util (the public API: each command parses options and prints),
#                 except the files in cli_below below, which still reach the modules
#                 (issue #14's next steps move them onto the API)
#       helpers -> cli fs jail proxy util  (the helper programs' mains: view daemon, box-init)
#       compat -> proxy util               (process-level shims linked into the programs)
#  2. A module's private headers (*_internal.h) are included only
#     inside the module and by the unit tests.
#  3. Inside fs/, files call only down the stack given by fs_ranks below.
#  4. No sprintf, strcpy, strcat, atoi, gets in the sources (snprintf, strtol, util_asprintf).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
	[util]=""
	[audit]="util"
	[binds]="util"
	[jail]="util"
	[proxy]="util"
	[fs]="audit util"
	[ckpt]="util"
	[core]="ckpt fs audit util"
	[lib]="include core fs jail proxy binds audit util"
	[agents]="include lib core jail proxy binds util"
	[cli]="include util"
	[helpers]="cli fs jail proxy audit util"
	[compat]="proxy util"
)
# cli files allowed below the API, and why. The helper programs' mains are the modules' own
# entry points; main.c tells the library the program finds its helpers itself.
declare -A cli_below=(
	[cli/main.c]="lib_helpers_from_program"
)
bad=0
complain() {
	echo "check-layers: $*"
	bad=1
}

for dir in "${!allowed[@]}"; do
	while IFS=: read -r file line inc; do
		mod=${inc%%/*}
		[ "$mod" = "$dir" ] && continue
		[ "$dir" = cli ] && [ -n "${cli_below[$file]:-}" ] && continue
		if ! grep -qw -- "$mod" <<<"${allowed[$dir]}"; then
			complain "$file:$line: $dir/ may not include $inc (allowed: ${allowed[$dir]:-none})"
		fi
	done < <(git grep -n -o -E '^#include "[a-z_]+/[a-z_]+\.h"' -- "$dir/*.c" "$dir/*.h" |
		sed -E 's/#include "(.*)"/\1/')
done

# Private headers stay in their module (and the unit tests).
while IFS=: read -r file line inc; do
	mod=${inc%%/*}
	case "$file" in
	"$mod"/* | tests/unit/*) ;;
	agents/*) [ "$mod" = lib ] || complain "$file:$line: includes $inc, private to $mod/" ;;
	cli/*) [ "$mod" = lib ] && [ -n "${cli_below[$file]:-}" ] ||
		complain "$file:$line: includes $inc, private to $mod/" ;;
	*) complain "$file:$line: includes $inc, private to $mod/" ;;
	esac
done < <(git grep -n -o -E '^#include "[a-z_]+/([a-z_]+_internal)\.h"' -- '*.c' '*.h' |
	sed -E 's/#include "(.*)"/\1/')

# Inside fs/: a stack. Each file has a rank; a file calls only functions defined in files of
# its own rank or below (the files of one rank form one unit). node.c, the bottom, calls
# nothing above it: what the layers above must hear of a node goes through fs->hooks, set by
# daemon.c (docs/architecture.md). A new fs/ file must be given a rank here.
fs_ranks='
0 node.c boxes.c config_argv.c fuse_env.c gitinit.c layer.c lfs.c owner.c submods.c unmount.c
1 lower.c lower_sub.c lfs_view.c
2 fsmon.c
3 upper.c disk.c record.c
4 house.c reconcile.c
5 lookup.c hostgit.c
6 transport/devio.c transport/passthrough.c transport/uring.c
7 ops_node.c ops_dir.c ops_file.c ops_readdir.c ops_rename.c ops_xattr.c ops_ioctl.c
8 daemon.c
'
while IFS= read -r hit; do
	complain "$hit"
done < <(FS_RANKS=$fs_ranks python3 - <<'PY'
import os, re, subprocess
rank = {}
for line in os.environ["FS_RANKS"].strip().splitlines():
    r, *files = line.split()
    for f in files:
        rank["fs/" + f] = int(r)
files = subprocess.run(["git", "ls-files", "fs/*.c"], capture_output=True, text=True,
                       check=True).stdout.split()
def strip(s):  # comments and strings out, lines kept
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    s = re.sub(r"/\*.*?\*/", blank, s, flags=re.S)
    s = re.sub(r"//[^\n]*", blank, s)
    return re.sub(r'"(\\.|[^"\\\n])*"', blank, s)
src = {f: strip(open(f).read()) for f in files}
defs = {}
for f, s in src.items():
    if f not in rank:
        print(f"{f}: not in the fs/ stack (give it a rank in scripts/check-layers.sh)")
        continue
    for m in re.finditer(r"^(?!static)[A-Za-z_][\w \*]*?\b(fs_\w+)\s*\([^;{]*\)\s*\{", s, re.M):
        defs[m.group(1)] = f
for f, s in src.items():
    if f not in rank:
        continue
    for n, line in enumerate(s.splitlines(), 1):
        for m in re.finditer(r"\b(fs_\w+)\s*\(", line):
            g = defs.get(m.group(1))
            if g and rank[g] > rank[f]:
                print(f"{f}:{n}: calls {m.group(1)} ({g}, rank {rank[g]}) from rank {rank[f]}: "
                      "fs/ calls only down (a hook in fs->hooks instead)")
PY
)

# Unbounded or unchecked calls.
while IFS= read -r hit; do
	complain "$hit: use snprintf, util_asprintf or strtol instead"
done < <(git grep -n -E '\b(sprintf|strcpy|strcat|atoi|gets)\(' -- '*.c' ':!tests/' || true)

exit $bad
