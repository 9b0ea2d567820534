#!/usr/bin/env bash
# The box's filesystem and environment, probed from inside a real box, each probe with a
# control that shows it succeeds where it should (outside the box, or when granted).
. "$(dirname "$0")/jail_lib.sh"
jail_setup

# --- writes that must fail inside, and succeed outside -------------------------------------
uniq=arb-probe-$$
# fails_inside TARGET WHAT: `touch TARGET` fails in the box; control: it succeeds on the host.
fails_inside() {
	inbox "touch '$1' 2>/dev/null && echo wrote || echo refused"
	expect_eq "refused" "$OUT" "$2: write inside the box"
	[ ! -e "$1" ] && pass || fail "$2: $1 appeared on the host"
	if touch "$1" 2>/dev/null; then pass; else fail "$2: control: the host cannot write $1"; fi
	rm -f "$1"
}
if [ "$(id -u)" = 0 ]; then
	fails_inside "/$uniq" "/"
	fails_inside "/etc/$uniq" "/etc"
fi
fails_inside "$T/repo/$uniq" "origin checkout"
fails_inside "$T/repo/.git/$uniq" "origin .git"
fails_inside "$T/repo/.git/objects/$uniq" "origin object store"
fails_inside "$WS2/workdir/$uniq" "another workspace"
fails_inside "$T/repo/.git/arborinth/$uniq" ".arborinth/"
fails_inside "$T/repo/.git/arborinth/state.db-$uniq" "next to state.db"
fails_inside "$HOME/bin/$uniq" "PATH entry under \$HOME (read-only)"
inbox "echo x >> README && echo appended"
expect_eq "appended" "$OUT" "the workdir's README is writable"
inbox "echo x 2>/dev/null >> '$T/repo/README' && echo appended || echo refused"
expect_eq "refused" "$OUT" "origin README is not writable"
inbox "echo x 2>/dev/null >> '$T/repo/.git/arborinth/state.db' && echo appended || echo refused"
expect_eq "refused" "$OUT" "state.db is not writable"
[ -s "$T/repo/.git/arborinth/state.db" ] && pass || fail "state.db damaged"

# --- writes that must succeed inside, and land in the workspace ----------------------------
inbox "echo w > in-workdir && echo t > /tmp/in-tmp && echo c > \"\$XDG_CACHE_HOME/in-cache\" &&
       echo h > \"\$HOME/in-home\" && echo r > \"\$XDG_RUNTIME_DIR/in-run\" && echo done"
expect_eq "done" "$OUT" "writes to workdir, /tmp, cache, home, runtime dir ($ERR)"
expect_eq "w" "$(cat "$WS/workdir/in-workdir" 2>&1)" "workdir write on the host"
expect_eq "t" "$(cat "$WS/tmp/in-tmp" 2>&1)" "/tmp write lands in NAME/tmp"
expect_eq "c" "$(cat "$WS/cache/in-cache" 2>&1)" "cache write lands in NAME/cache"
expect_eq "h" "$(cat "$WS/home/in-home" 2>&1)" "home write lands in NAME/home"
[ ! -e "$HOME/in-home" ] && pass || fail "home write reached the real home"
[ ! -e "$HOME/.cache/in-cache" ] && pass || fail "cache write reached the real cache"
inbox 'cat "$XDG_RUNTIME_DIR/in-run" 2>&1; stat -c %a "$XDG_RUNTIME_DIR"; ls -A "$XDG_RUNTIME_DIR"'
expect_eq "$(printf 'cat: /run/user/%s/in-run: No such file or directory\n700' "$(id -u)")" "$OUT" \
	"runtime dir is private, fresh and empty each run"

# --- secrets of the real home and of the origin --------------------------------------------
inbox "cat '$HOME/.ssh/id_ed25519' 2>/dev/null || echo unreadable"
expect_eq "unreadable" "$OUT" "secret in \$HOME unreadable inside"
inbox "ls -A '$HOME'; echo listed"
expect_match "listed" "$OUT" "the box's home is listable"
expect_eq "" "$(printf '%s\n' "$OUT" | grep -E '^\.ssh$' || true)" "no .ssh in the box's home"
expect_match "SECRET-KEY-$$" "$(cat "$HOME/.ssh/id_ed25519")" "control: secret readable on the host"
expect_status 0 "control: --jail none reads it" -- "$ARB" shell w --jail none -- cat "$HOME/.ssh/id_ed25519"
expect_match "SECRET-KEY" "$OUT" "control: --jail none sees the real home"
inbox "cat '$T/repo/.env' 2>/dev/null || echo no1; cat /proc/1/root'$T/repo/.env' 2>/dev/null || echo no2"
expect_eq "$(printf 'no1\nno2')" "$OUT" "origin's untracked .env unreadable inside"
expect_eq "ORIGIN-ENV-SECRET" "$(cat "$T/repo/.env")" "control: .env readable on the host"
inbox "ls -A '$T/repo/.git/arborinth'; ls '$T/repo/.git/arborinth/workspaces'"
expect_eq "$(printf 'workspaces\nw')" "$OUT" ".arborinth shows only this workspace's path"
inbox "cat '$T/repo/.git/arborinth/state.db' 2>/dev/null | wc -c"
expect_eq "0" "$OUT" "state.db not readable inside"

