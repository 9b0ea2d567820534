#!/usr/bin/env bash
# `arborinth compare` over three workspaces of one origin whose work real boxes did (a fork
# among them, one conflicting with another), checked field by field in JSON and text, with
# box-chosen names (quotes, newlines, bytes that are not UTF-8, control characters) escaped;
# and the stale-fork refusal of merge and apply (--check too) with its control. As root and
# (below) as an ordinary user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v fusermount3 >/dev/null || skip "no fusermount3"

export XDG_STATE_HOME="$T/xdg"
R="$T/repo"
mkrepo "$R"
A() { "$ARB" --workdir "$R" "$@"; }
js() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wsdir() { A workspace info "$1" --json | js "d['$2']"; }
C='git -c user.name=box -c user.email=box@example.com commit -qam'

# ---- three workspaces, their work done in boxes ------------------------------------------
expect_status 0 "create a" -- A workspace create a
expect_status 0 "a: work and commit" -- A shell a -- sh -c "echo 'from a' >> README && $C 'a work'"
expect_status 0 "a: a test script" -- A shell a -- sh -c \
	'printf "#!/bin/sh\nexit 1\n" > pytest && chmod +x pytest'
expect_status 1 "a: the tests fail" -- A shell a -- ./pytest -q
expect_status 0 "b: fork of a" -- A workspace create b --from a
expect_status 0 "b: uncommitted change" -- A shell b -- sh -c \
	'printf "int main(void) { return 1; }\n" > src/main.c'
# Test commands by where their words stand: at a command's start (also after && or ;, and
# python -m X), not as an argument.
A shell b -- sh -c 'cd src && make test' >/dev/null 2>&1 || true
A shell b -- sh -c 'true; python3 -m pytest -q 2>/dev/null; exit 0' >/dev/null 2>&1 || true
A shell b -- sh -c 'echo make test; echo cargo test' >/dev/null 2>&1 || true
A shell b -- /usr/bin/env >/dev/null 2>&1 || true
expect_status 0 "create c" -- A workspace create c
expect_status 0 "c: conflicting commit" -- A shell c -- sh -c \
	"printf 'int main(void) { return 2; }\n' > src/main.c && $C 'c work'"
expect_status 3 "c: hostile names" -- A shell c -- sh -c \
	'printf x > "$(printf "q\"uote\nnl\377.txt")"; printf y > "<b>\"x\".txt"; exit 3' \
	"$(printf 'arg\001\377')"

expect_status 0 "compare --json" -- A compare --json a b c
J="$T/cmp.json"
printf '%s\n' "$OUT" >"$J"
py() { python3 -c "import json; d=json.load(open('$J')); w={x['name'] if isinstance(x['name'], str) else '?': x for x in d['workspaces']}; $1"; }
f() { py "print(*[(x['path'] if isinstance(x['path'], str) else 'HEX:' + x['path']['hex']) + ':' + x['status'] + ''.join(':%d:%d' % (x['added'], x['deleted']) for _ in [0] if 'added' in x) for x in w['$1']['$2']])"; }
expect_eq "$(git -C "$R" rev-parse HEAD)" "$(py 'print(d["base"])')" "the common base: the origin's HEAD"
expect_eq "a b c" "$(py 'print(*[x["name"] for x in d["workspaces"]])')" "the workspaces in order"
expect_eq "README:M:1:0 pytest:A:2:0" "$(f a files)" "a: its files with lines"
expect_eq "pytest:A" "$(f a uncommitted)" "a: the test script is not committed"
expect_eq "README:M:1:0 pytest:A:2:0 src/main.c:M:1:1" "$(f b files)" \
	"b (a fork of a): against the common base, a's work too"
expect_eq "src/main.c:M" "$(f b uncommitted)" "b: its change is uncommitted"
expect_eq '<b>"x".txt:A:1:0 HEX:7122756f74650a6e6cff2e747874:A:1:0 src/main.c:M:1:1' "$(f c files)" \
	"c: a name not UTF-8 kept byte for byte as hex, quotes as they are"
expect_eq "$(git -C "$R" rev-parse HEAD)" "$(py 'print(w["b"]["base"] != d["base"] and w["a"]["base"])')" \
	"a's base is the origin's; b's is its own"
expect_eq "$(git -C "$(wsdir a root)/export.git" rev-parse arborinth/a)" "$(py 'print(w["a"]["head"])')" \
	"a's head is its exported branch"
expect_eq "README:a,b:False pytest:a,b:False src/main.c:b,c:True" \
	"$(py 'print(*[o["path"] + ":" + ",".join(o["workspaces"]) + ":" + str(o["conflict"]) for o in d["overlaps"]])')" \
	"overlaps: README shared without conflict, src/main.c conflicts"
expect_eq "0:False 0:False 1:True" "$(py 'print(*[str(s["exit"]) + ":" + str(s["tests"]) for s in w["a"]["sessions"]])')" \
	"a: sessions with exit status; writing a file named pytest is not a test, running it is"
