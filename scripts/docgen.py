#!/usr/bin/env python3
"""scripts/docgen.py: the command pages (docs/commands/*.md) into what is built from them.

One source, four outputs (standard library only; run by CMake at build time):

  docgen.py man PAGE.md OUT.1 VERSION     a man page (roff) for `man arborinth-shell`
  docgen.py help OUT.c PAGE.md...         `--help` texts: a C file defining cmd_<name>_usage[]
                                          for each page (cli_main_usage_head/_tail for arborinth.md)
  docgen.py bash|zsh|fish OUT PAGE.md...  shell completion: commands, sub-commands, options,
                                          workspace names and checkpoint numbers
  docgen.py options PAGE.md               the options a page documents, one a line (for tests)

The page format (anything else is an error naming the page and line):

  # arborinth-compare(1) -- compare workspaces against their common base

  ## SYNOPSIS
  `arborinth compare` [`--json`] *A* *B* [*C*...]

  ## DESCRIPTION
  Plain paragraphs (markdown: `code`, *arg*, lists with "* ", fenced ``` blocks).

  ## OPTIONS
  * `--json`:
    Print one JSON object instead of text.
  * `-n`, `--dry-run` *REV*:
    Description, indented by two spaces on the following lines.

  ## SEE ALSO
  arborinth-diff(1), arborinth-merge(1)
"""
import os
import re
import sys
import textwrap

TITLE = re.compile(r"^# (arborinth(?:-([a-z][a-z0-9-]*))?)\(1\) -- (\S.*)$")
OPTION = re.compile(r"^\* ((?:`-{1,2}[A-Za-z0-9][A-Za-z0-9-]*`(?:, )?)+)((?:[ \[].*?)?):$")
OPT_NAME = re.compile(r"`(-{1,2}[A-Za-z0-9][A-Za-z0-9-]*)`")


class PageError(Exception):
    pass


class Page:
    """One parsed page: name, summary, sections (title -> lines) and options."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        m = TITLE.match(lines[0]) if lines else None
        if not m:
            self.fail(1, "first line must be '# arborinth-NAME(1) -- summary'")
        self.name, self.cmd, self.summary = m.group(1), m.group(2) or "", m.group(3)
        base = os.path.basename(path)
        if base != self.name + ".md":
            self.fail(1, "the page of %s must be named %s.md" % (self.name, self.name))
        self.sections = []  # [(title, first line number, [lines])]
        for i, line in enumerate(lines[1:], start=2):
            if line.startswith("## "):
                self.sections.append((line[3:].strip(), i, []))
            elif line.startswith("#"):
                self.fail(i, "only '## SECTION' headings are allowed below the title")
            elif self.sections:
                self.sections[-1][2].append(line)
            elif line.strip():
                self.fail(i, "text before the first '## SECTION'")
        titles = [s[0] for s in self.sections]
        for need in ("SYNOPSIS", "DESCRIPTION"):
            if need not in titles:
                self.fail(1, "no '## %s' section" % need)
        self.synopsis = [l for l in self.section("SYNOPSIS") if l.strip()]
        self.options = self.parse_options()

    def fail(self, line, msg):
        raise PageError("%s:%d: %s" % (self.path, line, msg))

    def section(self, title):
        for t, _, lines in self.sections:
            if t == title:
                return lines
        return []

    def parse_options(self):
        """[(names, value, description lines)] from '## OPTIONS'."""
        opts = []
        for t, first, lines in self.sections:
            if t != "OPTIONS":
                continue
            for i, line in enumerate(lines, start=first + 1):
                if not line.strip():
                    continue
                if line.startswith("  ") and opts:
                    opts[-1][2].append(line[2:])
                    continue
                m = OPTION.match(line)
                if not m:
                    self.fail(i, "an option is '* `--name`[, `-n`] [*VALUE*]:' then its "
                              "description indented by two spaces")
                names = OPT_NAME.findall(m.group(1))
                opts.append((names, m.group(2).strip(), []))
        for names, _, desc in opts:
            if not any(d.strip() for d in desc):
                self.fail(first, "option %s has no description" % names[0])
        return opts

    def option_names(self):
        return [n for names, _, _ in self.options for n in names]


def load(paths):
    pages = [Page(p) for p in paths]
    seen = set()
    for p in pages:
        if p.name in seen:
            raise PageError("%s: two pages for %s" % (p.path, p.name))
        seen.add(p.name)
    return pages


# ---- inline markdown -------------------------------------------------------------------------

INLINE = re.compile(r"`([^`]*)`|\*([^*\s][^*]*?)\*")


def plain(text):
    """Markdown inline into plain text (for --help)."""
    return INLINE.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def roff_escape(text):
    text = text.replace("\\", "\\e")
    return text


def roff_inline(text):
    out, pos = [], 0
    for m in INLINE.finditer(text):
        out.append(roff_escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + roff_escape(m.group(1)).replace("-", "\\-") + "\\fR")
        else:
            out.append("\\fI" + roff_escape(m.group(2)) + "\\fR")
        pos = m.end()
    out.append(roff_escape(text[pos:]))
    line = "".join(out)
    if line.startswith(".") or line.startswith("'"):
        line = "\\&" + line
    return line


def blocks(lines):
    """Lines into blocks: ('code', lines), ('item', lines), ('para', lines)."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append(("code", lines[i + 1:j]))
            i = j + 1
        elif line.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append(("table", lines[i:j]))
            i = j
        elif line.startswith("* ") or line.startswith("- "):
            j = i + 1
            while j < len(lines) and lines[j].startswith("  ") and lines[j].strip():
                j += 1
            out.append(("item", [line[2:]] + [l.strip() for l in lines[i + 1:j]]))
            i = j
        else:
            j = i
            while (j < len(lines) and lines[j].strip() and not lines[j].startswith("```")
                   and not lines[j].startswith(("* ", "- ", "|"))):
                j += 1
            out.append(("para", [l.strip() for l in lines[i:j]]))
            i = j
    return out


