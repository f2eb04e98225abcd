#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Linux perf's Intel PT decoder against libipt's (ptdecode) on one trace.

    perf_check.py --ptdecode TOOL --elf ELF --container T.tpz --name NAME [--out DIR]

The container is exported with `ptdecode --perf-data`; `perf script
--itrace=i1i -F ip,sym,symoff` lists every instruction perf decodes and
`ptdecode --insn` every instruction libipt decodes. The two address lists
must be equal over the whole trace, and perf must report no decode error
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


def libipt_insns(args):
    """The instructions, and the indexes where a segment after a cut begins
    (a gap whose segment before it ended because the trace unit stopped)."""
    out, err, dt = run([args.ptdecode, "--elf", args.elf, "--insn", "--no-disasm",
                        args.container], ok=(0, 1))
    ips, lines, cuts = [], [], []
    for line in out.splitlines():
        m = INSN.match(line)
        if m:
            ips.append(int(m.group(1), 16))
            lines.append(f"{int(m.group(1), 16):x} {m.group(2)}")
        elif line.startswith("[gap:") and "stopped" in line:
            cuts.append(len(ips))
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


def perf_insns(data):
    out, err, dt = run(["perf", "script", "-i", data, "--itrace=i1i", "-F", "ip,sym,symoff"])
    ips, lines = [], []
    for line in out.splitlines():
        m = PERF.match(line)
        if m:
            ips.append(int(m.group(1), 16))
            lines.append(f"{int(m.group(1), 16):x} {m.group(2).strip()}")
    warnings = [l for l in err.splitlines() if l.strip()]
    return ips, lines, warnings, dt


def perf_times(data):
    """perf's timestamps, or None when the file is timeless (no TSC packets)."""
    p = subprocess.run(["perf", "script", "-i", data, "--itrace=i1i", "-F", "time"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    if p.returncode != 0 and "TIME attribute" in p.stderr:
        return None
    return [float(l.strip().rstrip(":")) for l in p.stdout.splitlines() if l.strip()]


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
    if a.expect_divergence:
        div, _ = compare(want, got, cuts)
        if div is not None:
            print(f"PASS {a.name}: perf on the intact trace and libipt on the damaged one part at "
                  f"instruction {div} ({want[div] if div < len(want) else 0:#x} against "
                  f"{got[div] if div < len(got) else 0:#x})")
            return 0
        print(f"FAIL {a.name}: one TNT bit flipped and the check saw no difference "
              f"({len(want)} and {len(got)} instructions)")
        return 1
    div, edges = compare(want, got, cuts)
    why = []
    if div is not None:
        why.append(f"first divergence at instruction {div} of {len(want)} (libipt) / {len(got)} (perf)")
    if not problems and errors:
        why.append(f"perf reports {len(errors)} decode errors on a trace libipt decodes without problem")
    if gaps and not errors:
        why.append(f"ptdecode reports {len(gaps)} gaps, perf none")
    if not gaps and warnings:
        why.append(f"perf warns on a trace libipt decodes without problem: {warnings[0]}")
    if not want:
        why.append("nothing decoded")
    back = 0
    if times is not None:
        # perf estimates the time between TSC packets (from MTC, CYC or the
        # instruction count) and corrects it at the next one: a step back
        # there is perf's estimate, not the trace; more steps than TSC
        # packets, or times out of order overall, are not
        out, _, _ = run([a.ptdecode, "--packets", a.container], ok=(0, 1))
        tscs = sum(1 for l in out.splitlines() if l.split()[1:2] == ["tsc"])
        back = sum(1 for x, y in zip(times, times[1:]) if y < x)
        if len(times) != len(got) or not all(times) or times[-1] < times[0] or back > tscs:
            why.append(f"perf's timestamps are not in order ({len(times)} for {len(got)} instructions,"
                       f" {back} steps back, {tscs} TSC packets)")
    if why:
        print(f"FAIL {a.name}: " + "; ".join(why))
        if div is not None:
            off = sum(k for _, k in edges)	# perf's list is shorter by the cut edges before
            lo = max(0, div - CONTEXT)
            print("  around it (index: libipt | perf):")
            for i in range(lo, min(max(len(want), len(got) + off), div + CONTEXT)):
                l = want_lines[i] if i < len(want_lines) else "-"
                r = got_lines[i - off] if 0 <= i - off < len(got_lines) else "-"
                print(f"  {'=>' if i == div else '  '} {i:9}: {l:40} | {r}")
        for e in errors[:5]:
            print(f"  perf: {e}")
        for p in problems[:5]:
            print(f"  {p}")
        for w in warnings[:5]:
            print(f"  perf stderr: {w}")
        return 1
    edge = ""
    if edges:
        edge = (f", except {sum(k for _, k in edges)} instructions before {len(edges)} stops of the"
                f" trace unit that libipt walks to and perf does not")
    timing = "timeless" if times is None else (f"timed, {times[0]:.6f}..{times[-1]:.6f} s in order"
                                               f" ({back} estimates corrected at a TSC packet)")
    print(f"PASS {a.name}: {len(want)} instructions compared, perf = libipt{edge}; {timing}; perf errors {len(errors)}"
          f" (ptdecode problems {len(problems)}); perf script {t_perf:.2f} s, ptdecode --insn {t_ipt:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
