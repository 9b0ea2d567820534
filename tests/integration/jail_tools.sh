#!/usr/bin/env bash
# Tool managers on PATH keep working in a default box (jail/toolmgr.c, jail/toolscan.c):
# fake but real layouts in the test's $HOME (pyenv shims that exec $PYENV_ROOT/libexec/pyenv,
# a rustup proxy that needs $RUSTUP_HOME/settings.toml and a toolchain, an nvm node whose npm
# links into its lib, ~/.local/bin programs that are links into uv tools or scripts whose
# interpreter is a venv's python), each run in a box. Controls: the same with the manager's
# folders hidden (--no-tool-managers, or a bind file's tmpfs over them) fails; credential
# files next to them stay hidden; nothing they get is writable. Then the machine's own
# pyenv python3 and rustup cargo, when it has them.
REAL_HOME=$HOME
REAL_PATH=$PATH
. "$(dirname "$0")/jail_lib.sh"
jail_setup
H=$HOME
DASH=$(readlink -f "$(command -v dash || command -v sh)")

# --- the layouts ----------------------------------------------------------------------------
mkexe() { mkdir -p "$(dirname "$1")" && printf '%s\n' "$2" >"$1" && chmod +x "$1"; }

# pyenv: a shim with its root written in, as `pyenv rehash` makes them.
mkexe "$H/.pyenv/libexec/pyenv" '#!/bin/sh
[ "$1" = exec ] || { echo "pyenv: no such command $1" >&2; exit 1; }
shift; prog=$1; shift
v=$(cat "$PYENV_ROOT/version") || exit 1
exec "$PYENV_ROOT/versions/$v/bin/$prog" "$@"'
mkexe "$H/.pyenv/shims/fakepy" "#!/bin/sh
export PYENV_ROOT=\"$H/.pyenv\"
exec \"$H/.pyenv/libexec/pyenv\" exec \"\${0##*/}\" \"\$@\""
mkexe "$H/.pyenv/versions/9.9.9/bin/fakepy" '#!/bin/sh
echo "fakepy 9.9.9 root=$PYENV_ROOT"'
cp "$DASH" "$H/.pyenv/versions/9.9.9/bin/python9"
echo 9.9.9 >"$H/.pyenv/version"
echo 'machine example.com password PYENV-NETRC' >"$H/.pyenv/.netrc"

# rustup: one binary, linked as cargo; the toolchain comes from settings.toml.
mkexe "$H/.cargo/bin/rustup" '#!/bin/sh
home=${RUSTUP_HOME:-$HOME/.rustup}
tc=$(sed -n "s/^default_toolchain = \"\(.*\)\"/\1/p" "$home/settings.toml" 2>/dev/null)
[ -n "$tc" ] || { echo "error: rustup could not choose a version of ${0##*/} to run, because one was not specified explicitly, and no default is configured." >&2; exit 1; }
exec "$home/toolchains/$tc/bin/${0##*/}" "$@"'
ln -s rustup "$H/.cargo/bin/cargo"
mkexe "$H/.rustup/toolchains/fake-x86_64/bin/cargo" '#!/bin/sh
echo "cargo 9.9.9 (fake) home=$CARGO_HOME"
mkdir -p "$CARGO_HOME/registry" && echo cached >"$CARGO_HOME/registry/x" && echo wrote-cache'
printf 'version = "12"\ndefault_toolchain = "fake-x86_64"\n' >"$H/.rustup/settings.toml"
echo '[registry] token = "CARGO-TOKEN"' >"$H/.cargo/credentials.toml"
echo '[registries.x] token = "CARGO-CONFIG-TOKEN"' >"$H/.cargo/config.toml"

# nvm: a node prefix; npm is a link into its lib, as npm installs itself.
N=$H/.nvm/versions/node/v99.0.0
mkexe "$H/.nvm/nvm.sh" '# nvm'
mkexe "$N/lib/node_modules/npm/bin/npm-cli" '#!/bin/sh
echo "npm 99 NVM_DIR=$NVM_DIR"'
mkdir -p "$N/bin" "$N/etc"
ln -s ../lib/node_modules/npm/bin/npm-cli "$N/bin/fakenpm"
echo '//registry.npmjs.org/:_authToken=NVM-PREFIX-TOKEN' >"$N/etc/npmrc"
echo '//registry.npmjs.org/:_authToken=HOME-NPMRC-TOKEN' >"$H/.npmrc"

