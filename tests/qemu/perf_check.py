#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Linux perf's Intel PT decoder against libipt's (ptdecode) on one trace.

    perf_check.py --ptdecode TOOL --elf ELF --container T.tpz --name NAME [--out DIR]

The container is exported with `ptdecode --perf-data`; `perf script
--itrace=i1i -F cpu,ip,sym,symoff` lists every instruction perf decodes and
`ptdecode --insn` every instruction libipt decodes. The two address lists
must be equal over the whole trace, CPU by CPU (perf interleaves the CPUs by
time; ptdecode lists each CPU's segments in turn), and perf must report no decode error
(`--itrace=e`) where ptdecode reports no problem; where ptdecode reports a
gap, perf must report the loss too. Prints one PASS or FAIL line (then the
first divergence with both decoders' context), exit status 0 or 1.

--perf-container ORIG --expect-divergence: the self-test of this check (the
oracle's): perf decodes ORIG, the trace before one TNT bit was flipped, and
libipt decodes --container, the damaged one. The check must find where the
two flows part (the oracle finds the same place against QEMU's log).
"""
import argparse
import os
import re
import subprocess
import sys
import time

CONTEXT = 6


def run(cmd, ok=(0,)):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace")
    dt = time.monotonic() - t0
    if p.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)}: exit status {p.returncode}: {p.stderr.strip()[:600]}")
    return p.stdout, p.stderr, dt


INSN = re.compile(r"^([0-9a-f]{16})  (\S+)")
PERF = re.compile(r"^\s*([0-9a-f]+)\s+(.*)$")


CPUHDR = re.compile(r"^\[cpu (\d+), segment")


def libipt_insns(args):
    """Per CPU (0 for a trace of one CPU): the instructions, and the indexes
    where a segment after a cut begins (a gap whose segment before it ended
    because the trace unit stopped)."""
    out, err, dt = run([args.ptdecode, "--elf", args.elf, "--insn", "--no-disasm",
                        args.container], ok=(0, 1))
    ips, lines, cuts = {}, {}, {}
    cpu = 0
    for line in out.splitlines():
        m = INSN.match(line)
        if m:
            ips.setdefault(cpu, []).append(int(m.group(1), 16))
            lines.setdefault(cpu, []).append(f"{int(m.group(1), 16):x} {m.group(2)}")
            continue
        h = CPUHDR.match(line)
        if h:
            cpu = int(h.group(1))
        elif line.startswith("[gap:") and "stopped" in line:
            cuts.setdefault(cpu, []).append(len(ips.get(cpu, [])))
    problems = [l for l in err.splitlines() if l.startswith("ptdecode:")]
    return ips, lines, cuts, problems, dt


# At most this many instructions before a cut that libipt lists and perf not
# (straight-line code and direct branches up to the branch that needs the
# lost packet; 11 seen).
MAX_CUT_EDGE = 256


def compare(want, got, cuts):
    """Walk both lists. The one difference allowed, and reported: where the
    trace unit stopped (ToPA STOP, SDM "the rest of the packet is lost"), the
    segment ends at its last whole packet (the exporter leaves the cut one
    out). libipt walks on from there to the branch that needs the lost packet
    and lists those instructions (they ran); perf stops at the end of the
    data and lists none. Returns (first divergence or None, [(index, skipped)])."""
    i = j = 0
    edges = []
    while i < len(want) and j < len(got):
        if want[i] == got[j]:
            i += 1
            j += 1
            continue
        cut = next((c for c in cuts if i < c <= i + MAX_CUT_EDGE), None)
        if cut is None or want[cut] != got[j]:
            return i, edges
        edges.append((i, cut - i))
        i = cut
    if i != len(want) or j != len(got):
        return i, edges
    return None, edges


PERFCPU = re.compile(r"^\s*\[\s*(-?\d+)\]\s+(.*)$")


def perf_insns(data):
    """Per CPU, as perf's cpu field says (each CPU's own queue; a trace of one
    CPU is CPU 0 whatever perf prints)."""
    out, err, dt = run(["perf", "script", "-i", data, "--itrace=i1i", "-F", "cpu,ip,sym,symoff"])
    ips, lines = {}, {}
    for line in out.splitlines():
        c = PERFCPU.match(line)
        cpu, rest = (max(int(c.group(1)), 0), c.group(2)) if c else (0, line)
        m = PERF.match(rest)
        if m:
            ips.setdefault(cpu, []).append(int(m.group(1), 16))
            lines.setdefault(cpu, []).append(f"{int(m.group(1), 16):x} {m.group(2).strip()}")
    warnings = [l for l in err.splitlines() if l.strip()]
    return ips, lines, warnings, dt


def perf_times(data):
    """perf's timestamps per CPU, or None when the file is timeless (no TSC packets)."""
    p = subprocess.run(["perf", "script", "-i", data, "--itrace=i1i", "-F", "cpu,time"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    if p.returncode != 0 and "TIME attribute" in p.stderr:
        return None
    times = {}
    for l in p.stdout.splitlines():
        c = PERFCPU.match(l)
        cpu, rest = (max(int(c.group(1)), 0), c.group(2)) if c else (0, l)
        if rest.strip():
            times.setdefault(cpu, []).append(float(rest.strip().rstrip(":")))
    return times


def perf_errors(data):
    out, err, _ = run(["perf", "script", "-i", data, "--itrace=e"])
    return [l.strip() for l in out.splitlines() if "trace error" in l]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ptdecode", required=True)
    ap.add_argument("--elf", required=True)
    ap.add_argument("--container", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", help="where the perf.data goes (default: beside the container)")
    ap.add_argument("--perf-container", help="the trace perf decodes (default: --container)")
    ap.add_argument("--expect-divergence", action="store_true")
    a = ap.parse_args()
    base = os.path.splitext(os.path.basename(a.container))[0]
    data = os.path.join(a.out or os.path.dirname(os.path.abspath(a.container)), base + ".perf.data")
    try:
        _, exp_err, _ = run([a.ptdecode, "--elf", a.elf, "-q", "--perf-data", data,
                             a.perf_container or a.container], ok=(0, 1))
        want, want_lines, cuts, problems, t_ipt = libipt_insns(a)
        got, got_lines, warnings, t_perf = perf_insns(data)
        errors = perf_errors(data)
        times = perf_times(data)
    except (RuntimeError, OSError) as e:
        print(f"FAIL {a.name}: {e}")
        return 1
    gaps = [p for p in problems if "gap" in p or "lost" in p.lower()]
    cpus = sorted(set(want) | set(got))
    total = sum(len(v) for v in want.values())
    # each CPU's flow on its own: perf orders the CPUs' queues by time
    divs = {c: compare(want.get(c, []), got.get(c, []), cuts.get(c, [])) for c in cpus}
    if a.expect_divergence:
        for c in cpus:
            div = divs[c][0]
            w, g = want.get(c, []), got.get(c, [])
            if div is not None:
                print(f"PASS {a.name}: perf on the intact trace and libipt on the damaged one part at "
                      f"instruction {div} ({w[div] if div < len(w) else 0:#x} against "
                      f"{g[div] if div < len(g) else 0:#x})")
                return 0
        print(f"FAIL {a.name}: one TNT bit flipped and the check saw no difference "
              f"({total} and {sum(len(v) for v in got.values())} instructions)")
        return 1
    why = []
    for c in cpus:
        div = divs[c][0]
        if div is not None:
            where = f" on CPU {c}" if len(cpus) > 1 else ""
            why.append(f"first divergence{where} at instruction {div} of {len(want.get(c, []))} (libipt)"
                       f" / {len(got.get(c, []))} (perf)")
    if not problems and errors:
        why.append(f"perf reports {len(errors)} decode errors on a trace libipt decodes without problem")
    if gaps and not errors:
        why.append(f"ptdecode reports {len(gaps)} gaps, perf none")
    if not gaps and warnings:
        why.append(f"perf warns on a trace libipt decodes without problem: {warnings[0]}")
    if not total:
        why.append("nothing decoded")
    back = 0
    span = None
    if times is not None:
        # perf estimates the time between TSC packets (from MTC, CYC or the
        # instruction count) and corrects it at the next one: a step back
        # there is perf's estimate, not the trace; more steps than TSC
        # packets, or times out of order overall, are not (per CPU: each
        # has its own clock's packets)
        out, _, _ = run([a.ptdecode, "--packets", a.container], ok=(0, 1))
        tscs = sum(1 for l in out.splitlines() if l.split()[1:2] == ["tsc"])
        for c in cpus:
            t = times.get(c, [])
            b = sum(1 for x, y in zip(t, t[1:]) if y < x)
            back += b
            if len(t) != len(got.get(c, [])) or not all(t) or (t and t[-1] < t[0]):
                why.append(f"perf's timestamps are not in order on CPU {c} ({len(t)} for"
                           f" {len(got.get(c, []))} instructions, {b} steps back)")
            if t:
                span = (min(span[0], t[0]), max(span[1], t[-1])) if span else (t[0], t[-1])
        if back > tscs:
            why.append(f"perf's timestamps step back {back} times, more than the {tscs} TSC packets")
    if why:
        print(f"FAIL {a.name}: " + "; ".join(why))
        for c in cpus:
            div, edges = divs[c]
            if div is None:
                continue
            wl, gl = want_lines.get(c, []), got_lines.get(c, [])
            off = sum(k for _, k in edges)	# perf's list is shorter by the cut edges before
            lo = max(0, div - CONTEXT)
            print(f"  around it{' on CPU %d' % c if len(cpus) > 1 else ''} (index: libipt | perf):")
            for i in range(lo, min(max(len(wl), len(gl) + off), div + CONTEXT)):
                l = wl[i] if i < len(wl) else "-"
                r = gl[i - off] if 0 <= i - off < len(gl) else "-"
                print(f"  {'=>' if i == div else '  '} {i:9}: {l:40} | {r}")
        for e in errors[:5]:
            print(f"  perf: {e}")
        for p in problems[:5]:
            print(f"  {p}")
        for w in warnings[:5]:
            print(f"  perf stderr: {w}")
        return 1
    edges = [e for c in cpus for e in divs[c][1]]
    edge = ""
    if edges:
        edge = (f", except {sum(k for _, k in edges)} instructions before {len(edges)} stops of the"
                f" trace unit that libipt walks to and perf does not")
    timing = "timeless" if times is None else (f"timed, {span[0]:.6f}..{span[1]:.6f} s in order"
                                               f" ({back} estimates corrected at a TSC packet)")
    per = ""
    if len(cpus) > 1:
        per = " (" + ", ".join(f"cpu{c} {len(want.get(c, []))}" for c in cpus) + ")"
    print(f"PASS {a.name}: {total} instructions compared{per}, perf = libipt{edge}; {timing}; perf errors {len(errors)}"
          f" (ptdecode problems {len(problems)}); perf script {t_perf:.2f} s, ptdecode --insn {t_ipt:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
