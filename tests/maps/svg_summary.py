"""svg_summary.py FILE - parses an SVG reply with xml.etree (fails on XML that
is not well-formed) and prints JSON: per panel (<g class="panel">) its title,
the texts of its query labels ("qlabel") and key labels ("klabel") and its
count of cells (<rect> with a <title>), and the first cell's title."""
import json
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def main():
    root = ET.parse(sys.argv[1]).getroot()
    if root.tag != NS + "svg":
        sys.exit("root is %s" % root.tag)
    panels, first = [], None
    for g in root.iter(NS + "g"):
        if g.get("class") != "panel":
            continue
        texts = g.findall(NS + "text")
        cells = [r for r in g.findall(NS + "rect") if r.find(NS + "title") is not None]
        if first is None and cells:
            first = cells[0].find(NS + "title").text
        panels.append({
            "title": "".join(t.text or "" for t in texts if t.get("class") == "title"),
            "qlabels": [t.text for t in texts if t.get("class") == "qlabel"],
            "klabels": [t.text for t in texts if t.get("class") == "klabel"],
            "cells": len(cells),
        })
    print(json.dumps({"panels": panels, "first_title": first}))


main()
