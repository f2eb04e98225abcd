#!/usr/bin/env bash
# Decode speed against the floor (make bench): `ptdecode --stats` against bare
# libipt (ipt-bare, tests/bench/ipt_bare.c: pt_insn_next() counting
# instructions, nothing else) on one trace of at least 10 million
# instructions, and `ptdecode --out-dir` (every output) beside them.
#   decode_bare.sh BUILD_DIR [WORKLOAD [COUNT]]   (default: slab 72 times, about 10.7 million instructions)
#
# Wall time of the whole process (container, ELF, decode), median of RUNS (7)
# runs each, taken in turn so the machine's slow moments fall on all three.
# Then one callgrind run of each decoder: the instructions they execute, which
# the machine's load does not move (CALLGRIND=0 skips it).
# Target: ptdecode --stats within 1.3 times bare libipt. Exit status 1 when
# the two decode a different number of instructions, the trace is too short,
# or the callgrind ratio misses the target (deterministic); the wall-time
# target is reported met or NOT MET, as the other benches do.
set -uo pipefail
export LC_ALL=C
build=${1:-build}
wl=${2:-slab}
count=${3:-72}
runs=${RUNS:-7}
here=$(cd "$(dirname "$0")/../.." && pwd)
tool=$build/tools/ptdecode bare=$build/bench/ipt-bare elf=$build/topaz.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
target() {	# name value
	if awk -v r="$2" 'BEGIN { exit !(r <= 1.3) }'; then
		echo "  met: $1 ($2, target <= 1.3)"
	else
		echo "  NOT MET: $1 ($2, target <= 1.3)"
		return 1
	fi
}

for f in "$tool" "$bare" "$elf"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "decode_bare: missing $f (make bench builds it)" >&2; exit 2; }
done
job=$(for _ in $(seq "$count"); do printf '%s,' "$wl"; done)
job=${job%,}
BUILD=$build "$here/tests/qemu/boot.sh" --timeout 900 --cmdline "pt=on pt.buf=1M run=$job" \
	--log "$tmp/boot.log" --debugcon "$tmp/t.tpz" >/dev/null 2>&1
[ -s "$tmp/t.tpz" ] || { echo "decode_bare: the boot left no trace (log: $tmp/boot.log)" >&2; exit 2; }
trace=$tmp/t.tpz

# The same instructions from both, or the comparison means nothing.
stats=$("$tool" --elf "$elf" --stats "$trace")
insns=$(sed -n 's/^result: decode insns=\([0-9]*\) .*/\1/p' <<<"$stats")
problems=$(sed -n 's/^result: .* problems=\([0-9]*\) .*/\1/p' <<<"$stats")
bare_insns=$("$bare" --elf "$elf" "$trace" | sed -n 's/^insns=\([0-9]*\) .*/\1/p')
if [ -z "$insns" ] || [ "$insns" != "$bare_insns" ]; then
	echo "decode_bare: ptdecode decoded ${insns:-?} instructions, bare libipt ${bare_insns:-?}" >&2
	exit 1
fi
if [ "$insns" -lt 10000000 ]; then
	echo "decode_bare: the trace has $insns instructions, fewer than 10 million (run=$wl x$count)" >&2
	exit 1
fi

: >"$tmp/stats.t"; : >"$tmp/bare.t"; : >"$tmp/out.t"
timed() {	# file command...
	local t0=$EPOCHREALTIME
	"${@:2}" >/dev/null 2>&1
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f\n", b - a }' >>"$1"
}
for _ in $(seq "$runs"); do
	timed "$tmp/stats.t" "$tool" --elf "$elf" --stats "$trace"
	timed "$tmp/bare.t" "$bare" --elf "$elf" "$trace"
	rm -rf "$tmp/out"
	timed "$tmp/out.t" "$tool" --elf "$elf" --out-dir "$tmp/out" "$trace"
done
out_mb=$(du -sm "$tmp/out" | cut -f1)
rm -rf "$tmp/out"
s=$(median <"$tmp/stats.t") b=$(median <"$tmp/bare.t") o=$(median <"$tmp/out.t")
wall=$(ratio "$s" "$b")
smin=$(sort -g "$tmp/stats.t" | head -1) bmin=$(sort -g "$tmp/bare.t" | head -1)

echo
echo "decode speed against bare libipt: one trace of run=$wl x$count ($(stat -c %s "$trace") bytes," \
	"$insns instructions from both, $problems problems), median of $runs runs"
printf 'ptdecode --stats: %.3f s, bare libipt: %.3f s, ratio %s (target <= 1.3)\n' "$s" "$b" "$wall"
printf '  the fastest runs: %.3f s and %.3f s, ratio %s (on a busy machine the medians move)\n' \
	"$smin" "$bmin" "$(ratio "$smin" "$bmin")"
printf 'ptdecode --out-dir (every output, %s MB): %.3f s, %.2f Minsn/s\n' "$out_mb" "$o" \
	"$(awk -v n="$insns" -v t="$o" 'BEGIN { print t ? n / t / 1e6 : 0 }')"

status=0
cg=
if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
	ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		sed -n 's/.*Collected : //p'; }
	ir "$tool" --elf "$elf" --stats "$trace" >"$tmp/stats.ir" &
	ir "$bare" --elf "$elf" "$trace" >"$tmp/bare.ir"
	wait
	si=$(cat "$tmp/stats.ir") bi=$(cat "$tmp/bare.ir")
	cg=$(ratio "$si" "$bi")
	echo "callgrind, instructions executed: ptdecode --stats $si, bare libipt $bi, ratio $cg" \
		"($(awk -v a="$si" -v b="$bi" -v n="$insns" 'BEGIN { printf "%.0f", (a - b) / n }') more per decoded instruction)"
fi
echo "targets:"
target "ptdecode --stats over bare libipt, wall time" "$wall"
if [ -n "$cg" ]; then
	target "ptdecode --stats over bare libipt, instructions executed (callgrind)" "$cg" || status=1
fi
exit $status
