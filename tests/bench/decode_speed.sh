#!/usr/bin/env bash
# Decode speed on one trace: Linux perf's Intel PT decoder (on the perf.data
# `ptdecode --perf-data` writes) against ptdecode (libipt), in the same run
# (make bench). Both list every instruction: `perf script --itrace=i1i -F ip`
# and `ptdecode --insn --no-disasm`, output to /dev/null; `ptdecode --stats`
# (decode, no listing) beside them. Wall time, median of RUNS (5) runs each,
# taken in turn so the machine's slow moments fall on all of them.
#   decode_speed.sh BUILD_DIR [WORKLOADS]      (default: slab six times, about a million instructions)
set -uo pipefail
build=${1:-build}
work=${2:-slab,slab,slab,slab,slab,slab}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v perf >/dev/null || { echo "decode_speed: perf is missing (scripts/setup.sh installs linux-perf)" >&2; exit 2; }
BUILD=$build "$here/tests/qemu/boot.sh" --timeout 600 --cmdline "pt=on pt.buf=1M run=$work" --log "$tmp/boot.log" \
	--debugcon "$tmp/t.tpz" >/dev/null 2>&1
[ -s "$tmp/t.tpz" ] || { echo "decode_speed: the boot left no trace (log: $tmp/boot.log)" >&2; exit 2; }
exec python3 - "$build/tools/ptdecode" "$build/topaz.so" "$tmp/t.tpz" "$work" "${RUNS:-5}" <<'EOF'
import os, re, statistics, subprocess, sys, time
tool, elf, tpz, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
data = tpz + ".perf.data"
if subprocess.run([tool, "--elf", elf, "-q", "--perf-data", data, tpz]).returncode:
    sys.exit("decode_speed: the export failed")

def count(cmd, pred):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return sum(1 for l in out.splitlines() if pred(l))

insns = count([tool, "--elf", elf, "--insn", "--no-disasm", tpz], lambda l: re.match(r"[0-9a-f]{16} ", l))
perf_insns = count(["perf", "script", "-i", data, "--itrace=i1i", "-F", "ip"], lambda l: l.strip())
rows = [("perf script --itrace=i1i -F ip", ["perf", "script", "-i", data, "--itrace=i1i", "-F", "ip"]),
        ("ptdecode --insn --no-disasm", [tool, "--elf", elf, "--insn", "--no-disasm", tpz]),
        ("ptdecode --stats (no listing)", [tool, "--elf", elf, "--stats", tpz])]
times = {name: [] for name, _ in rows}
for _ in range(runs):
    for name, cmd in rows:
        t0 = time.monotonic()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append(time.monotonic() - t0)
print(f"\ndecode speed, one trace of run={work} ({os.path.getsize(tpz)} bytes; {insns} instructions "
      f"by libipt, {perf_insns} by perf): median of {runs}")
print(f"| {'decoder':40} | {'s':>8} | {'Minsn/s':>10} |")
print(f"|{'-' * 42}|{'-' * 10}|{'-' * 12}|")
med = {n: statistics.median(v) for n, v in times.items()}
for name, _ in rows:
    print(f"| {name:40} | {med[name]:8.3f} | {insns / med[name] / 1e6:10.2f} |")
print(f"perf against ptdecode, both listing every instruction: "
      f"{med[rows[0][0]] / med[rows[1][0]]:.2f}x the time")
EOF