# ---- man ---------------------------------------------------------------------------------------

def table_rows(rows):
    """A markdown table as a tagged list: the first cell the tag, the others its text."""
    out = []
    for n, row in enumerate(rows):
        cells = [c.strip().replace("\0", "|")
                 for c in row.replace("\\|", "\0").strip().strip("|").split("|")]
        if n == 0 or re.match(r"^[-: ]*$", "".join(cells)):
            continue  # the header and the separator
        out += [".TP", roff_inline(cells[0]), roff_inline(" ".join(c for c in cells[1:] if c))]
    return out


def roff_blocks(lines):
    out = []
    for kind, body in blocks(lines):
        if kind == "code":
            out += [".PP", ".RS 4", ".nf"]
            out += [roff_escape(l) if not l.startswith((".", "'")) else "\\&" + roff_escape(l)
                    for l in body]
            out += [".fi", ".RE"]
        elif kind == "item":
            out += [".IP \\(bu 2"] + [roff_inline(l) for l in body]
        elif kind == "table":
            out += table_rows(body)
        else:
            out += [".PP"] + [roff_inline(l) for l in body]
    return out


def man(page, version):
    name = page.name
    out = ['.TH "%s" "1" "" "arborinth %s" "Arborinth Manual"' % (name.upper(), version),
           ".nh", ".ad l", ".SH NAME", "%s \\- %s" % (name, roff_escape(plain(page.summary))), ".SH SYNOPSIS"]
    for i, l in enumerate(page.synopsis):
        out += ([".br"] if i else []) + [roff_inline(l.strip())]
    for title, _, lines in page.sections:
        if title == "SYNOPSIS":
            continue
        out.append('.SH "%s"' % title)
        if title == "OPTIONS":
            for names, value, desc in page.options:
                head = ", ".join("\\fB%s\\fR" % n.replace("-", "\\-") for n in names)
                out += [".TP", head + (" " + roff_inline(value) if value else "")]
                out += roff_blocks(desc)[1:] if desc else []
        else:
            out += roff_blocks(lines)
    return "\n".join(out) + "\n"


# ---- --help ------------------------------------------------------------------------------------

def help_text(page):
    """Synopsis, the first paragraph of the description and the options, as --help prints."""
    lead = "usage: "
    out = []
    for i, l in enumerate(page.synopsis):
        out.append((lead if i == 0 else " " * len(lead)) + plain(l.strip()))
    first = next((b for k, b in blocks(page.section("DESCRIPTION")) if k == "para"), None)
    if first:
        out += [""] + textwrap.wrap(plain(" ".join(first)), 90, break_on_hyphens=False, break_long_words=False)
    if page.options:
        out += ["", "Options:"]
        for names, value, desc in page.options:
            head = "  " + ", ".join(names) + (" " + plain(value) if value else "")
            text = " ".join(plain(l.strip()) for l in desc if l.strip())
            wrapped = textwrap.wrap(text, 90 - 24, break_on_hyphens=False, break_long_words=False)
            if len(head) <= 22:
                out.append(head.ljust(24) + wrapped[0])
            else:
                out += [head, " " * 24 + wrapped[0]]
            out += [" " * 24 + w for w in wrapped[1:]]
    out += ["", "See 'man %s' for the whole page." % page.name]
    return "\n".join(out) + "\n"


