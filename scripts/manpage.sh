#!/bin/sh
# scripts/manpage.sh ARBORINTH: prints arborinth(1), made from the command's own help text
# ('arborinth --help' and 'arborinth help COMMAND' for each command it lists), so the page
# says exactly what the command does. The Debian package builds it (debian/rules).
set -eu
a=$1
ver=$("$a" --version | sed 's/^arborinth //')
# roff: a backslash is \e; a line starting with . or ' would be a request, so \& first.
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
cat <<HEAD
.TH ARBORINTH 1 "" "arborinth $ver" "User Commands"
.SH NAME
arborinth \\- copy-on-write workspaces, boxes and an audit trail for untrusted code
.SH SYNOPSIS
.B arborinth
[\\fB\\-\\-workdir\\fR \\fIDIR\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR...]
.SH DESCRIPTION
.nf
HEAD
"$a" --help | esc
echo ".fi"
echo ".SH COMMANDS"
"$a" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\)  .*/\1/p' | while read -r c; do
	[ "$c" = help ] && continue
	printf '.SS %s\n.nf\n' "$c"
	"$a" help "$c" 2>&1 | esc
	echo ".fi"
done
cat <<'TAIL'
.SH SEE ALSO
.BR bwrap (1),
.BR git (1),
.BR fusermount3 (1)
TAIL
