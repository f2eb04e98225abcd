#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the libFuzzer harnesses built in FUZZ_DIR (make fuzz, make fuzz-smoke).
#
#   tests/fuzz/run.sh fuzz  FUZZ_DIR SECONDS HARNESS...
#   tests/fuzz/run.sh smoke FUZZ_DIR SECONDS HARNESS...
#   tests/fuzz/run.sh replay FUZZ_DIR 0 HARNESS...
#
# fuzz:  each harness fuzzes SECONDS over a scratch copy of its corpus
#        (FUZZ_DIR/work/NAME/corpus: new inputs stay out of the repository)
#        and prints its executions and coverage.
# smoke: each harness first replays its committed corpus (tests/fuzz/corpus/
#        NAME, -runs=0: every seed once, nothing written), then fuzzes SECONDS
#        over a scratch copy; one "PASS fuzz.NAME: N executions" or
#        "FAIL fuzz.NAME: reason" line each, as tests/run-all.sh prints them.
# replay: the committed corpus only (make check's fast tier).
# Harnesses run FUZZ_JOBS at once (default: one per core).
# A crash, leak, sanitizer report or timeout leaves its input in
# FUZZ_DIR/crashes/NAME/ and fails the harness; the exit status is 1 then.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:?usage: run.sh fuzz|smoke|replay FUZZ_DIR SECONDS HARNESS...}
case "$mode" in fuzz|smoke|replay) ;; *) echo "run.sh: unknown mode '$mode' (fuzz, smoke or replay)" >&2; exit 2 ;; esac
dir=${2:?FUZZ_DIR}
seconds=${3:?SECONDS}
shift 3
# -timeout: one input running this long is a hang; -rss_limit_mb: libFuzzer's default
opts=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
status=0

# VALUE of the last "stat::KEY: VALUE" line of LOG
libfuzzer_stat() { sed -nE "s/^stat::$1: *([0-9]+).*/\\1/p" "$2" | tail -n 1; }
# the last "cov: N" and "ft: N" of LOG
last_cov() { grep -oE ' cov: [0-9]+' "$1" | tail -n 1 | grep -oE '[0-9]+'; }
last_ft() { grep -oE ' ft: [0-9]+' "$1" | tail -n 1 | grep -oE '[0-9]+'; }
# why libFuzzer stopped, from LOG: the sanitizer's SUMMARY or libFuzzer's ERROR line
reason() {
	{ grep -m1 -E '^SUMMARY: ' "$1" || grep -m1 -E '^==[0-9]+== ERROR: libFuzzer' "$1" ||
	  grep -m1 -E 'ERROR|Test unit written' "$1" || echo "exit status $2"; } |
		sed -E 's/^==[0-9]+== //; s/^SUMMARY: //'
}

# one harness's verdict line, printed at the end of its output
verdict() { printf '%s\n' "$1" >"$dir/work/$name.verdict"; }

one() {
	local name=$1 bin seeds work crashes nseeds rc replayed start secs execs cov ft ncorpus
	bin=$dir/$name
	seeds=$here/tests/fuzz/corpus/$name
	work=$dir/work/$name
	crashes=$dir/crashes/$name
	rm -rf "$work"
	mkdir -p "$work/corpus" "$crashes"
	[ -d "$seeds" ] && cp "$seeds"/* "$work/corpus/" 2>/dev/null
	nseeds=$(find "$work/corpus" -type f | wc -l)
	if [ ! -x "$bin" ]; then
		verdict "FAIL fuzz.$name: $bin is not built"
		return
	fi

	if [ "$mode" != fuzz ]; then
		"$bin" "${opts[@]}" -runs=0 -artifact_prefix="$crashes/" "$seeds" >"$work/replay.log" 2>&1
		rc=$?
		replayed=$(libfuzzer_stat number_of_executed_units "$work/replay.log")
		if [ "$rc" != 0 ]; then
			verdict "FAIL fuzz.$name: replaying the corpus: $(reason "$work/replay.log" "$rc")"
			tail -n 30 "$work/replay.log"
			return
		fi
		if [ "$mode" = replay ]; then
			verdict "PASS fuzz.$name: $replayed executions (the corpus replayed)"
			return
		fi
	fi

	start=$(date +%s)
	"$bin" "${opts[@]}" -max_total_time="$seconds" -artifact_prefix="$crashes/" \
		"$work/corpus" >"$work/fuzz.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	execs=$(libfuzzer_stat number_of_executed_units "$work/fuzz.log")
	cov=$(last_cov "$work/fuzz.log")
	ft=$(last_ft "$work/fuzz.log")
	ncorpus=$(find "$work/corpus" -type f | wc -l)
	if [ "$rc" != 0 ]; then
		verdict "FAIL fuzz.$name: $(reason "$work/fuzz.log" "$rc") (input in $crashes/, log $work/fuzz.log)"
		# the stack, without libFuzzer's and the sanitizers' own frames
		grep -E '^ +#[0-9]+ 0x' "$work/fuzz.log" |
			grep -vE 'fuzzer::|__sanitizer|__asan|__ubsan|libc\.so' |
			awk '{ print } /LLVMFuzzerTestOneInput/ { exit }' | head -n 16
		return
	fi
	if [ "$mode" = smoke ]; then
		verdict "PASS fuzz.$name: $((execs + replayed)) executions"
		echo "fuzz.$name: replayed $nseeds seeds ($replayed executions), then ${secs}s: $execs executions, cov ${cov:-?}, ft ${ft:-?}"
	else
		verdict "fuzz.$name: ${execs:-?} executions in ${secs}s ($((${execs:-0} / (secs ? secs : 1)))/s), cov ${cov:-?}, ft ${ft:-?}, corpus $nseeds -> $ncorpus inputs (in $work/corpus)"
	fi
}

# Up to FUZZ_JOBS harnesses at once (default: one per core), each into its own
# files; their output, then their verdicts, in the order the harnesses were given.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
running=0
mkdir -p "$dir/work"
for name in "$@"; do
	rm -f "$dir/work/$name.verdict"
	( one "$name" >"$dir/work/$name.out" 2>&1 ) &
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
for name in "$@"; do
	cat "$dir/work/$name.out"
done
for name in "$@"; do
	if [ -s "$dir/work/$name.verdict" ]; then
		cat "$dir/work/$name.verdict"
		grep -q '^FAIL ' "$dir/work/$name.verdict" && status=1
	else
		echo "FAIL fuzz.$name: no verdict (the harness's run ended early: $dir/work/$name.out)"
		status=1
	fi
done
exit $status
