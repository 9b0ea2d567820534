"""The box's arborinth_proxy seen from the host, for the attack tests: its pid and memory."""
import os


def proxy_of(pid):
    """The arborinth_proxy child of the launcher pid."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        comm, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
        if comm == "arborinth_proxy" and int(rest[1]) == pid:
            return int(d)
    return None


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) / 1024
    return -1