def c_string(text):
    lines = []
    for l in text.split("\n")[:-1]:
        l = l.replace("\\", "\\\\").replace('"', '\\"')
        lines.append('    "%s\\n"' % l)
    return "\n".join(lines) if lines else '    ""'


def help_c(pages):
    out = ["/* Generated by scripts/docgen.py from docs/commands/: do not edit. */",
           '#include "cli/cli.h"', ""]
    for p in pages:
        text = help_text(p)
        if not p.cmd:
            cut = text.index("\nOptions:")
            head = text[:cut + 1].replace("See 'man", "See 'man")
            tail = "\nGlobal options:" + text[cut + len("\nOptions:"):]
            out += ["const char cli_main_usage_head[] =", c_string(head) + ";",
                    "const char cli_main_usage_tail[] =", c_string(tail) + ";", ""]
        else:
            out += ["const char cmd_%s_usage[] =" % p.cmd.replace("-", "_"),
                    c_string(text) + ";", ""]
    return "\n".join(out)


# ---- completion --------------------------------------------------------------------------------

# What a placeholder (*WORD*) completes to: workspaces, checkpoints, files, folders, commands.
KINDS = {"NAME": "ws", "OTHER": "ws", "FROM": "ckpt", "TO": "ckpt", "CKPT": "ckpt",
         "PATH": "file", "FILE": "file", "DIR": "dir", "CMD": "cmd"}


def synopsis_words(line):
    """A synopsis line's command words (`arborinth workspace create`) and positionals."""
    m = re.match(r"^`arborinth((?: [a-z][a-z0-9-]*)*)`(.*)$", line.strip())
    if not m:
        return None, []
    words = m.group(1).split()
    rest = re.sub(r"[\[\]()|]|\.\.\.", " ", m.group(2))
    pos, skip = [], False
    for tok in rest.split():
        if tok.startswith("`-"):
            skip = tok != "`--`" and tok.strip("`").startswith("-")
            continue
        if skip:  # the option's value
            skip = False
            continue
        t = re.match(r"^\*([A-Z][A-Z0-9_]*)\*", tok)
        if t and t.group(1) != "OPTIONS":
            pos.append(t.group(1))
    return words, pos


def model(pages):
    """{command: {'summary', 'subs': {sub: [positional kinds]}, 'pos': [...], 'opts': [...]}}."""
    cmds, glob = {}, []
    for p in pages:
        if not p.cmd:
            glob = [(n, v) for names, v, _ in p.options for n in names]
            continue
        c = {"summary": p.summary, "subs": {}, "pos": [], "opts": []}
        c["only"] = {}  # option -> the sub-commands its description starts with: "(create)"
        for names, value, desc in p.options:
            v = re.match(r"^\*([A-Z][A-Z0-9_]*)\*", value or "")
            only = re.match(r"^\(([a-z, ]+)\) ", desc[0] if desc else "")
            for n in names:
                c["opts"].append((n, KINDS.get(v.group(1), "any") if v else ""))
                if only:
                    c["only"][n] = only.group(1).replace(",", " ").split()
        for line in p.synopsis:
            words, pos = synopsis_words(line)
            if not words or words[0] != p.cmd:
                continue
            kinds = [KINDS.get(w, "") for w in pos]
            if len(words) > 1:
                c["subs"].setdefault(words[1], kinds)
            elif not c["pos"]:
                c["pos"] = kinds
        cmds[p.cmd] = c
    return cmds, glob


def sub_opts(c, sub):
    """The options of command c that sub-command sub takes."""
    return [n for n, _ in c["opts"] if sub in c["only"].get(n, [sub])]


def check_word(w):
    if not re.match(r"^-{0,2}[A-Za-z0-9][A-Za-z0-9-]*$", w):
        raise PageError("not a word completion may hold: %r" % w)
    return w


