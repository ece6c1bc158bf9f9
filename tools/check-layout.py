#!/usr/bin/python3
"""check-layout.py BUILD - the shape of the code, as docs/architecture.md
states it; prints each breach and exits 1 if there is any:

  - no call cycle between the C files of core/, api/ and server/ (read from
    the symbols each built object defines and uses: `nm`);
  - no function longer than 80 lines in those folders;
  - no private header longer than 200 lines (the public core/attention.h,
    core/lm.h and api/api.h, and the generated api/numbers/pow10_tables.h,
    excepted);
  - at most 10 .c files directly in api/, at most 12 in api/model/;
  - no name of the old GPT-2-only model API (attn_gpt2_) anywhere;
  - no C file outside core/arch/ (the rows) and api/weights/ (the
    checkpoints' per-architecture name tables) names an architecture
    (ATTN_ARCH_<ID>): the rest of the code reads the plan, never asks which
    architecture a model is (tests and benchmarks may name them).

tests/test_layout.c runs it on the build of `make test` and `make asan`.
"""
import glob
import os
import re
import subprocess
import sys

FOLDERS = ["core", "api", "server"]
MAX_FUNCTION = 80
MAX_PRIVATE_HEADER = 200
MAX_API_TOP = 10
MAX_API_MODEL = 12
PUBLIC = {"core/attention.h", "core/lm.h", "api/api.h", "api/numbers/pow10_tables.h"}
ARCH_NAME = re.compile(r"\bATTN_ARCH_(?!MAP\b|COUNT\b|H\b)[A-Z][A-Z0-9_]*\b")
ARCH_ROOMS = ("core/arch/", "api/weights/")


def sources():
    for folder in FOLDERS:
        yield from sorted(glob.glob(folder + "/**/*.c", recursive=True))


def symbols(obj):
    """The external symbols obj defines and those it uses."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDRBC":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def cycles(build):
    objs = {}
    for src in sources():
        obj = os.path.join(build, src[:-2] + ".o")
        if os.path.exists(obj):
            objs[src] = symbols(obj)
    owner = {s: src for src, (defined, _) in objs.items() for s in defined}
    edges = {src: sorted({owner[s] for s in used if s in owner and owner[s] != src})
             for src, (_, used) in objs.items()}
    # Tarjan's strongly connected components, iteratively
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
            for u, _ in work[-1:]:
                low[u] = min(low[u], low[v])
    return len(objs), found


DEF = re.compile(r"^[A-Za-z_][\w \*]*\b(\w+)\(")


def long_functions():
    """(file, line, name, length) of every function over MAX_FUNCTION lines:
    a definition starts at column 0 and ends at the first '}' at column 0."""
    for src in sources():
        lines = open(src, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            m = DEF.match(lines[i])
            if m and not lines[i].startswith(("typedef", "#")) and not lines[i].rstrip().endswith(";"):
                j = i
                while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
                    j += 1
                if j < len(lines) and lines[j].rstrip().endswith("{") and "=" not in lines[i].split("(")[0]:
                    k = j + 1
                    while k < len(lines) and not lines[k].startswith("}"):
                        k += 1
                    if k - i + 1 > MAX_FUNCTION:
                        yield src, i + 1, m.group(1), k - i + 1
                    i = k
            i += 1


def names_checks():
    """The old API's names anywhere; an architecture named outside its rooms."""
    files = sorted(glob.glob("core/**/*.[ch]", recursive=True) + glob.glob("api/**/*.[ch]", recursive=True) +
                   glob.glob("server/**/*.[ch]", recursive=True) + glob.glob("tests/**/*.[ch]", recursive=True) +
                   glob.glob("bench/*.[ch]"))
    for path in files:
        text = open(path, encoding="utf-8").read()
        if "attn_gpt2_" in text:
            yield "%s: names attn_gpt2_ (the model API is attn_lm_)" % path
        if path.startswith(("tests/", "bench/")) or path.startswith(ARCH_ROOMS) or path == "core/lm.h":
            continue
        for m in ARCH_NAME.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield "%s:%d: names the architecture %s outside core/arch/ and api/weights/" % (path, line, m.group(0))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    problems = []
    n, found = cycles(build)
    if n < 40:
        problems.append("only %d objects found under %s: build first" % (n, build))
    for comp in found:
        problems.append("call cycle between " + ", ".join(comp))
    for src, line, name, length in long_functions():
        problems.append("%s:%d: %s is %d lines (at most %d)" % (src, line, name, length, MAX_FUNCTION))
    for h in sorted(glob.glob("core/**/*.h", recursive=True) + glob.glob("api/**/*.h", recursive=True) +
                    glob.glob("server/*.h")):
        length = open(h, encoding="utf-8").read().count("\n")
        if h not in PUBLIC and length > MAX_PRIVATE_HEADER:
            problems.append("%s: a private header of %d lines (at most %d)" % (h, length, MAX_PRIVATE_HEADER))
    top = glob.glob("api/*.c")
    if len(top) > MAX_API_TOP:
        problems.append("%d .c files directly in api/ (at most %d)" % (len(top), MAX_API_TOP))
    model = glob.glob("api/model/*.c")
    if len(model) > MAX_API_MODEL:
        problems.append("%d .c files in api/model/ (at most %d)" % (len(model), MAX_API_MODEL))
    problems.extend(names_checks())
    for p in problems:
        print(p)
    print("layout: %d objects, %d cycles, %d problems" % (n, len(found), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
