#!/usr/bin/env bash
# scripts/check-layers.sh: the architecture's rules, checked on the sources (CI runs it next
# to the format check). Exit 1 with one line per violation.
#
#  1. Each folder includes only the modules below it (ARCHITECTURE in the README):
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
#  3. No sprintf, strcpy, strcat, atoi, gets in the sources (snprintf, strtol, util_asprintf).
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
	[helpers]="cli fs jail proxy util"
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

# Unbounded or unchecked calls.
while IFS= read -r hit; do
	complain "$hit: use snprintf, util_asprintf or strtol instead"
done < <(git grep -n -E '\b(sprintf|strcpy|strcat|atoi|gets)\(' -- '*.c' ':!tests/' || true)

exit $bad
