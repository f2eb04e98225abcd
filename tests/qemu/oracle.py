#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fidelity oracle's analysis half (tests/qemu/oracle.sh runs the boots).

QEMU logs every translation block it executes in the compared code
(-d exec,in_asm with -dfilter); this rebuilds the executed instruction
sequence from that log and compares it with what ptdecode (libipt) decodes
from topaz's trace container: they must be identical.

  oracle.py plan --elf topaz.so --container DISCOVERY.tpz --out PLAN.json [--ptdecode TOOL]
                 [--files REGEX]
      prints the -dfilter argument and writes the plan (load address, ranges)
  oracle.py compare --plan PLAN.json --elf topaz.so --ptdecode TOOL
                    --qemu-log QEMU.log... --container TRACE.tpz --name NAME
                    --step single|branch|translate [--cpus N] [--windows N] [--log KERNEL.log]
                    [--insn-out FILE] [--xlat-map KERNEL.log] [--xlat-logged RANGES]
      prints "PASS NAME: N instructions compared" or "FAIL NAME: why" and,
      on a divergence, the index, both addresses, the instructions and the
      packets around it; exit status 0 for PASS, 1 for FAIL. Several CPUs
      (--cpus N, QEMU's log a file per thread): each compared on its own, the
      PASS line with each one's count, a FAIL with each failing one's
      first divergence.
  oracle.py corrupt --ptdecode TOOL --container TRACE.tpz --out BAD.tpz
      flips one TNT bit (CRCs fixed): the self-test shows compare catches it
  oracle.py xlat-filter --plan PLAN.json --elf topaz.so --log KERNEL.log
      pt.step=translate: the -dfilter ranges to add (each CPU's code cache,
      from the xlat-map lines of a boot with pt.translate_map, and the
      runtime xlat_rt_*)

What is compared (see tests/qemu/oracle.sh for the why):
  * the compared range R: every workload's function (kernel/workloads/*.c but
    the registry, registry.c), pt_run_traced,
    every other function the discovery boot's trace went through, the leaf
    functions any of those call directly, the SMP wait path (smp_wait_relax
    and all it calls: whether a CPU waits is a race), and the firmware code
    pages that trace carried as sideband;
    with pt.filter, R is cut down to the filter ranges the trace header records
    (IA32_RTIT_ADDRn_A/B with ADDRn_CFG=1) on the QEMU side only, so a decoded
    instruction outside the filter is a divergence;
  * on the QEMU side, only instructions the workload itself executed: those of
    interrupt and exception handlers (from an isr_stubs entry to the return
    path in isr_common, nesting counted) are left out, and only the windows
    from the instruction after "call pt_trace_begin" to the call (or tail
    jump) to pt_trace_end count: pt_run_traced's on the boot CPU, traced_job's
    (a job on another CPU) on the others;
  * on the ptdecode side, every decoded instruction: one outside R fails the
    run (the oracle could not check it).

