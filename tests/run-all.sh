#!/usr/bin/env bash
# Run the host tests and the QEMU smoke tests; end with "N passed, N failed".
#   run-all.sh [--fast | --full] [--host-only | --qemu-only] [--no-oracle] [--only GLOB] [-j N]
# --fast: the fast tier (make check): every host test, each fuzz harness's
#   corpus replayed (no fuzzing), the QEMU cases flagged "fast" in cases.sh,
#   and the oracle's fast configurations (oracle.sh --fast).
# --full: more than make test: Linux perf's decoder and the call tree checked
#   on every traced case (make test: on the "fast" and "crosscheck" ones, see
#   cases.sh), and every oracle configuration (oracle.sh --full).
# --only GLOB: only the QEMU cases whose name matches (shell patterns, '|' between).
# -j N: how many host tests, harnesses and QEMU boots run at once (nproc).
# The QEMU part ends with the fidelity oracle (tests/qemu/oracle.sh): each of
# its configurations counts as one test.
set -uo pipefail
shopt -s extglob
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
# make's BUILD spelled as the Makefile's default when it is the default
# folder: the dependency (.d) files name their targets as BUILD spelled them,
# and an absolute BUILD here hid a header's change from a later
# `make build/fuzz/...` by hand (and the reverse): objects of two layouts.
mk_build=$build
[ "$build" = "$here/build" ] && mk_build=build
mode=all jobs=$(nproc 2>/dev/null || echo 2) oracle=1 only='*' fast=0 full=0
while [ $# -gt 0 ]; do
	case "$1" in
	--fast) fast=1; shift ;;
	--full) full=1; shift ;;
	--no-oracle) oracle=0; shift ;;
	--host-only) mode=host; shift ;;
	--qemu-only) mode=qemu; shift ;;
	--only) only=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	*) echo "run-all.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ $fast = 1 ] && [ $full = 1 ] && { echo "run-all.sh: --fast or --full, not both" >&2; exit 2; }
# Every checker (perf_check.py, calltree_check.py, coverage_check.py, ...,
# the oracle's comparisons) runs under this memory bound, in KiB of address
# space a process (ulimit -v; tests/qemu/checked.sh): 2 GiB, twenty times
# what the largest of make test's traces needs (perf_check.py and
# calltree_check.py read both decoders as streams: under 100 MB whatever the
# trace's length), so a runaway check fails with its reason instead of
# taking the machine's memory (and the OOM killer a QEMU, or the run).
export CHECK_MEM_KB=${CHECK_MEM_KB:-$((2 * 1024 * 1024))}
# shellcheck source=tests/qemu/checked.sh
. "$here/tests/qemu/checked.sh"
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1${2:+: $2}"; }

