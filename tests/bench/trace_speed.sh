#!/usr/bin/env bash
# The trace engine's speed under TCG against QEMU's own instruction log, on
# the same workload (make bench). For each: the workload's time as the guest
# measures it (TSC), traced instructions per second, and bytes written per
# instruction (the topaz trace vs QEMU's -d exec log over the workload's code).
#   trace_speed.sh BUILD_DIR [WORKLOAD]
set -uo pipefail
build=${1:-build}
wl=${2:-sort}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
boot() { "$here/tests/qemu/boot.sh" --timeout 300 "$@" >/dev/null 2>&1; }

# Topaz, traced: the engine's instruction count and the workload's time.
run_traced() {
	local mode=$1 log=$tmp/$1.log tpz=$tmp/$1.tpz
	boot --cmdline "pt=on pt.step=$mode pt.buf=1M run=$wl" --log "$log" --debugcon "$tpz"
	local us insns bytes
	us=$(sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log" | head -1)
	insns=$(sed -nE 's/.*pt: trace: ([0-9]+) instructions.*/\1/p' "$log" | head -1)
	bytes=$(sed -nE 's/.*pt: trace: ([0-9]+) bytes.*/\1/p' "$log" | head -1)
	echo "$mode ${us:-0} ${insns:-0} ${bytes:-0}"
}

# QEMU's log: every instruction (-singlestep) in the workload's functions.
run_qemu_log() {
	local log=$tmp/q.log base syms lo hi
	boot --cmdline "run=list" --log "$log"
	base=$(sed -nE 's/.*loaded at (0x[0-9a-f]+).*/\1/p' "$log" | head -1)
	# the workload's code: the functions of its source file
	lo=0 hi=0
	while read -r addr size type name; do
		case "$type" in t|T) ;; *) continue ;; esac
		case "$name" in
		work_"$wl"|insertion_sort*|fib|deep|op_*|fault_walk|lcg) ;;
		*) continue ;;
		esac
		s=$((0x$addr)) e=$((0x$addr + 0x$size))
		{ [ $lo = 0 ] || [ $s -lt $lo ]; } && lo=$s
		[ $e -gt $hi ] && hi=$e
	done < <(nm -S --defined-only "$build/topaz.so")
	local A=$((base + lo)) B=$((base + hi))
	local t0 t1
	t0=$(date +%s.%N)
	boot --cmdline "run=$wl" --log "$log" -- -d exec,nochain -singlestep \
		-dfilter "$(printf '0x%x..0x%x' "$A" "$B")" -D "$tmp/exec.log"
	t1=$(date +%s.%N)
	local us lines size
	us=$(sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log" | head -1)
	lines=$(grep -c '^Trace' "$tmp/exec.log")
	size=$(stat -c %s "$tmp/exec.log")
	echo "qemu-log ${us:-0} ${lines:-0} ${size:-0} $(echo "$t1 - $t0" | bc)"
}

read -r _ qus qins qbytes qwall < <(run_qemu_log)
printf '\ntrace engine vs QEMU instruction log, workload %s (guest-timed; 1 run each)\n' "$wl"
printf '| %-12s | %10s | %12s | %12s | %10s |\n' mode "time us" "insns" "insn/s" "bytes/insn"
printf '|%s|\n' "--------------|------------|--------------|--------------|------------"
qrate=$(awk -v i="$qins" -v u="$qus" 'BEGIN { printf "%.0f", u ? i * 1e6 / u : 0 }')
printf '| %-12s | %10s | %12s | %12s | %10.2f |\n' "qemu -d exec" "$qus" "$qins" "$qrate" \
	"$(awk -v b="$qbytes" -v i="$qins" 'BEGIN { print i ? b / i : 0 }')"
for mode in single branch; do
	read -r _ us ins bytes < <(run_traced $mode)
	rate=$(awk -v i="$ins" -v u="$us" 'BEGIN { printf "%.0f", u ? i * 1e6 / u : 0 }')
	printf '| %-12s | %10s | %12s | %12s | %10.4f |\n' "topaz $mode" "$us" "$ins" "$rate" \
		"$(awk -v b="$bytes" -v i="$ins" 'BEGIN { print i ? b / i : 0 }')"
	eval "rate_$mode=$rate; bpi_$mode=$(awk -v b="$bytes" -v i="$ins" 'BEGIN { print i ? b / i : 0 }')"
done
printf '(the QEMU log run single-steps the whole VM: its boot took %ss of wall time)\n' "$qwall"
speed=$(awk -v a="$rate_branch" -v b="$qrate" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
size=$(awk -v a="$bpi_branch" -v b="$qbytes" -v i="$qins" 'BEGIN { q = i ? b / i : 0; printf "%.5f", q ? a / q : 0 }')
echo "targets:"
awk -v s="$speed" 'BEGIN { exit !(s >= 5) }' && m=met || m="NOT MET"
echo "  $m: branch-step speed over QEMU's log ($speed x, target >= 5)"
awk -v s="$size" 'BEGIN { exit !(s <= 0.01) }' && m=met || m="NOT MET"
echo "  $m: trace size over QEMU's log size ($size, target <= 0.01)"
