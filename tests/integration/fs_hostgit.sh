#!/usr/bin/env bash
# git on the host in a workspace's view runs nothing the box planted (fs/hostgit.c): a box
# writes core.fsmonitor, an alias, a hook, a nested repository and a bare one with their own
# fsmonitor, and slips a config in by rename; host git status/log/diff/commit in the workdir
# and in those directories run none of it and still work, while git in the box keeps seeing
# its own config. CONTROL: the same config written by hand in an ordinary repository does
# run its programs. As root, then again as an ordinary user.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/lib.sh"
command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user and pid namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"

MK=$T/marks # the programs the box plants touch files here, should they ever run
mkdir -p "$MK"
chmod 0777 "$MK"
marks() { (cd "$MK" && find . -type f | sort | tr '\n' ' '); }
# _IOW(0xA7, 0x02 / 0x03, int32_t): ARB_FS_IOC_BOX_ADD / ARB_FS_IOC_BOX_DEL (fs/fs.h)
IOC_ADD=$(((1 << 30) | (4 << 16) | (0xA7 << 8) | 2))
IOC_DEL=$(((1 << 30) | (4 << 16) | (0xA7 << 8) | 3))
ioctl_py() { # ioctl_py DIR CMD PID: prints 0 or the errno name
	python3 -c 'import fcntl, os, struct, sys, errno
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
try:
    fcntl.ioctl(fd, int(sys.argv[2]), struct.pack("i", int(sys.argv[3]))); print(0)
except OSError as e:
    print(errno.errorcode[e.errno])' "$@"
}

# The programs a config can run, written into a repository's config (and hooks) as a box
# would: each touches MK/PREFIX-WHAT.
plant() { # plant GITDIR PREFIX
	git --git-dir="$1" config core.fsmonitor "touch $MK/$2-fsmonitor; exit 1"
	git --git-dir="$1" config alias.st "!touch $MK/$2-alias"
	git --git-dir="$1" config core.pager "touch $MK/$2-pager; cat"
	git --git-dir="$1" config diff.external "sh -c 'touch $MK/$2-diffext'"
	mkdir -p "$1/hooks"
	printf '#!/bin/sh\ntouch %s/%s-hook\n' "$MK" "$2" >"$1/hooks/pre-commit"
	chmod +x "$1/hooks/pre-commit"
}

# --- CONTROL: the planted config does run its programs in an ordinary repository -----------
mkrepo "$T/ctl"
plant "$T/ctl/.git" ctl
mkdir "$T/ctl/sub" && git -C "$T/ctl/sub" init -q && plant "$T/ctl/sub/.git" ctlsub
(cd "$T/ctl" && git status --porcelain >/dev/null 2>&1 && git st >/dev/null 2>&1 &&
	git -c core.pager= log -1 >/dev/null && git diff HEAD~1 >/dev/null 2>&1 &&
	git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x &&
	cd sub && git status >/dev/null 2>&1) || true
for m in ctl-fsmonitor ctl-alias ctl-hook ctl-diffext ctlsub-fsmonitor; do
	[ -e "$MK/$m" ] && pass || fail "control: $m did not run in an ordinary repository"
