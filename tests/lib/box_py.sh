# tests/lib/box_py.sh: an integration script that runs one Python test of tests/proxy/ against
# real boxes, as root and again as an ordinary user (bash, sourced after integration/lib.sh,
# which gives $T, $ARB, $ARB_SRC, pass, fail and skip).
#
#   box_py_require            skips unless bwrap can make the box's namespaces and /dev/fuse is there
#   box_py_run SCRIPT.py      tests/proxy/SCRIPT.py ARB TMPDIR as this user; then, when root can
#                             switch to the user arbtest (made when missing) and it reaches the
#                             build tree, the same as that user with TMPDIR=$T/user
box_py_require() {
	command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
	bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null ||
		skip "bwrap cannot create user, pid and network namespaces here"
	[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
}

box_py_run() {
	local py=$ARB_SRC/tests/proxy/$1 user=arbtest
	if /usr/bin/python3 "$py" "$ARB" "$T"; then pass; else fail "$1"; fi
	if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null &&
		{ id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null; } &&
		runuser -u "$user" -- test -x "$ARB" -a -r "$py"; then
		U="$T/user"
		mkdir "$U" && chmod 0755 "$T" && chown "$user" "$U"
		if runuser -u "$user" -- env HOME="$(getent passwd "$user" | cut -d: -f6)" TMPDIR="$U" \
			/usr/bin/python3 "$py" "$ARB" "$U/t"; then
			pass
		else
			fail "$1 as $user"
		fi
	fi
}
