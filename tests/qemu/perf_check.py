#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Linux perf's Intel PT decoder against libipt's (ptdecode) on one trace.

    perf_check.py --ptdecode TOOL --elf ELF --container T.tpz --name NAME [--out DIR]

The container is exported with `ptdecode --perf-data`; one `perf script
--itrace=i1ie -F cpu,time,ip` lists every instruction perf decodes (and its
decode errors, and the times when the trace has any) and `ptdecode --insn`
every instruction libipt decodes. Both are read as they are written, and
only the addresses are kept: a trace of ten million instructions is a
gigabyte of text. The two address lists
must be equal over the whole trace, CPU by CPU (perf interleaves the CPUs by
time; ptdecode lists each CPU's segments in turn), and perf must report no decode error
where ptdecode reports no problem; where ptdecode reports a
gap, perf must report the loss too. Prints one PASS or FAIL line (then the
first divergence with both decoders' context), exit status 0 or 1.

--perf-container ORIG --expect-divergence: the self-test of this check (the
oracle's): perf decodes ORIG, the trace before one TNT bit was flipped, and
libipt decodes --container, the damaged one. The check must find where the
two flows part (the oracle finds the same place against QEMU's log).
"""
import argparse
from array import array
import os
import re
import subprocess
import sys
import threading
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


def lines_of(cmd, ok=(0,)):
    """Run cmd and yield its output's lines as it writes them (a trace of
    tens of millions of instructions is gigabytes of text: never all in
    memory). Raises RuntimeError, as run(), on a bad exit status."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", bufsize=1 << 20)
    err = []
    # stderr is small (problems, warnings) but read on a thread of its own,
    # so a full stderr pipe cannot stall the command while stdout is read
    t = threading.Thread(target=lambda: err.append(p.stderr.read()))
    t.start()
    yield from p.stdout
    p.wait()
    t.join()
    lines_of.stderr = err[0] if err else ""
    if p.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)}: exit status {p.returncode}: {lines_of.stderr.strip()[:600]}")


HEX = frozenset("0123456789abcdef")


def libipt_insns(args):
    """Per CPU (0 for a trace of one CPU): the instructions' addresses, and
    the indexes where a segment after a cut begins (a gap whose segment
    before it ended because the trace unit stopped). Addresses only, packed
    (array "Q"): a trace of tens of millions of instructions stays in a few
    hundred megabytes; a failure's context is read again (libipt_lines())."""
    t0 = time.monotonic()
    ips, cuts = {}, {}
    cpu = 0
    cur = ips.setdefault(cpu, array("Q"))
    add = cur.append
    for line in lines_of([args.ptdecode, "--elf", args.elf, "--insn", "--no-disasm",
                          args.container], ok=(0, 1)):
        # an instruction: 16 hex digits, two spaces (INSN), tested cheaply
        if line[16:18] == "  " and line[0] in HEX:
            add(int(line[:16], 16))
            continue
        h = CPUHDR.match(line)
        if h:
            cpu = int(h.group(1))
            cur = ips.setdefault(cpu, array("Q"))
            add = cur.append
        elif line.startswith("[gap:") and "stopped" in line:
            cuts.setdefault(cpu, []).append(len(cur))
    problems = [l for l in lines_of.stderr.splitlines() if l.startswith("ptdecode:")]
    return {c: v for c, v in ips.items() if v}, cuts, problems, time.monotonic() - t0


def libipt_lines(args, cpu, lo, hi):
    """ptdecode's lines lo..hi of CPU cpu's instructions (a failure's context)."""
    out, _, _ = run([args.ptdecode, "--elf", args.elf, "--insn", "--no-disasm",
                     args.container], ok=(0, 1))
    c, n, lines = 0, 0, []
    for line in out.splitlines():
        h = CPUHDR.match(line)
        if h:
            c, n = int(h.group(1)), 0
            continue
        m = INSN.match(line)
        if m and c == cpu:
            if lo <= n < hi:
                lines.append(f"{int(m.group(1), 16):x} {m.group(2)}")
            n += 1
    return lines


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