# ~/.local/bin: a uv tool (a link into its venv, whose python links to a uv Python) and a
# pipx-style copied script whose interpreter is a venv's python linked into pyenv.
UVT=$H/.local/share/uv/tools/fakeruff
UVP=$H/.local/share/uv/python/cpython-9.9-linux/bin/python9.9
mkdir -p "$(dirname "$UVP")" "$UVT/bin" "$H/.local/bin" "$H/.local/share/pipx/venvs/fakeblack/bin"
cp "$DASH" "$UVP"
ln -s "$UVP" "$UVT/bin/python"
mkexe "$UVT/bin/fakeruff" "#!$UVT/bin/python
echo ruff-ran"
ln -s "$UVT/bin/fakeruff" "$H/.local/bin/fakeruff"
ln -s "$H/.pyenv/versions/9.9.9/bin/python9" "$H/.local/share/pipx/venvs/fakeblack/bin/python"
echo 'home = x' >"$H/.local/share/pipx/venvs/fakeblack/pyvenv.cfg"
mkexe "$H/.local/bin/fakeblack" "#!$H/.local/share/pipx/venvs/fakeblack/bin/python
echo black-ran"
# A pip --user style script: its package lives in the prefix's lib (~/.local/lib).
mkdir -p "$H/.local/lib/python9/site-packages"
echo userpkg-ran >"$H/.local/lib/python9/site-packages/fakeuserpkg.txt"
mkexe "$H/.local/bin/fakeuserpkg" '#!/bin/sh
cat "$HOME/.local/lib/python9/site-packages/fakeuserpkg.txt"'
# A script whose interpreter is a credential folder's file: never mounted.
mkexe "$H/.ssh/evil" '#!/bin/sh
echo evil-ran'
mkexe "$H/.local/bin/sneaky" "#!$H/.ssh/evil"

export PATH="$H/.local/bin:$H/.pyenv/shims:$H/.cargo/bin:$N/bin:$PATH"
unset PYENV_ROOT RUSTUP_HOME CARGO_HOME NVM_DIR RUSTUP_TOOLCHAIN

# --- each tool runs in a default box; the control without the managers' mounts fails -------
expect_status 0 "pyenv shim" -- box -- fakepy
expect_eq "fakepy 9.9.9 root=$H/.pyenv" "$OUT" "pyenv shim reaches its version"
expect_status 127 "control: pyenv shim with --no-tool-managers" -- box --no-tool-managers -- fakepy
expect_match "libexec/pyenv" "$ERR" "control: the shim's manager is missing"

expect_status 0 "rustup proxy" -- box -- cargo --version
expect_match "^cargo 9.9.9 \(fake\) home=$H/.cargo" "$OUT" "rustup proxy runs the default toolchain"
expect_status 1 "control: rustup proxy with --no-tool-managers" -- box --no-tool-managers -- cargo --version
expect_match "no default is configured" "$ERR" "control: rustup has no settings"
# Caches go to the workspace: cargo wrote $CARGO_HOME/registry into the box's home.
expect_status 0 "cargo's cache is writable" -- box -- cargo build
expect_match "wrote-cache" "$OUT" "cargo wrote its cache"
[ -f "$WS/home/.cargo/registry/x" ] && pass || fail "cargo's cache is in the workspace's home"
[ ! -e "$H/.cargo/registry" ] && pass || fail "cargo's cache reached the host"

expect_status 0 "nvm npm" -- box -- fakenpm
expect_eq "npm 99 NVM_DIR=$H/.nvm" "$OUT" "npm links into the node's lib"
expect_status 127 "control: nvm npm with --no-tool-managers" -- box --no-tool-managers -- fakenpm

expect_status 0 "uv tool" -- box -- fakeruff
expect_eq "ruff-ran" "$OUT" "a ~/.local/bin link into a uv tool, its python a uv Python"
expect_status 0 "pipx-style script" -- box -- fakeblack
expect_eq "black-ran" "$OUT" "a script whose interpreter is a venv's python"
expect_status 0 "a ~/.local/bin script's user site" -- box -- fakeuserpkg
expect_eq "userpkg-ran" "$OUT" "the prefix's lib is mounted for ~/.local/bin"
expect_status 1 "control: user site with --no-tool-managers" -- box --no-tool-managers -- fakeuserpkg
expect_status 127 "control: uv tool with --no-tool-managers" -- box --no-tool-managers -- fakeruff
expect_status 127 "control: pipx script with --no-tool-managers" -- box --no-tool-managers -- fakeblack
expect_status 127 "a credential folder's interpreter is not mounted" -- box -- sneaky