def spec_cases(cmds, ind, words):
    """The case arms of _arborinth_spec (bash and zsh alike): each command's options, value
    options, sub-commands and positionals; ind: one level of indent; words(list): the shell's
    list of words (a string in bash, an array in zsh)."""
    out = []
    for name, c in cmds.items():
        out.append("%s%s)" % (ind, check_word(name)))
        out.append("%sopts=%s" % (ind * 2, words(check_word(n) for n, _ in c["opts"])))
        out.append("%svalopts=%s" % (ind * 2, words(n for n, k in c["opts"] if k)))
        if c["subs"]:
            out.append("%ssubs=%s" % (ind * 2, words(check_word(s) for s in c["subs"])))
            out.append("%scase $sub in" % (ind * 2))
            for s, kinds in c["subs"].items():
                out.append("%s%s) pos=(%s); opts=%s ;;"
                           % (ind * 2, s, " ".join(k or "none" for k in kinds),
                              words(sub_opts(c, s))))
            out.append("%sesac" % (ind * 2))
        elif name == "help":
            out.append("%spos=(command)" % (ind * 2))
        else:
            out.append("%spos=(%s)" % (ind * 2, " ".join(k or "none" for k in c["pos"])))
        out.append("%s;;" % (ind * 2))
    return out


def optkind_cases(cmds, ind):
    """The case arms of _arborinth_optkind: what each value option's value is."""
    return ["%s%s:%s) _arborinth_kind %s ;;" % (ind, name, n, k)
            for name, c in cmds.items() for n, k in c["opts"] if k and k != "any"]


def bash(pages):
    cmds, glob = model(pages)
    out = ["# bash completion for arborinth, generated by scripts/docgen.py from",
           "# docs/commands/*.md: do not edit.",
           "_arborinth_ws() { arborinth \"$@\" workspace list --json 2>/dev/null |",
           "\tsed -n 's/^    \"name\": \"\\([^\"\\\\]*\\)\",\\{0,1\\}$/\\1/p'; }",
           "_arborinth_ckpt() { arborinth \"${@:2}\" log \"$1\" --json 2>/dev/null |",
           "\tsed -n 's/^ *\"checkpoint\": \\([0-9][0-9]*\\),\\{0,1\\}$/\\1/p'; }",
           "_arborinth_kind() {",
           "\tcase $1 in",
           "\tws) COMPREPLY=($(compgen -W \"$(_arborinth_ws \"${wd[@]}\")\" -- \"$cur\")) ;;",
           "\tckpt) COMPREPLY=($(compgen -W \"base view $(_arborinth_ckpt \"$ws\" \"${wd[@]}\")\""
           " -- \"$cur\")) ;;",
           "\tfile) COMPREPLY=($(compgen -f -- \"$cur\")) ;;",
           "\tdir) COMPREPLY=($(compgen -d -- \"$cur\")) ;;",
           "\tcmd) COMPREPLY=($(compgen -c -- \"$cur\")) ;;",
           "\tesac",
           "}",
           "_arborinth() {",
           "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}",
           "\tlocal i w cmd= sub= ws= wd=() n=0 opts= valopts= subs= pos=()",
           "\tCOMPREPLY=()",
           "\tfor ((i = 1; i < COMP_CWORD; i++)); do",
           "\t\tw=${COMP_WORDS[i]}",
           "\t\tcase $w in",
           "\t\t--workdir | -C) wd=(--workdir \"${COMP_WORDS[i + 1]}\"); ((i++)); continue ;;",
           "\t\t--) [ -n \"$cmd\" ] && { n=$((n + COMP_CWORD - i - 1)); break; } ;;",
           "\t\tesac",
           "\t\tif [ -z \"$cmd\" ]; then",
           "\t\t\t[ \"${w#-}\" = \"$w\" ] && cmd=$w",
           "\t\t\tcontinue",
           "\t\tfi",
           "\t\t_arborinth_spec",
           "\t\tif [ \"${w#-}\" != \"$w\" ]; then",
           "\t\t\tcase \" $valopts \" in *\" $w \"*) ((i++)) ;; esac",
           "\t\telif [ -n \"$subs\" ] && [ -z \"$sub\" ]; then",
           "\t\t\tsub=$w",
           "\t\telse",
           "\t\t\t[ $n -eq 0 ] && ws=$w",
           "\t\t\t((n++))",
           "\t\tfi",
           "\tdone",
           "\tif [ -z \"$cmd\" ]; then",
           "\t\tcase $prev in --workdir | -C) _arborinth_kind dir; return ;; esac",
           "\t\tif [ \"${cur#-}\" != \"$cur\" ]; then",
           "\t\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))" % " ".join(check_word(n) for n, _ in glob),
           "\t\telse",
           "\t\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))" % " ".join(check_word(c) for c in cmds),
           "\t\tfi",
           "\t\treturn",
           "\tfi",
           "\t_arborinth_spec",
           "\tcase $prev in",
           ]
    # option values: per command, the options that take a value and what it is
    out += ["\t--workdir | -C) _arborinth_kind dir; return ;;", "\tesac",
            "\tif [ \"${prev#-}\" != \"$prev\" ] && case \" $valopts \" in *\" $prev \"*) true ;;"
            " *) false ;; esac; then",
            "\t\t_arborinth_optkind \"$prev\"",
            "\t\treturn",
            "\tfi",
            "\tif [ \"${cur#-}\" != \"$cur\" ]; then",
            "\t\tCOMPREPLY=($(compgen -W \"$opts --help --workdir\" -- \"$cur\"))",
            "\t\treturn",
            "\tfi",
            "\tif [ -n \"$subs\" ] && [ -z \"$sub\" ]; then",
            "\t\tCOMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))",
            "\t\treturn",
            "\tfi",
            "\t[ $n -lt ${#pos[@]} ] && _arborinth_kind \"${pos[n]}\"",
            "\treturn 0",
            "}",
            "# The command's (and sub-command's) options, value options, sub-commands and",
            "# positionals into opts, valopts, subs, pos.",
            "_arborinth_spec() {",
            "\tcase $cmd in"]
    out += spec_cases(cmds, "\t", lambda ws: '"%s"' % " ".join(ws))
    out += ["\tesac", "}", "_arborinth_optkind() {", "\tcase $cmd:$1 in"]
    out += optkind_cases(cmds, "\t")
    out += ["\tesac", "}",
            "# help COMMAND completes the commands",
            "_arborinth_commands=\"%s\"" % " ".join(cmds),
            "_arborinth_kind_command() { COMPREPLY=($(compgen -W \"$_arborinth_commands\" -- "
            "\"$cur\")); }",
            "complete -o default -F _arborinth arborinth", ""]
    text = "\n".join(out)
    # 'command' kind: the list of commands
    return text.replace("\tcmd) COMPREPLY=($(compgen -c -- \"$cur\")) ;;",
                        "\tcmd) COMPREPLY=($(compgen -c -- \"$cur\")) ;;\n"
                        "\tcommand) _arborinth_kind_command ;;")