# --- what must still work ------------------------------------------------------------------
inbox "arb-hello"
expect_eq "hello-from-home-bin" "$OUT" "tool on a PATH entry under \$HOME runs ($ERR)"
inbox "git log --format=%s | tr '\n' ' '"
expect_eq "second first " "$OUT" "git in the box sees history ($ERR)"
inbox "git cat-file -t \$(git -C . rev-parse HEAD~1)"
expect_eq "commit" "$OUT" "objects readable through the origin's object store"
inbox "pwd"
expect_eq "$WS/workdir" "$OUT" "command starts in the workdir"

# --- /run is masked ------------------------------------------------------------------------
if [ -w /run ]; then
	touch "/run/$uniq"
	inbox "ls /run"
	# arborinth/ only when box-init is bound there (not when it runs from its host path).
	case "$OUT" in
	"$(printf 'arborinth\nuser')" | user) pass ;;
	*) fail "/run holds only the box's own entries: got [$OUT]" ;;
	esac
	[ -e "/run/$uniq" ] && pass || fail "control: /run/$uniq missing on the host"
	rm -f "/run/$uniq"
fi

# --- /proc shows only the box's processes --------------------------------------------------
sleep 300 &
host_pid=$!
inbox "ls /proc | grep -E '^[0-9]+\$' | wc -l; [ -e /proc/$host_pid ] && echo HOST-PID-VIS''IBLE; cat /proc/1/cmdline | tr '\0' ' '"
expect_match "^[1-9]$" "$(printf '%s\n' "$OUT" | head -1)" "a handful of pids in the box"
expect_eq "" "$(printf '%s\n' "$OUT" | grep HOST-PID-VISIBLE || true)" "host pid $host_pid invisible in the box"
expect_match "__box-init" "$OUT" "pid 1 is box-init"
[ -e "/proc/$host_pid" ] && pass || fail "control: host pid not in the host's /proc"
kill "$host_pid"

# --- the environment -----------------------------------------------------------------------
export ARB_TEST_TOKEN=tok-$$-v GITHUB_TOKEN=gh-$$-v AWS_SECRET_ACCESS_KEY=aws-$$-v MY_API_KEY=key-$$-v \
	SSH_AUTH_SOCK=/tmp/ssh-$$-v DBUS_SESSION_BUS_ADDRESS=unix:path=/dbus-$$-v GIT_ASKPASS=/askpass-$$-v \
	LC_ARB_TOKEN=lc-$$-v ANTHROPIC_API_KEY=ant-$$-v SOME_PASSWORD=pw-$$-v UNLISTED_VAR=unl-$$-v
inbox "env; echo END"
expect_match "END" "$OUT" "env listed"
expect_eq "" "$(printf '%s\n' "$OUT" | grep -- "-$$-v" || true)" "no host secret in the box's environment"
expect_match "^HOME=$HOME$" "$(printf '%s\n' "$OUT" | grep ^HOME=)" "HOME is the same path"
expect_match "^ARBORINTH_WORKSPACE=w$" "$(printf '%s\n' "$OUT" | grep ^ARBORINTH_WORKSPACE=)" "workspace name"
expect_status 0 "control: --env passes one" -- box --env ARB_TEST_TOKEN --env X_SET=val -- sh -c 'echo "$ARB_TEST_TOKEN $X_SET"'
expect_eq "tok-$$-v val" "$OUT" "control: an explicit --env reaches the box"
expect_status 0 "control: --jail none" -- "$ARB" shell w --jail none -- sh -c 'echo "$GITHUB_TOKEN"'
expect_eq "gh-$$-v" "$OUT" "control: the probe sees the variable without the box"
unset ARB_TEST_TOKEN GITHUB_TOKEN AWS_SECRET_ACCESS_KEY MY_API_KEY SSH_AUTH_SOCK DBUS_SESSION_BUS_ADDRESS \
	GIT_ASKPASS LC_ARB_TOKEN ANTHROPIC_API_KEY SOME_PASSWORD UNLISTED_VAR

# --- mounts: --mount grants, and tmpfs:/tmp brings back an ephemeral /tmp ------------------
mkdir -p "$T/data"
printf 'data\n' >"$T/data/file"
expect_status 0 "ro grant" -- box --mount "ro:$T/data:/mnt" -- cat /mnt/file
expect_eq "data" "$OUT" "ro grant readable"
expect_status 1 "ro grant not writable" -- box --mount "ro:$T/data:/mnt" -- touch /mnt/new
expect_status 0 "rw grant" -- box --mount "rw:$T/data:/mnt" -- touch /mnt/new
[ -e "$T/data/new" ] && pass || fail "rw grant write not on the host"
expect_status 0 "tmpfs:/tmp" -- box --mount tmpfs:/tmp -- sh -c 'ls -A /tmp | wc -l; echo e > /tmp/eph'
expect_eq "0" "$OUT" "tmpfs:/tmp starts empty"
[ ! -e "$WS/tmp/eph" ] && pass || fail "tmpfs:/tmp wrote to NAME/tmp"
expect_status 0 "later user mount at one destination wins" -- \
	box --mount "ro:$T/data:/mnt" --mount tmpfs:/mnt -- sh -c 'ls -A /mnt | wc -l'
