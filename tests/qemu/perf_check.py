#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Linux perf's Intel PT decoder against libipt's (ptdecode) on one trace.

    perf_check.py --ptdecode TOOL --elf ELF --container T.tpz --name NAME [--out DIR]

The container is exported with `ptdecode --perf-data`; one `perf script
--itrace=i1ie -F cpu,time,ip` lists every instruction perf decodes (and its
decode errors, and the times when the trace has any) and `ptdecode --insn`
every instruction libipt decodes (one ptdecode per CPU, --cpu N). The two
are compared as streams, as they are written, in memory that does not grow
with the trace (a trace of ten million instructions is a gigabyte of text;
one of sixty million made this check take 24 GB when it kept them): the two
address lists must be equal over the whole trace, CPU by CPU (perf
interleaves the CPUs by time: each of its lines goes to its CPU's ptdecode
stream), and perf must report no decode error
where ptdecode reports no problem; where ptdecode reports a
gap, perf must report the loss too. Prints one PASS or FAIL line (then the
first divergence with both decoders' context), exit status 0 or 1.

--perf-container ORIG --expect-divergence: the self-test of this check (the
oracle's): perf decodes ORIG, the trace before one TNT bit was flipped, and
libipt decodes --container, the damaged one. The check must find where the
two flows part (the oracle finds the same place against QEMU's log).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

CONTEXT = 6
# a command's stderr lines read (a broken trace can make perf warn without end)
MAX_STDERR_LINES = 200
HEX = frozenset("0123456789abcdef")
INSN = re.compile(r"^([0-9a-f]{16})  (\S+)")
PERF = re.compile(r"^\s*([0-9a-f]+)\s+(.*)$")
CPUHDR = re.compile(r"^\[cpu (\d+), segment")
PERFCPU = re.compile(r"^\s*\[\s*(-?\d+)\]\s+(.*)$")
SUMCPU = re.compile(r"^cpu (\d+): ")
# At most this many instructions before a cut that libipt lists and perf not
# (straight-line code and direct branches up to the branch that needs the
# lost packet; 11 seen).
MAX_CUT_EDGE = 256


class Command:
    """A command whose output is read line by line as it writes it (never
    all in memory). Its stderr goes to a file (no pipe to fill and stall
    it, no thread: each thread's stack and arena would count against the
    suite's memory bound); the first MAX_STDERR_LINES lines are read back."""

    def __init__(self, cmd, ok=(0,)):
        self.cmd, self.ok = cmd, ok
        self.errf = tempfile.TemporaryFile()
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.errf, text=True,
                                  errors="replace", bufsize=1 << 20)
        self.err = []
        self.lines = self.p.stdout

    def close(self, early=False):
        """Wait for the end (early: stop the command, its output is not
        needed); raises RuntimeError on an exit status not in ok."""
        if early:
            self.p.kill()
        self.p.stdout.close()
        self.p.wait()
        self.errf.seek(0)
        for raw in self.errf:
            if len(self.err) == MAX_STDERR_LINES:
                break
            self.err.append(raw.decode(errors="replace").rstrip("\n"))
        self.errf.close()
        if not early and self.p.returncode not in self.ok:
            raise RuntimeError(f"{' '.join(self.cmd)}: exit status {self.p.returncode}: "
                               f"{chr(10).join(self.err).strip()[:600]}")


def run(cmd, ok=(0,)):
    """A command's whole output (small ones only: ptdecode --summary)."""
    c = Command(cmd, ok)
    out = c.lines.read()
    c.close()
    return out, c.err


class Flow:
    """One CPU's instructions as ptdecode --insn lists them, read as it
    writes them: (address, whether a segment after a cut begins there: a
    gap whose segment before it ended because the trace unit stopped). A
    look ahead of at most MAX_CUT_EDGE + 1 entries is kept (find_cut())."""

    def __init__(self, cmd):
        self.cmd = cmd
        self.lines = iter(cmd.lines if cmd else ())
        self.ahead = collections.deque()
        self.cut = False
        self.cpu = None	# from its first "[cpu N, segment" line

    def _read(self):
        """The next instruction onto the look ahead; False at the end."""
        for line in self.lines:
            # an instruction: 16 hex digits, two spaces (INSN), tested cheaply
            if line[16:18] == "  " and line[0] in HEX:
                self.ahead.append((int(line[:16], 16), self.cut))
                self.cut = False
                return True
            if line.startswith("[gap:") and "stopped" in line:
                self.cut = True
            elif self.cpu is None:
                h = CPUHDR.match(line)
                if h:
                    self.cpu = int(h.group(1))
        return False

    def take(self):
        """The next (address, cut), or None at the end."""
        if self.ahead or self._read():
            return self.ahead.popleft()
        return None

    def find_cut(self, n):
        """Where in the next n entries the first cut is (0-based), or None."""
        k = 0
        while k < n:
            if k >= len(self.ahead) and not self._read():
                return None
            if self.ahead[k][1]:
                return k
            k += 1
        return None

    def skip(self, n):
        for _ in range(n):
            self.ahead.popleft()

    def rest(self):
        """How many instructions are left (read to the end)."""
        n = len(self.ahead)
        self.ahead.clear()
        for line in self.lines:
            if line[16:18] == "  " and line[0] in HEX:
                n += 1
        return n


class Pair:
    """One CPU: libipt's flow against perf's instructions, as they come.
    The one difference allowed, and reported: where the trace unit stopped
    (ToPA STOP, SDM "the rest of the packet is lost"), the segment ends at
    its last whole packet (the exporter leaves the cut one out). libipt
    walks on from there to the branch that needs the lost packet and lists
    those instructions (they ran); perf stops at the end of the data and
    lists none."""

    def __init__(self, flow):
        self.flow = flow
        self.i = 0		# libipt's instructions matched or skipped
        self.j = 0		# perf's
        self.div = None		# libipt's index of the first divergence
        self.div_ips = (0, 0)	# libipt's and perf's address there
        self.edges = []		# (index, instructions skipped) at each cut
        self.n_ipt = None	# libipt's count, once read to the end
        self.t_first = self.t_prev = None
        self.back = self.zeros = self.times = 0

    def perf(self, ip):
        self.j += 1
        if self.div is not None:
            return
        x = self.flow.take()
        if x is None:
            self.div, self.div_ips = self.i, (0, ip)
            return
        if x[0] == ip:
            self.i += 1
            return
        k = self.flow.find_cut(MAX_CUT_EDGE)
        if k is None or self.flow.ahead[k][0] != ip:
            self.div, self.div_ips = self.i, (x[0], ip)
            return
        self.edges.append((self.i, k + 1))
        self.flow.skip(k + 1)
        self.i += k + 2

    def time(self, t):
        """perf's time of its instruction just taken."""
        self.times += 1
        if self.t_first is None:
            self.t_first = t
        elif t < self.t_prev:
            self.back += 1
        if not t:
            self.zeros += 1
        self.t_prev = t

    def finish(self):
        """Read libipt's flow to its end: what perf did not list diverges."""
        if self.div is None:
            x = self.flow.take()
            if x is not None:
                self.div, self.div_ips = self.i, (x[0], 0)
                self.n_ipt = self.i + 1 + self.flow.rest()
            else:
                self.n_ipt = self.i
        else:
            self.n_ipt = self.i + 1 + self.flow.rest()
        if self.flow.cmd:
            self.flow.cmd.close()


def insn_cmd(a, cpu):
    cmd = [a.ptdecode, "--elf", a.elf, "--insn", "--no-disasm"]
    return cmd + (["--cpu", str(cpu)] if cpu is not None else []) + [a.container]


def libipt_flows(a):
    """A ptdecode --insn per CPU (--summary names them: a line each when the
    trace has several), all started at once; {cpu: Flow}."""
    out, _ = run([a.ptdecode, "--elf", a.elf, "--summary", a.container], ok=(0, 1))
    cpus = [int(m.group(1)) for m in map(SUMCPU.match, out.splitlines()) if m]
    if not cpus:
        f = Flow(Command(insn_cmd(a, None), ok=(0, 1)))
        f._read()	# its "[cpu N, segment" line first: which CPU it is
        return {f.cpu or 0: f}
    return {c: Flow(Command(insn_cmd(a, c), ok=(0, 1))) for c in cpus}


def take_perf_line(line):
    """One line of perf script -F cpu[,time],ip out of the usual: (cpu,
    time or None, ip), "error", or None for a line that is none of these."""
    if "trace error" in line:
        return "error"
    w = line.split()
    if not w:
        return None
    cpu = 0
    w0 = w[0]
    if w0[0] == "[":
        if w0[-1] == "]" and len(w0) > 2:	# "[000]"
            cpu, w = max(int(w0[1:-1]), 0), w[1:]
        else:
            c = PERFCPU.match(line)	# "[  0]" splits in two
            if not c:
                return None
            cpu, w = max(int(c.group(1)), 0), c.group(2).split()
    t = None
    if w and w[0].endswith(":"):
        t, w = float(w[0][:-1]), w[1:]
    if not w:
        return None
    try:
        return cpu, t, int(w[0], 16)
    except ValueError:
        return None


class Perf:
    """perf script's instructions (--itrace=i1ie: and its decode errors),
    each handed to its CPU's Pair as it comes."""

    def __init__(self, flows):
        self.flows = flows
        self.pairs = {c: Pair(f) for c, f in flows.items()}
        self.errors, self.n_errors = [], 0
        self.warnings = []
        self.timed = True

    def pair(self, cpu):
        p = self.pairs.get(cpu)
        if p is None:	# a CPU libipt has no instructions of
            p = self.pairs[cpu] = Pair(Flow(None))
        return p

    def read(self, data):
        t0 = time.monotonic()
        cmd = Command(["perf", "script", "-i", data, "--itrace=i1ie", "-F", "cpu,time,ip"])
        n = self.read_lines(cmd.lines, 3)
        try:
            cmd.close()
        except RuntimeError as e:
            # a timeless file: perf refuses the time field, and runs without
            if "TIME attribute" not in str(e) or n:
                raise
            self.timed = False
            cmd = Command(["perf", "script", "-i", data, "--itrace=i1ie", "-F", "cpu,ip"])
            self.read_lines(cmd.lines, 2)
            cmd.close()
        self.warnings = [l for l in cmd.err if l.strip()]
        return time.monotonic() - t0

    def read_lines(self, lines, n):
        """The usual "[000] T: IP" (or "[000] IP") in line, anything else
        through take_perf_line(); returns how many instructions."""
        cur = pair = None
        count = 0
        for line in lines:
            w = line.split()
            if len(w) == n:
                c = w[0]
                if c[0] == "[" and c[-1] == "]" and c[1:-1].isdigit() and (n == 2 or w[1][-1] == ":"):
                    if c != cur:
                        pair, cur = self.pair(int(c[1:-1])), c
                    pair.perf(int(w[-1], 16))
                    if n == 3:
                        pair.time(float(w[1][:-1]))
                    count += 1
                    continue
            r = take_perf_line(line)
            if r == "error":
                self.n_errors += 1
                if len(self.errors) < 5:
                    self.errors.append(line.strip())
            elif r:
                p = self.pair(r[0])
                p.perf(r[2])
                if n == 3 and r[1] is not None:
                    p.time(r[1])
                count += 1
        return count


def context(cmd, lo, hi, match):
    """Lines lo..hi of the instructions cmd lists (a failure's context):
    match(line) gives an instruction's (address, the rest) or None. Stops
    the command at hi."""
    n, lines = 0, []
    for line in cmd.lines:
        m = match(line)
        if m:
            if lo <= n < hi:
                lines.append(f"{int(m[0], 16):x} {m[1].strip()}")
            n += 1
            if n >= hi:
                break
    cmd.close(early=True)
    return lines


def libipt_lines(a, cpu, lo, hi, single):
    """ptdecode's lines lo..hi of CPU cpu's instructions."""
    return context(Command(insn_cmd(a, None if single else cpu), ok=(0, 1)), lo, hi,
                   lambda line: (m := INSN.match(line)) and m.groups())


def perf_lines(data, cpu, lo, hi):
    """perf's lines lo..hi of CPU cpu's instructions."""
    def match(line):
        c = PERFCPU.match(line)
        cc, rest = (max(int(c.group(1)), 0), c.group(2)) if c else (0, line)
        m = PERF.match(rest)
        return m.groups() if m and cc == cpu else None

    return context(Command(["perf", "script", "-i", data, "--itrace=i1i", "-F", "cpu,ip,sym,symoff"]),
                   lo, hi, match)


def tsc_packets(a):
    cmd = Command([a.ptdecode, "--packets", a.container], ok=(0, 1))
    n = sum(1 for l in cmd.lines if l.split()[1:2] == ["tsc"])
    cmd.close()
    return n


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
    flows = {}
    try:
        run([a.ptdecode, "--elf", a.elf, "-q", "--perf-data", data, a.perf_container or a.container],
            ok=(0, 1))
        t0 = time.monotonic()
        flows = libipt_flows(a)
        perf = Perf(flows)
        t_perf = perf.read(data)
        for p in perf.pairs.values():
            p.finish()
        t_all = time.monotonic() - t0
    except (RuntimeError, OSError) as e:
        for f in flows.values():
            if f.cmd:
                f.cmd.close(early=True)
        print(f"FAIL {a.name}: {e}")
        return 1
    problems = list(dict.fromkeys(l for f in flows.values() for l in f.cmd.err
                                  if l.startswith("ptdecode:")))
    single = len(flows) == 1 and not any(f.cmd.cmd.count("--cpu") for f in flows.values())
    pairs = perf.pairs
    cpus = sorted(pairs)
    errors, warnings = perf.errors, perf.warnings
    gaps = [p for p in problems if "gap" in p or "lost" in p.lower()]
    total = sum(p.n_ipt for p in pairs.values())
    if a.expect_divergence:
        for c in cpus:
            p = pairs[c]
            if p.div is not None:
                print(f"PASS {a.name}: perf on the intact trace and libipt on the damaged one part at "
                      f"instruction {p.div} ({p.div_ips[0]:#x} against {p.div_ips[1]:#x})")
                return 0
        print(f"FAIL {a.name}: one TNT bit flipped and the check saw no difference "
              f"({total} and {sum(p.j for p in pairs.values())} instructions)")
        return 1
    why = []
    for c in cpus:
        p = pairs[c]
        if p.div is not None:
            where = f" on CPU {c}" if len(cpus) > 1 else ""
            why.append(f"first divergence{where} at instruction {p.div} of {p.n_ipt} (libipt)"
                       f" / {p.j} (perf)")
    if not problems and errors:
        why.append(f"perf reports {perf.n_errors} decode errors on a trace libipt decodes without problem")
    if gaps and not errors:
        why.append(f"ptdecode reports {len(gaps)} gaps, perf none")
    if not gaps and warnings:
        why.append(f"perf warns on a trace libipt decodes without problem: {warnings[0]}")
    if not total:
        why.append("nothing decoded")
    back = 0
    span = None
    if perf.timed:
        # perf estimates the time between TSC packets (from MTC, CYC or the
        # instruction count) and corrects it at the next one: a step back
        # there is perf's estimate, not the trace; more steps than TSC
        # packets, or times out of order overall, are not (per CPU: each
        # has its own clock's packets)
        tscs = tsc_packets(a)
        for c in cpus:
            p = pairs[c]
            back += p.back
            if p.times != p.j or p.zeros or (p.times and p.t_prev < p.t_first):
                why.append(f"perf's timestamps are not in order on CPU {c} ({p.times} for"
                           f" {p.j} instructions, {p.back} steps back)")
            if p.times:
                span = (min(span[0], p.t_first), max(span[1], p.t_prev)) if span \
                    else (p.t_first, p.t_prev)
        if back > tscs:
            why.append(f"perf's timestamps step back {back} times, more than the {tscs} TSC packets")
    if why:
        print(f"FAIL {a.name}: " + "; ".join(why))
        for c in cpus:
            p = pairs[c]
            if p.div is None:
                continue
            off = sum(k for _, k in p.edges)	# perf's list is shorter by the cut edges before
            lo = max(0, p.div - CONTEXT)
            hi = min(max(p.n_ipt, p.j + off), p.div + CONTEXT)
            wl = libipt_lines(a, c, lo, hi, single)
            gl = perf_lines(data, c, max(0, lo - off), hi - off)
            print(f"  around it{' on CPU %d' % c if len(cpus) > 1 else ''} (index: libipt | perf):")
            for i in range(lo, hi):
                l = wl[i - lo] if i - lo < len(wl) else "-"
                k = i - off - max(0, lo - off)
                r = gl[k] if 0 <= i - off and 0 <= k < len(gl) else "-"
                print(f"  {'=>' if i == p.div else '  '} {i:9}: {l:40} | {r}")
        for e in errors:
            print(f"  perf: {e}")
        for pr in problems[:5]:
            print(f"  {pr}")
        for w in warnings[:5]:
            print(f"  perf stderr: {w}")
        return 1
    edges = [e for c in cpus for e in pairs[c].edges]
    edge = ""
    if edges:
        edge = (f", except {sum(k for _, k in edges)} instructions before {len(edges)} stops of the"
                f" trace unit that libipt walks to and perf does not")
    timing = "timeless" if not perf.timed else (f"timed, {span[0]:.6f}..{span[1]:.6f} s in order"
                                               f" ({back} estimates corrected at a TSC packet)")
    per = ""
    if len(cpus) > 1:
        per = " (" + ", ".join(f"cpu{c} {pairs[c].n_ipt}" for c in cpus) + ")"
    print(f"PASS {a.name}: {total} instructions compared{per}, perf = libipt{edge}; {timing}; perf errors"
          f" {perf.n_errors} (ptdecode problems {len(problems)}); perf script {t_perf:.2f} s,"
          f" both streams {t_all:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
