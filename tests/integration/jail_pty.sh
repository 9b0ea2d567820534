#!/usr/bin/env bash
# An interactive shell in the box under a real pty: a prompt, job control (background jobs,
# Ctrl-Z, fg, Ctrl-C), window resizes reaching the box, the exit status passed out. The same
# session with --jail none is the control: a failure there is the harness's, not the box's.
. "$(dirname "$0")/jail_lib.sh"
jail_setup
command -v bash >/dev/null || skip "bash is not installed"
export SHELL=$(command -v bash) TERM=xterm PS1='arb$ '
printf "PS1='arb\$ '\n" >"$WS/home/.bashrc"

for jail in none bubblewrap; do
	rc=0
	OUT=$("$PY" "$ARB_SRC/tests/integration/jail_helper.py" interactive -- \
		"$ARB" shell w --jail "$jail" -- bash --norc -i 2>&1) || rc=$?
	expect_eq 0 "$rc" "interactive session (--jail $jail): $OUT"
	for check in prompt job-control-enabled echo background-job kill-job ctrl-z stopped-job \
		fg-ctrl-c resize winch-trap winch-from-resize exit-status; do
		expect_match "^$check ok$" "$(printf '%s\n' "$OUT" | grep "^$check " || echo "$check missing")" \
			"--jail $jail: $check"
	done
done

finish
