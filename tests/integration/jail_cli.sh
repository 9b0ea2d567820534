#!/usr/bin/env bash
# `shell` with the box: mount spec parsing (every error), guard refusals, --env, --explain
# (golden output), command splitting, exit codes and signals.
. "$(dirname "$0")/jail_lib.sh"
jail_setup
mkdir -p "$T/data"
printf 'data\n' >"$T/data/file"

# --- mount specs: every parse error quotes the spec and says what is wrong -----------------
# spec_error SPEC REGEX: --mount SPEC is a usage error (2), one line naming the spec.
spec_error() {
	expect_status 2 "--mount '$1'" -- box --mount "$1" -- true
	expect_match "^arborinth: --mount '$(printf '%s' "$1" | sed 's/[][\.*^$/]/\\&/g')': $2" "$ERR" "--mount '$1' message"
	expect_one_line_error "--mount '$1'"
}
spec_error "" "empty spec \(expected TYPE:dest or TYPE:source:dest\)"
spec_error "ro" "missing ':'"
spec_error "ro:/a:/b:/c" "too many ':'"
spec_error ":/x" "missing TYPE before ':'"
spec_error "foo:/x" "unknown type 'foo' \(expected one of ro, rw, overlay, tmpfs, dev, proc\)"
spec_error "dir:/x" "unknown type 'dir'"
spec_error "tmpfs:/a:/b" "type 'tmpfs' takes only a destination \(tmpfs:dest\)"
spec_error "dev:/a:/b" "type 'dev' takes only a destination"
spec_error "proc:/a:/b" "type 'proc' takes only a destination"
spec_error "ro::/x" "empty source"
spec_error "ro:" "empty destination"
spec_error "tmpfs:" "empty destination"
spec_error "ro:$T/data:" "empty destination"
spec_error "ro:rel" "destination 'rel' is not an absolute path"
spec_error "tmpfs:rel/x" "destination 'rel/x' is not an absolute path"
spec_error "ro:rel:/x" "source 'rel' is not an absolute path"
spec_error "ro:/a/../b" "destination '/a/../b' must not contain '.' or '..'"
spec_error "ro:$T/data/./x:/x" "source '.*' must not contain '.' or '..'"
spec_error "ro:/nonexistent-$$" "path '/nonexistent-$$' does not exist \(TYPE:dest binds the destination path itself\)"
spec_error "rw:/nonexistent-$$:/x" "source '/nonexistent-$$' does not exist"

# Normalisation: repeated and trailing slashes are fine.
expect_status 0 "normalised spec" -- box --mount "ro:$T//data/:/mnt//" -- cat /mnt/file
expect_eq "data" "$OUT" "normalised spec works"

# --- guards: user mounts at or below them are refused, naming the guard ---------------------
guard_error() {
	expect_status 2 "guard: --mount '$1'" -- box --mount "$1" -- true
	expect_match "$2" "$ERR" "guard: --mount '$1' names the guard"
	expect_one_line_error "guard: --mount '$1'"
}
guard_error "ro:$T/data:$HOME/x" "destination $HOME/x is at or below the guard at $HOME \(\\\$HOME"
guard_error "tmpfs:$HOME" "the guard at $HOME"
guard_error "tmpfs:$HOME/.cache" "the guard at $HOME"
guard_error "tmpfs:/run" "the guard at /run \(host sockets"
guard_error "ro:$T/data:/run/user/x" "the guard at /run"
guard_error "ro:$T/data:$T/repo/x" "the guard at $T/repo \(origin checkout"
guard_error "tmpfs:$T/repo/.git/arborinth/workspaces/w2" "the guard at $T/repo"
ln -s /run "$T/runlink"
guard_error "tmpfs:$T/runlink/x" "destination /run/x is at or below the guard at /run"
# Sources that would reopen what a mount hides.
guard_error "ro:$T:/mnt" "source $T would expose"
guard_error "ro:/proc:/mnt" "source /proc would expose /proc"
guard_error "ro:/:/mnt" "source / would expose"
ln -s "$HOME/.ssh" "$T/sshlink"
guard_error "ro:$T/sshlink:/mnt" "resolves through a symlink to $HOME/.ssh"
# Control: the real path is an explicit grant, and works.
expect_status 0 "explicit grant of a home path elsewhere" -- box --mount "ro:$HOME/.ssh:/mnt" -- cat /mnt/id_ed25519
expect_match "SECRET-KEY" "$OUT" "explicit grant reaches the box"
# Defaults that are not replaceable.
guard_error "ro:/" "/ already has a default mount \(tmpfs the box's root"
guard_error "rw:/" "/ already has a default mount"
guard_error "tmpfs:/proc" "/proc already has a default mount"
expect_status 0 "same mount as the default" -- box --mount proc:/proc --mount ro:/usr -- true
expect_status 0 "replaceable default" -- box --mount tmpfs:/tmp -- true