def zsh(pages):
    cmds, glob = model(pages)
    q = lambda s: s.replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]")
    out = ["#compdef arborinth",
           "# zsh completion for arborinth, generated by scripts/docgen.py from",
           "# docs/commands/*.md: do not edit.",
           "_arborinth_ws() {",
           "  local -a w",
           "  w=(${(f)\"$(arborinth $wd workspace list --json 2>/dev/null |"
           " sed -n 's/^    \"name\": \"\\([^\"\\\\]*\\)\",\\{0,1\\}$/\\1/p')\"})",
           "  compadd -a w",
           "}",
           "_arborinth_ckpt() {",
           "  local -a c",
           "  c=(base view ${(f)\"$(arborinth $wd log $ws --json 2>/dev/null |"
           " sed -n 's/^ *\"checkpoint\": \\([0-9][0-9]*\\),\\{0,1\\}$/\\1/p')\"})",
           "  compadd -a c",
           "}",
           "_arborinth_kind() {",
           "  case $1 in",
           "  ws) _arborinth_ws ;;",
           "  ckpt) _arborinth_ckpt ;;",
           "  file) _files ;;",
           "  dir) _files -/ ;;",
           "  cmd) _command_names -e ;;",
           "  command) compadd %s ;;" % " ".join(cmds),
           "  esac",
           "}",
           "_arborinth() {",
           "  local -a words2 wd opts valopts subs pos",
           "  local cmd= sub= ws= n=0 i w cur=${words[CURRENT]} prev=${words[CURRENT-1]}",
           "  for ((i = 2; i < CURRENT; i++)); do",
           "    w=${words[i]}",
           "    case $w in",
           "    --workdir|-C) wd=(--workdir ${words[i+1]}); ((i++)); continue ;;",
           "    --) [[ -n $cmd ]] && { n=$((n + CURRENT - i - 1)); break; } ;;",
           "    esac",
           "    if [[ -z $cmd ]]; then",
           "      [[ $w != -* ]] && cmd=$w",
           "      continue",
           "    fi",
           "    _arborinth_spec",
           "    if [[ $w == -* ]]; then",
           "      (( ${valopts[(Ie)$w]} )) && ((i++))",
           "    elif (( $#subs )) && [[ -z $sub ]]; then",
           "      sub=$w",
           "    else",
           "      (( n == 0 )) && ws=$w",
           "      ((n++))",
           "    fi",
           "  done",
           "  if [[ $prev == --workdir || $prev == -C ]]; then _files -/; return; fi",
           "  if [[ -z $cmd ]]; then",
           "    local -a c",
           "    c=(%s)" % " ".join("'%s:%s'" % (n, q(c["summary"]).replace(":", "\\:"))
                               for n, c in cmds.items()),
           "    if [[ $cur == -* ]]; then compadd -- %s; else _describe command c; fi"
           % " ".join(n for n, _ in glob),
           "    return",
           "  fi",
           "  _arborinth_spec",
           "  if [[ $prev == -* ]] && (( ${valopts[(Ie)$prev]} )); then",
           "    _arborinth_optkind $prev",
           "    return",
           "  fi",
           "  if [[ $cur == -* ]]; then compadd -- $opts --help --workdir; return; fi",
           "  if (( $#subs )) && [[ -z $sub ]]; then compadd -a subs; return; fi",
           "  (( n < $#pos )) && _arborinth_kind ${pos[n+1]}",
           "}",
           "_arborinth_spec() {",
           "  opts=() valopts=() subs=() pos=()",
           "  case $cmd in"]
    out += spec_cases(cmds, "  ", lambda ws: "(%s)" % " ".join(ws))
    out += ["  esac", "}", "_arborinth_optkind() {", "  case $cmd:$1 in"]
    out += optkind_cases(cmds, "  ")
    out += ["  esac", "}", "_arborinth \"$@\"", ""]
    return "\n".join(out)


