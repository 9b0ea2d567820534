# tests/lib/as_user.sh: the ordinary-user part of an integration script (bash, sourced after
# integration/lib.sh, which gives $T, $ARB and skip).
#
#   if user_begin; then UA workspace create x; ...; fi
#
# user_begin returns 1 and does nothing unless root can run things as another user here
# (runuser, a setuid fusermount3); it skips the test when the user cannot be made. Otherwise:
# the user arbtest (made when missing), /dev/fuse open to it, $T searchable, $U="$T/user" the
# user's with a copy of $ARB as $U/arborinth and a home $U/home; as_user CMD... runs CMD as
# the user (HOME=$U/home, no XDG_STATE_HOME: the default list of projects, TMPDIR=$U); UA
# ARGS... runs that arborinth on the repository $U/r, which the caller makes.
user_begin() {
	[ "$(id -u)" = 0 ] && command -v runuser >/dev/null &&
		[ -u "$(command -v fusermount3)" ] || return 1
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U="$T/user"
	mkdir -p "$U/home"
	cp "$ARB" "$U/arborinth"
	chown -R "$user" "$U"
	as_user() { runuser -u "$user" -- env HOME="$U/home" XDG_STATE_HOME= TMPDIR="$U" "$@"; }
	UA() { as_user "$U/arborinth" --workdir "$U/r" "$@"; }
}