# --- a workspace folder the box planted a symlink in ---------------------------------------
ln -s /etc "$WS/home/.cache-planted"
expect_status 0 "planted link elsewhere is harmless" -- box -- true
rm "$WS/cache" -rf
rm -rf "$WS/home/.cache"
ln -s /etc "$WS/home/.cache"
expect_status 1 "planted link under a mount point" -- box -- true
expect_match "refusing to mount at $HOME/.cache: $WS/home/.cache is a symlink" "$ERR" "planted link refused"
rm "$WS/home/.cache" "$WS/home/.cache-planted"
expect_status 0 "after removing the link" -- box -- test -d "$HOME/.cache"
[ -d "$WS/cache" ] && pass || fail "NAME/cache recreated"

# --- --env, --jail, options ----------------------------------------------------------------
expect_status 2 "--env bad name" -- box --env 1X=y -- true
expect_match "^arborinth: --env '1X=y': '1X' is not a valid variable name" "$ERR" "--env bad name message"
expect_status 2 "--env empty name" -- box --env =y -- true
expect_status 2 "--env unset" -- box --env "ARB_UNSET_$$" -- true
expect_match "ARB_UNSET_$$ is not set in the host environment" "$ERR" "--env unset message"
expect_status 2 "unknown jail" -- box --jail docker -- true
expect_match "unknown jail 'docker' \(available: bubblewrap, none\)" "$ERR" "unknown jail message"
expect_status 2 "--mount with --jail none" -- box --jail none --mount tmpfs:/x -- true
expect_match "need --jail bubblewrap" "$ERR" "--jail none refuses box options"
expect_status 2 "--net with --jail none" -- box --jail none --net -- true
expect_status 0 "--jail bubblewrap" -- box --jail bubblewrap -- true
expect_status 1 "no bwrap" -- env PATH=/nonexistent "$ARB" shell w -- true
expect_match "bwrap not found on PATH" "$ERR" "no bwrap message"

# --- command splitting ----------------------------------------------------------------------
expect_status 0 "CMD without --" -- box echo a -n
expect_eq "a -n" "$OUT" "options after CMD belong to CMD"
expect_status 0 "options before CMD" -- box --env X=1 printenv X
expect_eq "1" "$OUT" "--env before CMD"
expect_status 0 "options after NAME and --" -- "$ARB" shell --env X=2 w -- printenv X
expect_eq "2" "$OUT" "options before NAME"
OUT=$(printf 'echo default-shell-$ARBORINTH_WORKSPACE\n' | box 2>&1) || true
expect_eq "default-shell-w" "$OUT" "no CMD: the default shell"