# Each host test binary runs on its own, up to $jobs at once; their results
# are read in name order afterwards, so the summary does not depend on timing.
run_host() {
	local t name out status notok dir=$build/host-results running=0
	rm -rf "$dir"; mkdir -p "$dir"
	for t in "$build"/host/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		( CMOCKA_MESSAGE_OUTPUT=TAP TOPAZ_QUIET=1 "$t" >"$dir/$name.out" 2>&1
		  echo $? >"$dir/$name.status" ) &
		running=$((running + 1))
		if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
	done
	wait
	for t in "$dir"/*.out; do
		[ -e "$t" ] || continue
		name=$(basename "$t" .out)
		out=$(<"$t")
		status=$(<"$dir/$name.status")
		while IFS= read -r line; do
			case "$line" in
			"ok "*) pass "host.$name.${line#ok [0-9]* - }" ;;
			"not ok "*) fail "host.$name.${line#not ok [0-9]* - }" ;;
			esac
		done <<<"$out"
		notok=$(grep -c '^not ok ' <<<"$out")
		if [ "$status" != 0 ] && [ "$notok" = 0 ]; then
			fail "host.$name" "exited $status with no failing test (crash?)"
			echo "$out" | tail -20
		elif [ "$notok" != 0 ]; then
			echo "$out" | grep -v '^ok ' | tail -40
		fi
	done
}

# The suite's own guarantees: a checker that crashes, is killed, runs out
# of its memory bound or prints no verdict is a FAIL that says so (checked(),
# tests/qemu/checked.sh, on stand-ins for a checker), and perf_check.py
# compares a long trace within a small bound (tests/qemu/perf_check_long.py).
run_suite() {
	local out bad="" want cmd
	while IFS='|' read -r want cmd; do
		out=$(CHECK_MEM_KB=65536 checked t sh -c "$cmd" | grep -E '^(PASS|FAIL) ')
		[[ $out == "$want"* ]] && [ "$(wc -l <<<"$out")" = 1 ] ||
			bad="${bad:+$bad; }'$cmd' gave '${out//$'\n'/ / }', not '$want...'"
	done <<-'EOF'
	PASS t: fine|echo 'PASS t: fine'
	FAIL t: wrong|echo 'FAIL t: wrong'; exit 1
	FAIL t: killed by SIGKILL; its last line: PASS t|echo 'PASS t'; kill -KILL $$
	FAIL t: killed by SIGSEGV|kill -SEGV $$
	FAIL t: exit status 0 without a verdict; its last line: working|echo working
	FAIL t: exit status 3 after its verdict|echo 'PASS t'; exit 3
	FAIL t: exit status 1 without a verdict (the suite's memory bound: 64 MiB a process)|python3 -c 'bytearray(128 << 20)'
	EOF
	if [ -z "$bad" ]; then
		pass "suite.checked: a crash, a signal, the memory bound, no verdict: each a FAIL with its reason"
	else
		fail suite.checked "$bad"
	fi
	tally "" < <(checked suite.perf-check-long python3 "$here/tests/qemu/perf_check_long.py" \
		--name suite.perf-check-long)
	# make help names every .PHONY target of the Makefile
	local help targets missing=""
	help=$(make --no-print-directory -C "$here" help 2>&1)
	targets=$(make --no-print-directory -C "$here" -pn -f Makefile .DEFAULT 2>/dev/null |
		sed -n 's/^\.PHONY: //p' | tr ' ' '\n' | sort -u)
	for t in $targets; do
		grep -qE "(^|[ ;,])$t([ :,;]|$)" <<<"$help" || missing="$missing $t"
	done
	if [ -n "$targets" ] && [ -z "$missing" ]; then
		pass "suite.make-help: make help names every .PHONY target ($(wc -w <<<"$targets"))"
	else
		fail suite.make-help "make help does not name:${missing:- (no .PHONY targets found)}"
	fi
	# make bench's decoders link ptdecode's library objects, which make test
	# builds only inside the tool: they must still link (a helper once moved
	# into a file they leave out broke make bench unseen)
	local out
	if out=$(make --no-print-directory -C "$here" BUILD="$mk_build" "$mk_build/bench/ipt-bare" \
		"$mk_build/bench/cov-bare" 2>&1); then
		pass "suite.bench-link: make bench's ipt-bare and cov-bare link against ptdecode's objects"
	else
		fail suite.bench-link "$(grep -m3 -E 'error|undefined' <<<"$out" | tr '\n' ' ')"
	fi
}

# The map's rules (docs/layers.rules) against the sources' includes and the
# kernel objects' calls, and the check's own test: it must name an include
# and a call added against the rules.
run_layers() {
	tally "" < <(checked layers python3 "$here/scripts/check-layers.py" --objects "$build/k"
		     checked layers.self-test python3 "$here/scripts/check-layers.py" --self-test \
			     --objects "$build/k")
}

# Count the "PASS NAME..." and "FAIL NAME..." lines of standard input; echo
# the others, after PREFIX.
tally() {
	local line
	while IFS= read -r line; do
		case "$line" in
		PASS\ *) pass "${line#PASS }" ;;
		FAIL\ *) fail "${line#FAIL }" ;;
		*) echo "$1$line" ;;
		esac
	done
}

# The libFuzzer harnesses (make fuzz-smoke): each replays its committed
# corpus (seeds and every input that once crashed or hung it), then fuzzes
# for a few seconds; one PASS/FAIL line each.
run_fuzz_smoke() {
	local line out n=0
	local target=fuzz-smoke
	[ $fast = 1 ] && target=fuzz-replay
	out=$(make --no-print-directory -j"$jobs" -C "$here" BUILD="$mk_build" FUZZ_JOBS="$jobs" $target 2>&1)
	while IFS= read -r line; do
		case "$line" in
		PASS\ fuzz.*) pass "${line#PASS }"; n=$((n + 1)) ;;
		FAIL\ fuzz.*) fail "${line#FAIL }"; n=$((n + 1)) ;;
		esac
	done <<<"$out"
	if [ $n = 0 ]; then
		fail fuzz "make $target gave no result"
		tail -15 <<<"$out"
	fi
}

# Linux perf on the perf.data exports of fuzz_perfdata's committed corpus
# (tests/fuzz/perf_corpus.sh: no signal, no "failed to process"); one line.
run_perf_corpus() {
	local out
	out=$(make --no-print-directory -C "$here" BUILD="$mk_build" perf-corpus 2>&1)
	if grep -qE '^(PASS|FAIL) ' <<<"$out"; then
		tally "" < <(grep -E '^(PASS|FAIL) |^  ' <<<"$out")
	else
		fail perf-corpus "make perf-corpus gave no result"
		tail -15 <<<"$out"
	fi
}

# KEY's value in the "result: WHAT key=value ..." line of FILE (the kernel's
# log or ptdecode --stats), empty when there is none.
result() {
	sed -nE "s/.*result: $1 (.* )?$2=([0-9]+).*/\\2/p" "$3" | tail -n 1
}

# Whether the case declared CHECK (a word of its flags in cases.sh), and the
# value of CHECK=VALUE.
has() { [[ ",$flags," == *",$1,"* || ",$flags," == *",$1="* ]]; }
value() { sed -nE "s/(^|.*,)$1=([^,]*).*/\\2/p" <<<"$flags"; }

