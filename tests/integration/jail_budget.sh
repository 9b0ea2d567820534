#!/usr/bin/env bash
# A box cannot exhaust its user: as an ordinary user with a small process limit (ulimit -u),
# a box that forks until the kernel refuses leaves the user's own processes able to fork, and
# a box that opens inotify instances until refused leaves the user able to open one. Each with
# a CONTROL: --pids / --inotify at the user's own limit let the same box take everything, and
# then the user's fork / inotify_init1 fail. Also: --explain shows the budget, root's box gets
# the inotify budget and the pids cgroup, and bad values are refused.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/jail_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to switch to an ordinary user"
command -v runuser >/dev/null || skip "no runuser"
[ -r /proc/sys/user/max_inotify_instances ] || skip "no per-namespace inotify limits"
user=arbbudget
id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
chmod 0666 /dev/fuse
[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
[ -z "$(pgrep -u "$user" || true)" ] || skip "$user has processes running (they count against its limit)"

ORIG_ARB=$ARB
chmod 0755 "$T"
U="$T/user"
mkdir "$U"
cp "$ARB" "$U/arborinth"
box_init=$(dirname "$(readlink -f "$ARB")")/arborinth_box_init
[ -x "$box_init" ] && cp "$box_init" "$U/"
ARB="$U/arborinth"

# The box's side: fork (or open inotify instances) until refused, say how many, hold them
# until the host's side is done. The host's side: an ordinary process of the user, started
# before the box, that tries one fork (or one inotify instance) while the box holds its own.
cat >"$U/probe.py" <<'EOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
mode, where = sys.argv[1], sys.argv[2]
done, count = os.path.join(where, "done"), os.path.join(where, "count")
def wait_for(path):
    for _ in range(600):
        if os.path.exists(path):
            return
        time.sleep(0.05)
    sys.exit("timed out waiting for " + path)
if mode in ("fork", "inotify"):
    held = []
    while len(held) < 100000:
        if mode == "fork":
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                while not os.path.exists(done):
                    time.sleep(0.05)
                os._exit(0)
        else:
            pid = libc.inotify_init1(0)
            if pid < 0:
                break
        held.append(pid)
    with open(count + ".tmp", "w") as f:
        f.write(str(len(held)))
    os.rename(count + ".tmp", count)
    wait_for(done)
    for p in held if mode == "fork" else []:
        os.waitpid(p, 0)
    print(len(held))
else:  # host-fork, host-inotify
    wait_for(count)
    if mode == "host-fork":
        try:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            print("forked")
        except OSError as e:
            print("refused: " + os.strerror(e.errno))
    else:
        fd = libc.inotify_init1(0)
        print("opened" if fd >= 0 else "refused: " + os.strerror(ctypes.get_errno()))
    open(done, "w").close()
EOF
cat >"$U/run.sh" <<'EOF'
# run.sh REPO LIMIT MODE [SHELL OPTIONS...]: under ulimit -u LIMIT: the host prober in the
# background, the box of REPO's workspace w in front; prints "BOX-COUNT HOST-RESULT".
set -u
repo=$1 limit=$2 mode=$3
shift 3
ulimit -u "$limit"
cd "$repo"
tmp=$repo/.git/arborinth/workspaces/w/tmp
rm -f "$tmp/count" "$tmp/done"
python3 "$U/probe.py" "host-$mode" "$tmp" >"$U/host.out" 2>&1 &
host=$!
n=$("$ARB" shell w "$@" -- python3 /tmp/probe.py "$mode" /tmp 2>"$U/box.err")
wait "$host"
echo "$n $(cat "$U/host.out")"
EOF
chown -R "$user" "$U"
as_user() { runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" ARB="$ARB" U="$U" "$@"; }
as_user bash -c "cd '$U' && mkdir r && cd r && git init -q && git config user.email a@b &&
	git config user.name a && echo hi > f && git add f && git commit -qm init"
expect_status 0 "create as $user" -- as_user "$ARB" --workdir "$U/r" workspace create w
cp "$U/probe.py" "$U/r/.git/arborinth/workspaces/w/tmp/"
chown "$user" "$U/r/.git/arborinth/workspaces/w/tmp/probe.py"

# --- processes --------------------------------------------------------------------------------
LIMIT=80
expect_status 0 "explain as $user under ulimit -u $LIMIT" -- \
	as_user bash -c "ulimit -u $LIMIT; cd '$U/r' && '$ARB' shell w --explain -- true"
expect_match "^  budget     processes 60 of all the user's \(RLIMIT_NPROC: $LIMIT, the user's limit .* less a quarter\), inotify instances [0-9]+ \(the user's limit [0-9]+ less a quarter\)$" "$OUT" \
	"explain: the user's limit less a quarter"
expect_status 0 "fork bomb in a box as $user" -- as_user bash "$U/run.sh" "$U/r" $LIMIT fork
read -r box_n host_res <<<"$OUT"
echo "measured: ulimit -u $LIMIT, default budget: the box forked $box_n, the user's own fork: $host_res" >&2
[ "$box_n" -ge 20 ] && [ "$box_n" -lt 60 ] && pass ||
	fail "the box forked $box_n processes (want 20..59: the budget is 60 for all of the user's)"
expect_eq "forked" "$host_res" "the user's own process forks while the box holds its budget"
# CONTROL: --pids at the user's own limit: the box takes the rest, and the user cannot fork.
expect_status 0 "control: fork bomb with --pids $LIMIT" -- as_user bash "$U/run.sh" "$U/r" $LIMIT fork --pids $LIMIT
read -r ctl_n ctl_res <<<"$OUT"
echo "measured: ulimit -u $LIMIT, --pids $LIMIT: the box forked $ctl_n, the user's own fork: $ctl_res" >&2
[ "$ctl_n" -gt "$box_n" ] && pass || fail "control: --pids $LIMIT let the box fork only $ctl_n"
expect_match "^refused: Resource temporarily unavailable" "$ctl_res" \
	"control: without the budget the user's own fork is refused"
# --pids N bounds the box's own processes (box-init's RLIMIT_NPROC in the box's namespace),
# whatever the user runs beside it.
expect_status 0 "--pids 10 as $user" -- as_user bash "$U/run.sh" "$U/r" $LIMIT fork --pids 10
read -r box_n host_res <<<"$OUT"
echo "measured: --pids 10: the box forked $box_n" >&2
[ "$box_n" -ge 5 ] && [ "$box_n" -lt 10 ] && pass || fail "--pids 10: the box forked $box_n"
expect_eq "forked" "$host_res" "--pids 10: the user's own process forks"
expect_status 0 "explain --pids 10 as $user" -- as_user "$ARB" --workdir "$U/r" shell w --pids 10 --explain -- true
expect_match "^  budget .*, 10 of the box's own \(--pids" "$OUT" "explain shows --pids"

# --- inotify ----------------------------------------------------------------------------------
USER_INO=$(cat /proc/sys/fs/inotify/max_user_instances)
expect_status 0 "inotify in a box as $user" -- as_user bash "$U/run.sh" "$U/r" $LIMIT inotify
read -r box_n host_res <<<"$OUT"
echo "measured: max_user_instances $USER_INO, default budget: the box opened $box_n, the user: $host_res" >&2
expect_eq "$((USER_INO - USER_INO / 4))" "$box_n" "the box opens the user's limit less a quarter"
expect_eq "opened" "$host_res" "the user opens an inotify instance while the box holds its budget"
expect_status 0 "control: inotify with --inotify $USER_INO" -- as_user bash "$U/run.sh" "$U/r" $LIMIT inotify --inotify "$USER_INO"
read -r ctl_n ctl_res <<<"$OUT"
echo "measured: --inotify $USER_INO: the box opened $ctl_n, the user: $ctl_res" >&2
[ "$ctl_n" -gt "$box_n" ] && pass || fail "control: --inotify $USER_INO let the box open only $ctl_n"
expect_match "^refused: Too many open files" "$ctl_res" \
	"control: without the budget the user cannot open an inotify instance"
as_user touch "$U/r/.git/arborinth/workspaces/w/tmp/done"
expect_status 0 "--inotify 5 as $user" -- as_user bash -c "cd '$U/r' && '$ARB' shell w --inotify 5 -- python3 /tmp/probe.py inotify /tmp"
expect_eq "5" "$OUT" "--inotify 5: five instances"
expect_status 0 "delete as $user" -- as_user "$ARB" --workdir "$U/r" workspace delete w

# --- root's box -------------------------------------------------------------------------------
ARB=$ORIG_ARB
jail_setup
cp "$U/probe.py" "$WS/tmp/probe.py"
touch "$WS/tmp/done"
expect_status 0 "inotify in root's box" -- box -- "$PY" /tmp/probe.py inotify /tmp
expect_eq "$((USER_INO - USER_INO / 4))" "$OUT" "root's box opens the limit less a quarter"
expect_status 0 "inotify in root's box, --inotify 3" -- box --inotify 3 -- "$PY" /tmp/probe.py inotify /tmp
expect_eq "3" "$OUT" "root's box: --inotify 3"
expect_status 0 "explain as root" -- box --explain -- true
expect_match "^  budget     processes [0-9]+ of all the user's \(RLIMIT_NPROC: .*root is not bound by it" "$OUT" \
	"explain says RLIMIT_NPROC does not bind root"
# RLIMIT_NPROC does not bind root: its box gets the default budget as a cgroup's pids.max.
if [ -w /sys/fs/cgroup/pids ] && grep -q ' - cgroup .*pids' /proc/self/mountinfo; then
	expect_match "pids.max of the box's cgroup" "$OUT" "root's box gets the default as pids.max"
	rm -f "$WS/tmp/done"
	cp "$U/run.sh" "$T/run.sh"
	expect_status 0 "fork bomb in root's box under ulimit -u $LIMIT" -- env U="$U" ARB="$ARB" bash "$T/run.sh" "$T/repo" $LIMIT fork
	read -r box_n host_res <<<"$OUT"
	echo "measured: root, ulimit -u $LIMIT, default budget: the box forked $box_n, root's own fork: $host_res" >&2
	[ "$box_n" -ge 20 ] && [ "$box_n" -lt 60 ] && pass || fail "root's box forked $box_n (pids.max 60)"
	expect_match "arborinth: --pids: the box reached its limit of 60 processes; [1-9][0-9]* forks were refused" \
		"$(cat "$U/box.err")" "root's box: the default pids.max refused forks, and says so"
	expect_status 0 "audit after root's fork bomb" -- "$ARB" audit w --kind exec --json
	expect_match '"op": ?"limit", ?"path": ?"--pids", ?"path2": ?"the box reached 60 processes; [1-9][0-9]* forks were refused"' \
		"$OUT" "the audit records the forks the default pids.max refused"
fi
# --pids above the hard limit: held at the hard limit (raising it needs CAP_SYS_RESOURCE).
expect_status 0 "--pids above the hard limit" -- box --pids 4000000 -- grep processes /proc/self/limits
hard=$(ulimit -Hu)
[ "$hard" != unlimited ] && [ "$hard" -lt 4000000 ] || hard=4000000
expect_match "^Max processes +$hard +$hard " "$OUT" "--pids 4000000: the hard limit"
# The launchers take --inotify as shell does.
expect_status 0 "codex --inotify 7 --explain" -- env OPENAI_API_KEY=sk-test "$ARB" codex w --client /bin/true --inotify 7 --explain
expect_match "^  budget .*, inotify instances 7 \(--inotify\)$" "$OUT" "the launcher's --inotify reaches the box"
for bad in "--inotify 0" "--inotify -1" "--inotify 5x" "--inotify ''"; do
	eval "set -- $bad"
	expect_status 2 "$bad" -- box "$1" "$2" -- true
	expect_match "^arborinth: --inotify '$2': expected a number of inotify instances" "$ERR" "$bad message"
done
finish