# --- exit status and signals ----------------------------------------------------------------
expect_status 42 "exit status" -- box -- sh -c 'exit 42'
expect_status 143 "killed by SIGTERM" -- box -- sh -c 'kill -TERM $$'
expect_status 137 "killed by SIGKILL" -- box -- sh -c 'kill -KILL $$'
expect_status 127 "not found" -- box -- arb-no-such-command
expect_match "cannot run arb-no-such-command" "$ERR" "not found message"
printf 'data\n' >"$WS/tmp/notexec"
expect_status 126 "not executable" -- box -- /tmp/notexec
# signal_to_shell SIG: a trap in the box sees SIG sent to `arborinth shell` on the host.
# Each signal has its own output file: the background job truncates its file only once it
# runs, so a shared one could show the previous run's "ready" and the signal would come
# before the box.
signal_to_shell() {
	local sig=$1 want=$2 rc=0 out="$T/sig-$1.out"
	"$ARB" shell w -- sh -c "trap 'echo got-$sig; exit $want' $sig; echo ready; while :; do sleep 0.1; done" \
		>"$out" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
	kill -"$sig" "$pid"
	wait "$pid" || rc=$?
	expect_eq "$want" "$rc" "SIG$sig forwarded: exit status"
	expect_match "got-$sig" "$(cat "$out")" "SIG$sig reached the command"
}
signal_to_shell TERM 3
signal_to_shell HUP 4
signal_to_shell INT 5
signal_to_shell USR1 6
# The box cannot start: a folder bound onto a file (bwrap cannot make the mount point).
expect_status 125 "box setup failure" -- box --mount "ro:$T/data:/etc/hostname" -- true
expect_match "the box could not be started" "$ERR" "setup failure message"
# A destination a read-only system folder lacks is found before bwrap: one line, status 1.
expect_status 1 "missing destination" -- box --mount "ro:$T/data:/usr/nonexistent-$$/x" -- true
expect_match "^arborinth: cannot mount at /usr/nonexistent-$$/x: it does not exist in the box" "$ERR" "missing destination message"

# --- --explain prints the profile from the launch object and runs nothing -------------------
expect_status 0 "explain runs nothing" -- box --explain -- touch /tmp/explain-ran
[ ! -e "$WS/tmp/explain-ran" ] && pass || fail "--explain ran the command"
expect_status 0 "explain --jail none" -- box --jail none --explain
expect_match "no isolation" "$OUT" "--jail none explains itself"
# Golden output, with a fixed environment and the run's paths replaced.
golden=$ARB_SRC/tests/integration/jail_explain.golden
bwrap_path=$(readlink -f "$(command -v bwrap)")
box_init=$(dirname "$(readlink -f "$ARB")")/arborinth_box_init
[ -x "$box_init" ] || box_init=$(readlink -f "$ARB")
normalise() {
	sed -e "s|$box_init|@BOXINIT@|g" -e "s|$T|@T@|g" -e "s|$bwrap_path|@BWRAP@|g" \
		-e "s|/run/user/$(id -u)|/run/user/@UID@|g" -e "s|objects-view/[0-9a-f]\{40\}|objects-view/@BASE@|g" |
		grep -v 'target of /etc/resolv.conf' | grep -Ev '^    --ro-bind /run/[^ ]+ /run/[^ ]+ \\$' |
		grep -v '^  budget ' | root_free | placement_free | lib32_free || true
}
# /lib32 is there on some hosts only (multilib packages): left out of the golden.
lib32_free() {
	sed 's| /lib32 -> usr/lib32||' | grep -Ev '^ +(/lib32  symlink|--symlink usr/lib32 /lib32)'
}
# What root's box hides (the host's root-only files in /etc and /opt) depends on the host and
# on the caller: left out of the golden, tested in jail_walls.sh.
root_free() {
	grep -v 'hidden: only root may read it on the host' | grep -v '^  note       caller is root' |
		grep -Ev '^    --(ro-bind /dev/null|tmpfs|remount-ro) /(etc|opt)/'
}
# Where box-init runs from depends on where the build is (a path the box hides, like /tmp,
# gets it bound at /run/arborinth/box-init): left out of the golden, tested on its own below.
placement_free() {
	grep -v '^  note       box-init runs from @BOXINIT@' |
		grep -v '^      /run/arborinth/box-init  ro @BOXINIT@' |
		grep -v '^    --ro-bind @BOXINIT@ /run/arborinth/box-init \\$' |
		sed 's|^    -- /run/arborinth/box-init __box-init|    -- @BOXINIT@ __box-init|'
}
OUT=$(env -i HOME="$HOME" PATH=/usr/bin:/bin TERM=dumb LANG=C.UTF-8 USER=tester "$ARB" shell w --explain --mount "ro:$T/data:/mnt" --mount tmpfs:/tmp --env FOO=bar -- make test 2>&1 | normalise)
if [ "${ARB_UPDATE_GOLDEN:-}" = 1 ]; then
	printf '%s\n' "$OUT" >"$golden"
