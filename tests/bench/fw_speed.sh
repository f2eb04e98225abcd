#!/usr/bin/env bash
# The trace engine's speed in the firmware phase (fw.run=, boot services
# live) under TCG: untraced, translate and branch-step, guest-timed, in the
# same run (make bench).
#   fw_speed.sh BUILD_DIR [WORKLOAD]     (vars; BOOTS=3 RUNS=8 by default)
#   TRACE_OPTS="..." adds options to the traced boots (pt.inline_tnt=off, say)
#
# As trace_speed.sh for the kernel's workloads: every boot runs the firmware
# workload RUNS times; the traced boots run it untraced first (the ratio is
# taken in each boot, boots differ by up to 2x), median over boots. First
# run and later runs (the first pays the code cache's translation, the
# second and third QEMU's), the warm windows' start and stop, and guest
# instructions per traced branch under -icount shift=0. QEMU's own log is not
# a mode here: from the boot on, its -dfilter over the firmware's modules
# logs gigabytes before topaz starts (the fidelity oracle switches it on
# later through QEMU's monitor, fw.oracle, which the timing would then include).
. "$(dirname "$0")/lib.sh"	# build, here, tmp, boot, median
wl=${2:-vars}
boots=${BOOTS:-3}
runs=${RUNS:-8}
opts=${TRACE_OPTS:-}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
rep() { for _ in $(seq "$runs"); do printf '%s%s,' "$wl" "$1"; done; }
job=$(rep "")
job=${job%,}
ujob=$(rep :untraced)
untraced_times() { sed -nE "s/.*run: $wl:untraced returned .* in ([0-9]+) us.*/\1/p" "$1"; }
traced_times() { sed -nE "s/.*trace: $wl ran traced in ([0-9]+) us.*/\1/p" "$1"; }

# One boot of a mode; appends "first later-median" to $tmp/MODE.runs, and for
# the traced modes this boot's untraced later median to $tmp/MODE.same and
# the warm windows' start and stop to $tmp/MODE.startstop.
boot_mode() {
	local mode=$1 log=$tmp/$1.log times
	if [ "$mode" = untraced ]; then
		boot --cmdline "fw.run=$job" --log "$log"
		times=$(sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log")
	else
		boot --cmdline "fw.run=$ujob$job pt=on pt.step=$mode pt.buf=1M $opts" --log "$log" \
			--debugcon "$tmp/$mode.tpz"
		times=$(traced_times "$log")
		echo "$(untraced_times "$log" | tail -n +2 | median) $(tail -n +2 <<<"$times" | median)" \
			>>"$tmp/$mode.same"
		sed -nE "s/.*trace: $wl ran traced in [0-9]+ us \(starting the trace ([0-9]+) us, stopping it ([0-9]+) us.*/\1 \2/p" \
			"$log" | tail -n +2 >>"$tmp/$mode.startstop"
		sed -nE 's/.*pt: trace: ([0-9]+ instructions, [0-9]+ branches), .*/\1/p; s/.*pt: trace: translate: (.*)/\1/p' \
			"$log" | head -3 >"$tmp/$mode.notes"
	fi
	[ "$(wc -w <<<"$times")" = "$runs" ] ||
		{ echo "fw_speed: $mode boot: $(wc -w <<<"$times") of $runs runs timed (log: $log)" >&2; exit 2; }
	echo "$(head -1 <<<"$times") $(tail -n +2 <<<"$times" | median)" >>"$tmp/$mode.runs"
}

modes="untraced branch translate"
for _ in $(seq "$boots"); do
	for m in $modes; do boot_mode "$m" || exit 2; done
done

# -icount shift=0: a later run's "us" times 1000 are its guest instructions
icount_run() {
	local mode=$1 log=$tmp/icount-$1.log
	if [ "$mode" = untraced ]; then
		boot --cmdline "fw.run=$job" --log "$log" -- -icount shift=0,sleep=off
		sed -nE "s/.*run: $wl returned .* in ([0-9]+) us.*/\1/p" "$log" | tail -n +2 | median
	else
		boot --cmdline "fw.run=$job pt=on pt.step=$mode pt.buf=1M $opts" --log "$log" \
			--debugcon "$tmp/icount.tpz" -- -icount shift=0,sleep=off
		traced_times "$log" | tail -n +2 | median
	fi
}
ic_untraced=$(icount_run untraced)
ic_branch=$(icount_run branch)
ic_translate=$(icount_run translate)
branches=$(sed -nE 's/.*result: trace.engine insns=[0-9]+ branches=([0-9]+).*/\1/p' "$tmp/icount-translate.log")

printf '\ntrace engine in the firmware phase, fw.run=%s: %s boots x %s runs per mode (guest-timed medians)\n' \
	"$wl" "$boots" "$runs"
printf '| %-16s | %12s | %12s | %22s |\n' mode "first run" "later runs" "later, same boot"
printf '|%s|\n' "------------------|--------------|--------------|------------------------"
for m in $modes; do
	first=$(awk '{ print $1 }' "$tmp/$m.runs" | median)
	late=$(awk '{ print $2 }' "$tmp/$m.runs" | median)
	same=-
	[ -s "$tmp/$m.same" ] &&
		same="$(awk '{ if ($1 > 0) print $2 / $1 }' "$tmp/$m.same" | median | xargs printf '%.2f')x untraced"
	printf '| %-16s | %9.0f us | %9.0f us | %22s |\n' "$m" "$first" "$late" "$same"
	eval "first_$m=$first late_$m=$late"
done
for m in branch translate; do
	[ -s "$tmp/$m.notes" ] && sed "s/^/  $m: /" "$tmp/$m.notes"
	eval "start_$m=$(awk '{ print $1 }' "$tmp/$m.startstop" | median) stop_$m=$(awk '{ print $2 }' "$tmp/$m.startstop" | median)"
done
# shellcheck disable=SC2154
{
	echo "per boot (untraced/translate, later runs): $(awk '{ printf "%s/%s us ", $1, $2 }' "$tmp/translate.same")"
	echo "translate $(ratio "$late_translate" "$late_untraced")x the untraced boots in later runs," \
		"branch-step $(ratio "$late_branch" "$late_untraced")x; translate over branch-step" \
		"$(ratio "$late_branch" "$late_translate")x (first runs: $(ratio "$first_branch" "$first_translate")x)"
	echo "warm windows (median of later runs): translate starts in ${start_translate} us and stops in" \
		"${stop_translate} us; branch-step ${start_branch} us and ${stop_branch} us"
	per_branch() { awk -v m="$1" -v u="$ic_untraced" -v b="$branches" -v r="$runs" \
		'BEGIN { printf "%.0f", b ? (m - u) * 1000 * r / b : 0 }'; }
	echo "-icount (guest instructions, a later run): untraced ${ic_untraced}k, translate ${ic_translate}k," \
		"branch-step ${ic_branch}k; per traced branch ($((branches / runs)) a run): translate" \
		"$(per_branch "$ic_translate"), branch-step $(per_branch "$ic_branch") more instructions"
	echo "QEMU's log: not measured here (see the header: it cannot start at the boot in the firmware phase)"
}