expect_eq "./pytest -q:pytest:1" "$(py 't = w["a"]["tests"]; print(*[x["command"] + ":" + x["test"] + ":" + str(x["exit"]) for x in t])')" \
	"a: the test run and its failure"
expect_eq "None make|test pytest None None" "$(py 'print(*[str(s["test"]).replace(" ", "|") for s in w["b"]["sessions"]])')" \
	"b: make test after cd &&, python -m pytest after ;, not echo's arguments, not env"
expect_eq "make test:5 pytest:6" "$(py 'print(*[t["test"] + ":" + str(t["session"]) for t in w["b"]["tests"]])')" \
	"b: its tests with their sessions"
expect_eq "True" "$(py 'print(all(isinstance(s["duration_ms"], int) and s["duration_ms"] >= 0 and s["started_ns"] > 0 for x in d["workspaces"] for s in x["sessions"]))')" \
	"every session has a start and a duration"
expect_eq "3 61726701ff" "$(py 's = w["c"]["sessions"][-1]; print(s["exit"], s["argv"][3]["hex"])')" \
	"c: an argument not UTF-8 kept as hex"
expect_eq "\$'arg\\001\\377'" "$(py 'print(w["c"]["sessions"][-1]["command"].split(" ")[-1])')" \
	"c: the command line escapes it"
expect_eq "0 0 []" "$(py 'r = w["a"]["requests"]; print(r["allowed"], r["refused"], r["refusals"])')" \
	"no network: no requests"

expect_status 0 "compare (text)" -- A compare a b c
expect_match '^    A "q\\"uote\\nnl\\377\.txt" \+1 -0$' "$OUT" "text: the hostile name escaped on one line"
expect_match '^  CONFLICT src/main.c: b c$' "$OUT" "text: the conflict"
expect_match '^    #3 exit 1, [0-9.]+s \[test: pytest\]: \./pytest -q$' "$OUT" "text: the failed test"
if printf '%s' "$OUT" | LC_ALL=C grep -q $'[\001\377]'; then fail "text: a raw control byte"; else pass; fi

# Bad input: one line, nothing changed.
before=$(tree_hash "$R/.git")
expect_status 2 "unknown workspace" -- A compare a nope
expect_one_line_error "unknown workspace"
expect_status 2 "the same twice" -- A compare a a
expect_match "given twice" "$ERR" "says so"
expect_status 2 "no names" -- A compare
expect_eq "$before" "$(tree_hash "$R/.git")" "compare wrote nothing into the origin's gitdir"
expect_status 0 "compare one workspace" -- A compare --json c

# ---- requests through the credential proxy: allowed and refused ---------------------------
python3 "$ARB_SRC/tests/proxy/fake_upstream.py" --log "$T/up.log" >"$T/up.port" &
UP_PID=$!
for _ in $(seq 50); do [ -s "$T/up.port" ] && break; sleep 0.1; done
up=$(head -1 "$T/up.port")
expect_status 0 "create n" -- A workspace create n
cat >"$T/client.py" <<'PY'
import os, urllib.request, urllib.error
def post(path):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + path, data=b"{}", method="POST",
                                 headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                          "content-type": "application/json"})
    try:
        return urllib.request.urlopen(req, timeout=30).status
    except urllib.error.HTTPError as e:
        return e.code
print(post("/v1/messages"), post("/v1/complete"))
PY
cp "$T/client.py" "$(wsdir n tmp)/client.py"
expect_status 0 "n: one request allowed, one refused" -- env ANTHROPIC_API_KEY=sk-ant-test-key \
	"$ARB" --workdir "$R" shell n --backend "anthropic=http://127.0.0.1:$up" -- \
	/usr/bin/python3 /tmp/client.py
expect_eq "200 403" "$OUT" "n: the proxy allowed one and refused the other"
kill "$UP_PID" 2>/dev/null || true
expect_status 0 "compare n" -- A compare --json n
expect_eq "1 1 /v1/complete" "$(printf '%s' "$OUT" | js 'd["workspaces"][0]["requests"]["allowed"], d["workspaces"][0]["requests"]["refused"], d["workspaces"][0]["requests"]["refusals"][0]["path"]')" \
	"compare: the requests and the refused path"
expect_match "not allowed" "$(printf '%s' "$OUT" | js 'd["workspaces"][0]["requests"]["refusals"][0]["reason"]')" \
	"compare: the refusal's reason"
expect_status 0 "compare n (text)" -- A compare n
expect_match "^  requests: 1 allowed, 1 refused$" "$OUT" "text: the counts"