# A bind file's tmpfs replaces a manager's mount (they are convenience defaults).
printf 'tmpfs = ["~/.pyenv/versions"]\n' >"$T/hide.toml"
expect_status 127 "control: pyenv versions hidden by a bind file" -- box --binds "$T/hide.toml" -- fakepy

# --- credentials next to them stay hidden; nothing they get is writable ---------------------
for f in "$H/.pyenv/.netrc" "$H/.cargo/credentials.toml" "$H/.cargo/config.toml" "$H/.npmrc" \
	"$N/etc/npmrc" "$H/.ssh/evil"; do
	expect_status 1 "hidden: $f" -- box -- cat "$f"
done
inbox "ls -A $H/.pyenv | tr '\n' ' '"
expect_eq "libexec shims version versions " "$OUT" "only what pyenv needs of its root"
for f in "$H/.pyenv/versions/new" "$H/.rustup/toolchains/new" "$N/lib/new" "$UVT/new" \
	"$H/.pyenv/shims/new"; do
	expect_status 2 "read-only: $f" -- box -- sh -c "echo x >'$f'"
	expect_match "Read-only file system" "$ERR" "read-only: $f"
done

# --- what --explain says --------------------------------------------------------------------
expect_status 0 "explain" -- box --explain -- true
expect_match "$H/.pyenv/versions  ro $H/.pyenv/versions  \[default, replaceable\] path entry ~/.pyenv/shims \(pyenv\), read-only" "$OUT" "explain: pyenv's versions and why"
expect_match "$H/.rustup/settings.toml  ro .*path entry ~/.cargo/bin \(rustup\)" "$OUT" "explain: rustup's settings"
expect_match "$N/lib  ro .*path entry ~/.nvm/versions/node/v99.0.0/bin \(nvm\)" "$OUT" "explain: the node's lib"
expect_match "$H/.local/share/uv/tools/fakeruff  ro .*path entry ~/.local/bin \(~/.local/bin/fakeruff\)" "$OUT" "explain: the uv tool"
expect_match "$H/.local/lib  ro .*path entry ~/.local/bin \(prefix\)" "$OUT" "explain: the prefix's lib"
expect_match "note       PYENV_ROOT=$H/.pyenv set for path entry ~/.pyenv/shims \(pyenv\)" "$OUT" "explain: PYENV_ROOT's reason"
expect_match "note       RUSTUP_HOME=$H/.rustup set for path entry ~/.cargo/bin \(rustup\)" "$OUT" "explain: RUSTUP_HOME's reason"
expect_match "note       $H/.ssh/evil not mounted for path entry ~/.local/bin \(~/.local/bin/sneaky\): it would expose credentials \($H/.ssh\)" "$OUT" "explain: the credential interpreter refused"
expect_match "PYENV_ROOT=$H/.pyenv" "$(grep -A60 '== environment' <<<"$OUT")" "explain: PYENV_ROOT in the environment"
expect_status 0 "explain --no-tool-managers" -- box --no-tool-managers --explain -- true
if grep -q "(pyenv)" <<<"$OUT"; then fail "--no-tool-managers still mounts pyenv"; else pass; fi
expect_match "tool-manager mounts turned off" "$OUT" "explain: the switch is shown"
expect_status 2 "--no-tool-managers with --jail none" -- box --jail none --no-tool-managers -- true
expect_one_line_error "--no-tool-managers with --jail none"

# A manager folder holding a credential file is not mounted, and --explain says why.
echo 'token' >"$H/.pyenv/versions/.netrc"
expect_status 127 "a credential in pyenv's versions keeps them out" -- env PATH="$H/.pyenv/shims:/usr/bin:/bin" "$ARB" shell w -- fakepy
expect_status 1 "the credential in pyenv's versions" -- box -- cat "$H/.pyenv/versions/.netrc"
expect_status 0 "explain the refusal" -- box --explain -- true
expect_match "$H/.pyenv/versions not mounted for path entry ~/.pyenv/shims \(pyenv\): it would expose credentials \($H/.pyenv/versions/.netrc\)" "$OUT" "explain: credential inside a manager's folder"
rm "$H/.pyenv/versions/.netrc"

