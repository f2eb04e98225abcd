#!/usr/bin/env bash
# The firmware fuzzer's speed, traced with coverage against the same loop
# untraced in the same boot (make bench; docs/fuzzing.md).
#   fuzz_speed.sh BUILD_DIR     (BOOTS=3; HARNESS_N=20000 DECOMPRESS_N=2000)
#   TRACE_OPTS="..." adds options to the boots (pt.inline_tnt=off, say)
#
# fw.fuzz.bench=N runs the campaign's first N mutants untraced, then the same
# N traced with coverage (same seed, nothing kept: the same inputs), and
# prints the two rates and the traced execution's medians split into the
# target in its window, the trace's stop (pt_trace_end) and the coverage
# decode (pt_coverage_window_end). Two loops: the sample harness
# (tests/efi/fuzz_magic.c, fw.fuzz=image) and the decompress target. The
# ratio is taken per boot (boots differ in speed), median over boots; the
# target is traced at least a sixth of untraced. The coverage decoder runs
# inside those three parts (a PMI's drain in the target, the stop's drain):
# its own time is a fourth column, part of the others.
#
# ICOUNT=1: QEMU counts guest instructions as time (-icount shift=0: 1 ns
# is one instruction), so the figures are instructions and the same on
# every run (one boot is enough): what the wall times above are too noisy
# to show between two builds.
. "$(dirname "$0")/lib.sh"	# build, here, tmp, boot, median
boots=${BOOTS:-3}
harness_n=${HARNESS_N:-20000}
decompress_n=${DECOMPRESS_N:-2000}
common="pt=on pt.coverage=on pt.sink=memory fw.fuzz.seed=1 ${TRACE_OPTS:-}"
qemu=()
unit=us
if [ "${ICOUNT:-0}" = 1 ]; then
	qemu=(-- -icount shift=0,sleep=off)
	unit="k insns"
fi

# field NAME LINE: NAME=value's value from a result: line
field() { sed -nE "s/.*[ (]$1=([0-9]+).*/\1/p" <<<"$2"; }

# One boot of loop $1 with command line $2; its figures appended to $tmp/$1.
boot_loop() {
	local name=$1 log=$tmp/$1.log rate split mean
	boot --cmdline "$2" --log "$log" "${qemu[@]}"
	rate=$(grep -a 'result: fuzz bench target=' "$log")
	split=$(grep -a 'result: fuzz bench split target=' "$log")
	mean=$(grep -a 'result: fuzz bench mean target=' "$log")
	[ -n "$rate" ] && [ -n "$split" ] && [ -n "$mean" ] ||
		{ echo "fuzz_speed: $name: no bench result (log below)" >&2; tail -20 "$log" >&2; exit 2; }
	echo "$(field untraced_rate "$rate") $(field traced_rate "$rate") $(field traced_per_mille "$rate")" \
		"$(field untraced_target_ns "$split") $(field target_ns "$split") $(field stop_ns "$split")" \
		"$(field decode_ns "$split") $(field per_exec_ns "$mean") $(field target_ns "$mean")" \
		"$(field stop_ns "$mean") $(field decode_ns "$mean") $(field loop_ns "$mean")" \
		"$(field decoder_ns "$split") $(field decoder_ns "$mean")" >>"$tmp/$name"
}

for _ in $(seq "$boots"); do
	boot_loop harness "fw.image=\\EFI\\tools\\fuzz_magic.efi fw.fuzz=image fw.fuzz.max_len=4 fw.fuzz.bench=$harness_n $common"
	boot_loop decompress "fw.fuzz=decompress fw.fuzz.bench=$decompress_n $common"
done

col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median; }
us() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1000 }'; }
printf '\nfirmware fuzzer, traced with coverage against untraced, same boot (%s boots, medians%s)\n' "$boots" \
	"$([ "$unit" = us ] || echo '; ICOUNT=1: guest instructions, 1 us = 1000')"
printf '| %-10s | %8s | %10s | %10s | %14s | %11s | %9s | %10s | %15s | %s\n' loop mutants "untraced/s" \
	"traced/s" "traced:untr." "untraced run" "target" "trace stop" "coverage decode" "decoder, in those |"
printf '|%s|\n' "------------|----------|------------|------------|----------------|-------------|-----------|------------|-----------------|--------------------"
status=0
for l in harness decompress; do
	n=$harness_n
	[ $l = decompress ] && n=$decompress_n
	pm=$(col $l 3)
	printf '| %-10s | %8s | %10s | %10s | %14s | %8s us | %6s us | %7s us | %12s us | %15s us |\n' "$l" "$n" \
		"$(col $l 1)" "$(col $l 2)" "1:$(awk -v p="$pm" 'BEGIN { printf "%.1f", p ? 1000 / p : 0 }')" \
		"$(us "$(col $l 4)")" "$(us "$(col $l 5)")" "$(us "$(col $l 6)")" "$(us "$(col $l 7)")" \
		"$(us "$(col $l 13)")"
	echo "result: fuzz_speed loop=$l untraced_rate=$(col $l 1) traced_rate=$(col $l 2) traced_per_mille=$pm" \
		"target_ns=$(col $l 5) stop_ns=$(col $l 6) decode_ns=$(col $l 7) decoder_ns=$(col $l 13)" \
		"mean_per_exec_ns=$(col $l 8) mean_decoder_ns=$(col $l 14) icount=${ICOUNT:-0}" >>"$tmp/results"
	if awk -v p="$pm" 'BEGIN { exit !(p * 6 >= 1000) }'; then
		echo "  $l: traced $(awk -v p="$pm" 'BEGIN { printf "%.2f", p / 1000 }')x untraced: at least a sixth (the target)" >>"$tmp/verdicts"
	else
		echo "  $l: traced $(awk -v p="$pm" 'BEGIN { printf "%.2f", p / 1000 }')x untraced: BELOW the target (a sixth)" >>"$tmp/verdicts"
	fi
done
printf '\nmeans of a traced execution (per exec: the traced pass time over its executions; the loop: the rest;\n'
printf 'the decoder: the coverage decoder, inside the target (its PMIs), the stop and the decode)\n'
printf '| %-10s | %10s | %10s | %10s | %10s | %10s | %10s |\n' loop "per exec" target "trace stop" decode "the loop" \
	"decoder"
printf '|%s|\n' "------------|------------|------------|------------|------------|------------|------------"
for l in harness decompress; do
	printf '| %-10s | %7s us | %7s us | %7s us | %7s us | %7s us | %7s us |\n' "$l" "$(us "$(col $l 8)")" \
		"$(us "$(col $l 9)")" "$(us "$(col $l 10)")" "$(us "$(col $l 11)")" "$(us "$(col $l 12)")" \
		"$(us "$(col $l 14)")"
done
cat "$tmp/verdicts" "$tmp/results"
exit $status