# ---- a stale workspace is refused ---------------------------------------------------------
expect_status 0 "create s1" -- A workspace create s1
expect_status 0 "create s2" -- A workspace create s2
expect_status 0 "s1: changes README" -- A shell s1 -- sh -c "echo s1 >> README && $C s1"
expect_status 0 "s2: changes src/lib/a.txt" -- A shell s2 -- sh -c "echo s2 >> src/lib/a.txt && $C s2"
# The origin changes README too, far from s1's line: no conflict, yet refused as stale.
printf 'top\n%s\n' "$(cat "$R/README")" >"$R/README"
git -C "$R" commit -qam "origin moves README"
head=$(git -C "$R" rev-parse HEAD)
origin_hash() {
	(cd "$R" && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum && tree_hash "$R/.git") | sha256sum
}
before=$(origin_hash)
expect_status 1 "merge --check of the stale s1" -- A merge --check s1
expect_eq "arborinth: workspace s1 is stale: the origin changed since its base what it changes too: README; nothing was changed (merge the origin into it, or fork it again from the origin's HEAD)" \
	"$ERR" "merge --check names README"
expect_status 1 "merge of the stale s1" -- A merge s1
expect_one_line_error "stale merge"
expect_match "is stale: .*: README;" "$ERR" "merge names README"
expect_status 1 "apply --check of the stale s1" -- A apply --check s1
expect_match "is stale: .*: README;" "$ERR" "apply --check names README"
expect_status 1 "apply of the stale s1" -- A apply s1
expect_match "is stale: .*: README;" "$ERR" "apply names README"
expect_eq "$head" "$(git -C "$R" rev-parse HEAD)" "refused: the origin's branch did not move"
expect_eq "$before" "$(origin_hash)" "refused: the origin's files and gitdir as they were"
# Control: s2, as old, changed another file: allowed.
expect_status 0 "merge --check of s2 (another file)" -- A merge --check s2
expect_eq "merge would be: merge-commit into main; nothing was changed" "$OUT" "check says what it would do"
expect_eq "$head" "$(git -C "$R" rev-parse HEAD)" "--check moved nothing"
expect_eq "$before" "$(origin_hash)" "merge --check wrote nothing"
origin_state() {
	(cd "$R" && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum && git show-ref && sha256sum .git/index .git/HEAD) | sha256sum
}
state=$(origin_state)
expect_status 0 "apply --check of s2" -- A apply --check s2
expect_eq "1 changed path of s2 would apply; nothing was changed" "$OUT" "apply --check says so"
# (libgit2's check of the patch may leave a loose object: no file, ref or index changes.)
expect_eq "$state" "$(origin_state)" "apply --check changed no file, ref or index"
expect_status 0 "merge of s2" -- A merge s2
expect_eq "s2" "$(git -C "$R" show HEAD:src/lib/a.txt | tail -1)" "s2's work merged"
# After its merge, s2 goes on: merged again, not refused as stale by its own earlier merge.
expect_status 0 "s2: more work" -- A shell s2 -- sh -c "echo more >> src/lib/a.txt && $C more"
expect_status 0 "s2 merged again" -- A merge s2

# ---- as an ordinary user ----------------------------------------------------------------
. "$ARB_SRC/tests/lib/as_user.sh"
if user_begin; then
	as_user bash -c "cd '$U' && mkdir r && cd r && git init -q -b main &&
		git config user.email a@b && git config user.name a && printf 'a\nb\nc\nd\ne\n' > f &&
		git add f && git commit -qm init"
	expect_status 0 "user: create x" -- UA workspace create x
	expect_status 0 "user: create y" -- UA workspace create y
	expect_status 0 "user: x works" -- UA shell x -- sh -c "sed -i s/e/xx/ f && $C x"
	expect_status 0 "user: y works" -- UA shell y -- sh -c "echo y > f"
	expect_status 0 "user: compare" -- UA compare --json x y
	expect_eq "f:x,y:True" "$(printf '%s' "$OUT" | js '*[o["path"] + ":" + ",".join(o["workspaces"]) + ":" + str(o["conflict"]) for o in d["overlaps"]]')" \
		"user: the conflict found"
	as_user sh -c "cd '$U/r' && sed -i s/a/A/ f && git commit -qam moved"
	expect_status 1 "user: stale merge refused" -- UA merge x
	expect_match "workspace x is stale: .*: f;" "$ERR" "user: names f"
	# arborinth mcp as the user: a box run through it, its exit status and output back.
	OUT=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"workspace":"y","argv":["sh","-c","echo via-mcp > m.txt; echo out; exit 4"]}}}' \
		'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shell","arguments":{"workspace":"y","argv":"echo hi"}}}' |
		UA mcp)
	expect_eq "4 out" "$(printf '%s\n' "$OUT" | sed -n 2p | js 'json.loads(d["result"]["content"][0]["text"])["exit"], json.loads(d["result"]["content"][0]["text"])["stdout"].strip()')" \
		"user: mcp shell: exit status and output"
	expect_eq "via-mcp" "$(as_user cat "$(UA workspace info y --json | js "d['workdir']")/m.txt")" \
		"user: mcp shell: the box's write in the view"
	expect_eq "-32602" "$(printf '%s\n' "$OUT" | sed -n 3p | js 'd["error"]["code"]')" \
		"user: mcp: argv as a string is a JSON-RPC error"
fi

finish