# A traced case (flag "trace"): the container decodes with no error, and every
# byte the trace unit produced was delivered or reported lost, then the
# checks the case declares (see cases.sh's header). Prints what is wrong.
# Reads the machine-readable "result:" lines of the kernel and of ptdecode.
check_trace() {
	local clean=$1 tpz=$2 base=$3 stats produced lost delivered recorded pmis pad problems
	local decode_errors bad
	stats=$base.stats
	# (--coverage-check rides on the same decode: coverage_verdict reads it)
	"$build/tools/ptdecode" --elf "$build/topaz.so" --stats --coverage-check "$tpz" >"$stats" 2>&1
	produced=$(result trace.unit produced "$clean")
	lost=$(result trace.unit lost "$clean")
	pad=$(result trace.session padding "$clean")
	delivered=$(result decode bytes "$stats")
	recorded=$(result decode lost "$stats")
	pmis=$(result decode pmis "$stats")
	problems=$(result decode problems "$stats")
	decode_errors=$(result decode decode_errors "$stats")
	bad=$(result decode bad_packets "$stats")
	[ -n "$produced" ] || { echo "no trace unit totals in the log; "; return; }
	if has ends-at-fault; then
		# a panic in traced code: the decoded trace ends where the fault was
		local rip last
		rip=$(sed -nE 's/.*RIP: [0-9a-f]+:0x[0-9a-f]+ ([^ ]+)$/\1/p' "$clean" | head -1)
		last=$("$build/tools/ptdecode" --elf "$build/topaz.so" --insn "$tpz" 2>/dev/null |
			sed -nE 's/^\[disabled at ([^]]+)\]$/\1/p' | tail -n 1)
		[ -n "$rip" ] && [ "$rip" = "$last" ] ||
			echo "the trace ends at '${last:-nothing}', the fault was at '${rip:-?}'; "
	fi
	if has ends-at-crash; then
		# a fuzz crash (fw.fuzz=): the decoded trace ends at its site, the
		# faulting instruction (the harness's symbols from $build/efi)
		local site end
		site=$(sed -nE 's/.*result: fuzz crash .*site=([^ ]+).*/\1/p' "$clean" | tail -n 1)
		end=$("$build/tools/ptdecode" --elf "$build/topaz.so" --symbols "$build/efi" --insn "$tpz" 2>/dev/null |
			sed -nE 's/^\[disabled at ([^]]+)\]$/\1/p' | tail -n 1)
		[[ "$site" =~ ^[^+]+\+(0x)?[0-9a-f]+$ && "$end" =~ ^[^+]+\+(0x)?[0-9a-f]+$ &&
		   "${site%+*}" = "${end%+*}" && $((${site##*+})) = $((${end##*+})) ]] ||
			echo "the trace ends at '${end:-nothing}', the crash was at '${site:-?}'; "
	fi
	if has ends-in-pmi; then
		# a panic inside a PMI: the trace ends where that PMI interrupted traced code
		"$build/tools/ptdecode" --elf "$build/topaz.so" --insn "$tpz" 2>/dev/null | tail -n 2 |
			head -n 1 | grep -q '^\[disabled at ' ||
			echo "the trace does not end at the interrupted instruction; "
	fi
	if has snapshot; then
		# the flight recorder: only its last bytes, so no totals to compare
		[ "$problems" = 0 ] || echo "container problems; "
		[ "$decode_errors" = 0 ] || echo "libipt decode errors; "
		return
	fi
	[ -n "$delivered" ] || { echo "ptdecode could not read the container; "; return; }
	if has stop-loss; then
		# The ToPA filled and STOP held: what the trace unit dropped is
		# in the container as LOST gaps, and the decoder says what it cost.
		local trunc status
		trunc=$(result trace.session truncations "$clean")
		[ "${trunc:-0}" -ge 1 ] || echo "the ToPA never filled (no truncation); "
		[ "$recorded" = "${lost:-x}" ] || echo "the container records $recorded lost bytes, the trace unit dropped $lost; "
		"$build/tools/ptdecode" --elf "$build/topaz.so" --check "$tpz" >"$base.check" 2>&1
		status=$?
		# the code run while it was stopped is missing, whatever the bytes
		[ $status = 1 ] || echo "ptdecode exited $status on a trace that stopped; "
		grep -q "a gap before stream offset [0-9a-fx]*, ${lost:-x} bytes lost\|a gap before stream offset [0-9a-fx]*, no bytes lost\|bytes lost after the last" "$base.check" ||
			echo "ptdecode did not report the gap ($lost bytes lost); "
		[ "$decode_errors" = 0 ] || echo "libipt decode errors; "
		[ $((delivered - ${pad:-0} + recorded)) = "$produced" ] ||
			echo "produced $produced != delivered $delivered - padding ${pad:-0} + reported lost $recorded; "
		return
	fi
	[ "$problems" = 0 ] || echo "container problems; "
	[ "$bad" = 0 ] || echo "bad packets; "
	[ "$decode_errors" = 0 ] || echo "libipt decode errors; "
	# the driver's own padding (PAD packets) is delivered but not produced
	[ $((delivered - ${pad:-0} + recorded)) = "$produced" ] ||
		echo "produced $produced != delivered $delivered - padding ${pad:-0} + reported lost $recorded; "
	# A STOP on single-entry ToPA can land exactly at a region's end with
	# nothing lost (the driver still flags it TRUNCATED); what matters is
	# that the trace unit dropped nothing.
	[ "${lost:-0}" = 0 ] || echo "the trace unit dropped $lost bytes while stopped; "
	local missed
	missed=$(result trace.engine missed "$clean")
	[ "${missed:-0}" = 0 ] || echo "a traced CPU ran past $missed INT3s (stale code); "
	[ "${pmis:-0}" -ge 2 ] || echo "only ${pmis:-0} PMIs; "
	if has depth; then
		# run=demo has the recursion workload: 100 calls deep for real
		# (past RET compression's 64 entries), as the decoded stack shows
		local depth want
		depth=$(result decode depth "$stats")
		want=$(value depth)
		[ "${depth:-0}" -ge "$want" ] || echo "decoded call depth ${depth:-?}, the recursion goes $want deep; "
	fi
	if has storm; then
		# a storm: most of a million instructions (seven slab runs took a
		# million before kmalloc's fast path took 100 instructions off each
		# kmalloc/kfree pair), a PMI every 4K, the timer in traced code (storm=N: at least N of its interrupts arrived there;
		# translated code runs ten times faster than branch-stepped, so
		# fewer of them land in it)
		local insns async min_async
		insns=$(result decode insns "$stats")
		async=$(result trace.engine async "$clean")
		min_async=$(value storm)
		[ "${insns:-0}" -ge 900000 ] || echo "only ${insns:-0} instructions decoded, a storm traces 900,000 or more; "
		[ "${pmis:-0}" -ge 40 ] || echo "only ${pmis:-0} PMIs in the storm; "
		[ "${async:-0}" -ge "$min_async" ] || echo "only ${async:-0} interrupts arrived in traced code; "
	fi
	if has fw || has fw-aborted; then
		# the firmware phase: the decode is what the engine ran, module by
		# module (fw-aborted: the timeout's abort ends inside a block, as a
		# panic does, so the engine's count is not the decoder's)
		local k_insns d_insns module sym
		k_insns=$(result "trace.cpu cpu=0" insns "$clean")
		d_insns=$(result decode insns "$stats")
		has fw-aborted || [ "${d_insns:-x}" = "${k_insns:-y}" ] ||
			echo "the engine ran ${k_insns:-?} instructions, the decoder found ${d_insns:-?}; "
		grep -qE '^ +[0-9]+ +[0-9.]+%  DxeCore$' "$stats" || echo "no DxeCore among the decoded modules; "
		if has module; then
			module=$(value module)
			grep -qE "^ +[0-9]+ +[0-9.]+%  $module\$" "$stats" ||
				echo "no module '$module' (the user's image) decoded; "
		fi
		if has symbols; then
			# decoded with the image's own symbols: its functions by name
			sym=$(value symbols)
			"$build/tools/ptdecode" --elf "$build/topaz.so" --symbols "$build/efi" --stats "$tpz" 2>&1 |
				grep -qF "%  $sym" || echo "--symbols $build/efi: no $sym in the decode; "
		fi
	fi
	if has ptwrite; then
		[ "$("$build/tools/ptdecode" --elf "$build/topaz.so" --insn "$tpz" 2>/dev/null |
			grep -c '^\[ptwrite: ')" -gt 0 ] || echo "no PTWRITE in the decoded flow; "
	fi
	if has each-cpu; then
		# every CPU traced: each CPU's stream decodes to what its engine
		# ran, with its bytes delivered or reported lost, each with PMIs
		local online cpu n=0 k_del k_lost k_insns k_pmis d_bytes d_lost d_insns
		online=$(sed -nE 's/.*smp: ([0-9]+) of [0-9]+ CPUs online.*/\1/p' "$clean" | head -1)
		for cpu in $(sed -nE 's/.*result: trace\.cpu cpu=([0-9]+) .*/\1/p' "$clean"); do
			n=$((n + 1))
			k_del=$(result "trace.cpu cpu=$cpu" delivered "$clean")
			k_lost=$(result "trace.cpu cpu=$cpu" lost "$clean")
			k_insns=$(result "trace.cpu cpu=$cpu" insns "$clean")
			k_pmis=$(result "trace.cpu cpu=$cpu" pmis "$clean")
			d_bytes=$(result "decode.cpu cpu=$cpu" bytes "$stats")
			d_lost=$(result "decode.cpu cpu=$cpu" lost "$stats")
			d_insns=$(result "decode.cpu cpu=$cpu" insns "$stats")
			[ "${d_bytes:-x}" = "$k_del" ] && [ "${d_lost:-x}" = "$k_lost" ] ||
				echo "CPU $cpu: the kernel delivered $k_del and lost $k_lost bytes, the decoder read ${d_bytes:-?} and ${d_lost:-?}; "
			# (a panic stops the other CPUs inside a block: the engine
			# counts a block's instructions at its end)
			has ends-at-fault && continue
			[ "${d_insns:-x}" = "$k_insns" ] ||
				echo "CPU $cpu: the engine ran $k_insns instructions, the decoder found ${d_insns:-?}; "
			[ "${k_pmis:-0}" -ge 1 ] || echo "CPU $cpu: no PMI; "
		done
		[ "$n" = "${online:-?}" ] || echo "$n CPUs traced, ${online:-?} online; "
	fi
}

# The coverage decoder (kernel/coverage/) against libipt's instruction flow
# on the case's container: ptdecode --coverage-check in check_trace()'s
# --stats run (FILE) printed its verdict, and its first differences.
coverage_verdict() {
	local name=$1 stats=$2 line
	line=$(sed -n 's/^result: coverage-check //p' "$stats" | tail -n 1)
	case "$line" in
	*match=yes*) echo "PASS qemu.coverage.$name" ;;
	'') echo "FAIL qemu.coverage.$name: no coverage-check result ($(grep -v '^ptdecode: ' "$stats" | tail -n 1))" ;;
	*) echo "FAIL qemu.coverage.$name: the coverage decoder and libipt differ: $line; $(grep -m 1 -A 2 '^coverage-check: \(block\|edge\) ' "$stats" | tr '\n' ' ')" ;;
	esac
}

# make run's end on a case's boot (flag "makerun"): the last run's outputs,
# planted in RUN (the case's make-run folder) before the boot, must be gone
# (scripts/trace-summary.sh --clean); scripts/trace-summary.sh decodes what
# the boot left in RUN as make run does (debugcon, serial, the files boot.sh
# --fetch took from the boot volume). Without a trace it says only that; with
# one it writes no listing, and with --insn (INSN=1) writes insn.txt. Then a
# boot that could not start (boot.sh refused to): --clean leaves nothing of
# an earlier run to decode. Prints what is wrong.
plant_stale() {
	local run=$1
	mkdir -p "$run/trace" "$run/coverage" "$run/volume" "$run/perf.data.images"
	for f in trace/insn.txt trace/calls.txt coverage/all.drcov perf.data perf.data.images/fw.so \
		volume/trace-0009.tpz trace.tpz serial.log; do
		echo -n "stale: an earlier run's" >"$run/$f"
	done
}
stale_left() {
	grep -rl '^stale: ' "$1" 2>/dev/null | tr '\n' ' '
}
check_makerun() {
	local run=$1 log=$2 summary=$1/summary.txt left
	cp "$log" "$run/serial.log"	# (make run's boot.sh --log)
	"$here/scripts/trace-summary.sh" "$build" "$run" >"$summary" 2>&1
	left=$(stale_left "$run")
	[ -z "$left" ] || echo -n "an earlier run's outputs left: $left; "
	check_makerun_outputs "$run" "$summary"
	summary=$run/summary-nostart.txt
	plant_stale "$run"
	"$here/scripts/trace-summary.sh" --clean "$build" "$run"
	"$here/scripts/trace-summary.sh" "$build" "$run" >"$summary" 2>&1
	left=$(stale_left "$run")
	[ -z "$left" ] && grep -q '^trace: none captured' "$summary" ||
		echo -n "a boot that could not start: '$(head -n 1 "$summary")', an earlier run's outputs left: ${left:-none}; "
}
check_makerun_outputs() {
	local run=$1 summary=$2 n
	if has espfile; then
		grep -qF 'trace: \EFI\topaz\trace-0001.tpz from the boot volume' "$summary" ||
			echo -n "make run did not decode the file on the boot volume: $(head -1 "$summary"); "
	fi
	if grep -q '^trace: none captured' "$summary"; then
		[[ ",$flags," == *,trace,* ]] && { echo -n "make run found no trace: $(head -1 "$summary"); "; return; }
		n=$(wc -l <"$summary")
		[ "$n" = 1 ] || echo -n "no trace, but the summary says more than that ($n lines: $(sed -n 2p "$summary")); "
		[ ! -e "$run/trace" ] && [ ! -e "$run/perf.data" ] && [ ! -e "$run/coverage" ] ||
			echo -n "no trace, but outputs were written; "
		return
	fi
	grep -q '^outputs in .*: calls.txt [0-9.]* [KMG]*B, stats.txt' "$summary" &&
		grep -q '^not written: insn.txt, every instruction (about ' "$summary" &&
		[ -s "$run/trace/calls.txt" ] && [ -s "$run/perf.data" ] ||
		echo -n "make run's outputs are not all there: $(grep -m1 '^outputs in' "$summary"); "
	[ ! -e "$run/trace/insn.txt" ] && [ ! -e "$run/trace/packets.txt" ] ||
		echo -n "make run wrote the listings without INSN=1; "
	"$here/scripts/trace-summary.sh" --insn "$build" "$run" >"$run/summary-insn.txt" 2>&1
	[ -s "$run/trace/insn.txt" ] && grep -q '^outputs in .*, insn.txt [0-9.]* [KMG]*B' "$run/summary-insn.txt" ||
		echo -n "make run INSN=1 wrote no insn.txt; "
	rm -f "$run/trace/insn.txt"	# (a hundred megabytes)
}

# One QEMU case: writes its verdict lines to $dir/NAME.result
qemu_case() {
	local name=$1 cmdline=$2 want=$3 patterns=$4 dir=$5 flags=$6
	local log=$dir/$name.log res=$dir/$name.result status plan seen p clean f
	local tpz=/dev/null opts=() unknown="" run=$dir/$name.run src
	# ("trace", not "trace=none": that one says why the trace is not checked)
	[[ ",$flags," == *,trace,* ]] && tpz=$dir/$name.tpz
	opts=(--debugcon "$tpz")
	if has makerun; then
		# as make run boots: its trace.tpz, the volume's files fetched
		plant_stale "$run"
		"$here/scripts/trace-summary.sh" --clean "$build" "$run"
		opts=(--debugcon "$run/trace.tpz" --fetch "$run/volume")
	fi
	IFS=',' read -ra f <<<"$flags"
	for p in "${f[@]}"; do
		case "$p" in
		shell) opts+=(--via-shell) ;;
		cmdline=printf|cmdline=utf16) opts+=(--cmdline-file "${p#cmdline=}") ;;
		nodebugcon) opts+=(--no-debugcon) ;;
		mem=*) opts+=(--mem "${p#mem=}") ;;
		smp=*) opts+=(--smp "${p#smp=}") ;;
		# the trace is a file on the boot volume (pt.sink=file): make run fetches it
		espfile) opts+=(--no-debugcon --fetch "$run/volume") ;;
		# the sample image as a user's own, NAME.efi with NAME.so beside it, added as
		# make run EFI= adds it; make run's summary (scripts/trace-summary.sh) is
		# checked with the log
		user-efi=?*)
			local user=${p#user-efi=}
			mkdir -p "$dir/$name.user"
			cp "$build/efi/hello.efi" "$dir/$name.user/$user.efi"
			cp "$build/efi/hello.so" "$dir/$name.user/$user.so"
			opts+=(--efi "$dir/$name.user/$user.efi" --esp-files "$dir/$name.files") ;;
		makerun|fast|crosscheck|trace|trace=none|ends-at-fault|ends-at-crash|ends-in-pmi|snapshot|stop-loss|ptwrite|each-cpu|fw|fw-aborted) ;;
		depth=+([0-9])|storm=+([0-9])|module=?*|symbols=?*|coverage|coverage=?*) ;;
		*) unknown="${unknown:+$unknown, }'$p'" ;;
		esac
	done
	if [ -n "$unknown" ]; then
		# (a '|' inside a pattern also lands here: it splits the line's fields)
		echo "FAIL qemu.$name: unknown flag $unknown in tests/qemu/cases.sh" >"$res"
		return
	fi
	local t0=$SECONDS t1 c0 c1 c2
	cpu_ticks c0
	"$here/tests/qemu/boot.sh" "${opts[@]}" --cmdline "$cmdline" --log "$log" \
		--timeout 180 >"$dir/$name.out" 2>&1
	status=$?
	t1=$SECONDS
	cpu_ticks c1
	# the case's checks on a copy (check_makerun ends with the folder cleared)
	if { has makerun || has espfile; } && [ "$tpz" != /dev/null ]; then
		src=$run/trace.tpz
		has espfile && src=$run/volume/trace-0001.tpz
		cp "$src" "$tpz" 2>/dev/null || : >"$tpz"
	fi
	clean=$dir/$name.clean
	sed 's/\x1b\[[0-9;?=]*[a-zA-Z]//g; s/\r//g' "$log" >"$clean" 2>/dev/null
	if has user-efi; then
		# make run's end, in a build folder of the case's own
		local mr=$dir/$name.run
		mkdir -p "$mr"
		ln -sfn "$build/tools" "$mr/tools"
		ln -sfn "$build/topaz.so" "$mr/topaz.so"
		ln -sfn "$build/efi" "$mr/efi"
		ln -sfn "$dir/$name.files" "$mr/esp-files"
		cp "$tpz" "$mr/trace.tpz"
		cp "$log" "$mr/serial.log"
		"$here/scripts/trace-summary.sh" "$mr" >"$dir/$name.summary" 2>&1
		cat "$dir/$name.summary" >>"$clean"
		rm -rf "$mr" "$dir/$name.user"
	fi
	{
		grep -E '^\[[ 0-9.]+\] ktest: (PASS|FAIL) ' "$clean" | sed -E 's/^\[[ 0-9.]+\] ktest: (PASS|FAIL) (.*)$/\1 qemu.'"$name"'.\2/'
		local verdict="" why=""
		case $status in
		"$want") ;;
		124) why="hang: no power-off within the time limit" ;;
		*) why="exit status $status, expected $want" ;;
		esac
		if grep -q 'PANIC:\|Kernel panic' "$clean" && [ "$want" = 33 ]; then
			why="${why:+$why; }panic"
		fi
		plan=$(sed -nE 's/^\[[ 0-9.]+\] ktest: plan ([0-9]+)$/\1/p' "$clean" | tail -1)
		if [ -n "$plan" ]; then
			seen=$(grep -cE '^\[[ 0-9.]+\] ktest: (PASS|FAIL) ' "$clean")
			[ "$seen" = "$plan" ] || why="${why:+$why; }$seen of $plan result lines"
		fi
		IFS=';' read -ra pats <<<"$patterns"
		for p in "${pats[@]}"; do
			case "$p" in
			'') ;;
			!*) ! grep -qF -- "${p#!}" "$clean" || why="${why:+$why; }unexpected '${p#!}'" ;;
			*) grep -qF -- "$p" "$clean" || why="${why:+$why; }missing '$p'" ;;
			esac
		done
		if [ "$tpz" != /dev/null ] && [ ! -s "$tpz" ] && grep -qa '@TPZ-BEGIN' "$log"; then
			# pt.sink=serial: the framed container is in the console log
			"$build/tools/ptdecode" --extract-serial "$log" -o "$tpz" >"$dir/$name.extract" 2>&1
		fi
		[ "$tpz" != /dev/null ] && why="${why:+$why; }$(check_trace "$clean" "$tpz" "$dir/$name")"
		has makerun && why="${why:+$why; }$(check_makerun "$run" "$log")"
		# a boot that traced must say what its trace is checked for
		if [ "$tpz" = /dev/null ] && ! has trace=none && grep -q 'result: trace\.unit ' "$clean"; then
			why="${why:+$why; }the boot made a trace: declare 'trace' (or 'trace=none', with why) in cases.sh"
		fi
		why=${why%; }
		if [ -z "$why" ]; then echo "PASS qemu.$name"; else echo "FAIL qemu.$name: $why"; fi
		# the same trace through Linux perf's decoder (tests/qemu/perf_check.py),
		# and the call tree against a stack rebuilt from the instruction list:
		# on the cases flagged fast or crosscheck (each trace shape once: a
		# storm, a loss, a snapshot, a panic, several CPUs, the firmware
		# phase's modules), on all with --full (docs/developing.md)
		if [ "$tpz" != /dev/null ] && [ -s "$tpz" ]; then
			coverage_verdict "$name" "$dir/$name.stats"
			if [ $full = 1 ] || has fast || has crosscheck; then
				checked "qemu.perf.$name" python3 "$here/tests/qemu/perf_check.py" \
					--ptdecode "$build/tools/ptdecode" --elf "$build/topaz.so" --container "$tpz" \
					--name "qemu.perf.$name"
				local out
				out=$(checked "qemu.calltree.$name" python3 "$here/tests/qemu/calltree_check.py" \
					--name "qemu.calltree.$name" "$build/tools/ptdecode" "$build/topaz.so" "$tpz")
				printf '%s\n' "$out" >"$dir/$name.calltree"	# the differences, if any
				grep -E '^(PASS|FAIL) ' <<<"$out"
			fi
			# ptdecode --coverage: drcov as its readers parse it, lcov
			# through genhtml (the kernel's, or coverage=MODULE's with
			# the sample images' symbols)
			if has coverage; then
				local cov=(--lcov topaz.so)
				[ -n "$(value coverage)" ] && cov=(--symbols "$build/efi" --lcov "$(value coverage)")
				# pt.coverage=on: the kernel's own result, computed again here
				grep -q 'result: coverage cpu=' "$clean" && cov+=(--guest "$clean")
				checked "qemu.coverage-report.$name" python3 "$here/tests/qemu/coverage_check.py" \
					--name "qemu.coverage-report.$name" --ptdecode "$build/tools/ptdecode" \
					--elf "$build/topaz.so" "${cov[@]}" --out "$dir/$name.coverage" "$tpz" |
					grep -E '^(PASS|FAIL) '
			fi
		fi
	} >"$res"
	cpu_ticks c2
	# wall time (a loaded host stretches it) and CPU time (it does not)
	echo "$((SECONDS - t0)) $name (boot $((t1 - t0)) s, checks $((SECONDS - t1)) s;" \
		"CPU: boot $(cpu_secs $((c1 - c0))) s, checks $(cpu_secs $((c2 - c1))) s)" >"$dir/$name.time"
}

