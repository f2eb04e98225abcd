#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
calltree_check.py: check ptdecode's call tree against a call stack rebuilt
independently from the instruction list.

    tests/qemu/calltree_check.py [--name NAME] [--max-diffs N] PTDECODE ELF TRACE

It runs `ptdecode --elf ELF --insn --no-disasm TRACE` and, in Python, follows
the real stack of return addresses through every instruction:

  - a call (libipt's class, printed as "call" / "far call") pushes its next IP
    (the IP plus the length of its raw bytes) once the following instruction
    shows that the call was taken somewhere else;
  - an interrupt whose handler is traced ("[interrupt: from A to B]") pushes A;
  - a return (ret / iret) lands on some address: the frame holding that return
    address and every frame above it are popped; when no frame holds it, only
    the top frame is popped (its saved address was overwritten, or it is the
    root, whose return address the trace never saw);
  - each frame is named by the symbol of the instruction executing in it, as
    ptdecode prints it on the --insn line (the top frame by the current
    instruction, the others by their call instruction);
  - event lines print addresses as "name+0xoff": the number is the
    function's start learned from the instruction lines, else nm's address
    for that name moved by the load bias (a name two static functions share
    is taken as the first nm lists).

Every instruction is counted against the stack of names it ran with (root
first). That profile must equal `ptdecode --folded` exactly (same stacks, same
counts), and its deepest stack must equal the depth= of `ptdecode --stats`'s
"result: decode" line. It prints the first differences and one verdict line,
"PASS NAME: N instructions, M stacks, max depth D" or "FAIL NAME: ...", and
exits 0 or 1 (2 when ptdecode cannot be run or its output cannot be read).

What only the trace can say, and which ptdecode presents by convention, is
mirrored here rather than derived:

  - "call next" (a call to the instruction after it, a PC fetch) pushes
    nothing: its return address goes away with a pop the trace cannot see;
  - a stack starts with the first instruction's function as its root (what
    called it is not in the trace); returning from the root makes the function
    returned to the new root;
  - a new segment, an overflow, a decode error and the end drop the stack:
    what ran in the gap is unknown;
  - tracing disabled and enabled again at the same IP is an interrupt whose
    handler was not traced: the stack goes on. Disabled asynchronously in one
    function and enabled in another (compared by name) is a new trace window
    (pt_trace_end, then pt_trace_begin's caller): the stack is dropped and the
    window starts from its own root;
  - code that is not traced (outside pt.filter) has no frames in the stacks:
    a call that leaves the traced code ("[disabled, next ip T]" after a call)
    pushes a hidden frame (not shown, not counted in the depth), popped when
    tracing comes back on at its return address; coming back on anywhere else
    is untraced code calling traced code, a callee of the hidden frame (its
    frame holds no known return address). A return that leaves the traced code
    is settled at the disable, against its target T;
  - code without symbols (a sideband region such as firmware, "[firmware]"
    on the --insn lines) entered by a call, an interrupt or a jump is named by
    its entry, "[firmware@0x7e9f1234]": distinct functions stay apart; in a
    named module (the firmware phase's "DxeCore+0x52f") by its offset there,
    "DxeCore+0x52f";
  - --folded writes a stack deeper than 32 frames as its first 16 names,
    "[K frames elided]", and its last 16; names are escaped as \\xHH for
    spaces, ';', '\\' and bytes outside printable ASCII; a symbol-less
    address is "[unknown]".

Python 3 standard library (and binutils' nm) only. About 5 s per million
instructions: ptdecode prints the listing in about 1 s, the rest is Python.
"""
import argparse
import collections
import os
import subprocess
import sys
import time

FOLDED_MAX_FRAMES = 32  # ptdecode's folded.c: deeper stacks are elided
CLASSES = {"call", "ret", "jmp", "jcc", "ptwrite"}


def fail_usage(msg):
    print("calltree_check: " + msg, file=sys.stderr)
    sys.exit(2)


def sym_name(text):
    """The function in "name+0xoff" (or None for a bare "0x..." address)."""
    if text.startswith("0x"):
        return None
    name, sep, _ = text.rpartition("+0x")
    return name if sep else text


def folded_escape(name):
    out = []
    for ch in name:
        c = ord(ch)
        if c <= 0x20 or c >= 0x7F or ch in ";\\":
            # ptdecode escapes bytes: a non-ASCII character is its UTF-8 bytes
            out.extend("\\x%02x" % b for b in ch.encode("utf-8", "surrogateescape"))
        else:
            out.append(ch)
    return "".join(out)


def folded_text(names):
    """A stack as ptdecode's --folded line writes it (without the count)."""
    esc = [folded_escape(n) for n in names]
    if len(esc) > FOLDED_MAX_FRAMES:
        keep = FOLDED_MAX_FRAMES // 2
        esc = esc[:keep] + ["[%d frames elided]" % (len(esc) - 2 * keep)] + esc[-keep:]
    return ";".join(esc)


class Addrs:
    """Addresses of "name+0xoff" texts (the event lines print no numbers)."""

    def __init__(self, elf):
        self.seen = {}      # name -> start, from the instruction lines (exact)
        self.elf = {}       # name -> link-time start, from nm (for code never traced)
        self.bias = None    # load address minus link address
        try:
            out = subprocess.run(["nm", "--defined-only", elf], capture_output=True, text=True,
                                 errors="surrogateescape").stdout
        except OSError:
            out = ""
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "tTwW":
                self.elf.setdefault(f[2], int(f[0], 16))

    def learn(self, name, ip, text):
        if name not in self.seen:
            self.seen[name] = ip - int(text.rpartition("+0x")[2], 16)
            if self.bias is None and name in self.elf:
                self.bias = self.seen[name] - self.elf[name]

    def of(self, text):
        """The address, or the text itself (which equals no address) if unknown."""
        if text.startswith("0x"):
            return int(text, 16)
        name, _, off = text.rpartition("+0x")
        if name in self.seen:
            return self.seen[name] + int(off, 16)
        if name in self.elf and self.bias is not None:
            return self.elf[name] + self.bias + int(off, 16)
        return text


def by_target(name, entry, addrs):
    """Code without symbols (a region's "[name]", e.g. firmware) entered by a
    call, an interrupt or a jump is named by its entry, "[name@0xENTRY]", so
    distinct functions stay apart (ptdecode's convention); a named module's
    (a sideband image whose name is no ELF symbol, "DxeCore") as
    "Module+0xOFFSET" from the module's start; a root or a frame returned to
    keeps the region's name."""
    if entry is None or name == "[unknown]":
        return name
    if name.startswith("[") and name.endswith("]"):
        return "%s@0x%x]" % (name[:-1], entry)
    if name not in addrs.elf and name in addrs.seen:
        return "%s+0x%x" % (name, entry - addrs.seen[name])
    return name


class Stack:
    """The real call stack: each frame its return address and the function running in it."""

    def __init__(self, addrs):
        self.addrs = addrs
        self.rets = []      # return address per frame; None: the root's, not seen
        self.names = []     # function executing in the frame, as the profile names it
        self.bases = []     # ... as --insn names it (a region's "[name]" for code without symbols)
        self.hidden = []    # True: a frame of code that is not traced
        self.key = None     # cached tuple of the visible names
        self.profile = collections.Counter()
        self.insns = 0
        self.max_depth = 0
        self.pending = None  # ("call", next_ip) / ("ret",) / ("irq", resume_ip)
        self.async_at = None  # where tracing went off asynchronously, until it comes on
        self.calls = self.returns = self.unwound = self.unmatched = 0
        self.irqs = self.roots = self.windows = 0

    def push(self, ret, name, hidden=False, entry=None):
        self.rets.append(ret)
        self.bases.append(name)
        self.names.append(by_target(name, entry, self.addrs))
        self.hidden.append(hidden)
        self.key = None
        self.max_depth = max(self.max_depth, len(self.rets) - sum(self.hidden))

    def cut(self, j):
        """Pop frame j and every frame above it."""
        del self.rets[j:], self.names[j:], self.bases[j:], self.hidden[j:]
        self.key = None

    def drop(self):
        self.cut(0)
        self.pending = None

    def ret_to(self, ip):
        self.returns += 1
        j = len(self.rets)
        while j > 0 and self.rets[j - 1] != ip:
            j -= 1
        if j > 0:
            self.unwound += len(self.rets) - j
            self.cut(j - 1)
        elif self.rets:
            if self.rets[-1] is not None:
                self.unmatched += 1
            self.cut(len(self.rets) - 1)

    def land(self, ip, name):
        """Execution goes on at @ip: settle the previous call, return or interrupt."""
        p = self.pending
        self.pending = None
        if p is None:
            return
        if p[0] == "call":
            if ip != p[1]:  # else "call next": not a function call
                self.calls += 1
                self.push(p[1], name, entry=ip)
        elif p[0] == "irq":
            self.irqs += 1
            self.push(p[1], name, entry=ip)
        else:
            self.ret_to(ip)

    def root(self, name):
        self.roots += 1
        self.push(None, name)

    def insn(self, ip, name, cls, size):
        self.land(ip, name)
        if not self.rets:
            self.root(name)
        elif self.hidden[-1]:
            self.push(None, name, entry=ip)  # back from untraced code without an enable: a callee
        elif self.bases[-1] != name:
            # a jump (or a fall-through) into another function: the frame runs it now
            self.bases[-1] = name
            self.names[-1] = by_target(name, ip, self.addrs)
            self.key = None
        key = self.key
        if key is None:
            key = self.key = tuple(n for n, h in zip(self.names, self.hidden) if not h)
        self.profile[key] += 1
        self.insns += 1
        if cls == "call":
            self.pending = ("call", ip + size)
        elif cls == "ret":
            self.pending = ("ret",)

    def event(self, line):
        """A bracketed --insn line: what it does to the stack."""
        body = line[1:line.rstrip().rfind("]")]
        if body.startswith(("cpu ", "overflow")) or body == "end of trace" or ": error: " in body:
            self.async_at = None
            self.drop()
        elif body.startswith("interrupt: from "):
            frm = body[len("interrupt: from "):].partition(" to ")[0]
            name = sym_name(frm) or "[unknown]"
            resume = self.addrs.of(frm)
            # the interrupted instruction did not run: execution resumes there
            if self.rets or self.pending:
                self.land(resume, name)
            if not self.rets:
                self.root(name)
            self.pending = ("irq", resume)
        elif body.startswith("disabled at "):
            self.async_at = body[len("disabled at "):]
        elif body.startswith("disabled"):
            # a branch left the traced code: "next ip" is where it went
            nxt = body.partition("next ip ")[2]
            p = self.pending
            if nxt and p and p[0] == "call":
                self.pending = None
                self.calls += 1
                self.push(p[1], sym_name(nxt) or "[unknown]", hidden=True)
            elif nxt and p and p[0] == "ret":
                self.pending = None
                self.ret_to(self.addrs.of(nxt))
        elif body.startswith(("enabled at ", "resumed at ")):
            at = body.split(" at ", 1)[1]
            if self.async_at is not None and self.async_at != at \
                    and sym_name(self.async_at) != sym_name(at):
                if self.rets:
                    self.windows += 1
                self.drop()  # a new trace window: its own root
            self.async_at = None
            if self.hidden and self.hidden[-1]:
                ret = self.rets[-1]
                if self.addrs.of(at) == ret:
                    self.cut(len(self.rets) - 1)  # the untraced callee returned
                else:
                    # untraced code called back into traced code: whatever
                    # returns to it returns to untraced code
                    self.push(None, sym_name(at) or "[unknown]")


def main():
    ap = argparse.ArgumentParser(description="Check ptdecode's call tree against an independent stack.")
    ap.add_argument("ptdecode")
    ap.add_argument("elf")
    ap.add_argument("trace")
    ap.add_argument("--name", help="the trace's name in the verdict (default: TRACE's base name)")
    ap.add_argument("--max-diffs", type=int, default=10, help="differences to print (default 10)")
    a = ap.parse_args()
    name = a.name or os.path.splitext(os.path.basename(a.trace))[0]
    t0 = time.time()
    base = [a.ptdecode, "--elf", a.elf]
    try:
        # folded and stats decode while the listing is read
        # several CPUs: one profile of all (the listing goes CPU by CPU)
        side = {k: subprocess.Popen(base + k.split() + [a.trace], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, errors="surrogateescape")
                for k in ("--folded --merge-cpus", "--stats")}
        insn = subprocess.Popen(base + ["--insn", "--no-disasm", a.trace], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, errors="surrogateescape",
                                bufsize=1 << 20)
    except OSError as e:
        fail_usage("cannot run %s: %s" % (a.ptdecode, e))
    addrs = Addrs(a.elf)
    st = Stack(addrs)
    seen = addrs.seen
    for line in insn.stdout:
        if line[0] == "[":
            st.event(line)
            continue
        if line[0] == "?":
            line = line[2:]  # speculative: ptdecode counts it like any other
        f = line.split()
        # Most lines: no call or return, nothing pending, in the function
        # the top frame already runs: one more instruction on the same stack.
        if st.key is not None and st.pending is None and f[-1] != "call" and f[-1] != "ret":
            fname, sep, _ = f[1].rpartition("+0x")
            if sep and fname in seen and st.bases[-1] == fname and not st.hidden[-1]:
                st.profile[st.key] += 1
                st.insns += 1
                continue
        ip = int(f[0], 16)
        cls = f[-1] if f[-1] in CLASSES else None
        # the raw bytes are the fields between the symbol and the class
        size = len(f) - 2 - (cls is not None)
        if cls and f[-2] == "far":
            size -= 1
        fn = sym_name(f[1])
        if fn is None:
            fn = "[unknown]"
        elif fn not in seen:
            addrs.learn(fn, ip, f[1])
        st.insn(ip, fn, cls, size)
    rc = insn.wait()
    outs = {k: p.communicate()[0] for k, p in side.items()}
    if rc not in (0, 1) or any(p.returncode not in (0, 1) for p in side.values()):
        fail_usage("ptdecode failed on %s (exit status %s)" %
                   (a.trace, [rc] + [p.returncode for p in side.values()]))

    # ptdecode writes one line per tree node: compare the lines as a multiset
    # (two stacks elided alike are two lines with the same text)
    mine = collections.Counter()
    for stack, n in st.profile.items():
        mine[(folded_text(stack), n)] += 1
    theirs = collections.Counter()
    for line in outs["--folded --merge-cpus"].splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            fail_usage("unreadable --folded line: %r" % line)
        theirs[(stack, int(n))] += 1
    depth = None
    for line in outs["--stats"].splitlines():
        if line.startswith("result: decode "):
            for w in line.split():
                if w.startswith("depth="):
                    depth = int(w[len("depth="):])
    problems = []
    if mine != theirs:
        # report per stack text: its total here and there
        a_tot, b_tot = collections.Counter(), collections.Counter()
        for (k, n), c in mine.items():
            a_tot[k] += n * c
        for (k, n), c in theirs.items():
            b_tot[k] += n * c
        keys = sorted(set(a_tot) | set(b_tot), key=lambda k: -abs(a_tot[k] - b_tot[k]))
        diffs = [k for k in keys if a_tot[k] != b_tot[k]] or keys
        for k in diffs[:a.max_diffs]:
            print("  stack %s: %d here, %d in ptdecode --folded" % (k, a_tot[k], b_tot[k]))
        if len(diffs) > a.max_diffs:
            print("  ... %d more stacks differ" % (len(diffs) - a.max_diffs))
        problems.append("%d stacks differ from --folded" % len(diffs))
    folded_insns = sum(n * c for (k, n), c in theirs.items())
    if folded_insns != st.insns:
        problems.append("--folded counts %d instructions, the listing has %d" % (folded_insns, st.insns))
    if depth is None:
        problems.append("no depth= in ptdecode --stats")
    elif depth != st.max_depth:
        problems.append("--stats depth=%d, the stack here reached %d" % (depth, st.max_depth))
    secs = time.time() - t0
    print("  %s: %d calls, %d returns (%d frames unwound, %d unmatched), %d interrupts, "
          "%d roots, %d windows, %.1f s" % (name, st.calls, st.returns, st.unwound, st.unmatched,
                                           st.irqs, st.roots, st.windows, secs))
    summary = "%d instructions, %d stacks, max depth %d" % (st.insns, len(st.profile), st.max_depth)
    if problems:
        print("FAIL %s: %s; %s" % (name, "; ".join(problems), summary))
        return 1
    print("PASS %s: %s" % (name, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