expect_eq "0" "$OUT" "the later mount replaced the earlier"
# A destination a read-only system folder lacks: one clear line before bwrap starts, and
# nothing created on the host; a tmpfs there is refused too. A new destination in the box's
# own root is made there (the root is the box's tmpfs), never on the host.
expect_status 1 "--mount to a destination /usr lacks" -- box --mount "ro:$T/data:/usr/arb-no-such-dir" -- true
expect_match "^arborinth: cannot mount at /usr/arb-no-such-dir: it does not exist in the box, where /usr is read-only" "$ERR" "the missing destination is named"
expect_one_line_error "--mount to a destination /usr lacks"
[ ! -e /usr/arb-no-such-dir ] && pass || fail "a missing destination was created on the host"
expect_status 1 "--mount tmpfs at a destination /usr lacks" -- box --mount tmpfs:/usr/arb-no-such-dir/x -- true
expect_status 0 "a new destination in the box's root" -- box --mount "ro:$T/data:/arb-no-such-dir" -- cat /arb-no-such-dir/file
expect_eq "data" "$OUT" "the new destination shows its source"
[ ! -e /arb-no-such-dir ] && pass || fail "a destination in the box's root was created on the host"
expect_status 0 "control: a destination that exists" -- box --mount "ro:$T/data:/mnt" -- true

# --- no descriptor of the host beyond stdio ------------------------------------------------
expect_status 0 "descriptors in the box" -- box -- sh -c 'ls /proc/self/fd | tr "\n" " "' 9<"$HOME/.ssh/id_ed25519"
expect_eq "0 1 2 3 " "$OUT" "only stdio (and ls's own) in the command, none of the host's"
# box-init (pid 1) holds stdio and its ready pipe (fd 5, which tells the host the box is
# done) and nothing of the host's; it is not dumpable, so the box may list its descriptors
# (when the box's user owns the namespace, as root's box does) but never open them.
expect_status 0 "box-init's descriptors" -- box -- sh -c 'ls /proc/1/fd 2>/dev/null | tr "\n" " "' 9<"$HOME/.ssh/id_ed25519"
expect_match "^(0 1 2 5 )?$" "$OUT" "box-init holds stdio and its ready pipe only"
expect_status 0 "box-init's ready pipe" -- box -- sh -c 'printf d >/proc/1/fd/5 2>/dev/null && echo wrote; echo done'
expect_eq "done" "$OUT" "the box cannot write box-init's ready pipe"
# Control: the same way into a dumpable process of the box works.
expect_status 0 "control: a dumpable process's descriptor" -- box -- sh -c 'exec 7>/dev/null; sh -c "printf x >/proc/$$/fd/7" && echo wrote'
expect_eq "wrote" "$OUT" "control: /proc/PID/fd/N opens where the owner allows it"
expect_status 0 "control: --jail none keeps fd 9" -- "$ARB" shell w --jail none -- sh -c 'cat <&9' 9<"$HOME/.ssh/id_ed25519"
expect_match "SECRET-KEY" "$OUT" "control: an inherited descriptor is readable without the box"

# --- the box is gone when shell returns ----------------------------------------------------
# box-init kills and reaps what is left of the box before it tells the host the command is
# over; the host then takes the end checkpoint (while bwrap exits): an orphan that would
# write later never does, the end checkpoint is the view as the box left it, and the session
# has the command's status.
expect_status 3 "an orphan writer" -- box -- sh -c '(sleep 0.3; echo late >late.txt) >/dev/null 2>&1 & echo first >first.txt; exit 3'
sleep 0.6
[ ! -e "$WS/workdir/late.txt" ] && pass || fail "an orphan of the box wrote after shell returned"
expect_eq "first" "$(cat "$WS/workdir/first.txt")" "the command's write is in the view"
end_tree=$("$ARB" log w --json | "$PY" -c 'import json,sys; c=[x for x in json.load(sys.stdin)["checkpoints"] if x["kind"]=="end"]; print(c[-1]["tree"])')
now_tree=$("$ARB" checkpoint w --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["tree"])')
expect_eq "$now_tree" "$end_tree" "the end checkpoint is the view as the box left it"
expect_match "exit 3" "$("$ARB" log w | grep -A1 "^session" | tail -2 | head -1)" "the session ended with the command's status"
secs=9$$
expect_status 0 "background process in the box" -- box -- sh -c "sleep $secs >/dev/null 2>&1 & echo started"
sleep 0.3
expect_eq "" "$(pgrep -f "^sleep $secs\$" || true)" "nothing of the box survives shell"
"$ARB" shell w --jail none -- sh -c "sleep $secs >/dev/null 2>&1 &" || true
sleep 0.3
[ -n "$(pgrep -f "^sleep $secs\$" || true)" ] && pass || fail "control: pgrep sees a surviving process"
pkill -f "^sleep $secs\$" || true

finish
