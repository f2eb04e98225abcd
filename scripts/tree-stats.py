#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tree-stats.py: figures of the tree's shape, to compare two commits.

    scripts/tree-stats.py [--root DIR] [--top N]

Prints, for the kernel's and the tools' C sources (boot/, kernel/, arch/,
lib/, drivers/, mm/, tools/):
  - the public headers (include/topaz/*.h): how many, their lines, the largest;
  - the longest functions (lines from the opening line to the closing brace);
  - prototypes written by hand in .c files (a function declared, not defined,
    at file scope: it belongs in a header);
  - raw per-CPU arrays ([NR_CPUS] declarations outside percpu.h);
  - public prototypes in include/topaz/ with and without a kernel-doc comment.
A scan of the text, not a parser: good for counts, not for proofs.
"""
import argparse
import os
import re

SRC = ("boot", "kernel", "arch", "lib", "drivers", "mm", "tools")
# a definition's first line: type and name at column 0, "(" on the line
FUNC = re.compile(r"^(?!static_assert)[A-Za-z_][\w \t\*]*?\b([a-z_]\w*)\s*\(")
PROTO = re.compile(r"^(?!static\b|typedef\b|extern\b|return\b)[A-Za-z_][\w \t\*]*?\b([a-z_]\w*)\s*\([^;{}\"]*\)"
                   r"(\s*__\w+(\([^)]*\))?)*\s*;\s*(/\*.*)?$")


def sources(root, exts):
    for top in SRC:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.join(d, f)


def code_lines(path):
    """Lines of a C file that are neither blank nor inside a comment."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), open(path).read(), flags=re.S)
    return sum(1 for l in text.split("\n") if l.strip() and not l.strip().startswith("//"))


def functions(path):
    """(name, first line, length) of each function defined at file scope."""
    lines = open(path, errors="replace").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FUNC.match(lines[i])
        if not m or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        # the body starts at the first "{" at column 0 before any ";" at depth 0
        j = i
        while j < len(lines) and not lines[j].startswith("{") and not lines[j].rstrip().endswith(";"):
            j += 1
        if j >= len(lines) or not lines[j].startswith("{"):
            i += 1
            continue
        k = j + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        out.append((m.group(1), i + 1, k - i + 1))
        i = k + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--top", type=int, default=10)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    rel = lambda p: os.path.relpath(p, root)

    inc = os.path.join(root, "include", "topaz")
    headers = sorted((sum(1 for _ in open(os.path.join(inc, h))), h)
                     for h in os.listdir(inc) if h.endswith(".h"))
    code = {h: code_lines(os.path.join(inc, h)) for _, h in headers}
    print(f"public headers: {len(headers)}, {sum(n for n, _ in headers)} lines, "
          f"{sum(code.values())} of them not comments or blank; the largest: "
          + ", ".join(f"{h} {n} ({code[h]})" for n, h in headers[::-1][:5]))

    funcs = []
    for p in sources(root, (".c",)):
        funcs += [(n, name, rel(p), line) for name, line, n in functions(p)]
    funcs.sort(reverse=True)
    print(f"longest functions (of {len(funcs)}):")
    for n, name, p, line in funcs[:a.top]:
        print(f"  {n:4} {name} ({p}:{line})")
    print(f"functions over 100 lines: {sum(1 for f in funcs if f[0] > 100)}")

    protos = []
    for p in sources(root, (".c",)):
        for i, l in enumerate(open(p, errors="replace"), 1):
            m = PROTO.match(l)
            if m and not m.group(1).startswith("__"):
                protos.append(f"{rel(p)}:{i}: {m.group(1)}")
    print(f"prototypes written in .c files: {len(protos)}")
    for x in protos:
        print(f"  {x}")

    arrays = []
    for p in sources(root, (".c", ".h")):
        for i, l in enumerate(open(p, errors="replace"), 1):
            if "[NR_CPUS]" in l and "#define" not in l:
                arrays.append(f"{rel(p)}:{i}")
    for i, l in enumerate(open(os.path.join(inc, "smp.h")), 1):
        if "[NR_CPUS]" in l:
            arrays.append(f"include/topaz/smp.h:{i}")
    print(f"raw [NR_CPUS] arrays: {len(arrays)}" + (" (" + ", ".join(arrays) + ")" if arrays else ""))

    with_doc = without = 0
    missing = []
    for _, h in headers:
        text = open(os.path.join(inc, h)).read().split("\n")
        for i, l in enumerate(text):
            m = PROTO.match(l) if not l.startswith("static") else None
            if not m:
                continue
            # the comment above: "/**" ... "*/" ending on the line before
            # (or on a line before a continued prototype)
            j = i - 1
            if j >= 0 and text[j].rstrip().endswith("*/"):
                while j >= 0 and "/*" not in text[j]:
                    j -= 1
                if j >= 0 and "/**" in text[j]:
                    with_doc += 1
                    continue
            without += 1
            missing.append(f"{h}: {m.group(1)}")
    print(f"public prototypes with kernel-doc: {with_doc} of {with_doc + without}")


if __name__ == "__main__":
    main()