fi
if [ "$OUT" == "$(cat "$golden")" ]; then pass; else
	fail "--explain differs from $golden:"
	diff -u "$golden" <(printf '%s\n' "$OUT") >&2 || true
fi
# Without arborinth_box_init beside it, arborinth is its own box-init (`arborinth __box-init`).
# A box-init the box shows read-only at its host path (in a system folder) runs from there,
# not bound (one bind fewer); one anywhere else (the box's root shows only the system folders)
# is bound at /run/arborinth/box-init.
shown_at() {
	case "$(readlink -f "$1")" in
	/usr/* | /opt/* | /etc/*) echo "$1" ;;
	*) echo /run/arborinth/box-init ;;
	esac
}
mkdir -p "$T/bin"
cp "$ARB" "$T/bin/arborinth"
fb=$(shown_at "$T/bin/arborinth")
expect_status 0 "box-init fallback" -- "$T/bin/arborinth" shell w -- sh -c 'cat /proc/1/cmdline | tr "\0" " "'
expect_eq "$fb __box-init --ready-fd 5 --go-fd 6 -- sh -c cat /proc/1/cmdline | tr \"\\0\" \" \" " "$OUT" \
	"fallback: pid 1 is arborinth __box-init"
expect_status 0 "box-init fallback explained" -- "$T/bin/arborinth" shell w --explain -- true
if [ "$fb" = /run/arborinth/box-init ]; then
	expect_match "--ro-bind $T/bin/arborinth /run/arborinth/box-init" "$OUT" "fallback: arborinth bound as box-init"
else
	expect_match "box-init runs from $T/bin/arborinth, which the box shows read-only" "$OUT" "fallback: arborinth run from its path"
fi
[ -x "$(dirname "$(readlink -f "$ARB")")/arborinth_box_init" ] && pass || fail "arborinth_box_init is built beside arborinth"
lean=$(dirname "$(readlink -f "$ARB")")/arborinth_box_init
where=$(shown_at "$lean")
expect_status 0 "lean box-init" -- box -- sh -c "tr '\\0' ' ' </proc/1/cmdline | cut -d' ' -f1-2"
expect_eq "$where __box-init" "$OUT" "pid 1 runs the lean box-init from $where"
expect_status 0 "lean box-init explained" -- box --explain -- true
if [ "$where" = "$lean" ]; then
	expect_match "box-init runs from $lean, which the box shows read-only" "$OUT" "explain: box-init not bound"
	if printf '%s\n' "$OUT" | grep -q -- "--ro-bind $lean /run/arborinth/box-init"; then
		fail "a visible box-init is bound all the same"
	else pass; fi
else
	expect_match "--ro-bind $lean /run/arborinth/box-init" "$OUT" "explain: box-init bound"
fi

# The argv shown is the argv run: the same box with --explain and without.
expect_status 0 "explain argv" -- box --explain -- true
shown=$(printf '%s\n' "$OUT" | sed -n '/^== bwrap argv/,$p' | tail -n +2 | sed 's/ \\$//; s/^    //' | tr '\n' ' ')
expect_match "^$(command -v bwrap | xargs readlink -f) --unshare-user " "$shown" "argv starts with bwrap"
expect_match " -- $where __box-init --ready-fd 5 --go-fd 6 -- true $" "$shown" "argv ends with box-init and the command"

finish