def fish(pages):
    cmds, glob = model(pages)
    q = lambda s: "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    out = ["# fish completion for arborinth, generated by scripts/docgen.py from",
           "# docs/commands/*.md: do not edit.",
           "function __arborinth_wd",
           "    set -l t (commandline -opc)",
           "    for i in (seq 2 (count $t))",
           "        if contains -- $t[$i] --workdir -C; and test $i -lt (count $t)",
           "            echo --workdir; echo $t[(math $i + 1)]; return",
           "        end",
           "    end",
           "end",
           "# The words after the command (options and their values skipped): cmd sub args...",
           "function __arborinth_args",
           "    set -l t (commandline -opc)",
           "    set -e t[1]",
           "    set -l skip 0",
           "    for w in $t",
           "        if test $skip = 1; set skip 0; continue; end",
           "        switch $w",
           "            case --workdir -C",
           "                set skip 1",
           "            case '-*'",
           "                contains -- $w (__arborinth_valopts) ; and set skip 1",
           "            case '*'",
           "                echo $w",
           "        end",
           "    end",
           "end",
           "function __arborinth_valopts",
           "    set -l t (commandline -opc)",
           "    set -l c",
           "    for w in $t[2..-1]",
           "        if not string match -q -- '-*' $w; set c $w; break; end",
           "    end",
           "    switch \"$c\""]
    for name, c in cmds.items():
        vals = [n for n, k in c["opts"] if k]
        if vals:
            out += ["        case %s" % name, "            printf '%%s\\n' %s" % " ".join(vals)]
    out += ["    end",
            "end",
            "function __arborinth_ws",
            "    arborinth (__arborinth_wd) workspace list --json 2>/dev/null | "
            "string replace -rf '^    \"name\": \"([^\"\\\\\\\\]*)\",?$' '$1'",
            "end",
            "function __arborinth_ckpt",
            "    set -l a (__arborinth_args)",
            "    set -l ws $a[2]",
            "    test (count $a) -ge 3; and contains -- $a[2] (__arborinth_subs $a[1]); "
            "and set ws $a[3]",
            "    echo base; echo view",
            "    arborinth (__arborinth_wd) log $ws --json 2>/dev/null | "
            "string replace -rf '^ *\"checkpoint\": ([0-9]+),?$' '$1'",
            "end",
            "function __arborinth_subs",
            "    switch $argv[1]"]
    for name, c in cmds.items():
        if c["subs"]:
            out += ["        case %s" % name, "            printf '%%s\\n' %s" % " ".join(c["subs"])]
    out += ["    end", "end",
            "# __arborinth_at KIND: the word being completed is a positional of that kind",
            "function __arborinth_at",
            "    set -l a (__arborinth_args)",
            "    set -l cur (commandline -ct)",
            "    string match -q -- '-*' $cur; and return 1",
            "    set -l prev (commandline -opc)[-1]",
            "    contains -- $prev (__arborinth_valopts) --workdir -C; and return 1",
            "    set -l pos",
            "    switch \"$a[1]\""]
    for name, c in cmds.items():
        out.append("        case %s" % name)
        if c["subs"]:
            out.append("            test (count $a) -lt 2; and return 1")
            out.append("            set -e a[1]")
            out.append("            switch \"$a[1]\"")
            for s, kinds in c["subs"].items():
                out.append("                case %s" % s)
                out.append("                    set pos %s" % " ".join(k or "none" for k in kinds))
            out.append("            end")
        elif name == "help":
            out.append("            set pos command")
        else:
            out.append("            set pos %s" % " ".join(k or "none" for k in c["pos"]))
    out += ["        case '*'", "            return 1",
            "    end",
            "    set -l n (math (count $a))",
            "    test $n -le (count $pos); and test \"$pos[$n]\" = $argv[1]",
            "end",
            "complete -c arborinth -f",
            "complete -c arborinth -n '__fish_use_subcommand' -l workdir -s C -r -a "
            "'(__fish_complete_directories)' -d 'the repository'",
            "complete -c arborinth -n '__fish_use_subcommand' -s h -l help -d 'help'",
            "complete -c arborinth -n '__fish_use_subcommand' -s V -l version -d 'version'"]
    for name, c in cmds.items():
        out.append("complete -c arborinth -n '__fish_use_subcommand' -a %s -d %s"
                   % (name, q(c["summary"])))
        for s in c["subs"]:
            out.append("complete -c arborinth -n '__fish_seen_subcommand_from %s; and not "
                       "__fish_seen_subcommand_from %s' -a %s"
                       % (name, " ".join(c["subs"]), s))
        for n, k in c["opts"]:
            flag = ("-l " + n[2:]) if n.startswith("--") else ("-s " + n[1:])
            extra = ""
            if k == "file":
                extra = " -r -F"
            elif k == "dir":
                extra = " -r -a '(__fish_complete_directories)'"
            elif k == "ws":
                extra = " -x -a '(__arborinth_ws)'"
            elif k == "ckpt":
                extra = " -x -a '(__arborinth_ckpt)'"
            elif k:
                extra = " -x"
            cond = "__fish_seen_subcommand_from %s" % name
            if n in c["only"]:
                cond += "; and __fish_seen_subcommand_from %s" % " ".join(c["only"][n])
            out.append("complete -c arborinth -n '%s' %s%s" % (cond, flag, extra))
    out += ["complete -c arborinth -n '__arborinth_at ws' -a '(__arborinth_ws)'",
            "complete -c arborinth -n '__arborinth_at ckpt' -a '(__arborinth_ckpt)'",
            "complete -c arborinth -n '__arborinth_at file' -F",
            "complete -c arborinth -n '__arborinth_at dir' -a '(__fish_complete_directories)'",
            "complete -c arborinth -n '__arborinth_at cmd' -a '(__fish_complete_command)'",
            "complete -c arborinth -n '__arborinth_at command' -a '%s'" % " ".join(cmds),
            ""]
    return "\n".join(out)


def write(path, text):
    """Writes only when changed, so the build does not redo what depends on it."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    try:
        if len(argv) == 5 and argv[1] == "man":
            write(argv[3], man(Page(argv[2]), argv[4]))
        elif len(argv) >= 4 and argv[1] in ("help", "bash", "zsh", "fish"):
            gen = {"help": help_c, "bash": bash, "zsh": zsh, "fish": fish}[argv[1]]
            write(argv[2], gen(load(sorted(argv[3:]))))
        elif len(argv) == 3 and argv[1] == "options":
            print("\n".join(Page(argv[2]).option_names()))
        else:
            sys.stderr.write(__doc__)
            return 2
    except PageError as e:
        sys.stderr.write("docgen: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