# cases.sh's lines, the longest cases first (as oracle.sh orders its
# configurations), so that the last to finish are short and no core waits
# alone at the end: the firmware phase's fuzzing (a minute or two), then
# traced boots on several CPUs or in the firmware phase, then the other traced
# ones, then the rest; in the file's order within each.
cases_longest_first() {
	awk -F'|' '/^[^#]/ { w = 0
		if ($2 ~ /fw\.fuzz\.runs=/) w = 3
		else if ($5 ~ /(^|,)trace(,|$)/) w = ($2 ~ /fw\./ || $5 ~ /smp=/) ? 2 : 1
		printf "%d|%s\n", w, $0 }' "$here/tests/qemu/cases.sh" |
		sort -s -t'|' -k1,1nr | cut -d'|' -f2-
}

run_qemu() {
	local dir name cmdline want patterns running=0 r status
	dir=$build/qemu-results
	rm -rf "$dir"; mkdir -p "$dir"
	while IFS='|' read -r name cmdline want patterns flags; do
		case "$name" in ''|'#'*) continue ;; esac
		# shellcheck disable=SC2254
		case "$name" in @($only)) ;; *) continue ;; esac
		[ $fast = 1 ] && [[ ",$flags," != *,fast,* ]] && continue
		qemu_case "$name" "$cmdline" "$want" "$patterns" "$dir" "$flags" &
		running=$((running + 1))
		if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
	done < <(cases_longest_first)
	# make debug with gdb in batch mode (and what --show displays): one boot
	# shellcheck disable=SC2254
	case debug-gdb in @($only)) [ $fast = 1 ] ||
		"$here/tests/qemu/gdb_check.sh" debug-gdb "$dir" >"$dir/debug-gdb.result" & ;; esac
	# make fuzz-fw's files, two instances sharing a queue, a crash replayed: three short boots
	# shellcheck disable=SC2254
	case fuzz-fw in @($only)) [ $fast = 1 ] ||
		"$here/tests/qemu/fuzz_fw_check.sh" fuzz-fw "$dir" >"$dir/fuzz-fw.result" & ;; esac
	wait
	# ptdecode's outputs that cannot be written are an error (status 2, named)
	local t=$dir/trace-skylake.tpz err
	if [ -s "$t" ]; then
		err=$("$build/tools/ptdecode" --elf "$build/topaz.so" --insn "$t" 2>&1 >/dev/full)
		status=$?
		if [ $status = 2 ] && grep -q 'standard output: cannot write' <<<"$err"; then
			echo "PASS qemu.ptdecode-output-full" >"$dir/zz-output-full.result"
		else
			echo "FAIL qemu.ptdecode-output-full: status $status writing to /dev/full: $err" >"$dir/zz-output-full.result"
		fi
	fi
	# one TNT bit flipped in a real trace (a kernel's, a firmware phase's):
	# the coverage decoder's result must change (tests/qemu/coverage_mutate.py)
	for t in trace-skylake trace-fw-image; do
		[ -s "$dir/$t.tpz" ] || continue
		checked "qemu.coverage-mutation.$t" python3 "$here/tests/qemu/coverage_mutate.py" \
			--name "qemu.coverage-mutation.$t" "$build/tools/ptdecode" "$build/topaz.so" \
			"$dir/$t.tpz" >"$dir/zz-mutation-$t.result"
	done
	# --coverage-diff of two boots: the kernel's workloads only in one, the
	# user's image (by its symbols) only in the other
	local a=$dir/trace-skylake.tpz b=$dir/trace-fw-image.tpz
	if [ -s "$a" ] && [ -s "$b" ]; then
		checked qemu.coverage-diff python3 "$here/tests/qemu/coverage_check.py" --name qemu.coverage-diff \
			--ptdecode "$build/tools/ptdecode" --elf "$build/topaz.so" --symbols "$build/efi" \
			--diff "$a" "$b" --a-only 'work_sort+' --b-only 'hello!fib+' \
			>"$dir/zz-coverage-diff.result"
	fi
	# make image as a user runs it, its volume read back with mtools (no boot: a second)
	# shellcheck disable=SC2254
	case image-contents in @($only))
		checked image.contents "$here/tests/qemu/image_check.sh" "$build" >"$dir/zz-image.result" ;;
	esac
	# where the time went: the slowest cases (wall time, $jobs at once)
	echo "qemu: the slowest cases, in seconds:"
	cat "$dir"/*.time 2>/dev/null | sort -rn | head -n 8 | sed 's/^/  /'
	for r in "$dir"/*.result; do
		while IFS= read -r line; do
			case "$line" in
			PASS\ *) pass "${line#PASS }" ;;
			FAIL\ *) fail "${line#FAIL }"
				 n=$(basename "$r" .result); echo "  (log: $dir/$n.log; last lines:)"
				 tail -15 "$dir/$n.clean" | sed 's/^/    /' ;;
			esac
		done <"$r"
	done
}

# The fidelity oracle: QEMU's log of executed instructions against the decoded trace.
run_oracle() {
	tally "  " < <("$here/tests/qemu/oracle.sh" -j "$jobs" $([ $fast = 1 ] && echo --fast) \
		$([ $full = 1 ] && echo --full))
}

# each part's wall time, for the line before the summary
phases=""
phase() {
	local t0=$SECONDS name=$1
	shift
	"$@"
	phases="${phases:+$phases, }$name $((SECONDS - t0)) s"
}
[ $mode != qemu ] && phase suite run_suite
[ $mode != qemu ] && phase host run_host
[ $mode != qemu ] && phase layers run_layers
[ $mode != qemu ] && phase fuzz run_fuzz_smoke
[ $mode != qemu ] && phase perf-corpus run_perf_corpus
[ $mode != host ] && phase qemu run_qemu
[ $mode != host ] && [ $oracle = 1 ] && phase oracle run_oracle
echo "time: $phases; total $SECONDS s"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
