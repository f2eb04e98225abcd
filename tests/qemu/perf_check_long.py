#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perf_check.py on a long trace in a small memory bound.

    perf_check_long.py [--insns N] [--mem-kb KB] [--name NAME]

A trace's length must not set perf_check.py's memory: it compares perf's
and libipt's instructions as streams. Here stand-ins for ptdecode and perf
(scripts in a temporary directory, perf found first on PATH) list N
instructions on each of two CPUs, perf's interleaved by time and with a
time each, libipt's CPU by CPU with a stop of the trace unit on CPU 1 (three
instructions libipt walks to and perf does not). perf_check.py runs with
its address space bounded at KB KiB (ulimit -v; 32 MiB: the interpreter
and a few buffers, where keeping each instruction's address and time would
add 24 MB); it must PASS with every instruction compared (and the cut's
three counted) within --timeout seconds. Prints one PASS or FAIL line, exits 0 or 1.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
EDGE = 3	# instructions before the cut that only libipt lists
BLOCK = 1000	# instructions a stand-in writes at a time

# Both stand-ins run the same loop of BLOCK addresses, N // BLOCK times.
COMMON = textwrap.dedent(f"""\
    import sys
    N = int({{n}})
    IPS = [0x1dd60000 + 3 * k for k in range({BLOCK})]
    EDGE = {EDGE}
    out = sys.stdout
""")

PTDECODE = COMMON + textwrap.dedent("""\
    a = sys.argv[1:]
    if "--perf-data" in a:
        open(a[a.index("--perf-data") + 1], "w").close()
        sys.exit(0)
    if "--summary" in a:
        print(f"trace: {2 * N} instructions")
        print(f"cpu 0: {N} instructions")
        print(f"cpu 1: {N} instructions")
        sys.exit(0)
    if "--packets" in a:
        sys.exit(0)
    cpu = int(a[a.index("--cpu") + 1])
    body = "".join(f"{ip:016x}  loop+0x{ip & 0xfff:x}    90\\n" for ip in IPS)
    out.write(f"[cpu {cpu}, segment 0 at stream offset 0x0]\\n[enabled at loop+0x0]\\n")
    for r in range(N // len(IPS)):
        if cpu == 1 and r == 1:
            # libipt walks on to the branch that needs the lost packet
            out.write("".join(f"{0x1dd70000 + k:016x}  edge+0x{k:x}    90\\n" for k in range(EDGE)))
            out.write("[gap: 0 bytes missing before this segment (the trace unit stopped)]\\n")
            out.write(f"[cpu 1, segment 1 at stream offset 0x1000]\\n")
        out.write(body)
""")

PERF = COMMON + textwrap.dedent("""\
    # perf script -i DATA --itrace=i1ie -F cpu,time,ip: the CPUs interleaved
    for r in range(N // len(IPS)):
        for cpu in (0, 1):
            out.write("".join(f"[00{cpu}]    {r + 1}.{k:06d}:          {ip:x}\\n"
                              for k, ip in enumerate(IPS)))
""")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--insns", type=int, default=500000, help="instructions a CPU (default 500K)")
    ap.add_argument("--mem-kb", type=int, default=32 * 1024,
                    help="perf_check.py's address space, KiB (default 32 MiB)")
    ap.add_argument("--name", default="perf-check.long-trace")
    ap.add_argument("--timeout", type=int, default=60, help="seconds perf_check.py may take")
    a = ap.parse_args()
    n = a.insns // BLOCK * BLOCK
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("ptdecode", PTDECODE), ("perf", PERF)):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(f"#!{sys.executable}\n" + text.replace("{n}", str(n)))
            os.chmod(path, 0o755)
        trace = os.path.join(tmp, "long.tpz")
        open(trace, "w").close()
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""))
        limit = a.mem_kb * 1024

        def bound():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        try:
            p = subprocess.run([sys.executable, os.path.join(HERE, "perf_check.py"), "--ptdecode",
                                os.path.join(tmp, "ptdecode"), "--elf", "/dev/null", "--container",
                                trace, "--name", "long"], env=env, preexec_fn=bound,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=a.timeout)
        except subprocess.TimeoutExpired:
            print(f"FAIL {a.name}: perf_check.py on {2 * n} instructions within {a.mem_kb // 1024}"
                  f" MiB did not finish in {a.timeout} s")
            return 1
    out = p.stdout.strip()
    want = (f"PASS long: {2 * n + EDGE} instructions compared (cpu0 {n}, cpu1 {n + EDGE}), perf = libipt,"
            f" except {EDGE} instructions before 1 stops")
    if p.returncode == 0 and out.startswith(want):
        print(f"PASS {a.name}: {2 * n} instructions on 2 CPUs compared within {a.mem_kb // 1024} MiB"
              f" of address space")
        return 0
    last = out.splitlines()[-1] if out else "no output"
    print(f"FAIL {a.name}: perf_check.py on {2 * n} instructions within {a.mem_kb // 1024} MiB: exit"
          f" status {p.returncode}: {last[:300]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
