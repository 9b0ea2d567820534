#!/usr/bin/env bash
# Descriptor limits: every upper file the kernel knows costs the daemon a descriptor, and the
# kernel forgets inodes only under memory pressure. A workload making more files than the
# daemon's RLIMIT_NOFILE allows must still work: the daemon asks the kernel to drop unused
# ones. The daemon here runs with a hard limit of 1,024; the workload makes 3,000 files.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v python3 >/dev/null || skip "no python3"

mkrepo "$T/repo"
# The daemon inherits the limit of the process that mounts the view.
expect_status 0 "create with a low descriptor limit" -- \
	bash -c "ulimit -n 1024 && exec \"$ARB\" --workdir \"$T/repo\" workspace create lim"
V="$T/repo/.git/arborinth/workspaces/lim/workdir"
PID=$(cat "$T/repo/.git/arborinth/workspaces/lim/run/daemon.pid")
expect_match "Max open files +1024 +1024" "$(cat /proc/$PID/limits)" "daemon runs with the low limit"

# Control: the limit is real for this daemon's children of the same shape (a process with
# 1,024 descriptors cannot hold 3,000 files open).
expect_status 1 "control: 3,000 open files exceed 1,024" -- bash -c "ulimit -n 1024 && python3 -c '
import os, sys
fds = []
try:
    for i in range(3000):
        fds.append(os.open(\"$T/repo/README\", os.O_RDONLY))
except OSError:
    sys.exit(1)'"

# 3,000 files made, written, then rewritten through the view, by one process.
expect_status 0 "3,000 new files" -- python3 - "$V" <<'PY'
import os, sys
v = sys.argv[1]
os.mkdir(v + "/many")
for i in range(3000):
    with open("%s/many/f%05d" % (v, i), "w") as f:
        f.write("file %d\n" % i)
for i in range(0, 3000, 7):
    with open("%s/many/f%05d" % (v, i), "a") as f:
        f.write("again\n")
PY
expect_eq 3000 "$(ls "$V/many" | wc -l)" "all 3,000 listed"
expect_eq "file 2999" "$(cat "$V/many/f02999")" "last file's content"
expect_eq "$(printf 'file 7\nagain')" "$(cat "$V/many/f00007")" "rewritten file's content"
nfd=$(ls /proc/$PID/fd | wc -l)
if [ "$nfd" -lt 1024 ]; then pass; else fail "daemon holds $nfd descriptors"; fi
if grep -q "Too many open files" "$T/repo/.git/arborinth/workspaces/lim/run/fs.log" 2>/dev/null; then
	fail "EMFILE in the daemon log"
else
	pass
fi
# Everything is still there after a remount (from the upper layer).
expect_status 0 "unmount" -- "$ARB" --workdir "$T/repo" workspace unmount lim
expect_status 0 "mount" -- "$ARB" --workdir "$T/repo" workspace mount lim
expect_eq 3000 "$(ls "$V/many" | wc -l)" "all 3,000 after remount"
finish
