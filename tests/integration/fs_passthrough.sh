#!/usr/bin/env bash
# FUSE passthrough (`--io passthrough`, fs/transport/passthrough.c): a file the view creates is written
# by the kernel straight into the upper layer. Its content is right whichever way it is read
# afterwards, a kill -9 of the daemon loses nothing a write() returned, the audit names the
# process that created and wrote it (one write row per open, count 0), and `workspace info`
# says which path the view uses. Where passthrough is not available (not root, or a kernel
# without it) the view says so and writes through the daemon, and the same checks hold.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v python3 >/dev/null || skip "no python3"

mkrepo "$T/repo"
cd "$T/repo"
expect_status 0 "create --io passthrough" -- "$ARB" workspace create p --io passthrough
V="$T/repo/.git/arborinth/workspaces/p/workdir"
RUN="$T/repo/.git/arborinth/workspaces/p/run"
expect_status 0 "info" -- "$ARB" workspace info p
io=$(sed -n 's/^io: *//p' <<<"$OUT")
if [ "$(id -u)" = 0 ] && grep -q " fuse_passthrough_write_iter$" /proc/kallsyms 2>/dev/null; then
	expect_eq "passthrough" "$io" "info: passthrough where the kernel and root allow it"
else
	expect_match "^daemon \(passthrough unavailable" "$io" "info: why not passthrough"
fi
expect_status 0 "info --json" -- "$ARB" workspace info p --json
expect_match "\"io\": \"$io\"" "$OUT" "info --json has the I/O path"

# pt-NAME: python3 under another name, so the audit's comm tells the writers apart.
PY=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
mkdir -p "$T/bin"
for n in writer appender; do ln -s "$PY" "$T/bin/pt-$n"; done

# Create and write 3 MiB in 64 KiB writes; read it back by name after close.
expect_status 0 "create and write" -- "$T/bin/pt-writer" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
for i in range(48):
    os.write(fd, bytes([65 + i % 26]) * 65536)
os.close(fd)' "$V/big.bin"
want=$(python3 -c 'import hashlib; print(hashlib.sha256(b"".join(bytes([65 + i % 26]) * 65536 for i in range(48))).hexdigest())')
expect_eq "$want" "$(sha256sum <"$V/big.bin" | cut -d' ' -f1)" "read back through the view"
expect_eq "$want" "$(sha256sum <"$T/repo/.git/arborinth/workspaces/p/layer/big.bin" | cut -d' ' -f1)" \
	"the upper layer holds it"
expect_eq "3145728" "$(stat -c %s "$V/big.bin")" "size through the view"

# A later open (no passthrough: the kernel opens it without asking) appends through the daemon.
"$T/bin/pt-appender" -c 'import sys; open(sys.argv[1], "ab").write(b"tail\n")' "$V/big.bin"
expect_eq "3145733" "$(stat -c %s "$V/big.bin")" "append through a later open"
expect_eq "tail" "$(tail -c 5 "$V/big.bin")" "appended bytes read back"

# Other opens while a file is open for writing: they see every write (one I/O mode per inode:
# all passthrough, or all through the daemon), and a reader of an unmodified file opened
# before a writer copies it up follows the copy as on one real file.
expect_status 0 "concurrent opens" -- python3 -c '
import os, sys
f, lower = sys.argv[1] + "/live.log", sys.argv[1] + "/README"
w = os.open(f, os.O_CREAT | os.O_WRONLY, 0o644)
os.write(w, b"line 1\n")
r = os.open(f, os.O_RDONLY)
assert os.read(r, 100) == b"line 1\n"
a = os.open(f, os.O_WRONLY | os.O_APPEND)
os.write(a, b"line 2\n")
os.write(w, b"LINE 3\n")
assert os.pread(r, 100, 0) == b"line 1\nLINE 3\n", os.pread(r, 100, 0)
for fd in (w, r, a):
    os.close(fd)
r = os.open(lower, os.O_RDONLY)
before = os.read(r, 1 << 20)
with open(lower, "ab") as out:
    out.write(b"appended\n")
assert os.pread(r, 1 << 20, 0) == before + b"appended\n"
os.close(r)' "$V"
expect_eq "$(printf 'line 1\nLINE 3')" "$(cat "$V/live.log")" "concurrent writers, final content"

# O_CREAT over an existing file (shell redirection): truncates, then writes.
printf 'first\n' >"$V/redir.txt"
printf 'second\n' >"$V/redir.txt"
expect_eq "second" "$(cat "$V/redir.txt")" "O_CREAT|O_TRUNC over an existing file"

# mmap of a created file while it is open, then read by name after close.
expect_status 0 "mmap write" -- python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
m[0:5] = b"hello"
m.flush(); m.close(); os.close(fd)' "$V/mapped.bin"
expect_eq "hello" "$(head -c 5 "$V/mapped.bin")" "mmap write read back"

# The audit: one write row per open for the passthrough file, by its writer.
expect_status 0 "audit sync" -- "$ARB" workspace info p
sleep 1.5
expect_status 0 "audit json" -- "$ARB" audit p --json
printf '%s\n' "$OUT" >"$T/rows.json"
python3 - "$T/rows.json" "$io" <<'PY' && pass || fail "audit rows of passthrough writes"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
w = [r for r in rows if r.get("op") == "write" and r.get("path") == "big.bin"]
assert w, rows
first = w[0]
assert first["comm"] == "pt-writer", first
assert first["size"] == 3145728, first
if sys.argv[2] == "passthrough":
    assert first["count"] == 0, first       # written by the kernel: one row per open
else:
    assert first["count"] == 48, first      # one WRITE request per write()
assert any(r["comm"] == "pt-appender" for r in w[1:]), w
c = [r for r in rows if r.get("op") == "create" and r.get("path") == "big.bin"]
assert c and c[0]["comm"] == "pt-writer", c
PY

# kill -9 while a created file is still open: what write() returned is in the layer.
big=$(sha256sum <"$V/big.bin")
exec 7>"$V/open-at-kill.txt"
printf 'written before the kill\n' >&7
pid=$(cat "$RUN/daemon.pid")
kill -9 "$pid"
exec 7>&-
wait_dead "$pid" || fail "daemon survived kill -9"
expect_status 0 "remount after kill" -- "$ARB" workspace mount p
expect_eq "written before the kill" "$(cat "$V/open-at-kill.txt")" "kill -9 keeps the passthrough write"
expect_eq "$big" "$(sha256sum <"$V/big.bin")" "and the earlier file"
expect_status 0 "info after remount" -- "$ARB" workspace info p
expect_eq "$io" "$(sed -n 's/^io: *//p' <<<"$OUT")" "the choice survives a remount"

# --io daemon switches it off for this and later mounts.
expect_status 0 "unmount" -- "$ARB" workspace unmount p
expect_status 0 "mount --io daemon" -- "$ARB" workspace mount p --io daemon
expect_status 0 "info" -- "$ARB" workspace info p
expect_match "^daemon" "$(sed -n 's/^io: *//p' <<<"$OUT")" "info: daemon after --io daemon"
printf 'daemon path\n' >"$V/d.txt"
expect_eq "daemon path" "$(cat "$V/d.txt")" "writes through the daemon"
expect_status 2 "bad --io" -- "$ARB" workspace mount p --io fast

finish
