#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ptdecode --coverage and --coverage-diff on a QEMU case's trace.

  coverage_check.py --name NAME --ptdecode TOOL --elf ELF [--symbols DIR]
                    [--lcov MODULE]... --out DIR TRACE
      the drcov files read as Lighthouse and Cartographer read them (header,
      module table, BB count equal to the binary entries, offsets inside the
      module), their counts against the summary's result lines, every lcov
      tracefile through genhtml with no warning or error, and the trace's
      --coverage-diff with itself empty; with --guest LOG, each CPU's
      "result: coverage" line of the kernel (pt.coverage=on) equal to
      ptdecode's "result: coverage.cpu" line for that CPU
  coverage_check.py --name NAME --ptdecode TOOL --elf ELF [--symbols DIR]
                    --diff A B --a-only TEXT --b-only TEXT
      --coverage-diff of two different traces: TEXT (a function's name) among
      the blocks only A reached, and among those only B reached

Prints "PASS NAME" or "FAIL NAME: why".
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def fail(name, why):
    print(f"FAIL {name}: {why}")
    sys.exit(1)


def result(text, what):
    """The key=value pairs of each "result: WHAT ..." line."""
    out = []
    for line in text.splitlines():
        m = re.match(rf"result: {re.escape(what)} (.*)$", line)
        if m:
            out.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    return out


def read_drcov(path):
    """The modules and blocks of a drcov file, checked as the readers parse it.

    Lighthouse (plugins/lighthouse/reader/parsers/drcov.py) splits each
    module line on ", " and reads base/end as hex; Cartographer reads the
    version 5 layout by position (containing_id in decimal, the offset
    column as bare hex); both read "BB Table: N bbs" and then N entries of
    { u32 start; u16 size; u16 mod_id }.
    """
    with open(path, "rb") as f:
        data = f.read()
    lines = []
    pos = 0
    for _ in range(5):
        end = data.index(b"\n", pos)
        lines.append(data[pos:end].decode())
        pos = end + 1
    if lines[0] != "DRCOV VERSION: 2":
        raise ValueError(f"first line {lines[0]!r}, not 'DRCOV VERSION: 2'")
    if not lines[1].startswith("DRCOV FLAVOR: "):
        raise ValueError(f"second line {lines[1]!r}")
    m = re.fullmatch(r"Module Table: version (\d+), count (\d+)", lines[2])
    if not m or m.group(1) not in ("2", "3", "4", "5"):
        raise ValueError(f"module table line {lines[2]!r}")
    count = int(m.group(2))
    if not lines[3].startswith("Columns: "):
        raise ValueError(f"columns line {lines[3]!r}")
    columns = lines[3][len("Columns: "):].split(", ")
    # lines[4] is the first module line (or the BB table with no modules)
    pos -= len(lines[4]) + 1
    modules = []
    for i in range(count):
        end = data.index(b"\n", pos)
        fields = [x.strip() for x in data[pos:end].decode().split(", ")]
        pos = end + 1
        if len(fields) != len(columns):
            raise ValueError(f"module {i}: {len(fields)} fields, {len(columns)} columns")
        row = dict(zip(columns, fields))
        if int(row["id"]) != i:
            raise ValueError(f"module line {i} has id {row['id']}")
        start = int(row.get("start", row.get("base")), 16)
        stop = int(row["end"], 16)
        if columns[1] == "containing_id":
            int(fields[1])          # Cartographer: decimal
            int(fields[5], 16)      # and the offset as bare hex
        if stop <= start:
            raise ValueError(f"module {i} ends at {stop:#x}, before its start {start:#x}")
        modules.append((os.path.basename(row["path"]), start, stop))
    end = data.index(b"\n", pos)
    m = re.fullmatch(r"BB Table: (\d+) bbs", data[pos:end].decode())
    if not m:
        raise ValueError(f"BB table line {data[pos:end]!r}")
    nbbs = int(m.group(1))
    table = data[end + 1:]
    if len(table) != 8 * nbbs:
        raise ValueError(f"BB Table: {nbbs} bbs, but {len(table)} bytes of entries ({8 * nbbs} expected)")
    blocks = []
    for k in range(nbbs):
        off, size, mod = struct.unpack_from("<IHH", table, 8 * k)
        if mod >= count:
            raise ValueError(f"block {k}: module id {mod} of {count}")
        if size == 0 or off + size > modules[mod][2] - modules[mod][1]:
            raise ValueError(f"block {k} at offset {off:#x}+{size} is outside module {mod} "
                             f"({modules[mod][2] - modules[mod][1]:#x} bytes)")
        blocks.append((mod, off, size))
    if len(set(blocks)) != len(blocks):
        raise ValueError("a block is listed twice")
    return modules, blocks


def genhtml(info, tmp):
    """genhtml on @info: its complaints, or "" when it has none."""
    out = os.path.join(tmp, "html-" + os.path.basename(info))
    p = subprocess.run(["genhtml", "--quiet", "-o", out, info], capture_output=True, text=True)
    said = (p.stdout + p.stderr).strip()
    if p.returncode or re.search(r"warning|error", said, re.I):
        return f"genhtml {info}: status {p.returncode}: {said.splitlines()[:3]}"
    if not os.path.exists(os.path.join(out, "index.html")):
        return f"genhtml {info}: no index.html"
    return ""


def check_lcov(info):
    """The records' totals agree with their DA and FNDA lines."""
    lf = lh = fnf = fnh = 0
    da = fnda = 0
    hit = fhit = 0
    for line in open(info):
        k, _, v = line.strip().partition(":")
        if k == "DA":
            da += 1
            hit += int(v.split(",")[1]) > 0
        elif k == "FNDA":
            fnda += 1
            fhit += int(v.split(",")[0]) > 0
        elif k == "LF":
            lf += int(v)
        elif k == "LH":
            lh += int(v)
        elif k == "FNF":
            fnf += int(v)
        elif k == "FNH":
            fnh += int(v)
        elif k == "SF" and not os.path.isfile(v):
            return f"{info}: SF:{v} is no file"
    if (lf, lh, fnf, fnh) != (da, hit, fnda, fhit):
        return f"{info}: LF/LH/FNF/FNH {lf}/{lh}/{fnf}/{fnh}, the lines say {da}/{hit}/{fnda}/{fhit}"
    if not lh:
        return f"{info}: no line ran"
    return ""


def ptdecode(args, base):
    cmd = [args.ptdecode, "--elf", args.elf]
    if args.symbols:
        cmd += ["--symbols", args.symbols]
    return subprocess.run(cmd + base, capture_output=True, text=True)


def check_guest(name, log, host):
    """The kernel's per-CPU coverage (its decoder fed as the session drained)
    against ptdecode's from the container: the same numbers."""
    guest = []
    with open(log, errors="replace") as f:
        for line in f:
            m = re.search(r"result: coverage (cpu=.*)$", line)	# after printk's time stamp
            if m:
                guest.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    if not guest:
        fail(name, f"{log}: no 'result: coverage cpu=' line from the kernel")
    by_cpu = {h["cpu"]: h for h in host}
    for g in guest:
        h = by_cpu.get(g["cpu"])
        if h is None:
            fail(name, f"CPU {g['cpu']}: the kernel has coverage, ptdecode none")
        for k in ("blocks", "edges", "transitions", "insns", "digest"):
            if int(g[k], 0) != int(h[k], 0):
                fail(name, f"CPU {g['cpu']}: {k} {g[k]} in the kernel, {h[k]} from the container")


def check_case(args):
    name = args.name
    shutil.rmtree(args.out, ignore_errors=True)
    p = ptdecode(args, ["--coverage", args.out, args.trace])
    if p.returncode != 0:
        fail(name, f"--coverage exited {p.returncode}: {p.stderr.strip()[:300]}")
    mods = {r["name"]: r for r in result(p.stdout, "coverage.module")}
    total = result(p.stdout, "coverage")
    if not total or not mods:
        fail(name, "no 'result: coverage' lines")
    if args.guest:
        check_guest(name, args.guest, result(p.stdout, "coverage.cpu"))
    summary = open(os.path.join(args.out, "summary.txt")).read()
    if result(summary, "coverage") != total:
        fail(name, "summary.txt's totals differ from the standard output's")
    all_blocks = 0
    named = [m for m in mods if not m.startswith("[")]
    for m in named:
        path = os.path.join(args.out, m + ".drcov")
        try:
            modules, blocks = read_drcov(path)
        except (ValueError, OSError, KeyError) as e:
            fail(name, f"{path}: {e}")
        if len(modules) != 1 or len(blocks) != int(mods[m]["blocks"]):
            fail(name, f"{path}: {len(modules)} modules, {len(blocks)} blocks; "
                       f"the summary says 1 and {mods[m]['blocks']}")
        all_blocks += len(blocks)
    try:
        modules, blocks = read_drcov(os.path.join(args.out, "all.drcov"))
    except (ValueError, OSError, KeyError) as e:
        fail(name, f"all.drcov: {e}")
    if len(modules) != len(named) or len(blocks) != all_blocks:
        fail(name, f"all.drcov: {len(modules)} modules and {len(blocks)} blocks, "
                   f"the module files {len(named)} and {all_blocks}")
    with tempfile.TemporaryDirectory() as tmp:
        for m in args.lcov:
            info = os.path.join(args.out, m + ".info")
            if not os.path.exists(info):
                fail(name, f"no lcov tracefile {info}")
            why = check_lcov(info) or genhtml(info, tmp)
            if why:
                fail(name, why)
            if int(mods[m]["lines_hit"]) <= 0:
                fail(name, f"module {m}: no line reached in the summary")
    # a trace against itself: nothing on either side
    p = ptdecode(args, ["--coverage-diff", args.trace, args.trace])
    d = result(p.stdout, "coverage.diff")
    if p.returncode != 0 or not d or d[0]["a_only_blocks"] != "0" or d[0]["b_only_edges"] != "0":
        fail(name, f"--coverage-diff of the trace with itself: status {p.returncode}, {d}")
    print(f"PASS {name}")


def check_diff(args):
    name = args.name
    a, b = args.diff
    p = ptdecode(args, ["--coverage-diff", a, b])
    d = result(p.stdout, "coverage.diff")
    if p.returncode != 0 or not d:
        fail(name, f"--coverage-diff exited {p.returncode}: {p.stderr.strip()[:300]}")
    d = d[0]
    if int(d["a_only_blocks"]) <= 0 or int(d["b_only_blocks"]) <= 0:
        fail(name, f"two different traces, yet {d}")
    text = p.stdout
    a_part = text[text.index("blocks A reached"):text.index("blocks B reached")]
    b_part = text[text.index("blocks B reached"):]
    if args.a_only not in a_part:
        fail(name, f"'{args.a_only}' is not among the blocks only A reached")
    if args.b_only not in b_part:
        fail(name, f"'{args.b_only}' is not among the blocks only B reached")
    # the listing's lines are the counts the result line gives
    listed = len(re.findall(r"^  \S.* hits, \d+ instructions$", a_part.split("edges A took")[0], re.M))
    if listed != int(d["a_only_blocks"]):
        fail(name, f"{listed} blocks listed as only A's, the result line says {d['a_only_blocks']}")
    print(f"PASS {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--ptdecode", required=True)
    ap.add_argument("--elf", required=True)
    ap.add_argument("--symbols")
    ap.add_argument("--lcov", action="append", default=[], help="a module that must have an lcov file")
    ap.add_argument("--out")
    ap.add_argument("--guest", help="the boot's log: compare its result: coverage lines")
    ap.add_argument("--diff", nargs=2)
    ap.add_argument("--a-only")
    ap.add_argument("--b-only")
    ap.add_argument("trace", nargs="?")
    args = ap.parse_args()
    if args.diff:
        check_diff(args)
    elif args.trace and args.out:
        check_case(args)
    else:
        ap.error("a TRACE with --out, or --diff A B")


if __name__ == "__main__":
    main()