def perf_script(data):
    """One pass of perf script over the file: every instruction (cpu, time,
    ip, symbol) and every decode error (--itrace=i1ie). Per CPU, as perf's
    cpu field says (each CPU's own queue; a trace of one CPU is CPU 0
    whatever perf prints): the addresses (array "Q") and the times (None for
    a timeless file: perf then refuses the time field, and runs without).
    Returns (ips, times, errors, warnings, seconds)."""
    t0 = time.monotonic()
    ips, times, errors = {}, {}, []
    try:
        read_perf(lines_of(["perf", "script", "-i", data, "--itrace=i1ie", "-F", "cpu,time,ip"]),
                  ips, times, errors)
    except RuntimeError as e:
        if "TIME attribute" not in str(e) or ips:
            raise
        times = None
        read_perf(lines_of(["perf", "script", "-i", data, "--itrace=i1ie", "-F", "cpu,ip"]),
                  ips, None, errors)
    warnings = [l for l in lines_of.stderr.splitlines() if l.strip()]
    return ips, times, errors, warnings, time.monotonic() - t0


def read_perf(lines, ips, times, errors):
    """perf script's lines into ips (and times): the usual "[000] T: IP" (or
    "[000] IP") in line, anything else through take_perf_line()."""
    n = 3 if times is not None else 2
    cur, ipa, ta = None, None, None
    for line in lines:
        w = line.split()
        if len(w) == n:
            c = w[0]
            if c[0] == "[" and c[-1] == "]" and c[1:-1].isdigit() and (n == 2 or w[1][-1] == ":"):
                if c != cur:
                    cpu = int(c[1:-1])
                    ipa = ips.setdefault(cpu, array("Q"))
                    if times is not None:
                        ta = times.setdefault(cpu, array("d"))
                    cur = c
                ipa.append(int(w[-1], 16))
                if ta is not None:
                    ta.append(float(w[1][:-1]))
                continue
        take_perf_line(line, ips, times, errors)
        cur = None	# (it may have added a CPU's arrays)


def take_perf_line(line, ips, times, errors):
    """One line of perf script -F cpu[,time],ip: "[cpu] [time:] ip", or an error."""
    if "trace error" in line:
        errors.append(line.strip())
        return
    w = line.split()
    if not w:
        return
    cpu = 0
    w0 = w[0]
    if w0[0] == "[":
        if w0[-1] == "]" and len(w0) > 2:	# "[000]"
            cpu, w = max(int(w0[1:-1]), 0), w[1:]
        else:
            c = PERFCPU.match(line)	# "[  0]" splits in two
            if not c:
                return
            cpu, w = max(int(c.group(1)), 0), c.group(2).split()
    if times is not None:
        if len(w) < 2 or not w[0].endswith(":"):
            return
        t, w = float(w[0][:-1]), w[1:]
    if not w:
        return
    try:
        ip = int(w[0], 16)
    except ValueError:
        return
    ips.setdefault(cpu, array("Q")).append(ip)
    if times is not None:
        times.setdefault(cpu, array("d")).append(t)


def perf_lines(data, cpu, lo, hi):
    """perf's lines lo..hi of CPU cpu's instructions (a failure's context)."""
    out, _, _ = run(["perf", "script", "-i", data, "--itrace=i1i", "-F", "cpu,ip,sym,symoff"])
    n, lines = 0, []
    for line in out.splitlines():
        c = PERFCPU.match(line)
        cc, rest = (max(int(c.group(1)), 0), c.group(2)) if c else (0, line)
        m = PERF.match(rest)
        if m and cc == cpu:
            if lo <= n < hi:
                lines.append(f"{int(m.group(1), 16):x} {m.group(2).strip()}")
            n += 1
    return lines


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
        want, cuts, problems, t_ipt = libipt_insns(a)
        got, times, errors, warnings, t_perf = perf_script(data)
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
            off = sum(k for _, k in edges)	# perf's list is shorter by the cut edges before
            lo = max(0, div - CONTEXT)
            hi = min(max(len(want.get(c, [])), len(got.get(c, [])) + off), div + CONTEXT)
            wl = libipt_lines(a, c, lo, hi)
            gl = perf_lines(data, c, max(0, lo - off), hi - off)
            print(f"  around it{' on CPU %d' % c if len(cpus) > 1 else ''} (index: libipt | perf):")
            for i in range(lo, hi):
                l = wl[i - lo] if i - lo < len(wl) else "-"
                k = i - off - max(0, lo - off)
                r = gl[k] if 0 <= i - off and 0 <= k < len(gl) else "-"
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
