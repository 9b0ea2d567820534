#!/usr/bin/env bash
# Limits on a box: --timeout stops a runaway command (SIGTERM, then SIGKILL to the whole box),
# exits 124 with one line, leaves no process behind, and the workspace's view and the next box
# keep working; the audit records the session's status.
. "$(dirname "$0")/jail_lib.sh"
jail_setup

# --- --timeout --------------------------------------------------------------------------------
start=$(date +%s%N)
expect_status 124 "--timeout stops a sleeper" -- box --timeout 1s -- sh -c 'echo started; sleep 60; echo never'
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "started" "$OUT" "the command ran until the timeout"
expect_match "^arborinth: --timeout: the box ran out of time after 1.000 s and was stopped$" "$ERR" "timeout message"
expect_one_line_error "--timeout"
[ "$took" -lt 5000 ] && pass || fail "--timeout 1s took $took ms"

# A command that ignores SIGTERM, with children of its own, is killed with its whole box.
tag="arb-limits-$$"
start=$(date +%s%N)
expect_status 124 "--timeout kills what ignores SIGTERM" -- box --timeout 1s -- sh -c \
	"trap '' TERM; (exec -a $tag sleep 300) & (exec -a $tag sh -c 'trap \"\" TERM; while :; do :; done') & while :; do :; done"
took=$((($(date +%s%N) - start) / 1000000))
expect_match "and was stopped \(killed\)$" "$ERR" "timeout message says it killed"
[ "$took" -lt 8000 ] && pass || fail "--timeout 1s with a SIGTERM-proof loop took $took ms"
sleep 0.2
if pgrep -f "$tag" >/dev/null; then fail "processes of the box outlived it: $(pgrep -af "$tag")"; else pass; fi

# Control: within its time the command's own status passes through.
expect_status 3 "control: a command that ends in time" -- box --timeout 30s -- sh -c 'exit 3'
expect_status 0 "control: the same command without a timeout" -- box -- sh -c 'sleep 0.2'

# The view daemon and the next box are fine; the audit has the session's status.
expect_status 0 "the workspace still works" -- box -- sh -c 'echo after >after.txt && cat after.txt'
expect_eq "after" "$OUT" "a box after the timeouts writes the view"
expect_status 0 "audit" -- "$ARB" audit w --kind exec --json
expect_match '"exit_status": ?124' "$OUT" "the audit records the timed-out session's status"

# Errors: one line, exit 2, nothing run.
for bad in 5 0s -3s 2024-01-01 @10 soon ""; do
	expect_status 2 "--timeout '$bad'" -- box --timeout "$bad" -- touch /tmp/ran
	expect_match "^arborinth: --timeout '$bad': expected a duration such as 30s, 10m, 2h or 1d" "$ERR" "--timeout '$bad' message"
done
[ ! -e "$WS/tmp/ran" ] && pass || fail "a refused --timeout ran the command"
expect_status 2 "--timeout with --jail none" -- box --jail none --timeout 5s -- true
expect_one_line_error "--timeout with --jail none"
expect_status 0 "explain --timeout" -- box --timeout 90s --explain -- true
expect_match "timeout    90000 ms: then SIGTERM to the command, SIGKILL to the box 2 s later \(exit 124\)" "$OUT" "explain shows the timeout"
finish
