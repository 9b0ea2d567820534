#!/usr/bin/env python3
"""scripts/seccomp-profile.py DEFAULT.json [--deny] > OUT.json: a seccomp profile for a
container (or Kubernetes pod) in which arborinth runs its boxes as an unprivileged user.

bwrap makes each box with clone/unshare (user, mount, pid, net, ipc, uts namespaces), mount,
umount2, pivot_root and setns. A runtime's default profile (Docker's, containerd's: Kubernetes'
RuntimeDefault) allows these only to a process with CAP_SYS_ADMIN, which an unprivileged user
in the container lacks; podman's (containers/common) allows them already. This takes a
default profile in the OCI JSON form (e.g. /usr/share/containers/seccomp.json) and allows
these calls to everyone, dropping the conditional rules that deny them; nothing else changes.
--deny does the opposite (these calls fail with EPERM): the shape of the stricter defaults,
used by tests/pkg/image.sh as its control."""
import json
import sys

# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NEW = 0x7E020000
BWRAP = ["clone", "clone3", "unshare", "mount", "umount2", "pivot_root", "setns"]


def main(argv):
    if len(argv) < 2 or argv[1:] not in ([argv[1]], [argv[1], "--deny"]):
        sys.stderr.write("usage: seccomp-profile.py DEFAULT.json [--deny]\n")
        return 2
    deny = len(argv) == 3
    with open(argv[1]) as f:
        prof = json.load(f)
    kept = []
    for rule in prof.get("syscalls", []):
        names = [n for n in rule.get("names", []) if n not in BWRAP]
        if names:
            rule["names"] = names
            kept.append(rule)
    if deny:
        # As Docker's default for a process without CAP_SYS_ADMIN: clone only without
        # namespace flags, clone3 "not implemented" (so the C library falls back to clone),
        # the rest EPERM.
        kept += [{"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                  "args": [{"index": 0, "value": CLONE_NEW, "valueTwo": 0,
                            "op": "SCMP_CMP_MASKED_EQ"}]},
                 {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
                 {"names": BWRAP[2:], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
    else:
        kept.append({"names": BWRAP, "action": "SCMP_ACT_ALLOW"})
    prof["syscalls"] = kept
    json.dump(prof, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
