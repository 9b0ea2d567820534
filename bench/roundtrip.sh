#!/usr/bin/env bash
# bench/roundtrip.sh: what one request to the view's daemon costs on this machine. A statfs
# always reaches the daemon (the kernel caches none), so its time through the view minus its
# time on the native file is one FUSE round trip: the floor under every operation the kernel
# cannot answer from its caches (create, write, unlink, ...). (Until the view answered
# GETXATTR with ENOSYS this used a getxattr of a missing attribute.)
#
#   ARB=build/cli/arborinth bench/roundtrip.sh [CALLS]      (default 20000; 5 rounds)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARB=$(realpath "${ARB:-$HERE/../build/cli/arborinth}")
CALLS=${1:-20000}
T=$(mktemp -d /var/tmp/arb-roundtrip.XXXXXX)
cleanup() {
	"$ARB" --workdir "$T/repo" workspace delete rt --force >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
git init -q "$T/repo"
echo data >"$T/repo/f"
git -C "$T/repo" add f
git -C "$T/repo" -c user.name=bench -c user.email=bench@localhost commit -qm base
"$ARB" --workdir "$T/repo" workspace create rt >/dev/null
python3 - "$T/repo/f" "$T/repo/.git/arborinth/workspaces/rt/workdir/f" "$CALLS" <<'PY'
import os, statistics, sys, time
native, view, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def per_call(path):
    t = time.perf_counter()
    for _ in range(n):
        os.statvfs(path)
    return (time.perf_counter() - t) / n * 1e6

rounds = [(per_call(native), per_call(view)) for _ in range(5)]
nat = statistics.median(r[0] for r in rounds)
vw = statistics.median(r[1] for r in rounds)
print("| statfs, %d calls, median of 5 rounds | native %.1f us | view %.1f us (**%.1fx**) |"
      % (n, nat, vw, vw / nat))
print("one round trip to the daemon: %.1f us" % (vw - nat))
PY