# A custom RUSTUP_HOME from the host is the proxy's.
# A manager's own shims folder is not read program by program (its mounts cover the shims
# it writes); the same link in another PATH entry brings its install prefix (the control).
mkexe "$H/opt/sometool/bin/sometool" '#!/bin/sh
echo sometool-ran'
ln -s "$H/opt/sometool/bin/sometool" "$H/.pyenv/shims/sometool"
expect_status 0 "explain with a link in pyenv's shims" -- box --explain -- true
if grep -q "$H/opt/sometool" <<<"$OUT"; then fail "pyenv's shims folder was read program by program"; else pass; fi
ln -s "$H/opt/sometool/bin/sometool" "$H/.local/bin/sometool"
expect_status 0 "explain with the link in ~/.local/bin" -- box --explain -- true
expect_match "$H/opt/sometool  ro .*path entry ~/.local/bin \(~/.local/bin/sometool\)" "$OUT" "control: the link's prefix is mounted for ~/.local/bin"
rm "$H/.pyenv/shims/sometool" "$H/.local/bin/sometool"
mv "$H/.rustup" "$H/rusthome"
expect_status 1 "rustup without its home" -- box -- cargo --version
expect_status 0 "rustup with the host's RUSTUP_HOME" -- env RUSTUP_HOME="$H/rusthome" "$ARB" shell w -- cargo --version
expect_match "^cargo 9.9.9" "$OUT" "RUSTUP_HOME from the host"
mv "$H/rusthome" "$H/.rustup"

# A PATH entry that is a credential folder is not mounted.
expect_status 0 "PATH entry in ~/.ssh" -- env PATH="$H/.ssh:$PATH" "$ARB" shell w --explain -- true
expect_match "PATH entry $H/.ssh not mounted: it would expose credentials" "$OUT" "PATH entry credential note"

# --- the rest of the table: each manager's program runs, and not without its mounts --------
# fnm: the PATH entry is a per-shell link to an installation; its bin links into its lib.
F=$H/.local/share/fnm/node-versions/v1/installation
mkexe "$F/lib/node_modules/x/run" '#!/bin/sh
echo "fnm-ran FNM_DIR=$FNM_DIR"'
mkdir -p "$F/bin" "$H/.local/state/fnm_multishells"
ln -s ../lib/node_modules/x/run "$F/bin/fakefnm"
ln -s "$F" "$H/.local/state/fnm_multishells/1_2"
# volta: every tool is a link to volta-shim, which reads $VOLTA_HOME/tools.
mkexe "$H/.volta/bin/volta-shim" '#!/bin/sh
cat "$VOLTA_HOME/tools/user/platform.json"'
ln -s volta-shim "$H/.volta/bin/fakevolta"
mkdir -p "$H/.volta/tools/user" && echo '{"node":"volta-ran"}' >"$H/.volta/tools/user/platform.json"
# bun: global packages' bins link into install/global.
mkexe "$H/.bun/bin/bun" '#!/bin/sh'
mkexe "$H/.bun/install/global/node_modules/x/cli" '#!/bin/sh
echo "bun-ran BUN_INSTALL=$BUN_INSTALL"'
ln -s ../install/global/node_modules/x/cli "$H/.bun/bin/fakebunx"
# sdkman: candidates/java/current links to a version; java needs its lib.
mkexe "$H/.sdkman/bin/sdkman-init.sh" '# sdkman'
mkexe "$H/.sdkman/candidates/java/9.0/bin/fakejava" '#!/bin/sh
cat "$(dirname "$0")/../lib/modules"'
echo java-ran >"$H/.sdkman/candidates/java/9.0/lib/modules" 2>/dev/null ||
	{ mkdir -p "$H/.sdkman/candidates/java/9.0/lib" && echo java-ran >"$H/.sdkman/candidates/java/9.0/lib/modules"; }
