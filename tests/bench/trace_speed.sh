#!/usr/bin/env bash
# The trace engine's speed under TCG against the untraced run and QEMU's own
# instruction log (-d exec,nochain -singlestep -dfilter over the workload's
# code), on the same workload, in the same run (make bench).
#   trace_speed.sh BUILD_DIR [WORKLOAD]     (BOOTS=3 RUNS=8 by default)
#   TRACE_OPTS="..." adds options to the traced boots (pt.inline_tnt=off, say)
#
# Every boot runs the workload RUNS times; the modes (untraced, QEMU's log,
# topaz single-step, branch-step, translate) boot in turn, BOOTS times, so the
# machine's slow and fast moments fall on all of them. Times are the guest's
# (TSC, around the workload function only, as both sides measure it: starting
# and stopping the trace are reported apart, as QEMU's log setup is not
# counted either). Per mode: the first run of a boot (one-time costs: QEMU
# translating code the first time, the first INT3s written), later runs
# (steady state: the throughput, on which the speed target is checked), and
# the rate over all runs of a boot, cold start included. The traced boots run
# the workload untraced first too: the target's ratio is taken in each boot
# (boots differ by up to 2x in speed, every mode alike), median over boots. Also the bytes
# written per instruction (the topaz trace against QEMU's log) and the wall
# time of each boot; the windows' start and stop costs (median of the later
# runs); and, from one boot each under -icount shift=0 (the guest's clock
# counts instructions), the guest instructions each traced branch costs.
. "$(dirname "$0")/lib.sh"	# build, here, tmp, boot, median
wl=${2:-sort}
boots=${BOOTS:-3}
# eight: the second and third runs still pay QEMU's first translation of
# paths the first did not take (the first PSB+ of the trace, the code
# cache's blocks after the first run's last links), so the later runs'
# median needs more than four to be the steady state
runs=${RUNS:-8}
opts=${TRACE_OPTS:-}
job=$(for _ in $(seq "$runs"); do printf '%s,' "$wl"; done)
job=${job%,}
# the traced boots run the workload untraced first, in the same boot: boots
# differ by up to 2x in speed (all modes alike), so the ratio is taken per boot
# (untraced runs between windows would not do: after a branch-step window
# QEMU translates the code its INT3s were taken out of again)
ujob=$(for _ in $(seq "$runs"); do printf '%s:untraced,' "$wl"; done)

# QEMU's -dfilter: every function the workload runs (its callees in the
# kernel and firmware too), found as the fidelity oracle finds them: from the
# decoded trace of a discovery boot (tests/qemu/oracle.py plan).
qemu_range() {
	boot --cmdline "pt=on run=$wl" --log "$tmp/disc.log" --debugcon "$tmp/disc.tpz"
	python3 "$here/tests/qemu/oracle.py" plan --elf "$build/topaz.so" \
		--ptdecode "$build/tools/ptdecode" --container "$tmp/disc.tpz" --out "$tmp/plan.json" ||
		{ echo "trace_speed: no QEMU range from the discovery boot (log: $tmp/disc.log)" >&2; exit 2; }
}