done
rm -f "$MK"/*

# --- the box plants the same --------------------------------------------------------------
mkrepo "$T/repo"
cd "$T/repo"
mkdir notes && echo head >notes/HEAD && git add notes && git commit -q -m notes
expect_status 0 "create" -- "$ARB" workspace create w
V=$T/repo/.git/arborinth/workspaces/w/workdir
# The config hosts read is the one a new workspace has (fs/hostgit.c, core/gitdir.c), but
# what is the box's own: the user's identity, signing off, the upstream, the socket in its /tmp.
expect_eq "$(git config -f "$V/.git/config" --list 2>&1)" \
	"$("$ARB" shell w -- git config -f .git/config --list 2>&1 |
		grep -Ev '^(user|init|commit|tag|branch)\.|^fsmonitor\.socketdir=')" \
	"hosts read the settings a new workspace has"
expect_status 0 "the box plants programs" -- "$ARB" shell w -- bash -c "
	set -e
	$(declare -f plant); MK='$MK'
	plant .git box
	mkdir sub && git -C sub init -q && plant sub/.git nested
	echo nested >sub/f
	git init -q --bare bare.git && plant bare.git bare
	printf 'gitfile\n' >gf && mkdir gfdir && printf 'gitdir: %s/sub/.git\n' \"\$PWD\" >gfdir/.git
	# a config slipped in by rename from a name the kernel caches for long (cat: cached)
	cp .git/config cfg.keep && cat cfg.keep >/dev/null
	git config -f cfg.keep core.fsmonitor 'touch $MK/renamed-fsmonitor; exit 1'
	mv cfg.keep .git/config
	git config core.fsmonitor
	# the daemon's fsmonitor hook (which the hosts' config runs) replaced by rename: refused
	printf '#!/bin/sh\ntouch $MK/hook-replaced\n' >fake-hook && chmod +x fake-hook
	mv -T fake-hook .git/arborinth-fsmonitor 2>/dev/null && echo hook-replaced || true
	# a bare repository under .git, reached from the work tree by a symlink
	git init -q --bare .git/modules/evil && plant .git/modules/evil evil && ln -s .git/modules/evil src2
	echo other >notes/other
	echo edited >>README
"
expect_match "renamed-fsmonitor" "$OUT" "in the box, git sees the config the box wrote"
expect_eq "" "$(grep hook-replaced <<<"$OUT")" "the daemon's fsmonitor hook cannot be replaced"
expect_eq "" "$(marks)" "nothing ran while the box planted"

# Renames that would leave a name hosts must not see cached with what the box sees: EXDEV
# (mv copies then); git's own lock-file renames go through.
expect_status 0 "renames in the box" -- "$ARB" shell w -- python3 -c 'import errno, os
def mv(a, b):
    try:
        os.rename(a, b); return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
os.mkdir("r1"); open("r2", "w").close(); os.mkdir("r3"); os.mkdir(".git/d")
open("r3/HEAD.lock", "w").close(); open(".git/config.lock", "w").close()
print(mv("r1", "r3/.git"), mv("r2", "r3/HEAD"), mv("r2", ".git/commondir"), mv(".git/d", "r4"),
      mv("r3/HEAD.lock", "r3/HEAD"), mv(".git/config", ".git/config.lock"),
      mv(".git/config.lock", ".git/config"))'
expect_eq "EXDEV EXDEV EXDEV EXDEV ok ok ok" "$OUT" "renames onto hidden names: only from their own"

# --- host git in the view runs none of it, and still works --------------------------------
cd "$V"
expect_status 0 "host git status" -- git status --porcelain
expect_match "^ M README" "$OUT" "host status sees the box's edit"
expect_status 0 "host git log" -- git log -1 --format=%s
expect_eq "notes" "$OUT" "host log"
expect_status 0 "host git diff" -- git diff
expect_match "\+edited" "$OUT" "host diff shows the edit"
expect_status 0 "host git config" -- git config --get core.fsmonitor
expect_eq ".git/arborinth-fsmonitor" "$OUT" "host reads the daemon's config"
expect_status 1 "host git config alias" -- git config --get alias.st
git st >/dev/null 2>&1 && fail "host: the box's alias ran" || pass
[ -e .git/hooks ] && fail "host sees .git/hooks" || pass
[ -e sub/.git ] && fail "host sees sub/.git" || pass
[ -e bare.git/HEAD ] && fail "host sees bare.git/HEAD" || pass
expect_status 0 "host commit" -- git -c user.name=h -c user.email=h@b commit -q -m host README
(cd sub && git status --porcelain >/dev/null 2>&1 && git log -1 >/dev/null 2>&1) || true
expect_eq "$(git rev-parse --show-toplevel)" "$(cd sub && git rev-parse --show-toplevel)" \
	"in sub/, host git finds the workspace, not the box's nested repository"
expect_eq "$(git rev-parse --show-toplevel)" "$(cd bare.git && git rev-parse --show-toplevel 2>&1)" \
	"in bare.git/, host git finds the workspace, not the box's bare repository"
(cd gfdir && git status >/dev/null 2>&1) || true
(cd src2 && git st >/dev/null 2>&1 && git log -1 >/dev/null 2>&1) || true
expect_eq "$V/.git" "$(cd src2 && git rev-parse --absolute-git-dir 2>&1)" \
	"through a symlink into .git, host git finds the workspace's gitdir, not the box's"
[ "$(cat notes/HEAD 2>&1)" = head ] && pass || fail "host: a HEAD file of the base commit is gone"
expect_match "^\?\? notes/other" "$(git status --porcelain)" "host status: the box's new file"
expect_eq "" "$(git status --porcelain | grep HEAD)" "host status: the base's HEAD file is unchanged"
(cd bare.git && git st >/dev/null 2>&1) || true
expect_eq "" "$(marks)" "host git in the view ran nothing the box planted"
cd "$T/repo"

# --- the box still sees its own, even while a host looks -----------------------------------
"$ARB" shell w -- bash -c "git config core.fsmonitor >/tmp/saw; test -x .git/hooks/pre-commit &&
	test -d sub/.git && test -f bare.git/HEAD &&
	git -C sub -c core.fsmonitor=false -c user.name=a -c user.email=a@b commit --no-verify -q --allow-empty -m one &&
	git -C sub config x.y z && test \"\$(git -C sub config x.y)\" = z && echo ok >>/tmp/saw; sleep 3" &
bg=$!
WT=$T/repo/.git/arborinth/workspaces/w/tmp
for _ in $(seq 100); do [ -s "$WT/saw" ] && break; sleep 0.1; done
(cd "$V" && git status >/dev/null 2>&1 && cd sub && git status >/dev/null 2>&1) || true
expect_eq "" "$(marks)" "host git during a box session ran nothing"
wait "$bg" || fail "the box session failed"
expect_eq "$(printf 'touch %s/renamed-fsmonitor; exit 1\nok' "$MK")" "$(cat "$WT/saw" 2>&1)" \
	"git in the box sees its config, hooks, nested and bare repositories, and works in them"

# --- only the host may list boxes ----------------------------------------------------------
expect_status 0 "a box lists itself" -- "$ARB" shell w -- python3 -c 'import fcntl, os, struct, errno
fd = os.open(".", os.O_RDONLY)
for cmd in ('"$IOC_ADD, $IOC_DEL"'):
    try:
        fcntl.ioctl(fd, cmd, struct.pack("i", 1)); print(0)
    except OSError as e:
        print(errno.errorcode[e.errno])'
expect_eq "$(printf 'EPERM\nEPERM')" "$OUT" "a box may not add or remove boxes"
# CONTROL: the same request from the host, for a process in another pid namespace, is taken.
unshare --user --map-root-user --pid --fork sleep 30 &
us=$!
for _ in $(seq 50); do
	child=$(cat "/proc/$us/task/$us/children" 2>/dev/null | awk '{print $1}')
	[ -n "$child" ] && break
	sleep 0.1
done
if [ -n "$child" ]; then
	expect_eq 0 "$(ioctl_py "$V" "$IOC_ADD" "$child")" "control: the host adds a box"
	expect_eq 0 "$(ioctl_py "$V" "$IOC_DEL" "$child")" "control: and removes it"
else
	fail "control: no process in another pid namespace"
fi
expect_eq EINVAL "$(ioctl_py "$V" "$IOC_ADD" $$)" "the host's own pid namespace is no box"
kill -9 ${child:-} "$us" 2>/dev/null || true # pid 1 of its namespace: only SIGKILL
wait "$us" 2>/dev/null || true

# --- as an ordinary user --------------------------------------------------------------------
# Missing means to switch users skip this part only (the checks above stand).
as_user_part() {
	command -v runuser >/dev/null || { why="no runuser" && return; }
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null ||
		{ why="cannot create $user" && return; }
	chmod 0666 /dev/fuse
	[ -u "$(command -v fusermount3)" ] || { why="fusermount3 is not setuid" && return; }
	chmod 0755 "$T"
	U=$T/user
	mkdir -p "$U/src/tests/integration"
	cp "$ARB" "$U/arborinth"
	cp "$ARB_SRC/tests/integration/lib.sh" "$ARB_SRC/tests/integration/fs_hostgit.sh" \
		"$U/src/tests/integration/"
	chown -R "$user" "$U"
	expect_status 0 "as $user" -- runuser -u "$user" -- env HOME="/home/$user" \
		ARB_JAIL_TMPDIR="$U" ARB="$U/arborinth" ARB_SRC="$U/src" ARB_HOSTGIT_USER=1 \
		bash "$U/src/tests/integration/fs_hostgit.sh"
	printf '%s\n' "$OUT" | tail -1 >&2
	[ -z "$ERR" ] || printf '%s\n' "$ERR" >&2
}
if [ "$(id -u)" = 0 ] && [ -z "${ARB_HOSTGIT_USER:-}" ]; then
	why=
	as_user_part
	if [ -n "$why" ] && [ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
		fail "as an ordinary user: $why"
	elif [ -n "$why" ]; then
		echo "SKIP (as an ordinary user): $why" >&2
	fi
fi
finish