ln -s 9.0 "$H/.sdkman/candidates/java/current"
# asdf and mise: shims exec the installed version from the data folder.
mkexe "$H/.asdf/installs/x/1/bin/fakeasdf" '#!/bin/sh
echo "asdf-ran $(cat "$HOME/.tool-versions")"'
mkexe "$H/.asdf/shims/fakeasdf" '#!/bin/sh
exec "$ASDF_DATA_DIR/installs/x/1/bin/fakeasdf" "$@"'
echo 'x 1' >"$H/.tool-versions"
mkexe "$H/.local/share/mise/installs/y/2/bin/fakemise" '#!/bin/sh
echo mise-ran'
mkexe "$H/.local/share/mise/shims/fakemise" '#!/bin/sh
exec "$MISE_DATA_DIR/installs/y/2/bin/fakemise" "$@"'
# Go: a GOROOT's go needs its pkg/tool; GOPATH's bin is self-contained but told its GOPATH.
mkexe "$H/sdk/go9/bin/fakego" '#!/bin/sh
cat "$GOROOT/pkg/tool/linux_amd64/compile"'
mkdir -p "$H/sdk/go9/pkg/tool/linux_amd64" && echo go-ran >"$H/sdk/go9/pkg/tool/linux_amd64/compile"
mkexe "$H/go/bin/fakegopath" '#!/bin/sh
echo "gopath-ran GOPATH=$GOPATH"'
mkdir -p "$H/go/pkg/mod"
MORE="$H/.local/state/fnm_multishells/1_2/bin:$H/.volta/bin:$H/.bun/bin"
MORE="$MORE:$H/.sdkman/candidates/java/current/bin:$H/.asdf/shims:$H/.local/share/mise/shims"
MORE="$MORE:$H/sdk/go9/bin:$H/go/bin"
morebox() { env PATH="$MORE:$PATH" "$ARB" shell w "$@"; }
manager() { # NAME PROGRAM WANT-REGEX
	expect_status 0 "$1" -- morebox -- "$2"
	expect_match "$3" "$OUT" "$1: $2 runs"
	# Control: without the managers' mounts and variables it fails, or runs without them.
	OUT=$(morebox --no-tool-managers -- "$2" 2>/dev/null) || true
	if grep -Eq -- "$3" <<<"$OUT"; then fail "control: $1's $2 worked with --no-tool-managers"; else pass; fi
}
manager fnm fakefnm "^fnm-ran FNM_DIR=$H/.local/share/fnm$"
manager volta fakevolta '^\{"node":"volta-ran"\}$'
manager bun fakebunx "^bun-ran BUN_INSTALL=$H/.bun$"
manager sdkman fakejava "^java-ran$"
manager asdf fakeasdf "^asdf-ran x 1$"
manager mise fakemise "^mise-ran$"
manager go fakego "^go-ran$"
manager gopath fakegopath "^gopath-ran GOPATH=$H/go$"
expect_status 0 "explain the rest" -- morebox --explain -- true
for m in "fnm_multishells/1_2/lib  ro $F/lib .*\(fnm\)" "volta/tools/user  ro .*\(volta\)" \
	"bun/install/global  ro .*\(bun\)" "java/current  ro $H/.sdkman/candidates/java/9.0 .*\(sdkman\)" \
	"asdf/installs  ro .*\(asdf\)" "$H/.tool-versions  ro .*\(asdf\)" "mise/installs  ro .*\(mise\)" \
	"sdk/go9  ro .*\(go\)" "GOPATH=$H/go set for path entry ~/go/bin \(gopath\)"; do
	expect_match "$m" "$OUT" "explain: $m"
done

# --- the machine's own pyenv python3 and rustup cargo ---------------------------------------
real_tool() { # NAME MANAGER-DIR: the real tool, when it runs through that manager
	local p
	p=$(HOME=$REAL_HOME PATH=$REAL_PATH command -v "$1" || true)
	case "$p" in "$REAL_HOME"/*"$2"*) return 0 ;; esac
	echo "SKIP (part): no $1 from $2 under $REAL_HOME on PATH (found '${p:-nothing}')" >&2
	return 1
}
realbox() { env HOME="$REAL_HOME" PATH="$REAL_PATH" "$ARB" shell w "$@"; }
if real_tool python3 .pyenv; then
	expect_status 0 "the machine's pyenv python3" -- realbox -- python3 -c 'import sys, ssl; print(sys.prefix)'
	expect_match "^$REAL_HOME/.pyenv/versions/" "$OUT" "real python3 runs from pyenv's versions"
	expect_status 127 "control: real python3 with --no-tool-managers" -- realbox --no-tool-managers -- python3 --version
fi
if real_tool cargo .cargo; then
	expect_status 0 "the machine's rustup cargo" -- realbox -- cargo --version
	expect_match "^cargo [0-9]" "$OUT" "real cargo runs"
	printf 'fn main() { println!("hello-from-rustc"); }\n' >"$WS/tmp/h.rs"
	expect_status 0 "the machine's rustc compiles" -- realbox -- sh -c 'rustc -o /tmp/h /tmp/h.rs && /tmp/h'
	expect_eq "hello-from-rustc" "$OUT" "real rustc's program runs"
	expect_status 1 "control: real cargo with --no-tool-managers" -- realbox --no-tool-managers -- cargo --version
	expect_status 1 "real credentials stay hidden" -- realbox -- cat "$REAL_HOME/.cargo/credentials.toml"
fi
finish