# One boot of a mode: "wall_s insns bytes t1 t2 ... tRUNS" (times in us;
# insns and bytes for all runs together; QEMU's insns: the lines it logged).
boot_mode() {
	local mode=$1 log=$tmp/$1.log t0 t1 insns bytes times
	t0=$(date +%s.%N)
	if [ "$mode" = untraced ]; then
		boot --cmdline "run=$job" --log "$log"
		t1=$(date +%s.%N)
		times=$(sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log")
		insns=0 bytes=0
	elif [ "$mode" = qemu ]; then
		boot --cmdline "run=$job" --log "$log" -- -d exec,nochain -singlestep \
			-dfilter "$range" -D "$tmp/exec.log"
		t1=$(date +%s.%N)
		times=$(sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log")
		insns=$(grep -c '^Trace' "$tmp/exec.log")
		bytes=$(stat -c %s "$tmp/exec.log")
		rm -f "$tmp/exec.log"
	else
		boot --cmdline "pt=on pt.step=$mode pt.buf=1M $opts run=$ujob$job" --log "$log" \
			--debugcon "$tmp/$mode.tpz"
		t1=$(date +%s.%N)
		times=$(sed -nE "s/.*trace: $wl ran traced in ([0-9]+) us.*/\1/p" "$log")
		# this boot's later runs: untraced median, traced median
		echo "$(sed -nE "s/.*run: $wl:untraced returned .* in ([0-9]+) us.*/\1/p" "$log" | tail -n +2 | median)" \
			"$(tail -n +2 <<<"$times" | median)" >>"$tmp/$mode.sameboot"
		# start and stop of the later (warm) windows
		sed -nE "s/.*trace: $wl ran traced in [0-9]+ us \(starting the trace ([0-9]+) us, stopping it ([0-9]+) us.*/\1 \2/p" \
			"$log" | tail -n +2 >>"$tmp/$mode.startstop"
		insns=$(sed -nE 's/.*pt: trace: ([0-9]+) instructions.*/\1/p' "$log" | head -1)
		bytes=$(sed -nE 's/.*pt: trace: ([0-9]+) bytes.*/\1/p' "$log" | head -1)
		sed -nE 's/.*trace: (branch-step self-check: .*)/\1/p; s/.*pt: trace: [0-9]+ instructions, [0-9]+ branches, (.*)/\1/p' \
			"$log" | head -2 >"$tmp/$mode.notes"
	fi
	[ "$(wc -w <<<"$times")" = "$runs" ] || { echo "trace_speed: $mode boot: $(wc -w <<<"$times") of $runs runs timed (log: $log)" >&2; exit 2; }
	echo "$(echo "$t1 - $t0" | bc) ${insns:-0} ${bytes:-0} $(tr '\n' ' ' <<<"$times")"
}

range=$(qemu_range) || exit 2
modes="untraced qemu single branch translate"
for m in $modes; do : >"$tmp/$m.all"; done
for _ in $(seq "$boots"); do
	for m in $modes; do boot_mode "$m" >>"$tmp/$m.all" || exit 2; done
done
# the workload's instructions a run, as the engine counted them
work=$(awk -v runs="$runs" '{ print $2 / runs }' "$tmp/branch.all" | median)
qlogged=$(awk -v runs="$runs" '{ print $2 / runs }' "$tmp/qemu.all" | median)

# Per mode: medians over boots of the first run, of the later runs, and of
# each boot's rate over all its runs. Rates count the instructions the
# workload runs (the engine's count, which the decoder's equals) on both
# sides: QEMU runs the same ones, and logs the ones in its -dfilter ranges.
stats() {	# mode -> "insns_per_run bytes_per_insn first_us steady_us rate wall"
	awk -v runs="$runs" -v n="$work" '{
		b = $3 / ($2 ? $2 : 1); tot = 0
		for (i = 4; i < 4 + runs; i++) tot += $i
		print n, b, $4, tot / runs, n * runs * 1e6 / tot, $1, $2 / runs
		for (i = 5; i < 4 + runs; i++) print "steady", $i > "/dev/stderr"
	}' "$tmp/$1.all" 2>"$tmp/$1.steady" >"$tmp/$1.rows"
	local n b first rate wall steady
	n=$(awk '{ print $1 }' "$tmp/$1.rows" | median)
	b=$(awk '{ print $2 }' "$tmp/$1.rows" | median)
	first=$(awk '{ print $3 }' "$tmp/$1.rows" | median)
	rate=$(awk '{ print $5 }' "$tmp/$1.rows" | median)
	wall=$(awk '{ print $6 }' "$tmp/$1.rows" | median)
	steady=$(awk '{ print $2 }' "$tmp/$1.steady" | median)
	echo "$n $b $first $steady $rate $wall"
}

printf '\ntrace engine vs QEMU instruction log, workload %s: %s boots x %s runs per mode (guest-timed medians)\n' \
	"$wl" "$boots" "$runs"
printf '| %-16s | %9s | %10s | %11s | %12s | %11s | %10s | %8s |\n' mode "insns/run" "first run" \
	"later runs" "insn/s (all)" "insn/s late" "bytes/insn" "boot s"
printf '|%s|\n' "------------------|-----------|------------|-------------|--------------|-------------|------------|----------"
for m in $modes; do
	read -r n b first steady rate wall < <(stats "$m")
	late=$(awk -v n="$n" -v s="$steady" 'BEGIN { printf "%.0f", s ? n * 1e6 / s : 0 }')
	name="topaz $m-step"
	[ "$m" = translate ] && name="topaz translate"
	[ "$m" = qemu ] && name="qemu -d exec"
	[ "$m" = untraced ] && name="untraced"
	printf '| %-16s | %9.0f | %8.0f us | %8.0f us | %12.0f | %11.0f | %10.4f | %8.1f |\n' "$name" "$n" \
		"$first" "$steady" "$rate" "$late" "$b" "$wall"
	eval "n_$m=$n b_$m=$b first_$m=$first steady_$m=$steady rate_$m=$rate"
done
for m in single branch translate; do
	[ -s "$tmp/$m.notes" ] && sed "s/^/  $m: /" "$tmp/$m.notes"
done
for m in branch translate; do
	eval "start_$m=$(awk '{ print $1 }' "$tmp/$m.startstop" | median) stop_$m=$(awk '{ print $2 }' "$tmp/$m.startstop" | median)"
done

# Guest instructions under -icount shift=0 (1 ns of guest time per
# instruction): a later run's "us" times 1000 are its instructions.
icount_run() {	# mode -> median guest instructions of a later run
	local mode=$1 log=$tmp/icount-$1.log cmd="run=$job"
	[ "$mode" = untraced ] || cmd="pt=on pt.step=$mode pt.buf=1M $opts run=$job"
	boot --cmdline "$cmd" --log "$log" --debugcon "$tmp/icount.tpz" -- -icount shift=0,sleep=off
	if [ "$mode" = untraced ]; then
		sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log"
	else
		sed -nE "s/.*trace: $wl ran traced in ([0-9]+) us.*/\1/p" "$log"
	fi | tail -n +2 | median
}
ic_untraced=$(icount_run untraced)
ic_branch=$(icount_run branch)
ic_translate=$(icount_run translate)
branches=$(sed -nE 's/.*result: trace.engine insns=[0-9]+ branches=([0-9]+).*/\1/p' "$tmp/icount-translate.log")
# shellcheck disable=SC2154
{
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
	speed=$(ratio "$rate_branch" "$rate_qemu")
	first=$(ratio "$first_qemu" "$first_branch")
	late=$(ratio "$steady_qemu" "$steady_branch")
	size=$(awk -v a="$b_branch" -v b="$b_qemu" 'BEGIN { printf "%.5f", b ? a / b : 0 }')
	echo "instructions a run: $work traced; QEMU logged $qlogged a run (its ranges, interrupt entries" \
		"and code outside the runs included)"
	echo "branch-step over QEMU's log: ${late}x in steady state (later runs); first run ${first}x," \
		"all runs of a boot ${speed}x; single-step $(ratio "$steady_qemu" "$steady_single")x steady"
	echo "untraced: a run ${steady_untraced} us later (${first_untraced} us the first);" \
		"translate $(ratio "$steady_translate" "$steady_untraced")x the untraced run in later runs" \
		"(first run ${first_translate} us), branch-step $(ratio "$steady_branch" "$steady_untraced")x;" \
		"translate over branch-step $(ratio "$steady_branch" "$steady_translate")x"
	same() { awk '{ if ($1 > 0) print $2 / $1 }' "$tmp/$1.sameboot" | median; }
	echo "in the same boot (the workload run untraced first; median over boots of later runs' medians):" \
		"translate $(ratio "$(same translate)" 1)x the untraced run (per boot: $(awk '{ printf "%s/%s us ", $2, $1 }' "$tmp/translate.sameboot")), branch-step $(ratio "$(same branch)" 1)x"
	echo "warm windows (median of later runs): translate starts in ${start_translate} us and stops in ${stop_translate} us;" \
		"branch-step ${start_branch} us and ${stop_branch} us"
	per_branch() { awk -v m="$1" -v u="$ic_untraced" -v b="$branches" -v r="$runs" \
		'BEGIN { printf "%.0f", b ? (m - u) * 1000 * r / b : 0 }'; }
	echo "-icount (guest instructions, a later run): untraced ${ic_untraced}k, translate ${ic_translate}k," \
		"branch-step ${ic_branch}k; per traced branch ($((branches / runs)) a run): translate $(per_branch "$ic_translate")," \
		"branch-step $(per_branch "$ic_branch") more instructions"
	echo "targets:"
	if [ "$wl" != sort ] && [ "$wl" != slab ]; then
		echo "  (reported: translate, later runs $(ratio "$steady_translate" "$steady_untraced")x the untraced run; the 10x target is sort's and slab's)"
	elif awk -v r="$(same translate)" 'BEGIN { exit !(r > 0 && r <= 10) }'; then
		echo "  met: translate, later runs at most 10x the untraced run in the same boot ($(ratio "$(same translate)" 1)x;" \
			"$(ratio "$steady_translate" "$steady_untraced")x against the untraced boots)"
	else
		echo "  NOT MET: translate, later runs at most 10x the untraced run in the same boot ($(ratio "$(same translate)" 1)x;" \
			"$(ratio "$steady_translate" "$steady_untraced")x against the untraced boots)"
	fi
	for w in start stop; do
		eval "v=\$${w}_translate"
		if awk -v v="$v" 'BEGIN { exit !(v < 100) }'; then
			echo "  met: translate, a warm window's $w under 100 us ($v us)"
		else
			echo "  NOT MET: translate, a warm window's $w under 100 us ($v us)"
		fi
	done
	if awk -v s="$late" 'BEGIN { exit !(s >= 5) }'; then
		echo "  met: branch-step speed over QEMU's log, steady state ($late x, target >= 5)"
	else
		echo "  NOT MET: branch-step speed over QEMU's log, steady state ($late x, target >= 5)"
	fi
	if awk -v s="$size" 'BEGIN { exit !(s <= 0.01) }'; then
		echo "  met: trace size over QEMU's log size ($size, target <= 0.01)"
	else
		echo "  NOT MET: trace size over QEMU's log size ($size, target <= 0.01)"
	fi
}
