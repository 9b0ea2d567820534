#!/usr/bin/env python3
"""scripts/check-moved-text.py OLD.md DIR|FILE...: checks that the text of a document that was
split up (the README before it was cut to a page) is still found under DIR (docs/).
Each paragraph, list item and table row of OLD is cut into sentences; a sentence counts as
found when its words appear, in order, in one of the pages (markdown links, emphasis and
line breaks ignored). Prints the sentences not found and a count; exit 1 if any is lost."""
import os
import re
import sys


def norm(text):
    text = re.sub(r"\]\([^)]*\)", "]", text)  # [x](target) -> [x]
    text = re.sub(r"[\[\]*]", "", text)
    text = text.replace("`", "")
    return re.sub(r"\s+", " ", text).strip()


def blocks(text):
    out, cur, fence = [], [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
            cur.append(line)
            continue
        starts = not fence and (line.startswith("#") or line.startswith("|")
                                or re.match(r"^\s*[-*] ", line) or not line.strip())
        if starts and cur:
            out.append("\n".join(cur))
            cur = []
        if line.strip():
            cur.append(line)
    if cur:
        out.append("\n".join(cur))
    return out


def sentences(block):
    if block.startswith("#"):  # a heading: a section title, not a fact
        return []
    if block.startswith("```"):
        return [l for l in block.split("\n") if l.strip() and not l.startswith("```")]
    parts = re.split(r"(?<=[.:;!?])\s+(?=[A-Z`(*])", norm(block))
    return [p for p in parts if len(p) > 12]


def main():
    old = open(sys.argv[1]).read()
    pages = []
    for d in sys.argv[2:]:
        if os.path.isfile(d):
            with open(d) as fh:
                pages.append(norm(fh.read()))
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith(".md"):
                    with open(os.path.join(root, f)) as fh:
                        pages.append(norm(fh.read()))
    total = lost = 0
    for b in blocks(old):
        for s in sentences(b):
            total += 1
            s = norm(s)
            if not any(s in p for p in pages):
                lost += 1
                print("not found: " + s[:160])
    print(f"{total - lost} of {total} sentences found, {lost} not found")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
