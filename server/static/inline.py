#!/usr/bin/python3
"""inline.py PAGE OUT - the viewer as one page: each line
`//@include NAME.js` of PAGE (server/static/index.html) becomes the file
NAME.js beside it, so the page served at GET / stays one file with its
script inline (it works offline and asks nothing of another host) while its
views are files of their own. A line `<!--@include NAME.html p=PREFIX-->`
becomes the fragment NAME.html with each {p} replaced by PREFIX: controls
two views share, under ids of their own. `make` writes OUT
(build/gen/viewer.html), which server/viewer.S embeds."""
import os
import re
import sys


def main():
    page, out = sys.argv[1], sys.argv[2]
    folder = os.path.dirname(page)
    lines = []
    for line in open(page, encoding="utf-8"):
        f = re.match(r"^\s*<!--@include ([\w.-]+\.html) p=(\w*)-->\s*$", line)
        if f:
            with open(os.path.join(folder, f.group(1)), encoding="utf-8") as frag:
                lines.append(frag.read().replace("{p}", f.group(2)))
            continue
        m = re.match(r"^//@include ([\w.-]+\.js)\s*$", line)
        if m:
            with open(os.path.join(folder, m.group(1)), encoding="utf-8") as f:
                text = f.read()
            if "</script" in text:
                sys.exit("%s: a script may not contain </script" % m.group(1))
            lines.append(text if text.endswith("\n") else text + "\n")
        else:
            lines.append(line)
    with open(out, "w", encoding="utf-8") as f:
        f.write("".join(lines))


if __name__ == "__main__":
    main()
