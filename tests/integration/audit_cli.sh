#!/usr/bin/env bash
# tests/integration/audit_cli.sh: `arborinth audit NAME` over events written into a real
# state.db through the recorder API (tests/helpers/audit_emit), plus real `shell` sessions:
# timeline, filters, --summary, --json, --follow, colour, deleted and purged workspaces.
source "$(dirname "$0")/lib.sh"
: "${ARB_BUILD:?ARB_BUILD must point at the build tree}"
EMIT=$ARB_BUILD/tests/audit_emit
[ -x "$EMIT" ] || { echo "missing $EMIT" >&2; exit 1; }

[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no FUSE (workspace create mounts)"

R=$T/repo
mkrepo "$R"
cd "$R"
expect_status 0 "create" -- "$ARB" workspace create w
DB=$R/.git/arborinth/state.db
S=1000000000
T0=$((1700000000 * S)) # 2023-11-14T22:13:20Z

emit() { "$EMIT" "$DB" "$1"; }

# --- unknown workspace, bad options
expect_status 1 "unknown workspace" -- "$ARB" audit nope
expect_match "no workspace named 'nope'" "$ERR" "unknown workspace message"
expect_one_line_error "unknown workspace"
expect_status 2 "missing name" -- "$ARB" audit
expect_status 2 "bad op" -- "$ARB" audit w --op frobnicate
expect_match "unknown operation 'frobnicate'" "$ERR" "bad op message"
expect_one_line_error "bad op"
expect_status 2 "bad time" -- "$ARB" audit w --since yesterdayish
expect_match "invalid time 'yesterdayish'" "$ERR" "bad time message"
expect_status 2 "bad kind" -- "$ARB" audit w --kind disk
expect_status 2 "bad session" -- "$ARB" audit w --session x1
expect_status 2 "since after until" -- "$ARB" audit w --since 2024-01-02 --until 2024-01-01
expect_status 2 "summary+follow" -- "$ARB" audit w --summary --follow
expect_status 0 "empty history" -- "$ARB" audit w
expect_eq "" "$OUT" "empty history prints nothing"

# --- a known story, at fixed times, by this shell (pid "parent" of audit_emit)
printf '%s\n' \
	"$((T0 + 1 * S))	create	src/new.c	-	0	-1	parent" \
	"$((T0 + 2 * S))	write	src/new.c	-	0	1500	parent" \
	"$((T0 + 3 * S))	write	README	-	0	7	parent" \
	"$((T0 + 4 * S))	unlink	old.txt	-	0	-1	parent" \
	"$((T0 + 5 * S))	rename	a.txt	b.txt	0	-1	parent" \
	"$((T0 + 6 * S))	unlink	missing	-	2	-1	parent" \
	"$((T0 + 7 * S))	write	.git/index	-	0	64	parent" \
	"$((T0 + 8 * S))	mkdir	.git/refs/x	-	0	-1	parent" \
	"$((T0 + 9 * S))	symlink	lnk	README	0	-1	parent" | emit w
expect_status 0 "timeline" -- "$ARB" audit w
expect_eq 7 "$(printf '%s\n' "$OUT" | wc -l)" "timeline rows (.git hidden)"
expect_match "bash\[[0-9]+\] +create +src/new.c +ok" "$(printf '%s\n' "$OUT" | sed -n 1p)" "first row"
expect_match "write +src/new.c +1.5 KiB +ok" "$(printf '%s\n' "$OUT" | sed -n 2p)" "size"
expect_match "rename +a.txt -> b.txt +ok" "$OUT" "rename shows both paths"
expect_match "unlink +missing +ENOENT" "$OUT" "failed op shows its errno"
expect_match "symlink +lnk -> README" "$OUT" "symlink target"
if grep -q $'\033' <<<"$OUT"; then fail "piped output has colour"; else pass; fi
# Oldest first by time, whatever the order of arrival.
printf '%s\n' "$((T0 + 500000000))	mkdir	early	-	0	-1	parent" | emit w
expect_status 0 "late arrival" -- "$ARB" audit w
expect_match "mkdir +early" "$(printf '%s\n' "$OUT" | sed -n 1p)" "sorted by time"

expect_status 0 "--all" -- "$ARB" audit w --all
expect_eq 10 "$(printf '%s\n' "$OUT" | wc -l)" "--all shows .git internals"
expect_match "\.git/index" "$OUT" "--all .git/index"

# --- filters
expect_status 0 "--path" -- "$ARB" audit w --path 'src/*'
expect_eq 2 "$(printf '%s\n' "$OUT" | wc -l)" "--path src/*"
expect_status 0 "--path rename dest" -- "$ARB" audit w --path b.txt
expect_match "a.txt -> b.txt" "$OUT" "--path matches a rename destination"
expect_status 0 "--op" -- "$ARB" audit w --op unlink,rename
expect_eq 3 "$(printf '%s\n' "$OUT" | wc -l)" "--op unlink,rename"
expect_status 0 "--op twice" -- "$ARB" audit w --op unlink --op mkdir
expect_eq 3 "$(printf '%s\n' "$OUT" | wc -l)" "--op repeated"
expect_status 0 "--failed" -- "$ARB" audit w --failed
expect_eq 1 "$(printf '%s\n' "$OUT" | wc -l)" "--failed"
expect_match "missing" "$OUT" "--failed row"
expect_status 0 "--since/--until ISO" -- "$ARB" audit w --since 2023-11-14T22:13:22Z \
	--until 2023-11-14T22:13:24Z
expect_eq 3 "$(printf '%s\n' "$OUT" | wc -l)" "ISO window (inclusive)"
expect_status 0 "--since local" -- env TZ=UTC "$ARB" audit w --since '2023-11-14 22:13:25'
expect_eq 3 "$(printf '%s\n' "$OUT" | wc -l)" "local time window"
expect_status 0 "--kind exec (none yet)" -- "$ARB" audit w --kind exec
expect_eq "" "$OUT" "no sessions yet"

# Relative times: one event 2 hours ago, one 30 s ago.
printf '%s\n' "-7200	chmod	old-perm	-	0	-1	parent" "-30	chmod	new-perm	-	0	-1	parent" | emit w
expect_status 0 "--since 10m" -- "$ARB" audit w --since 10m
expect_eq 1 "$(printf '%s\n' "$OUT" | wc -l)" "--since 10m"
expect_match "new-perm" "$OUT" "--since 10m row"
expect_status 0 "--since 3h --until 1h" -- "$ARB" audit w --since 3h --until 1h
expect_match "old-perm" "$OUT" "relative window"
expect_eq 1 "$(printf '%s\n' "$OUT" | wc -l)" "relative window rows"

# --- summary
expect_status 0 "--summary" -- "$ARB" audit w --summary --until 2023-11-15
line() { printf '%s\n' "$OUT" | grep -E " $1( ->.*)?\$"; }
expect_match "^added +2 +1.5 KiB .*2023-11-14 .* src/new.c$" "$(TZ=UTC line src/new.c)" "summary added"
expect_match "^modified +1 +7 B " "$(line README)" "summary modified"
expect_match "^deleted +1 " "$(line old.txt)" "summary deleted"
expect_match "^renamed +1 .* a.txt -> b.txt$" "$(line a.txt)" "summary renamed"
expect_match "^added +1 " "$(line b.txt)" "summary rename destination"
expect_match "^unchanged +1 " "$(line missing)" "summary failed only"
if grep -q '\.git' <<<"$OUT"; then fail "summary shows .git"; else pass; fi
# A file made in the window and then moved (an editor's save, a tool's temporary file) is
# one line, the destination's, with all its operations; control: a.txt, which was there
# before, still shows as renamed (above).
expect_status 0 "create mv" -- "$ARB" workspace create mv
printf '%s\n' \
	"$((T0 + 1 * S))	create	tmp.swp	-	0	-1	parent" \
	"$((T0 + 2 * S))	write	tmp.swp	-	0	10	parent" \
	"$((T0 + 3 * S))	rename	tmp.swp	mid.txt	0	-1	parent" \
	"$((T0 + 4 * S))	rename	mid.txt	final.txt	0	-1	parent" | emit mv
expect_status 0 "--summary moved" -- "$ARB" audit mv --summary
expect_eq 2 "$(printf '%s\n' "$OUT" | grep -c .)" "a created-then-moved file is one line under the header ($OUT)"
expect_match "^added +4 +10 B .* final.txt$" "$OUT" "it is the destination's, with every operation"
expect_status 0 "--summary moved json" -- "$ARB" audit mv --summary --json
python3 -c 'import json,sys; r=[json.loads(l) for l in sys.argv[1].splitlines()]; p=[x for x in r if "path" in x and "status" in x]; assert [(x["path"],x["status"],x["ops"]) for x in p]==[("final.txt","added",4)], r' "$OUT" && pass || fail "moved summary json ($OUT)"
expect_status 0 "delete mv" -- "$ARB" workspace delete mv --purge --force

# --- JSON: one object per line, stable fields
expect_status 0 "--json" -- "$ARB" audit w --json --path 'src/*'
python3 - "$OUT" <<'PY' && pass || fail "json fields"
import json, sys
lines = sys.argv[1].splitlines()
assert len(lines) == 2, lines
rows = [json.loads(l) for l in lines]
keys = ["seq", "time", "time_ns", "workspace", "kind", "op", "path", "path2", "result", "errno",
        "exit_status", "pid", "comm", "exe", "session", "size", "count", "off_lo", "off_hi",
        "mode", "mtime_ns", "argv", "jail", "backend", "method", "host", "port", "status", "bytes_up",
        "bytes_down", "duration_ns", "decision", "reason"]
for r in rows:
    assert list(r.keys()) == keys, list(r.keys())
    assert all(r[k] is None for k in keys[23:]), r  # the proxy's fields, on fs rows
w = rows[1]
assert w["op"] == "write" and w["kind"] == "fs" and w["path"] == "src/new.c", w
assert w["size"] == 1500 and w["count"] == 1 and w["off_lo"] == 0 and w["off_hi"] == 1500, w
assert w["result"] == "ok" and w["errno"] == 0 and w["workspace"] == "w", w
assert w["time"] == "2023-11-14T22:13:22.000000000Z" and w["time_ns"] == 1700000002000000000, w
assert w["pid"] > 1 and w["comm"] == "bash" and w["exe"].endswith("bash"), w
assert w["session"] is None and w["argv"] is None and w["exit_status"] is None, w
PY
expect_status 0 "--json failed" -- "$ARB" audit w --json --failed
expect_match '"result":"ENOENT","errno":2' "$OUT" "json errno name"
expect_status 0 "--summary --json" -- "$ARB" audit w --summary --json --path b.txt
python3 -c 'import json,sys; r=[json.loads(l) for l in sys.argv[1].splitlines()][1]; assert r["path"]=="b.txt" and r["status"]=="added" and r["ops"]==1, r' "$OUT" && pass || fail "summary json"

# --- colour on a terminal, not with NO_COLOR
if command -v script >/dev/null; then
	out=$(script -qec "\"$ARB\" --workdir \"$R\" audit w --op create" /dev/null)
	if grep -q $'\033\[' <<<"$out"; then pass; else fail "no colour on a tty: $out"; fi
	out=$(NO_COLOR=1 script -qec "\"$ARB\" --workdir \"$R\" audit w --op create" /dev/null)
	if grep -q $'\033\[' <<<"$out"; then fail "colour despite NO_COLOR"; else pass; fi
fi

# --- sessions: a real `shell` run, its fs events linked to it
expect_status 3 "shell" -- "$ARB" shell w -- sh -c 'echo hi > from-shell.txt; mkdir shell-dir; exit 3'
expect_status 0 "--kind exec" -- "$ARB" audit w --kind exec
expect_eq 2 "$(printf '%s\n' "$OUT" | wc -l)" "exec and exit rows"
expect_match "exec +session ([0-9]+) \(jail [a-z]+\): sh -c 'echo hi > from-shell.txt; mkdir shell-dir; exit 3'" \
	"$OUT" "exec row with argv"
expect_match "exit +session [0-9]+ +status 3" "$OUT" "exit row with status"
SID=$(printf '%s\n' "$OUT" | sed -nE 's/.*exec +session ([0-9]+).*/\1/p')
sleep 0.3
expect_status 0 "--session" -- "$ARB" audit w --session "$SID"
expect_match "sh\[[0-9]+\] +create +from-shell.txt" "$OUT" "session create by sh"
expect_match "mkdir\[[0-9]+\] +mkdir +shell-dir" "$OUT" "session mkdir by mkdir"
expect_eq 5 "$(printf '%s\n' "$OUT" | wc -l)" "session rows: exec, create, write, mkdir, exit"
expect_status 0 "--session json" -- "$ARB" audit w --session "$SID" --json --op exit
expect_match '"exit_status":3' "$OUT" "json exit status"
expect_match '"argv":\["sh","-c",' "$OUT" "json argv"
expect_status 0 "--kind fs" -- "$ARB" audit w --kind fs --op exec
expect_eq "" "$OUT" "kind and op combine"

# --- follow
"$ARB" audit w --follow --json --path 'follow/*' >"$T/follow.out" 2>"$T/follow.err" &
FOLLOW=$!
sleep 0.5
printf '%s\n' "now	create	follow/one	-	0	-1	parent" "now	mkdir	other	-	0	-1	parent" | emit w
for _ in $(seq 50); do
	grep -q follow/one "$T/follow.out" && break
	sleep 0.1
done
expect_match '"path":"follow/one"' "$(cat "$T/follow.out")" "--follow prints new events"
printf '%s\n' "now	unlink	follow/one	-	0	-1	parent" | emit w
for _ in $(seq 50); do
	[ "$(wc -l <"$T/follow.out")" -ge 2 ] && break
	sleep 0.1
done
expect_eq 2 "$(wc -l <"$T/follow.out")" "--follow: exactly the matching new rows"
kill "$FOLLOW" && wait "$FOLLOW" 2>/dev/null || true

# --- deleted workspace: history stays until --purge; a new workspace of that name starts empty
expect_status 0 "delete" -- "$ARB" workspace delete w --force
expect_status 0 "audit after delete" -- "$ARB" audit w --op unlink
expect_eq 3 "$(printf '%s\n' "$OUT" | wc -l)" "history after delete"
expect_match "was deleted" "$ERR" "note that it was deleted"
expect_status 0 "recreate" -- "$ARB" workspace create w
expect_status 0 "new workspace, new history" -- "$ARB" audit w
expect_eq "" "$OUT" "a new workspace does not inherit history"
expect_status 0 "delete --purge" -- "$ARB" workspace delete w --purge --force
expect_match "deleted workspace w and its history" "$OUT" "purge message"
expect_status 1 "audit after purge" -- "$ARB" audit w
expect_match "no workspace named 'w'" "$ERR" "purged history is gone"
expect_status 1 "purge unknown" -- "$ARB" workspace delete w --purge
expect_one_line_error "purge unknown"
left=$(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("select (select count(*) from audit_events)+(select count(*) from audit_sessions)+(select count(*) from audit_workspaces)").fetchone()[0])' "$DB")
expect_eq 0 "$left" "purge leaves no rows"

finish