pt.step=translate (--step translate): the traced code runs in each CPU's code
cache, a copy of it; the kernel log (pt.translate_map) has the map, one
"xlat-map:" line a block (XMap): cache bytes [entry, stub) are the original
instructions from start, the instruction at stub stands for the branch at ip
(kind=branch; an exit's INT3 for nothing: the instruction at ip then runs at
its own address, branch-stepped), every other instruction of [stub, end) is
instrumentation and so is the runtime (xlat_rt_link .. xlat_rt_ret, and each
cache's own tnt_put: an "xlat-map: cpu=N runtime=LO-HI" line) and what it
calls (anything it runs until it goes back into the cache). QEMU logs the
cache and the runtime too; their instructions are mapped back to the original
ones (or dropped) once what each TB retired is known, and compared as above.
A cache reset (resets= above 0) leaves the map incomplete: the run fails.
"""
import argparse
import bisect
import json
import re
import struct
import subprocess
import sys
import zlib

TF = 0x100		# QEMU's HF_TF_MASK in the TB flags: the TB ran with RFLAGS.TF
DB_VECTOR = 1
BP_VECTOR = 3


# ------------------------------------------------------------------ inputs
def read_container(path):
    """The header fields and sideband images of a trace container."""
    data = open(path, 'rb').read()
    off, hdr, images = 0, None, []
    while off + 24 <= len(data):
        magic, typ, body, size, _seq, _bcrc, _hcrc = struct.unpack_from('<IHHIIII', data, off)
        if magic != 0x525a5054 or size < 24 or off + size > len(data):
            break
        b = off + 24
        if typ == 1 and body >= 216:
            flags, = struct.unpack_from('<I', data, b + 4)
            rtit_ctl, = struct.unpack_from('<Q', data, b + 120)
            addr = struct.unpack_from('<8Q', data, b + 128)
            load, = struct.unpack_from('<Q', data, b + 208)
            hdr = {'flags': flags, 'rtit_ctl': rtit_ctl, 'load': load,
                   'addr': [(addr[2 * i], addr[2 * i + 1]) for i in range(4)]}
        elif typ == 3 and body >= 56:
            kind, _count, vaddr, psize = struct.unpack_from('<IIQI', data, b)
            name = data[b + 24:b + 56].split(b'\0')[0].decode(errors='replace')
            if kind == 1:
                images.append((vaddr, psize, name))
        off += size
    if hdr is None:
        raise SystemExit(f'oracle: {path}: no intact header record')
    return hdr, images


def filter_ranges(hdr):
    """[(lo, hi_exclusive)] of the IP filters the trace ran with, [] if none."""
    out, stop = [], False
    for i, (a, b) in enumerate(hdr['addr']):
        cfg = (hdr['rtit_ctl'] >> (32 + 4 * i)) & 0xf
        if cfg == 1:
            out.append((a, b + 1))
        elif cfg == 2:
            stop = True
    return out, stop


def nm_symbols(elf):
    """(functions [(addr, size, name, file)], all text symbols sorted by addr)."""
    res = subprocess.run(['nm', '-l', '-S', '--defined-only', elf], capture_output=True,
                         text=True, check=True)
    funcs, text = [], []
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] in 'tT' and len(f[0]) == 16:
            addr, size, name = int(f[0], 16), int(f[1], 16), f[3]
            src = f[4] if len(f) > 4 else ''
            funcs.append((addr, size, name, src))
            text.append((addr, size, name))
        elif len(f) >= 3 and f[1] in 'tT' and len(f[0]) == 16:
            text.append((int(f[0], 16), 0, f[2]))
    text.sort()
    return funcs, text


def objdump(elf, start, stop):
    res = subprocess.run(['objdump', '-d', '--no-show-raw-insn', f'--start-address={start:#x}',
                          f'--stop-address={stop:#x}', elf], capture_output=True, text=True,
                         check=True)
    insns = []
    for line in res.stdout.splitlines():
        m = re.match(r'\s+([0-9a-f]+):\s+(.*)$', line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2)))
    return insns


def direct_calls(elf, funcs):
    """{function address: {addresses of the functions it calls or jumps to
    directly}}, from objdump -d of ELF (link-time addresses)."""
    starts = sorted(addr for addr, _s, _n, _f in funcs)
    known = set(starts)
    res = subprocess.run(['objdump', '-d', '--no-show-raw-insn', elf], capture_output=True,
                         text=True, check=True)
    calls = {}
    for line in res.stdout.splitlines():
        m = re.match(r'\s+([0-9a-f]+):\s+(?:call|jmp)\s+([0-9a-f]+) <', line)
        if not m:
            continue
        ip, to = int(m.group(1), 16), int(m.group(2), 16)
        i = bisect.bisect_right(starts, ip) - 1
        if i >= 0 and to in known and to != starts[i]:
            calls.setdefault(starts[i], set()).add(to)
    return calls


class Symbolizer:
    def __init__(self, text, load, images):
        self.addrs = [a + load for a, _s, _n in text]
        self.text = text
        self.load = load
        self.images = images

    def __call__(self, ip):
        for v, s, n in self.images:
            if v <= ip < v + s:
                return f'[{n}]+{ip - v:#x}'
        i = bisect.bisect_right(self.addrs, ip) - 1
        if i < 0:
            return '?'
        return f'{self.text[i][2]}+{ip - self.addrs[i]:#x}'


class Ranges:
    def __init__(self, ranges):
        self.r = sorted(ranges)
        self.lo = [a for a, _b in self.r]

    def __contains__(self, ip):
        i = bisect.bisect_right(self.lo, ip) - 1
        return i >= 0 and ip < self.r[i][1]

    def intersect(self, other):
        out = []
        for a, b in self.r:
            for c, d in other:
                lo, hi = max(a, c), min(b, d)
                if lo < hi:
                    out.append((lo, hi))
        return Ranges(out)


# ------------------------------------------------------------------ translate
XMAP_HEAD_RE = re.compile(r'xlat-map: cpu=(\d+) code=(0x[0-9a-f]+|0)-(0x[0-9a-f]+|0) '
                          r'blocks=(\d+) resets=(\d+)')
XMAP_RT_RE = re.compile(r'xlat-map: cpu=(\d+) runtime=(0x[0-9a-f]+)-(0x[0-9a-f]+)')
XMAP_BLOCK_RE = re.compile(r'xlat-map: cpu=(\d+) entry=(0x[0-9a-f]+) stub=(0x[0-9a-f]+) '
                           r'end=(0x[0-9a-f]+) start=(0x[0-9a-f]+) ip=(0x[0-9a-f]+) kind=(\w+)')
XLAT_RT = ('xlat_rt_link', 'xlat_rt_lookup', 'xlat_rt_flush', 'xlat_rt_tail', 'xlat_rt_ret')	# those it has


def xlat_runtime(text, load):
    """[lo, hi) of the runtime (kernel/trace_engine/xlat_rt.S): xlat_rt_link
    up to xlat_rt_ret's RET, all instrumentation."""
    at = {n: a for a, _s, n in text if n in XLAT_RT}
    missing = [n for n in ('xlat_rt_link', 'xlat_rt_ret') if n not in at]
    if missing:
        raise SystemExit(f'oracle: no symbol {missing[0]} in the ELF (pt.step=translate)')
    return load + min(at.values()), load + at['xlat_rt_ret'] + 1


def read_xlat_map(path):
    """{cpu: {'code': (lo, hi), 'blocks': N, 'resets': N, 'rt': [(lo, hi)]}} and
    the blocks [(entry, stub, end, start, ip, kind, cpu)] of a kernel log's
    xlat-map lines ('rt': the cache's own runtime code, its tnt_put)."""
    heads, blocks = {}, []
    for line in open(path, errors='replace'):
        if 'xlat-map: ' not in line:
            continue
        m = XMAP_BLOCK_RE.search(line)
        if m:
            v = [int(x, 16) for x in m.groups()[1:6]]
            blocks.append((*v, m.group(7), int(m.group(1))))
            continue
        m = XMAP_HEAD_RE.search(line)
        if m:
            heads[int(m.group(1))] = {'code': (int(m.group(2), 16), int(m.group(3), 16)),
                                      'blocks': int(m.group(4)), 'resets': int(m.group(5)),
                                      'rt': []}
            continue
        m = XMAP_RT_RE.search(line)
        if m and int(m.group(1)) in heads:
            heads[int(m.group(1))]['rt'].append((int(m.group(2), 16), int(m.group(3), 16)))
    return heads, blocks


class XMap:
    """Cache addresses back to original instructions (pt.step=translate)."""

    def __init__(self, heads, blocks, runtime):
        self.blocks = sorted(blocks)
        self.entries = [b[0] for b in self.blocks]
        self.codes = sorted(h['code'] for h in heads.values())
        self.rts = [runtime] + [r for h in heads.values() for r in h['rt']]
        self.unmapped = {}	# cache address in no block: times seen

    def tag(self, pc):
        """'rt' (the runtime), 'cache' (a CPU's code cache) or None."""
        if any(lo <= pc < hi for lo, hi in self.rts):
            return 'rt'
        for lo, hi in self.codes:
            if lo <= pc < hi:
                return 'cache'
        return None

    def block(self, ip):
        i = bisect.bisect_right(self.entries, ip) - 1
        if i >= 0 and ip < self.blocks[i][2]:
            return self.blocks[i]
        return None

    def map(self, ip, txt):
        """(original ip, text) the cache or runtime instruction at @ip stands
        for; None for instrumentation (and for an address in no block,
        noted in self.unmapped)."""
        t = self.tag(ip)
        if t is None:
            return ip, txt
        if t == 'rt':
            return None
        b = self.block(ip)
        if b is None:
            self.unmapped[ip] = self.unmapped.get(ip, 0) + 1
            return None
        entry, stub, _end, start, bip, kind, _cpu = b
        if ip < stub:
            return start + (ip - entry), txt
        if ip == stub and kind != 'exit':
            return bip, f'{txt}   <stub at {ip:#x}: the branch>'
        return None

    def orig(self, ip):
        """@ip's original address where it has one, else @ip (instrumentation too)."""
        if self.tag(ip) != 'cache':
            return ip
        m = self.map(ip, '')
        return m[0] if m else ip


def cmd_xlat_filter(a):
    plan = json.load(open(a.plan))
    _funcs, text = nm_symbols(a.elf)
    heads, _blocks = read_xlat_map(a.log)
    if not heads:
        raise SystemExit(f'oracle: {a.log}: no "xlat-map:" lines (pt.step=translate pt.translate_map)')
    lo, hi = xlat_runtime(text, plan['load'])
    parts = [f'{c["code"][0]:#x}+{c["code"][1] - c["code"][0]:#x}' for _n, c in sorted(heads.items())]
    parts.append(f'{lo:#x}+{hi - lo:#x}')
    print(','.join(parts))
    return 0


# ------------------------------------------------------------------ plan
def is_workload(src):
    """SRC ("path/file.c:line", nm -l) is a workload's: the registry that runs
    them (kernel/workloads/registry.c) is not traced code."""
    return '/kernel/workloads/' in src and '/kernel/workloads/registry.c:' not in src


def cmd_plan(a):
    hdr, images = read_container(a.container)
    if not hdr['flags'] & 2:
        raise SystemExit(f'oracle: {a.container}: the header has no load address')
    load = hdr['load']
    funcs, text = nm_symbols(a.elf)
    by_name = {n: (addr, size) for addr, size, n in text}
    compared = []
    for addr, size, name, src in funcs:
        if size and (is_workload(src) or name in ('pt_run_traced', 'traced_job') or
                     (a.files and re.search(a.files, src))):
            compared.append((load + addr, load + addr + size, name))
    # the firmware phase (--modules: its log with fw.modules): every loaded
    # image, whole, though the discovery trace ran only some (which modules
    # the timer's events reach depends on timing)
    if a.modules:
        have = {v for v, _s, _n in images}
        for line in open(a.modules, errors='replace'):
            m = re.search(r'fw: module (\S+) +0x([0-9a-f]+)-0x([0-9a-f]+)', line)
            if m and int(m.group(2), 16) not in have:
                lo, hi = int(m.group(2), 16), int(m.group(3), 16)
                images.append((lo, hi - lo, m.group(1)))
                have.add(lo)
    for v, s, n in images:
        compared.append((v, v + s, f'[{n}]'))
    # and every other function the discovery trace went through (kernel code
    # the workloads call: handlers may run it too, their part is left out)
    if a.ptdecode:
        # each distinct line once: a spinning CPU decodes to millions of them
        with subprocess.Popen([a.ptdecode, '--elf', a.elf, '--insn', '--no-disasm', a.container],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as p:
            lines = sorted(set(p.stdout))
        seen = {lo for lo, _hi, _n in compared}
        starts = [load + addr for addr, _s, _n, _f in funcs]
        order = sorted(range(len(funcs)), key=lambda i: starts[i])
        starts = [starts[i] for i in order]
        for m in map(PT_INSN_RE.match, lines):
            if not m:
                continue
            ip = int(m.group(2), 16)
            i = bisect.bisect_right(starts, ip) - 1
            if i < 0:
                continue
            addr, size, name, _src = funcs[order[i]]
            if load + addr <= ip < load + addr + size and load + addr not in seen:
                seen.add(load + addr)
                compared.append((load + addr, load + addr + size, name))
    # Code whose running depends on timing, not on the workload: a discovery
    # boot may not run it where the traced boot does. The leaf functions the
    # compared ones call directly (local_irq_enable and its kind: a few bytes
    # each), and the SMP wait path with all it calls (whether a CPU waits for
    # another is a race).
    calls = direct_calls(a.elf, funcs)
    seen = {lo for lo, _hi, _n in compared}
    kernel = [lo - load for lo, _hi, n in compared if not n.startswith('[')]
    extra = {t for f in kernel for t in calls.get(f, ()) if not calls.get(t)}
    todo = [by_name['smp_wait_relax'][0]] if 'smp_wait_relax' in by_name else []
    while todo:
        f = todo.pop()
        if f not in extra:
            extra.add(f)
            todo += calls.get(f, ())
    sizes = {addr: (size, name) for addr, size, name, _src in funcs}
    for f in sorted(extra):
        if load + f not in seen and f in sizes and sizes[f][0]:
            seen.add(load + f)
            compared.append((load + f, load + f + sizes[f][0], sizes[f][1]))
    for need in ('pt_run_traced', 'isr_stubs', 'isr_common', 'isr_bp_done', 'pt_trace_begin',
                 'pt_trace_end'):
        if need not in by_name:
            raise SystemExit(f'oracle: {a.elf}: no symbol {need}')
    # The windows: after "call pt_trace_begin", up to the call (or tail jump)
    # to pt_trace_end: the boot CPU's in pt_run_traced, the other CPUs' (their
    # jobs) in traced_job.
    windows = []
    for fn in ('pt_run_traced', 'traced_job'):
        if fn not in by_name:
            continue
        start, size = by_name[fn]
        ins = objdump(a.elf, start, start + size)
        begin = end = None
        for i, (ip, txt) in enumerate(ins):
            if re.search(r'call\s+[0-9a-f]+ <pt_trace_begin>', txt) and i + 1 < len(ins):
                begin = ins[i + 1][0]
            if re.search(r'(call|jmp)\s+[0-9a-f]+ <pt_trace_end>', txt):
                end = ip
        if begin is None or end is None:
            raise SystemExit(f'oracle: cannot find the calls to pt_trace_begin/pt_trace_end in {fn}')
        windows.append((load + begin, load + end, fn))
    # The handler exit: the instruction after "call trap_dispatch" in isr_common.
    ic = by_name['isr_common'][0]
    ins = objdump(a.elf, ic, ic + 0x100)
    exit_ip = None
    for i, (ip, txt) in enumerate(ins):
        if re.search(r'call\s+[0-9a-f]+ <trap_dispatch>', txt) and i + 1 < len(ins):
            exit_ip = ins[i + 1][0]
            break
    if exit_ip is None:
        raise SystemExit('oracle: cannot find the call to trap_dispatch in isr_common')
    stubs = load + by_name['isr_stubs'][0]
    plan = {
        'fixups': ex_table(a.elf, load),
        'load': load, 'compared': compared, 'images': images,
        'begin': windows[0][0], 'end': windows[0][1], 'windows': windows,
        'isr_stubs': stubs, 'isr_exit': load + exit_ip,
        # the branch-step engine's common stop leaves #BP there (arch/x86/entry.S)
        'bp_done': load + by_name['isr_bp_done'][0],
    }
    with open(a.out, 'w') as f:
        json.dump(plan, f, indent=1)
    parts = [f'{lo:#x}+{hi - lo:#x}' for lo, hi, _n in compared]
    parts.append(f'{stubs:#x}+0x1000')
    parts.append(f'{load + exit_ip:#x}+0x1')
    parts.append(f'{plan["bp_done"]:#x}+0x1')
    print(','.join(parts))


def ex_table(elf, load):
    """{fixup address: [faulting instruction addresses]} from the kernel's
    exception table (__start_ex_table..__stop_ex_table: pairs of 32-bit
    offsets, each relative to itself)."""
    syms = {}
    for line in subprocess.run(['nm', elf], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] in ('__start_ex_table', '__stop_ex_table'):
            syms[f[2]] = int(f[0], 16)
    lo, hi = syms.get('__start_ex_table'), syms.get('__stop_ex_table')
    if lo is None or hi is None or hi <= lo:
        return {}
    out = subprocess.run(['objdump', '-s', f'--start-address={lo:#x}', f'--stop-address={hi:#x}',
                          elf], capture_output=True, text=True).stdout
    data, inside = {}, False
    for line in out.splitlines():
        if line.startswith('Contents of section'):
            inside = not data	# the first section: the one that holds the table
            continue
        m = inside and re.match(r' ([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})', line + ' ')
        if m:
            at = int(m.group(1), 16)
            for b in bytes.fromhex(''.join(m.group(2).split())):
                data[at] = b
                at += 1
    fixups = {}
    for at in range(lo, hi - 7, 8):
        raw = bytes(data.get(at + i, 0) for i in range(8))
        insn, fix = struct.unpack('<ii', raw)
        fixups.setdefault(load + at + 4 + fix, []).append(load + at + insn)
    return {str(k): v for k, v in fixups.items()}


# ------------------------------------------------------------------ QEMU side
STOP_RE = re.compile(r'Stopped execution of TB chain before (0x[0-9a-f]+) \[([0-9a-f]+)\]')
# "0x1f65f817:  48 bd 02 00 00 00 00 00  movabsq ..." and, for the bytes past
# eight, a continuation line "0x1f65f81f:  00 80" with no mnemonic.
INSN_RE = re.compile(r'0x([0-9a-f]+):\s+((?:[0-9a-f]{2}(?: |$))+)\s*(.*)$')


def parse_qemu_logs(paths, late=False):
    """{cpu: [(pc, flags, insns, ptr)]} of the TBs that ran, in order per CPU;
    insns = [(ip, asm)]; {cpu: TBs stopped before they ran}; problems.

    QEMU logs "Trace CPU:" before it enters a TB. When the TB's first check
    sees an exit request (an interrupt to take) it does not run it, and says
    so: "Stopped execution of TB chain before <the same host address>". Such a
    TB is left out here (it is logged again when it does run). A stop before a
    different TB is one reached by chaining, unlogged: the logged one ran.

    Several CPUs (MTTCG: a host thread each) log into a file per thread (-d
    tid): a file is one CPU's order of events, which the lines without a CPU
    number ("Stopped", the translations) need. A translation is logged by the
    thread that made it, right before that CPU runs it; other CPUs run the same
    TB (the TB cache is shared) with only a "Trace" line in their file: those
    take the translation from the other files (by host address and guest PC).

    @late: the log was switched on while the guest ran (the firmware phase,
    through QEMU's monitor): TBs without a translation in the log were
    translated before it and are left out (the guest's windows start only
    after it has had every block translated again: a window missing a TB's
    instructions fails the comparison).
    """
    execs, problems, stopped = {}, [], {}
    shared = {}		# (ptr, pc): insns, from every file; None when two differ
    unresolved = []	# (ptr, pc, placeholder insns) to take from shared
    for path in paths:
        tbs, seen, order = {}, {}, []
        block, pending = None, None
        with open(path, errors='replace') as f:
            for line in f:
                if line.startswith('Trace '):
                    # the same TB again (and no translation waiting for its first run)
                    e = seen.get(line)
                    if e is not None and pending is None:
                        order.append(e)
                        continue
                    # "Trace 0: 0x7f00dcda0240 [0000000000000000/000000001ddfe220/0040c2b0/ff000000] "
                    f4 = line.split(None, 4)
                    try:
                        cpu = int(f4[1].rstrip(':'))
                        ptr = f4[2]
                        _cs, pc, flags, _cf = f4[3].strip('[]').split('/')
                        pc, flags = int(pc, 16), int(flags, 16)
                    except (IndexError, ValueError):
                        problems.append(f'unparsed QEMU log line: {line.strip()}')
                        continue
                    if pending is not None:
                        if pending[0][0] == pc:
                            tbs[ptr] = (pc, pending)
                            old = shared.get((ptr, pc), pending)
                            shared[(ptr, pc)] = pending if old == pending else None
                        else:
                            problems.append(f'translation of {pending[0][0]:#x} not followed by its '
                                            f'execution (next TB {pc:#x})')
                        pending = None
                    t = tbs.get(ptr)
                    if t is not None and t[0] == pc:
                        insns = t[1]
                    elif late:
                        # translated before the log came on (the firmware's
                        # polling while topaz waits for the host): left out;
                        # one inside a window would make the comparison fail
                        continue
                    else:
                        # translated by another CPU's thread: filled in below
                        insns = []
                        unresolved.append((ptr, pc, flags, insns))
                        tbs[ptr] = (pc, insns)
                    e = seen[line] = (pc, flags, insns, ptr, cpu)
                    order.append(e)
                elif line.startswith('Stopped execution'):
                    m = STOP_RE.match(line)
                    if (m and order and order[-1][3] == m.group(1) and
                            int(m.group(2), 16) == order[-1][0]):
                        e = order.pop()
                        stopped[e[4]] = stopped.get(e[4], 0) + 1
                elif line.startswith('cpu_io_recompile: rewound execution of TB to '):
                    # -icount: an I/O instruction inside a TB; the TB ran up
                    # to it, and a new one starting there runs it
                    try:
                        at = int(line.split()[-1], 16)
                    except ValueError:
                        problems.append(f'unparsed QEMU log line: {line.strip()}')
                        continue
                    if order and order[-1][2]:
                        pc, flags, insns, ptr, cpu = order.pop()
                        ran = [i for i in insns if i[1] is not None and i[0] < at]
                        if ran:
                            order.append((pc, flags, ran + [(at, None)], ptr, cpu))
                elif line.startswith('IN:'):
                    block = []
                elif block is not None:
                    m = INSN_RE.match(line.rstrip('\n'))
                    if m and m.group(3).strip():
                        block.append((int(m.group(1), 16), m.group(3).strip()))
                        size = len(m.group(2).split())
                    elif m and block:
                        size += len(m.group(2).split())	# the rest of its bytes
                    elif not line.strip():
                        if block:
                            # the address after the TB (its last instruction)
                            block.append((block[-1][0] + size, None))
                            pending = block
                        block = None
        for e in order:
            execs.setdefault(e[4], []).append(e)
    for ptr, pc, flags, insns in unresolved:
        got = shared.get((ptr, pc))
        if got is None:
            why = ('translated differently in two threads (the host address reused after a '
                   'TB flush?)' if (ptr, pc) in shared else 'executed without its translation in '
                   'the log')
            problems.append(f'TB {pc:#x} flags {flags:#x} {why}')
            got = [(pc, '?'), (pc + 1, None)]
        insns[:] = got
    return execs, stopped, problems


def qemu_sequence(plan, execs, step, boundaries=None, xmap=None):
    """The instructions the traced code retired, in the windows, handlers removed.

    Handler context runs from an isr_stubs entry to the return path of
    isr_common, or of isr_bp for a #BP its fast path took (nesting counted). A TB that ran with TF and retired its
    instruction traps to #DB before anything else: when another handler comes
    first, the instruction faulted (it did not retire). A TB without TF
    (branch-step) that ends with an INT3 followed by #BP retired all of it
    (the engine emulated the branch under the INT3); one that another handler
    interrupts and returns into, with no #DB in between, retired only the
    instructions before the return point.

    @xmap (pt.step=translate): what a TB of the code cache retired is found
    as above on its own (cache) addresses, then each instruction is mapped
    back to the original one it stands for or dropped (instrumentation); an
    exit's INT3 followed by #BP retired its block. The runtime (xlat_rt_*)
    and, until the code goes back into the cache, whatever it calls outside
    handlers (memcpy...) are the engine's, not traced code.
    """
    stubs, exits = plan['isr_stubs'], (plan['isr_exit'], plan['bp_done'])
    notes = {'faulted': 0, 'emulated': 0, 'partial': 0, 'no_tf': 0, 'int3': 0, 'fixed up': 0,
             'exits': 0, 'cache': 0, 'dropped': 0, 'runtime calls': 0}
    fixups = plan.get('fixups', {})

    def orig(ip):
        return xmap.orig(ip) if xmap else ip

    # translate: the caches' pages held other code before the kernel took
    # them (the firmware's boot-time drivers, which QEMU's log shows too):
    # cache addresses mean the cache only once the CPU runs the code that
    # starts its windows (pt_run_traced, traced_job), at their own addresses
    armed = xmap is None
    starters = [(lo, hi) for lo, hi, n in plan['compared'] if n in ('pt_run_traced', 'traced_job')]
    # handler nesting: ('h', vector) for an outermost entry, ('t', pc, flags, insns, after, tag)
    seq, depth, kinds, in_rt = [], 0, {}, False
    for e in execs:
        if not armed and any(lo <= e[0] < hi for lo, hi in starters):
            armed = True
            kinds = {}
        k = kinds.get(id(e))	# the same TB: the same tuple (parse_qemu_log)
        if k is None:
            pc = e[0]
            if stubs <= pc < stubs + 0x1000:
                # A vector's stub is entered at its start; QEMU may split it
                # into one-instruction TBs.
                k = ('h', (pc - stubs) // 16) if (pc - stubs) % 16 == 0 else 'cont'
            elif pc in exits:
                k = 'exit'
            else:
                insns, after = e[2][:-1], e[2][-1][0]
                tag = xmap.tag(pc) if xmap and armed else None
                if e[1] & TF:
                    # one instruction per TB under TF, whatever QEMU's
                    # disassembler made of its bytes (it has no PTWRITE)
                    insns = insns[:1]
                elif any(t.startswith(('.byte', '(bad)')) for _ip, t in insns):
                    if tag and boundaries:
                        # cache code: where objdump puts the original's
                        # instructions, the instrumentation as one
                        insns = cache_boundaries(xmap, pc, after, insns, boundaries)
                    else:
                        insns = boundaries(pc, after) if boundaries else insns
                k = ('t', pc, e[1], insns, after, tag)
            kinds[id(e)] = k
        if k == 'cont':
            continue
        if k == 'exit':
            depth = max(0, depth - 1)
        elif k[0] == 'h':
            if depth == 0:
                seq.append(k)
            depth += 1
        elif depth == 0:
            if xmap:
                if k[5] == 'rt':
                    if not in_rt:
                        notes['runtime calls'] += 1
                    in_rt = True
                elif k[5] == 'cache':
                    in_rt = False
                elif in_rt:
                    continue	# the runtime's C half and its callees
            seq.append(k)
    # what each depth-0 TB retired, and the windows (begin: end)
    wins = {b: e for b, e, _n in plan['windows']} if 'windows' in plan else {plan['begin']: plan['end']}
    win, inside, windows, end = [], False, 0, None
    for i, s in enumerate(seq):
        if s[0] == 'h':
            continue
        _k, pc, flags, insns, after, tag = s
        n, why = len(insns), None
        j, db = i + 1, False
        while j < len(seq) and seq[j][0] == 'h':
            db |= seq[j][1] == DB_VECTOR
            j += 1
        if j > i + 1 and flags & TF and seq[i + 1][1] != DB_VECTOR:
            # the first handler is not its #DB: the instruction faulted, or
            # the handler emulated it (returned to the next instruction: the
            # engine does that with PTWRITE's #UD), then it counts as run
            if j < len(seq) and seq[j][1] == after and insns[0][0] not in fixups.get(str(after), ()):
                why = 'emulated'
            else:
                n, why = 0, 'faulted'
        elif (j > i + 1 and seq[i + 1][1] == BP_VECTOR and insns and
              insns[-1][1].startswith('int3')):
            # branch-step: the block ran up to the INT3 on its branch, which
            # the engine emulated (QEMU shows the int3 at the branch's address);
            # translate: an exit's INT3 in the cache, the block before it ran
            notes['exits' if tag == 'cache' else 'int3'] += 1
        elif j > i + 1 and not db and j < len(seq):
            nxt = seq[j][1]
            # where the handler went on, as an original address (it may go
            # on in the cache: a fixup's block)
            faults = fixups.get(str(orig(nxt)), ())
            for k, (ip, _t) in enumerate(insns):
                if orig(ip) in faults:
                    # an exception fixed up (exception table): the faulting
                    # instruction did not retire; the handler went on elsewhere
                    n, why = k, 'fixed up'
                    break
                if ip == nxt:
                    n, why = k, 'faulted' if k == 0 else 'partial'
                    break
        if why and (inside or orig(pc) in wins):
            notes[why] += 1
        for ip, txt in insns[:n]:
            if tag:
                m = xmap.map(ip, txt)
                if m is None:
                    if inside:
                        notes['dropped'] += 1
                    continue
                ip, txt = m
            if not inside and ip in wins:
                inside, end = True, wins[ip]
                windows += 1
            if inside:
                win.append((ip, txt))
                if tag:
                    notes['cache'] += 1
                if step == 'single' and not flags & TF:
                    notes['no_tf'] += 1
                if ip == end:
                    inside = False
    return win, windows, notes


def cache_boundaries(xmap, pc, after, insns, boundaries):
    """A cache TB QEMU could not disassemble: its body's instructions where
    objdump puts the original ones, each instrumentation instruction QEMU
    shows as it is (a stub's first one stays at the stub)."""
    out, body = [], []
    for ip, t in insns:
        b = xmap.block(ip)
        if b and ip < b[1]:
            body.append(b)
            continue
        out.append((ip, t))
    if not body:
        return insns
    b = body[0]
    entry, stub, _e, start, _ip, _k, _c = b
    lo = max(pc, entry)
    hi = min(after, stub)
    mapped = [(entry + (oip - start), t) for oip, t in boundaries(start + (lo - entry),
                                                                    start + (hi - entry))]
    return mapped + [e for e in out if e[0] >= hi]


RESULT_RE = re.compile(r'result: trace\.engine (.*)$')
RESULT_CPU_RE = re.compile(r'result: trace\.cpu (.*)$')


def reps_all(win):
    """The addresses of REP string instructions in @win (one decode each)."""
    return {ip for ip, t in win if t and re.match(r'rep', t)}


# ------------------------------------------------------------------ ptdecode side
PT_INSN_RE = re.compile(r'(\? )?([0-9a-f]{16})  (\S+)\s+((?:[0-9a-f]{2} ?)+)\s*(.*)$')


CPU_RE = re.compile(r'\[cpu (\d+), segment')


def parse_insn(path):
    """{cpu: [(ip, line_index)]} of the decoded instructions, {cpu: the index
    of its first line}, and all lines. ptdecode prints each CPU's segments in
    turn, each under a "[cpu N, segment M ...]" line."""
    lines = open(path, errors='replace').read().splitlines()
    insns, first, cpu = {}, {}, 0
    for n, line in enumerate(lines):
        m = PT_INSN_RE.match(line)
        if m:
            insns.setdefault(cpu, []).append((int(m.group(2), 16), n))
        elif line.startswith('[cpu '):
            m = CPU_RE.match(line)
            if m:
                cpu = int(m.group(1))
                first.setdefault(cpu, n)
    return insns, first, lines


PKT_RE = re.compile(r'([0-9a-f]{16})  (\S+)\s*(.*)$')
# "[3e (record 1, file offset 0x1a6), cpu_relax+0x2: error: bad compressed return]"
DECODE_ERR_RE = re.compile(r'\[([0-9a-f]+) \(record \d+, file offset 0x[0-9a-f]+\), .*: error: ')
RTIT_DISRETC = 1 << 11
FLOW = ('tnt.8', 'tnt.64', 'tip', 'tip.pge', 'tip.pgd', 'fup')


def locate_packet(insn_lines, upto_line, packets, retcomp=True):
    """Index into packets of the last flow packet the decode used before insn_lines[upto_line].

    Replays the decode's demands on the packet stream: a TNT bit per conditional
    branch (and per compressed return), a TIP per indirect branch and return
    that was not compressed (every return without @retcomp), TIP.PGE/PGD and
    FUP for the events.
    """
    pk = [p for p in packets if p[1] in FLOW]
    pi, bits = 0, 0

    def take(kinds):
        nonlocal pi, bits
        while pi < len(pk) and pk[pi][1] not in kinds:
            pi += 1
        if pi < len(pk):
            pi += 1
        bits = 0

    def take_bit():
        nonlocal pi, bits
        if bits == 0:
            while pi < len(pk) and not pk[pi][1].startswith('tnt'):
                pi += 1
            if pi >= len(pk):
                return
            bits = len(pk[pi][2].split()[0]) if pk[pi][2] else 0
            pi += 1
        bits -= 1

    for line in insn_lines[:upto_line]:
        m = PT_INSN_RE.match(line)
        if m:
            txt = m.group(5)
            mn = txt.split(' ', 1)[0] if txt else ''
            op = txt.split(' ', 1)[1] if ' ' in txt else ''
            if mn in ('jmp', 'call'):
                if not op.startswith('0x'):
                    take(('tip',))
            elif mn.startswith('j') or mn.startswith('loop') or mn == 'jrcxz':
                take_bit()
            elif mn.startswith('ret'):
                if retcomp and (bits or (pi < len(pk) and pk[pi][1].startswith('tnt'))):
                    take_bit()
                else:
                    take(('tip',))
            elif mn in ('iretq', 'syscall', 'sysret', 'int', 'int3'):
                take(('tip',))
        elif line.startswith('[enabled') or line.startswith('[resumed'):
            take(('tip.pge',))
        elif line.startswith('[disabled'):
            take(('tip.pgd',))
        elif line.startswith('[interrupt'):
            take(('fup',))
            take(('tip', 'tip.pgd'))
    if pi == 0 or pi > len(pk):
        return None
    return packets.index(pk[pi - 1])


# ------------------------------------------------------------------ self-test
def cmd_corrupt(a):
    """Flip one TNT bit halfway through the trace (CRCs fixed): a wrong trace."""
    data = bytearray(open(a.container, 'rb').read())
    res = subprocess.run([a.ptdecode, '--packets', a.container], capture_output=True, text=True)
    tnts = [int(m.group(1), 16) for m in map(PKT_RE.match, res.stdout.splitlines())
            if m and m.group(2) == 'tnt.8' and len(m.group(3).split()[0]) >= 2]
    if not tnts:
        raise SystemExit('oracle: no TNT packet with two bits to flip')
    target = tnts[len(tnts) // 2]
    off = 0
    while off + 24 <= len(data):
        _m, typ, body, size, _seq, _b, _h = struct.unpack_from('<IHHIIII', data, off)
        if typ == 2:
            _cpu, _fl, soff, _lost, _tsc, n = struct.unpack_from('<IIQQQI', data, off + 24)
            if soff <= target < soff + n:
                pos = off + 24 + body + target - soff
                data[pos] ^= 0x02	# bit 1: the last branch of the packet
                struct.pack_into('<I', data, off + 16, zlib.crc32(data[off + 24:off + size]))
                struct.pack_into('<I', data, off + 20, zlib.crc32(data[off:off + 20]))
                open(a.out, 'wb').write(data)
                print(f'flipped the last TNT bit of the tnt.8 packet at stream offset {target:#x}')
                return 0
        off += size
    raise SystemExit(f'oracle: stream offset {target:#x} is in no trace record')


# ------------------------------------------------------------------ compare
def cmd_compare(a):
    plan = json.load(open(a.plan))
    hdr, images = read_container(a.container)
    _funcs, text = nm_symbols(a.elf)
    sym = Symbolizer(text, plan['load'], [tuple(i) for i in plan['images']])
    name = a.name

    def fail(why, extra=()):
        print(f'FAIL {name}: {why}')
        for line in extra:
            print(f'  {line}')
        return 1

    if hdr['load'] != plan['load']:
        return fail(f'loaded at {hdr["load"]:#x}, not at {plan["load"]:#x} as in the discovery '
                    'boot: QEMU logged the wrong range')
    R = Ranges([(lo, hi) for lo, hi, _n in plan['compared']])
    filt, stop = filter_ranges(hdr)
    if stop:
        return fail('the trace has TraceStop ranges: the oracle compares filters only')
    RQ = R.intersect(filt) if filt else R

    # pt.step=translate: the map from the code cache to the original code
    xmap = None
    if a.step == 'translate':
        src = a.xlat_map or a.log
        if not src:
            return fail('pt.step=translate needs the kernel log with the xlat-map lines (--log)')
        heads, blocks = read_xlat_map(src)
        if not heads:
            return fail(f'no "xlat-map:" lines in the kernel log {src}: booted without '
                        'pt.translate_map, or not in pt.step=translate?')
        reset = [f'cpu {c}: {h["resets"]} resets' for c, h in sorted(heads.items()) if h['resets']]
        if reset:
            return fail(f'the code cache was reset: the map is incomplete ({", ".join(reset)})')
        for c, h in sorted(heads.items()):
            nb = sum(1 for b in blocks if b[6] == c)
            if nb != h['blocks']:
                return fail(f'cpu {c}: {nb} xlat-map block lines in the kernel log, blocks={h["blocks"]}: '
                            'the map is incomplete')
        if a.xlat_logged:
            logged = []
            for part in a.xlat_logged.split(','):
                lo, size = part.split('+')
                logged.append((int(lo, 16), int(lo, 16) + int(size, 16)))
            for c, h in sorted(heads.items()):
                lo, hi = h['code']
                if not any(l2 <= lo and hi <= h2 for l2, h2 in logged):
                    return fail(f'cpu {c}\'s code cache is at {lo:#x}-{hi:#x}, not in the ranges QEMU '
                                f'logged ({a.xlat_logged}, from the discovery boot)')
        xmap = XMap(heads, blocks, xlat_runtime(text, plan['load']))

    # ptdecode: the decoded instructions, per CPU
    insn_path = a.insn_out or a.qemu_log[0] + '.insn'
    with open(insn_path, 'w') as out:
        res = subprocess.run([a.ptdecode, '--elf', a.elf, '--insn', a.container], stdout=out,
                             stderr=subprocess.PIPE, text=True)
    if res.returncode not in (0, 1):
        return fail(f'ptdecode exit status {res.returncode}', res.stderr.splitlines()[:10])
    problems = {}
    for p in res.stderr.splitlines():
        if p.strip():
            m = re.search(r': cpu (\d+): ', p)
            problems.setdefault(int(m.group(1)) if m else None, []).append(p)
    pt_by_cpu, first_line, insn_lines = parse_insn(insn_path)

    # QEMU: the executed instructions, per CPU
    execs, stopped, qproblems = parse_qemu_logs(a.qemu_log, a.log_started_late)

    def boundaries(lo, hi):
        # where objdump puts the instructions of [lo, hi) (kernel code only)
        load = plan['load']
        if not any(l2 <= lo < h2 for l2, h2, n in plan['compared'] if not n.startswith('[')):
            return [(lo, '.byte')]
        return [(load + ip, t) for ip, t in objdump(a.elf, lo - load, hi - load)]

    # The engine's own count (every instruction of the windows, filters or
    # not) against QEMU's: an instruction the engine did not see is missing
    # from the trace even where the decode cannot tell.
    engine, engine_cpu = None, {}
    if a.log:
        for line in open(a.log, errors='replace'):
            m = RESULT_RE.search(line)
            if m:
                engine = {k: int(v) for k, v in re.findall(r'(\w+)=(\d+)', m.group(1))}
            m = RESULT_CPU_RE.search(line)
            if m:
                d = {k: int(v) for k, v in re.findall(r'(\w+)=(\d+)', m.group(1))}
                if 'insns' in d:
                    engine_cpu[d['cpu']] = d['insns']
    cpus = sorted(set(range(a.cpus)) | set(execs) | set(pt_by_cpu))
    multi = len(cpus) > 1
    if engine is not None and not engine_cpu and not multi:
        engine_cpu[cpus[0]] = engine['insns']

    def compare_cpu(cpu):
        """(div, bad, info, extra lines, q, pt, windows, notes) of one CPU."""
        pt_all = pt_by_cpu.get(cpu, [])
        pt = [(ip, n) for ip, n in pt_all if ip in R]
        outside = len(pt_all) - len(pt)
        win, windows, notes = qemu_sequence(plan, execs.get(cpu, []), a.step, boundaries, xmap)
        q = [(ip, t) for ip, t in win if ip in RQ]
        # A REP string instruction runs once per iteration in QEMU's log (each
        # iteration is a TB, and under TF a #DB) and is one instruction in the
        # decode: its back-to-back repeats count once.
        reps = {ip for ip, t in q if re.match(r'rep', t)}
        if reps:
            q = [e for i, e in enumerate(q) if not (e[0] in reps and i and q[i - 1][0] == e[0])]
        ra = reps_all(win)
        qall = [e for i, e in enumerate(win) if not (e[0] in ra and i and win[i - 1][0] == e[0])]
        nstop = stopped.get(cpu, 0)
        info = (f'{len(q)} QEMU / {len(pt)} decoded instructions in {windows} traced windows; '
                f'{nstop} logged TBs stopped before they ran, {notes["faulted"]} faulted, '
                f'{notes["emulated"]} emulated, {notes["partial"]} partly run, {outside} decoded '
                'outside the compared range')
        bad = []
        if notes['no_tf']:
            bad.append(f'{notes["no_tf"]} instructions in the window ran without TF under '
                       'single-step: the log may miss chained TBs')
        if windows == 0 or not q:
            bad.append('no traced window found in the QEMU log')
        elif cpu == 0 and a.windows is not None and windows != a.windows:
            bad.append(f'{windows} traced windows in the QEMU log, {a.windows} runs asked')
        cp = problems.get(cpu, []) + ([] if multi else problems.get(None, []))
        if cp:
            bad.append(f'ptdecode reported {len(cp)} problems: {cp[0]}')
        if a.log and cpu not in engine_cpu:
            bad.append('no "result: trace.engine" line in the kernel log' if not multi else
                       f'no "result: trace.cpu cpu={cpu} ... insns=" line in the kernel log')
        elif cpu in engine_cpu and engine_cpu[cpu] != len(qall):
            why = ''
            pauses = sum(1 for _ip, t in qall if t and t.startswith('pause'))
            if a.step == 'single' and pauses == len(qall) - engine_cpu[cpu]:
                # QEMU ends the TB of a PAUSE (helper_pause: cpu_loop_exit)
                # without the single-step #DB: the next #DB covers two
                why = (f' (as many as the PAUSEs it ran: under TF QEMU raises no #DB after a '
                       'PAUSE, the next #DB reports on it and the instruction after it)')
            bad.append(f'the engine counted {engine_cpu[cpu]} instructions in the windows, QEMU ran '
                       f'{len(qall)}{why}')
        if outside:
            first = next(ip for ip, _n in pt_all if ip not in R)
            bad.append(f'{outside} decoded instructions outside the compared range, not checked '
                       f'(the first: {first:#x} {sym(first)}; the discovery boot did not run it)')
        n = min(len(q), len(pt))
        div = next((i for i in range(n) if q[i][0] != pt[i][0]), None)
        if div is None and len(q) != len(pt):
            div = n
        extra = []
        if div is not None:
            extra = divergence(cpu, div, q, pt)
        return div, bad, info, extra, q, pt, windows, notes

    def divergence(cpu, div, q, pt):
        qa = f'{q[div][0]:#x} {sym(q[div][0])}' if div < len(q) else '(QEMU log ends)'
        pa = f'{pt[div][0]:#x} {sym(pt[div][0])}' if div < len(pt) else '(decode ends)'
        extra = [f'first divergence at instruction {div}: QEMU {qa}, decoded {pa}',
                 'around it (index: QEMU | decoded):']
        for i in range(max(0, div - 6), min(max(len(q), len(pt)), div + 4)):
            qs = f'{q[i][0]:#x} {sym(q[i][0]):<28} {q[i][1]}' if i < len(q) else '-'
            ps = f'{pt[i][0]:#x} {sym(pt[i][0])}' if i < len(pt) else '-'
            extra.append(f'{"=>" if i == div else "  "} {i:7d}: {qs:<70} | {ps}')
        # the decode's lines and the packets at that point (this CPU's only)
        start = first_line.get(cpu, 0)
        line = pt[div][1] if div < len(pt) else (pt[-1][1] + 1 if pt else start)
        extra.append(f'ptdecode --insn lines {max(start, line - 8) + 1}..{line + 3}:')
        extra += ['  ' + ln for ln in insn_lines[max(start, line - 8):line + 3]]
        cmd = [a.ptdecode, '--elf', a.elf, '--packets', a.container]
        if multi:
            cmd[1:1] = ['--cpu', str(cpu)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        packets = []
        for ln in res.stdout.splitlines():
            m = PKT_RE.match(ln)
            if m:
                packets.append((int(m.group(1), 16), m.group(2), m.group(3), ln))
        # where the decode failed, if it did right there; else replay its demands
        k, how = None, None
        for ln in insn_lines[max(start, line - 8):line + 1]:
            m = DECODE_ERR_RE.match(ln)
            if m:
                off = int(m.group(1), 16)
                at = [i for i, p in enumerate(packets) if p[0] <= off]
                if at:
                    k, how = at[-1], 'where the decode failed ("error:" in its --insn output)'
        if k is None:
            k = locate_packet(insn_lines[start:], line - start, packets,
                              retcomp=not hdr['rtit_ctl'] & RTIT_DISRETC)
            how = ('the last flow packet the decode used before the divergence (found by '
                   'replaying its TNT/TIP demands)')
        if k is not None:
            extra.append(f'ptdecode --packets{" --cpu " + str(cpu) if multi else ""} around '
                         f'stream offset {packets[k][0]:#x}, {how}:')
            for p in packets[max(0, k - 8):k + 6]:
                extra.append(f'{"=>" if p is packets[k] else "  "} {p[3]}')
        else:
            extra.append('(the packet position could not be located: past the last flow packet)')
        return extra

    results = {cpu: compare_cpu(cpu) for cpu in cpus}
    common = []
    if qproblems:
        common.append(f'QEMU log: {qproblems[0]} ({len(qproblems)} problems)')
    if xmap and xmap.unmapped:
        first = min(xmap.unmapped)
        common.append(f'{len(xmap.unmapped)} code cache addresses QEMU ran are in no block of the '
                      f'xlat-map (the lowest: {first:#x}): the map does not describe the cache')
    if multi and problems.get(None):
        common.append(f'ptdecode reported {len(problems[None])} problems: {problems[None][0]}')
    failed = [c for c in cpus if results[c][0] is not None or results[c][1]]
    if not failed and not common:
        total = sum(len(results[c][4]) for c in cpus)
        notes = {k: sum(results[c][7][k] for c in cpus) for k in results[cpus[0]][7]}
        windows = sum(results[c][6] for c in cpus)
        nstop = sum(stopped.values())
        em = f', {notes["emulated"]} emulated' if notes['emulated'] else ''
        bp = f', {notes["int3"]} branches run under INT3' if notes['int3'] else ''
        fx = f', {notes["fixed up"]} fixed up' if notes['fixed up'] else ''
        if xmap:
            fx += (f'; translate: {notes["cache"]} run in the code cache, {notes["dropped"]} '
                   f'instrumentation instructions dropped, {notes["exits"]} exits, '
                   f'{notes["runtime calls"]} runtime calls, {len(xmap.blocks)} blocks mapped')
        ch = ''
        if engine is not None:
            ch = (f'; engine count equal{" on every CPU" if multi else ""}; '
                  f'{engine.get("async", 0)} interrupts/exceptions, '
                  f'{engine.get("async_chained", 0)} before the next stop after another\'s return '
                  f'({engine.get("async_chained_ran", 0)} after the code ran on)')
        per = ''
        if multi:
            per = ', '.join(f'cpu{c} {len(results[c][4])}' for c in cpus) + '; '
        print(f'PASS {name}: {total} instructions compared ({per}{windows} windows, {nstop} '
              f'logged TBs stopped before they ran, {notes["faulted"]} faulted{fx}{em}{bp}{ch})')
        return 0
    if not multi:
        div, bad, info, extra, *_ = results[cpus[0]]
        lines = [info] + common + bad
        if div is not None:
            return fail(extra[0], lines + extra[1:])
        return fail(lines[1], lines)
    # several CPUs: what went wrong first on each, then each one's details
    heads = []
    for c in failed:
        div, bad, _info, extra, *_ = results[c]
        heads.append(f'cpu {c}: ' + (extra[0] if div is not None else bad[0]))
    why = '; '.join(heads) if heads else common[0]
    lines = list(common)
    for c in cpus:
        div, bad, info, extra, q, *_ = results[c]
        if c not in failed:
            lines.append(f'cpu {c}: the same, {len(q)} instructions ({info})')
            continue
        lines.append(f'cpu {c}: {info}')
        lines += ['  ' + b for b in bad]
        lines += ['  ' + e for e in extra]
    return fail(why, lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('plan')
    p.add_argument('--elf', required=True)
    p.add_argument('--container', required=True)
    p.add_argument('--out', required=True)
    p.add_argument('--ptdecode', help='add the functions the container\'s trace went through')
    p.add_argument('--files', help='and every function of the source files this matches (a regex)')
    p.add_argument('--modules', help="and every firmware module a firmware phase's log lists (fw.modules)")
    c = sub.add_parser('compare')
    for k in ('plan', 'elf', 'ptdecode', 'container', 'name'):
        c.add_argument('--' + k, required=True)
    c.add_argument('--qemu-log', required=True, nargs='+',
                   help='QEMU\'s log, or its files (-d tid: one per thread)')
    c.add_argument('--insn-out', help='where ptdecode --insn goes (QEMU-LOG.insn)')
    c.add_argument('--cpus', type=int, default=1, help='the CPUs (each must have run a window)')
    c.add_argument('--step', choices=('single', 'branch', 'translate'), default='single')
    c.add_argument('--xlat-map', help='pt.step=translate: the kernel log with the xlat-map lines '
                   '(default: --log)')
    c.add_argument('--xlat-logged', help='pt.step=translate: the cache ranges QEMU logged '
                   '(-dfilter form, from the discovery boot): each CPU\'s cache must be in them')
    c.add_argument('--log-started-late', action='store_true',
                   help="QEMU's log was switched on while the guest ran (the firmware phase)")
    c.add_argument('--windows', type=int, help='the traced windows (run=) expected')
    c.add_argument('--log', help='the kernel log: the engine\'s instruction count must be QEMU\'s')
    k = sub.add_parser('corrupt')
    for x in ('ptdecode', 'container', 'out'):
        k.add_argument('--' + x, required=True)
    x = sub.add_parser('xlat-filter')
    for y in ('plan', 'elf', 'log'):
        x.add_argument('--' + y, required=True)
    a = ap.parse_args()
    sys.exit({'plan': cmd_plan, 'compare': cmd_compare, 'corrupt': cmd_corrupt,
              'xlat-filter': cmd_xlat_filter}[a.cmd](a))


if __name__ == '__main__':
    main()
