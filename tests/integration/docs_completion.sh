#!/usr/bin/env bash
# Shell completion made from docs/commands/ (scripts/docgen.py), driven in real shells: bash
# (the function with COMP_WORDS/COMP_CWORD), zsh (an interactive zsh in a zpty, TAB pressed,
# compadd recording the matches) and fish (complete -C). Each completes a command, an option of
# a sub-command, a workspace name of a real repository and a checkpoint number. Control: the
# same lines before the workspace and its checkpoint exist offer neither.
. "$(dirname "$0")/lib.sh"

for s in zsh fish; do command -v $s >/dev/null || skip "$s is not installed"; done
# What cmake --install puts where the shells and man look (the package installs the same): the
# install script of docs/ (the whole project's would write its manifest into the build tree).
cmake -DCMAKE_INSTALL_PREFIX="$T/inst" -P "$ARB_BUILD/docs/cmake_install.cmake" >/dev/null
share=$T/inst/share
for f in bash-completion/completions/arborinth zsh/vendor-completions/_arborinth \
	fish/vendor_completions.d/arborinth.fish man/man1/arborinth.1 man/man1/arborinth-shell.1; do
	if [ -s "$share/$f" ]; then pass; else fail "installed: $f"; fi
done
if command -v man >/dev/null; then
	expect_eq "$share/man/man1/arborinth-shell.1" "$(MANPATH=$share/man man -w arborinth-shell)" \
		"man arborinth-shell finds the installed page"
	expect_match "^ +--jail MODE" "$(MANPATH=$share/man MANWIDTH=80 man arborinth-shell 2>/dev/null)" \
		"man arborinth-shell shows the options"
fi
mkdir -p "$T/c"
cp "$share/bash-completion/completions/arborinth" "$T/c/bash"
cp "$share/zsh/vendor-completions/_arborinth" "$T/c/zsh"
cp "$share/fish/vendor_completions.d/arborinth.fish" "$T/c/fish"
C=$T/c
PATH=$(dirname "$ARB"):$PATH
export PATH
mkrepo "$T/repo"
cd "$T/repo" || exit 1

# bash LINE: what the bash function offers for LINE (the last word is completed).
bash_c() {
	bash -c '. "$1"; read -ra COMP_WORDS <<<"$2"; [ "${2: -1}" = " " ] && COMP_WORDS+=("");
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _arborinth; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$C/bash" "$1" | sed '/^$/d' | sort -u | tr '\n' ' '
}
mkdir -p "$T/fp"
cp "$C/zsh" "$T/fp/_arborinth"
zsh_c() {
	rm -f "$T/zsh.out"
	FP=$T/fp OUTF=$T/zsh.out LINE=$1 zsh -f -c '
		zmodload zsh/zpty
		zpty z zsh -f -i
		zpty -w z "PS1=; fpath=($FP \$fpath); autoload -U compinit; compinit -u -D"
		zpty -w z "compadd() { if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd \"\$@\"; return; fi; local -a h; builtin compadd -A h \"\$@\"; print -rl -- \$h >>$OUTF; }"
		zpty -w z "bindkey \"^I\" complete-word"
		zpty -w -n z "$LINE"$'"'"'\t'"'"'
		for i in {1..50}; do [[ -s $OUTF ]] && break; sleep 0.1; done
		sleep 0.3
		zpty -d z'
	sed '/^$/d' "$T/zsh.out" 2>/dev/null | sort -u | tr '\n' ' '
}
fish_c() {
	fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$C/fish" "$1" | cut -f1 |
		sed '/^$/d' | sort -u | tr '\n' ' '
}

for sh in bash zsh fish; do
	c=${sh}_c
	# control: no workspace yet, no checkpoint yet
	expect_eq "" "$($c 'arborinth shell f')" "$sh: no workspace name before there is one"
	expect_eq "workspace " "$($c 'arborinth wor')" "$sh: a command"
	expect_eq "--force " "$($c 'arborinth workspace delete x --f')" \
		"$sh: an option of a sub-command (delete's --force, not create's --from)"
	expect_eq "--from " "$($c 'arborinth workspace create x --fr')" "$sh: create's --from"
	expect_eq "--timeout " "$($c 'arborinth shell x --time')" "$sh: an option of shell"
	expect_match "(^| )bash " "$($c 'arborinth shell x -- bas')" "$sh: a command after --"
done
expect_status 0 "workspace create" -- "$ARB" workspace create first
for sh in bash zsh fish; do
	c=${sh}_c
	expect_eq "base view " "$($c 'arborinth diff first ')" "$sh: no checkpoint before there is one"
done
expect_status 0 "checkpoint" -- "$ARB" checkpoint first -m one
for sh in bash zsh fish; do
	c=${sh}_c
	expect_eq "first " "$($c 'arborinth shell f')" "$sh: a workspace name"
	expect_eq "first " "$($c 'arborinth --workdir . log ')" "$sh: a workspace name after --workdir"
	expect_eq "1 base view " "$($c 'arborinth diff first ')" "$sh: a checkpoint number"
	expect_eq "1 base view " "$($c 'arborinth rewind first --to ')" "$sh: a checkpoint as a value"
done
"$ARB" workspace delete --force first >/dev/null
finish
