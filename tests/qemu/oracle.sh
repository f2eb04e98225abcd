#!/usr/bin/env bash
# The fidelity oracle: run the traced workloads in QEMU with QEMU's own log of
# executed code, decode topaz's trace with libipt (ptdecode), and compare the
# two instruction sequences over the compared range; they must be identical.
#   oracle.sh [-j N] [--only GLOB] [--fast | --full] [--keep] [--list]
# --fast (make check): one configuration per step mode, the two self-tests'
# bases among them (skylake-retcomp-nofilter-single and -translate) and
# broadwell-noretcomp-nofilter-branch (single-entry ToPA, NMI PMIs).
# One "PASS|FAIL oracle.NAME: ..." line per configuration, out of every
# profile x RET compression on/off x filter on/off (broadwell has no IP
# filtering): in single-step mode three of them, what only that mode does (see
# configs()), and in branch-step mode three, one per feature:
# broadwell-noretcomp-nofilter, skylake-retcomp-nofilter and
# arrowlake-noretcomp-filter (--full: all of them);
# in translate mode (pt.step=translate) four of them, one per profile (--full:
# all of them and one on two CPUs).
# Some add: small ToPA buffers (PMIs in traced code), timing packets, PMIs as
# NMIs, PTWRITE from a probe, dense interrupts (timer.hz; see configs(); the
# translated one with the stubs' inline TNT, the default, where timing
# packets, MTC and filters do not turn it off as in the others). And
# the firmware phase (fw-*: see fw_configs(); QEMU's log switched on through
# its monitor when topaz is ready) and
# on several CPUs (NAME-smpN-STEP, QEMU -smp N; see smp_configs(): two, the
# rest with --full) every CPU is compared on its own: its decoded instructions
# (ptdecode's "[cpu N, ...]" segments) against QEMU's log of that CPU; the PASS
# line gives each CPU's count ("cpu0 N, cpu1 M; ..."), a failure each failing
# CPU's first divergence. --keep keeps the QEMU logs of passing runs. A failure
# shows the first divergence (index, both addresses with symbols, the
# instructions and the packets around it; the logs stay in $BUILD/oracle). The
# last line: "oracle: N passed, N failed, M instructions compared in S s".
# Exit status 0 when all passed.
# Each trace is also exported as a perf.data and decoded by Linux perf's own
# Intel PT decoder (tests/qemu/perf_check.py): one "PASS|FAIL oracle.perf.NAME"
# line each, perf's instruction addresses against libipt's over the whole
# trace (the discovery boot's too; and its own self-test: perf on the intact
# trace against libipt on the one with a TNT bit flipped must part); on
# several CPUs, CPU by CPU.
#
# How (tests/qemu/oracle.py does the analysis):
# - A discovery boot (pt=on, the same workloads, no QEMU log) gives the load
#   address (the trace header), the kernel functions the workloads go through
#   and the firmware code pages they run (its sideband): all fixed for one
#   image and firmware. Every later boot checks its load address against it,
#   and a decoded instruction outside these ranges fails the run.
# - QEMU logs each translation block it runs whose start is in the -dfilter
#   ranges (-d exec), and each block's instructions when it translates it
#   (-d in_asm), so every executed instruction is known, whatever the block
#   size. The ranges: the workloads' functions (kernel/workloads/*.c but the
#   registry, registry.c), pt_run_traced,
#   the other functions and firmware pages found above; plus isr_stubs and the
#   return paths of isr_common and isr_bp, to see where interrupt and
#   exception handlers (not traced) start and end: what runs inside them is
#   left out.
# - In single-step mode every traced instruction runs with TF set, a block of
#   its own ended by the #DB, so no block is reached by chaining and -d exec
#   sees them all (checked: an instruction run without TF in the window fails
#   the run). Branch-step runs straight-line code without TF, so -d nochain;
#   a block that ends in the INT3 on its branch, then #BP, ran in full (QEMU
#   shows int3 at the branch's address, the engine emulated the branch).
# - QEMU logs a block before it runs it; one that then sees an exit request
#   (an interrupt to take) at its start does not run: QEMU says so ("Stopped
#   execution of TB chain before" that block) and logs it again when it runs.
#   Such blocks are left out. A block that ran with TF is always followed by
#   its #DB: when another handler comes first, its instruction faulted (not
#   retired), unless the handler returned past it (the engine emulates
#   PTWRITE's #UD: retired).
# - Only the window from the instruction after "call pt_trace_begin" to "call
#   pt_trace_end" counts (every run=NAME is one window). With pt.filter the
#   QEMU side keeps only the filter ranges of the trace header.
# - Several CPUs: QEMU runs each in a host thread of its own (MTTCG) and logs
#   into a file per thread (-d tid): the lines that name no CPU (translations,
#   "Stopped execution") are in that CPU's order there; a TB another CPU
#   translated takes its instructions from that CPU's file. Each CPU has its
#   windows: the boot CPU's in pt_run_traced (one per run=NAME), the others'
#   in traced_job (one per job run_on_each_cpu() gives it, through
#   pt_trace_end's call or tail jump). Its own discovery boot (-smp N); as the
#   paths taken there depend on timing, every function of mm/slab.c,
#   mm/page_alloc.c and arch/x86/smp.c is in the compared range too. The
#   engine's count is each CPU's ("result: trace.cpu cpu=N ... insns=").
# - Translate mode (NAME-translate, pt.step=translate pt.translate_map): the
#   traced code runs in each CPU's code cache, a copy of it, so QEMU logs the
#   caches too (and the runtime, xlat_rt_*), -d nochain as branch-step (the
#   blocks jump to each other). Where the caches are is fixed for one command
#   line and image: a discovery boot of the configuration's own gives their
#   ranges (the compared boot must have them there; before the kernel took
#   them those pages held the firmware's boot-time code, which the log shows
#   too: a CPU's cache addresses count from its first pt_run_traced or
#   traced_job on). The kernel prints the map at the end (xlat-map lines, per
#   CPU; pt.translate_map): a block's body is the original
#   instructions, byte for byte; the first instruction of its stub stands for
#   the branch; the rest of the stub and the runtime (and what it calls, until
#   the code goes back into the cache) are instrumentation, dropped; an exit's
#   INT3, then #BP, ends a block that ran in full, and the code goes on at its
#   own address, branch-stepped. A window ends at the stub of the block that
#   calls pt_trace_end (an exit: it is not translated). A cache reset
#   (resets= above 0: the map lost blocks) fails the run.
set -uo pipefail
shopt -s extglob
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
jobs=2 only='*' keep=0 list=0 full=0
while [ $# -gt 0 ]; do
	case "$1" in
	--full) full=1; shift ;;
	--fast) only='@(skylake-retcomp-nofilter-single|skylake-retcomp-nofilter-translate|broadwell-noretcomp-nofilter-branch)'; shift ;;
	-j) jobs=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--list) list=1; shift ;;
	*) echo "oracle.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
elf=$build/topaz.so tool=$build/tools/ptdecode py=$here/tests/qemu/oracle.py
perf_py=$here/tests/qemu/perf_check.py
dir=$build/oracle
t0=$(date +%s)
# each checker under the suite's memory bound (tests/run-all.sh states it;
# the same when this runs alone), each ending in PASS or FAIL (checked())
: "${CHECK_MEM_KB:=$((2 * 1024 * 1024))}"
# shellcheck source=tests/qemu/checked.sh
. "$here/tests/qemu/checked.sh"

# Each boot runs every workload, sort twice (each run is a traced window of
# its own): about 320K instructions. The filter configurations leave out slab,
# which none of their ranges holds (about 80K instructions, 50K in the ranges).
work="sort,recursion,dispatch,timer,firmware,slab,fixups,sort"
work_filter="sort,recursion,dispatch,timer,firmware,fixups,sort"
# Dense interrupts: a fast timer puts interrupts right after a stop's return
# and a second one before the next stop (fixups does that with exceptions).
work_dense="sort,recursion,dispatch,timer,slab,fixups,sort"
# On several CPUs: the workloads that run on all of them.
work_smp="psort,slab_xcpu,ipi"
work_smp_short="slab_xcpu,ipi"
smp_files='/(mm/slab\.c|mm/page_alloc\.c|arch/x86/smp\.c):'
# The self-tests decode these configurations' traces with one TNT bit
# flipped: the comparison must fail. CONFIGURATION:STEP:RESULT-NAME
selftests="skylake-retcomp-nofilter-single:single:selftest skylake-retcomp-nofilter-translate:translate:selftest-translate"
is_selftest() { [[ " $selftests " == *" $1:"* ]]; }

# The configurations: NAME|STEP|RUN=|COMMAND-LINE EXTRAS. Filters use two ranges
# (what the profiles that filter have); broadwell has no IP filtering.
sym() {	# the first function named $1 or $1.something (a compiler suffix)
	nm --defined-only "$elf" | awk -v n="$1" '$2 ~ /^[tT]$/ && ($3 == n || index($3, n ".") == 1) { print $3; exit }'
}
# Several CPUs (QEMU -smp N, MTTCG): every CPU runs the workloads of
# kernel/workloads/smp.c, each in windows of its own (the boot CPU's
# pt_run_traced, the others' jobs in traced_job), and each CPU's decoded
# instructions are compared with QEMU's log of that CPU. Two by default, the
# rest with --full: NAME|STEP|RUN=|SMP|EXTRAS.
smp_configs() {
	local rc="pt.buf=16K pt.region=4K"	# small buffers: PMIs in traced code
	local nr="pt.profile=broadwell pt.noretcomp pt.pmi=nmi $rc"
	echo "broadwell-noretcomp-nmi-smp2-branch|branch|$work_smp_short|2|$nr pt.step=branch pt.tsc"
	echo "skylake-retcomp-smp4-branch|branch|$work_smp_short|4|pt.profile=skylake pt.step=branch pt.tsc $rc"
	[ $full = 1 ] || return 0
	# translate: each CPU's code cache, each CPU's map lines (cpu=N)
	echo "skylake-retcomp-smp2-translate|translate|$work_smp|2|pt.profile=skylake pt.step=translate pt.translate_map pt.tsc $rc"
	echo "skylake-retcomp-smp2-branch|branch|$work_smp|2|pt.profile=skylake pt.step=branch pt.tsc $rc"
	echo "broadwell-noretcomp-nmi-smp4-branch|branch|$work_smp|4|$nr pt.step=branch pt.tsc"
	echo "tigerlake-retcomp-nmi-smp2-single|single|$work_smp_short|2|pt.profile=tigerlake pt.step=single pt.pmi=nmi $rc"
	echo "arrowlake-noretcomp-smp4-single|single|$work_smp_short|4|pt.profile=arrowlake pt.step=single pt.noretcomp $rc"
}
# The firmware phase (fw.run= before ExitBootServices, then the sample image
# tests/efi/hello.c): QEMU's log is switched on through its monitor once topaz
# is ready (fw.oracle; tests/qemu/qemu_sync.py), every loaded module is in the
# compared range, and each configuration has its own discovery boot (the same
# command line: the firmware's allocations place the image). One by default
# (translate, the phase's mode; two boots under -icount, the oracle's longest),
# five more with --full: NAME|STEP|fw:WORKLOADS|1|EXTRAS. QEMU runs with -icount:
# with the log on it is so slow that, in real time, the firmware's timed
# waits (the disk driver's polls) would spin for gigabytes of log.
fw_configs() {
	echo "fw-skylake-retcomp-translate|translate|fw:vars,file|1|pt.profile=skylake pt.step=translate pt.translate_map pt.buf=16K pt.tsc"
	[ $full = 1 ] || return 0
	echo "fw-broadwell-noretcomp-nmi-branch|branch|fw:handles,pool|1|pt.profile=broadwell pt.step=branch pt.noretcomp pt.pmi=nmi pt.buf=16K pt.tsc"
	echo "fw-skylake-retcomp-branch|branch|fw:vars,file|1|pt.profile=skylake pt.step=branch pt.buf=16K pt.tsc"
	echo "fw-broadwell-noretcomp-nmi-translate|translate|fw:handles,pool|1|pt.profile=broadwell pt.step=translate pt.translate_map pt.noretcomp pt.pmi=nmi pt.buf=16K pt.tsc"
	echo "fw-tigerlake-retcomp-nmi-branch|branch|fw:vars|1|pt.profile=tigerlake pt.step=branch pt.pmi=nmi pt.buf=16K pt.tsc pt.cyc pt.mtc"
	echo "fw-arrowlake-noretcomp-single|single|fw:vars|1|pt.profile=arrowlake pt.step=single pt.noretcomp pt.buf=16K"
}
configs() {
	local step prof filt rc name x f w
	for step in single branch translate; do
	for prof in broadwell skylake tigerlake arrowlake; do
	for filt in nofilter filter; do
	for rc in retcomp noretcomp; do
		[ $prof = broadwell ] && [ $filt = filter ] && continue
		# branch-step (slower: it needs -d nochain; the fallback of the
		# default mode, translate) each feature once, unless --full:
		# single-entry ToPA with NMI PMIs (broadwell; its RET compression is
		# skylake's), timing packets with NMI PMIs (skylake) and an IP
		# filter with a range (arrowlake)
		if [ $step = branch ] && [ $full = 0 ]; then
			case $prof-$rc-$filt in
			broadwell-noretcomp-nofilter|skylake-retcomp-nofilter|arrowlake-noretcomp-filter) ;;
			*) continue ;;
			esac
		fi
		# single-step (the slowest mode, no longer the default): the
		# self-test's base and what only single-step does (PMIs as NMIs
		# inside its #DB handler with timing packets, PTWRITE's #UD under
		# TF), unless --full; the IP filter and single-entry ToPA are
		# branch-step's and translate's (docs/developing.md)
		if [ $step = single ] && [ $full = 0 ]; then
			case $prof-$rc-$filt in
			skylake-retcomp-nofilter|tigerlake-retcomp-nofilter|arrowlake-noretcomp-nofilter) ;;
			*) continue ;;
			esac
		fi
		# translate: one per profile, unless --full
		if [ $step = translate ] && [ $full = 0 ]; then
			case $prof-$rc-$filt in
			skylake-retcomp-nofilter|broadwell-noretcomp-nofilter|tigerlake-noretcomp-filter|arrowlake-retcomp-nofilter) ;;
			*) continue ;;
			esac
		fi
		name=$prof-$rc-$filt-$step
		x="pt.profile=$prof pt.step=$step"
		# translate: the map from the code cache back to the code (oracle.py)
		[ $step = translate ] && x+=" pt.translate_map"
		# without RET compression: a small ToPA buffer, so PMIs come in traced code
		[ $rc = noretcomp ] && x+=" pt.noretcomp pt.buf=16K pt.region=4K"
		# Broadwell has single-entry ToPA: its PMI comes 256 bytes before the
		# region is full, and a vector PMI waits while interrupts are off (the
		# slab's critical sections write more than that): STOP, and code runs
		# untraced. As an NMI (what Linux uses) it is taken in time.
		[ $rc-$prof = noretcomp-broadwell ] && x+=" pt.pmi=nmi"
		[ $step != single ] && x+=" pt.tsc"
		# timing packets and PMIs as NMIs (they come inside the #DB handler)
		if [ $rc-$filt = retcomp-nofilter ] && { [ $step != single ] || [ $prof = tigerlake ]; } &&
		   [ $prof != broadwell ]; then
			x+=" pt.cyc pt.mtc pt.pmi=nmi pt.buf=8K pt.region=4K"
		fi
		# PTWRITE from a probe (emulated: QEMU has no PTWRITE, the engine takes its #UD)
		# (translate: recorded by the block's stub; RET compression on too)
		[ $prof = arrowlake ] && { [ $rc-$filt = noretcomp-nofilter ] ||
			{ [ $step = translate ] && [ $rc-$filt = retcomp-nofilter ]; }; } &&
			x+=" pt.ptw=1 probe=vm.kmalloc:trace"
		if [ $filt = filter ]; then
			case $prof in
			skylake) f="filter $(sym insertion_sort), filter op_rot" ;;
			tigerlake) f="filter fib, filter $(sym insertion_sort)" ;;
			arrowlake) f="filter work_sort, filter $op_span" ;;
			esac
			x+=" pt.filter=\"$f\""
		fi
		w=$work
		[ $filt = filter ] && w=$work_filter
		echo "$name|$step|$w|1|$x"
	done
	done
	done
	done
	echo "skylake-dense-branch|branch|$work_dense|1|pt.profile=skylake pt.step=branch timer.hz=50000 pt.buf=256K pt.region=4K"
	echo "arrowlake-dense-nmi-branch|branch|$work_dense|1|pt.profile=arrowlake pt.step=branch timer.hz=20000 pt.pmi=nmi pt.buf=16K pt.region=4K"
	echo "tigerlake-dense-single|single|$work_dense|1|pt.profile=tigerlake pt.step=single timer.hz=20000 pt.buf=256K pt.region=4K"
	echo "skylake-dense-translate|translate|$work_dense|1|pt.profile=skylake pt.step=translate pt.translate_map timer.hz=50000 pt.buf=256K pt.region=4K"
	smp_configs
	fw_configs
}

fail_setup() { echo "FAIL oracle.setup: $1"; echo "oracle: 0 passed, 1 failed, 0 instructions compared in $(( $(date +%s) - t0 )) s"; exit 1; }
for f in "$elf" "$tool" "$build/topaz.efi"; do
	[ -e "$f" ] || fail_setup "missing $f (make kernel tools)"
done
command -v python3 >/dev/null || fail_setup "python3 is needed (apt-get install python3)"

# op_add..op_rot as one START/SIZE range (four functions and the padding between)
op_span='<op_add..op_rot>'
if [ $list = 1 ]; then
	configs | awk -F'|' '{ print $1 ": " ($4 > 1 ? "-smp " $4 " " : "") "pt=on run=" $3 " " $5 }'
	exit 0
fi
rm -rf "$dir"; mkdir -p "$dir"
# the machines the selected configurations need: 1 CPU, -smp N
smps=$(configs | while IFS='|' read -r name _s _w n _x; do
	# shellcheck disable=SC2053
	[[ $name == $only ]] && [[ $_w != fw:* ]] && echo "$n"	# fw: discovers on its own
done | sort -nu | tr '\n' ' ')
[ "$only" = '*' ] && smps="1 $smps"

# Discovery: the load address, the kernel functions the workloads (and the
# probe) go through and the firmware pages they run, from a plain traced boot;
# one for each machine (-smp N: its workloads on every CPU, all CPUs' traces).
discover="pt=on run=$work pt.profile=arrowlake pt.ptw=1 probe=vm.kmalloc:trace"
discover_smp="pt=on run=$([ $full = 1 ] && echo "$work_smp" || echo "$work_smp_short") pt.profile=arrowlake pt.pmi=nmi pt.buf=16K pt.region=4K"
# One machine's discovery (-smp N): its boot, then its plan; the compared
# ranges (QEMU's -dfilter) go to $dir/dfilter-N, or why not to
# $dir/dfilter-N.fail.
discover_machine() {
	local n=$1 tag=discovery cmd=$discover plan=$dir/plan.json status df files=()
	[ "$n" -gt 1 ] && tag=discovery-smp$n cmd=$discover_smp plan=$dir/plan-smp$n.json
	"$here/tests/qemu/boot.sh" --smp "$n" --cmdline "$cmd" --log "$dir/$tag.log" \
		--debugcon "$dir/$tag.tpz" --timeout $((n > 1 ? 300 : 180)) >"$dir/$tag.out" 2>&1
	status=$?
	checks_from=$SECONDS; cpu_ticks checks_cpu
	if [ $status != 33 ]; then
		echo "the discovery boot (-smp $n $cmd) ended with status $status (log: $dir/$tag.log)" >"$dir/dfilter-$n.fail"
		return
	fi
	# on several CPUs the paths taken depend on timing (a lock's holder, a
	# full CPU array): every function of the code they share is compared
	[ "$n" -gt 1 ] && files=(--files "$smp_files")
	if ! df=$(python3 "$py" plan --elf "$elf" --ptdecode "$tool" --container "$dir/$tag.tpz" \
			"${files[@]}" --out "$plan"); then
		echo "no plan from the discovery boot (-smp $n)" >"$dir/dfilter-$n.fail"
		return
	fi
	# op_add..op_rot as one START/SIZE range, for the filters that name it
	if [ "$n" = 1 ] && ! python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
r = {n: (lo, hi) for lo, hi, n in p["compared"]}
lo, hi = r["op_add"][0], r["op_rot"][1]
print(f"{lo:#x}/{hi - lo:#x}")' "$plan" >"$dir/op_span"; then
		echo "no op_add..op_rot in the plan of the discovery boot" >"$dir/dfilter-$n.fail"
		return
	fi
	echo "$df" >"$dir/dfilter-$n.tmp" && mv "$dir/dfilter-$n.tmp" "$dir/dfilter-$n"
	# perf on its trace too (no QEMU log: perf against libipt only)
	[ "$n" = 1 ] && [ "$only" = '*' ] &&
		checked oracle.perf.discovery python3 "$perf_py" --ptdecode "$tool" --elf "$elf" \
			--container "$dir/discovery.tpz" --name oracle.perf.discovery >"$dir/discovery.perf"
}
# The compared ranges of machine N, once its discovery is done (printed), or
# status 1 with why in $dir/dfilter-N.fail.
dfilter_of() {
	local n=$1 waited=0
	until [ -e "$dir/dfilter-$n" ] || [ -e "$dir/dfilter-$n.fail" ]; do
		sleep 1
		waited=$((waited + 1))
		[ $waited -lt 1200 ] || { echo "no discovery after $waited s" >"$dir/dfilter-$n.fail"; break; }
	done
	[ -e "$dir/dfilter-$n" ] && cat "$dir/dfilter-$n"
}
# The machines discover as jobs of the pool below (a vCPU that spins for a
# starved one burns what it waits for: no more QEMUs than jobs): the one-CPU
# machine's first, beside the firmware phase's configurations (they discover
# on their own), then those of several CPUs while the one-CPU configurations
# run; each configuration waits for its machine's (dfilter_of()).

# Translate mode: the code caches' ranges, from the xlat-map lines of
# configuration NAME's discovery boot (exit STATUS) with PLAN; printed, or
# its FAIL written and status 1.
cache_ranges() {
	local name=$1 plan=$2 status=$3
	if [ "$status" = 33 ] && python3 "$py" xlat-filter --plan "$plan" --elf "$elf" \
			--log "$dir/$name.discovery.log" 2>"$dir/$name.xlat.err"; then
		return 0
	fi
	{ echo "FAIL oracle.$name: the discovery boot ended with status $status, or no code cache ranges from it (log: $dir/$name.discovery.log)"
	  sed 's/^/  /' "$dir/$name.xlat.err"; } >"$dir/$name.result"
	return 1
}

# A firmware-phase configuration: its discovery boot, then the compared boot
# with QEMU's log switched on at topaz's marker.
one_fw() {
	local name=$1 step=$2 w=${3#fw:} extra=$4 d=$5 res=$dir/$1.result status plan=$dir/plan-$1.json
	local cmd df xf marker='fw: oracle: waiting for the host' mon=$dir/$1.mon xargs=()
	# virtual time from the instruction count: QEMU slowed by its log does
	# not make the firmware's timed waits (a disk's polls) spin longer
	local icount="-icount shift=3,sleep=off"
	cmd="pt=on fw.run=$w fw.image=\"\\EFI\\tools\\hello.efi 12 quiet\" fw.oracle fw.modules loglevel=7 $extra"
	python3 "$here/tests/qemu/qemu_sync.py" --monitor "$mon.d" --log "$dir/$name.discovery.log" \
		--marker "$marker" --cmd 'sendkey ret' >"$dir/$name.sync" 2>&1 &
	"$here/tests/qemu/boot.sh" --cmdline "$cmd" --log "$dir/$name.discovery.log" \
		--debugcon "$dir/$name.discovery.tpz" --timeout 300 \
		-- $icount -chardev socket,id=mon0,path="$mon.d",server=on,wait=off \
		-mon chardev=mon0,mode=readline >"$dir/$name.discovery.out" 2>&1
	status=$?
	wait
	if [ $status != 33 ] || ! df=$(python3 "$py" plan --elf "$elf" --ptdecode "$tool" \
			--container "$dir/$name.discovery.tpz" --modules "$dir/$name.discovery.log" \
			--files 'boot/firmware/' --out "$plan" 2>"$dir/$name.plan.err"); then
		echo "FAIL oracle.$name: the discovery boot ended with status $status, or no plan from it (log: $dir/$name.discovery.log)" >"$res"
		return
	fi
	if [ "$step" = translate ]; then
		# the code cache's ranges (the firmware's allocation: the same
		# for the same command line)
		xf=$(cache_ranges "$name" "$plan" 33) || return
		df+=",$xf"
		xargs=(--xlat-logged "$xf")
	fi
	python3 "$here/tests/qemu/qemu_sync.py" --monitor "$mon" --log "$dir/$name.log" \
		--marker "$marker" --cmd "log $d" --cmd 'sendkey ret' >>"$dir/$name.sync" 2>&1 &
	"$here/tests/qemu/boot.sh" --cmdline "$cmd" --log "$dir/$name.log" --debugcon "$dir/$name.tpz" \
		--timeout 600 -- $icount -chardev socket,id=mon0,path="$mon",server=on,wait=off \
		-mon chardev=mon0,mode=readline -dfilter "$df" -D "$dir/$name.qlog" >"$dir/$name.out" 2>&1
	status=$?
	wait
	rm -f "$mon" "$mon.d"
	if [ $status != 33 ]; then
		echo "FAIL oracle.$name: exit status $status, expected 33 (log: $dir/$name.log)" >"$res"
		return
	fi
	checks_from=$SECONDS; cpu_ticks checks_cpu
	checked "oracle.$name" python3 "$py" compare --plan "$plan" --elf "$elf" --ptdecode "$tool" \
		--step "$step" --qemu-log "$dir/$name.qlog" --insn-out "$dir/$name.insn" \
		--container "$dir/$name.tpz" --name "oracle.$name" "${xargs[@]}" --log "$dir/$name.log" --log-started-late \
		--windows $(( $(tr ',' '\n' <<<"$w" | wc -l) + 1 )) >"$res"
	local cmp=1
	grep -q '^PASS ' "$res" && cmp=0
	checked "oracle.perf.$name" python3 "$perf_py" --ptdecode "$tool" --elf "$elf" \
		--container "$dir/$name.tpz" --name "oracle.perf.$name" >"$dir/$name.perf"
	if [ $cmp = 0 ] && [ $keep = 0 ]; then
		rm -f "$dir/$name.qlog" "$dir/$name.insn"
	elif ! grep -q '^\(PASS\|FAIL\) ' "$res"; then
		sed -i '1i FAIL oracle.'"$name"': the comparison did not finish:' "$res"
	fi
}

one() {
	local name=$1 step=$2 w=$3 smp=$4 extra=$5 res=$dir/$1.result d status plan=$dir/plan.json
	local qlog=$dir/$name.qlog qlogs df xf="" xargs=()
	d="exec,in_asm"
	[ "$step" != single ] && d="exec,nochain,in_asm"
	if [[ $w == fw:* ]]; then
		one_fw "$name" "$step" "$w" "$extra" "$d"
		return
	fi
	# several CPUs: a host thread each (MTTCG), each logs into a file of its own
	[ "$smp" -gt 1 ] && d+=",tid" qlog=$dir/$name.qlog.%d plan=$dir/plan-smp$smp.json
	if ! df=$(dfilter_of "$smp"); then
		echo "FAIL oracle.$name: $(cat "$dir/dfilter-$smp.fail")" >"$res"
		return
	fi
	[[ $extra == *"$op_span"* ]] && extra=${extra//"$op_span"/$(<"$dir/op_span")}
	if [ "$step" = translate ]; then
		# where the code caches are (fixed for one command line): a
		# discovery boot of this configuration, its xlat-map lines
		"$here/tests/qemu/boot.sh" --smp "$smp" --cmdline "pt=on run=$w loglevel=7 $extra" \
			--log "$dir/$name.discovery.log" --timeout $((smp > 1 ? 300 : 180)) \
			>"$dir/$name.discovery.out" 2>&1
		xf=$(cache_ranges "$name" "$plan" $?) || return
		df+=",$xf"
		xargs=(--xlat-logged "$xf")
	fi
	"$here/tests/qemu/boot.sh" --smp "$smp" --cmdline "pt=on run=$w loglevel=7 $extra" \
		--log "$dir/$name.log" --debugcon "$dir/$name.tpz" --timeout $((smp > 1 ? 400 : 240)) \
		-- -d "$d" -dfilter "$df" -D "$qlog" >"$dir/$name.out" 2>&1
	status=$?
	if [ $status != 33 ]; then
		{ echo "FAIL oracle.$name: exit status $status, expected 33 (log: $dir/$name.log)"
		  sed 's/\x1b\[[0-9;?=]*[a-zA-Z]//g; s/\r//g' "$dir/$name.log" | tail -8 | sed 's/^/  /'; } >"$res"
		return
	fi
	qlogs=("$dir/$name.qlog"*)
	checks_from=$SECONDS; cpu_ticks checks_cpu
	checked "oracle.$name" python3 "$py" compare --plan "$plan" --elf "$elf" --ptdecode "$tool" \
		--step "$step" --qemu-log "${qlogs[@]}" --insn-out "$dir/$name.insn" --cpus "$smp" \
		--container "$dir/$name.tpz" --name "oracle.$name" "${xargs[@]}" \
		--log "$dir/$name.log" --windows "$(tr ',' '\n' <<<"$w" | wc -l)" >"$res"
	local cmp=1
	grep -q '^PASS ' "$res" && cmp=0
	checked "oracle.perf.$name" python3 "$perf_py" --ptdecode "$tool" --elf "$elf" \
		--container "$dir/$name.tpz" --name "oracle.perf.$name" >"$dir/$name.perf"
	if [ $cmp = 0 ] && [ $keep = 0 ] && ! is_selftest "$name"; then
		rm -f "$dir/$name.qlog"* "$dir/$name.insn"
	elif ! grep -q '^\(PASS\|FAIL\) ' "$res"; then
		sed -i '1i FAIL oracle.'"$name"': the comparison did not finish:' "$res"
	fi
}

# The configurations the longest first, so that the last ones to finish are
# short and no core waits alone at the end: the firmware phase's (two boots
# each), then several CPUs' (their discovery runs meanwhile), the dense
# interrupts', then the rest in their order.
longest_first() {
	awk -F'|' '{ w = 0
		if ($3 ~ /^fw:/) w = 3; else if ($4 > 1) w = 2; else if ($1 ~ /-dense-/) w = 1
		printf "%d|%s\n", w, $0 }' | sort -s -t'|' -k1,1nr | cut -d'|' -f2-
}

# timed NAME CMD...: CMD, then NAME's wall and CPU time in $dir/NAME.time, the
# boots' and the checks' (from checks_from and checks_cpu, set by one() when
# its compared boot ended)
timed() {
	local name=$1 t0=$SECONDS c0 c1 checks_from checks_cpu
	shift
	cpu_ticks c0
	checks_from=$SECONDS checks_cpu=$c0
	"$@"
	cpu_ticks c1
	echo "$((SECONDS - t0)) $name (boots $((checks_from - t0)) s, checks $((SECONDS - checks_from)) s;" \
		"CPU: boots $(cpu_secs $((checks_cpu - c0))) s, checks $(cpu_secs $((c1 - checks_cpu))) s)" \
		>"$dir/$name.time"
}

names=()
running=0
while IFS='|' read -r name step w smp extra; do
	# shellcheck disable=SC2053
	if [ "$name" = @discover ]; then
		timed "discovery$([ "$smp" = 1 ] || echo "-smp$smp")" discover_machine "$smp" &
	else
		[[ $name == $only ]] || continue
		names+=("$name")
		timed "$name" one "$name" "$step" "$w" "$smp" "$extra" &
	fi
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done < <(configs | longest_first | awk -v smps="$smps" '
	# the one-CPU machine, the firmware phase beside it, the others (most CPUs first)
	BEGIN { n = split(smps, m, " "); if (smps ~ /(^| )1( |$)/) print "@discover|||1|" }
	!done && $0 !~ /^[^|]*\|[^|]*\|fw:/ {
		for (i = n; i >= 1; i--) if (m[i] != 1) print "@discover|||" m[i] "|"
		done = 1 }
	{ print }
	END { if (!done) for (i = n; i >= 1; i--) if (m[i] != 1) print "@discover|||" m[i] "|" }')
wait

# The self-tests: a trace with one branch outcome wrong must not pass.
# one self-test: configuration CFG's trace (STEP) with a TNT bit flipped, as NAME
selftest_one() {
	local cfg=$1 ststep=$2 stname=$3 why status div xargs=()
	[ "$ststep" = translate ] && xargs=(--xlat-map "$dir/$cfg.log")
	{
		why=$(python3 "$py" corrupt --ptdecode "$tool" --container "$dir/$cfg.tpz" --out "$dir/$stname.tpz" 2>&1)
		(ulimit -v "$CHECK_MEM_KB" && exec python3 "$py" compare --plan "$dir/plan.json" --elf "$elf" \
			--ptdecode "$tool" --step "$ststep" \
			--qemu-log "$dir/$cfg.qlog" --container "$dir/$stname.tpz" --name x "${xargs[@]}" \
			--windows "$(tr ',' '\n' <<<"$work" | wc -l)") >"$dir/$stname.compare" 2>&1
		status=$?
		div=$(sed -n 's/^FAIL x: \(first divergence at instruction [0-9]*\):.*/\1/p' "$dir/$stname.compare")
		if [ $status = 1 ] && [ -n "$div" ]; then
			echo "PASS oracle.$stname: $cfg with a TNT bit flipped ($why) fails: $div"
		else
			echo "FAIL oracle.$stname: $cfg with a TNT bit flipped ($why) was not caught (status $status)"
			sed 's/^/  /' "$dir/$stname.compare" | head -20
		fi
	} >"$dir/$stname.result"
	checked "oracle.perf.$stname" python3 "$perf_py" --ptdecode "$tool" --elf "$elf" \
		--container "$dir/$stname.tpz" --perf-container "$dir/$cfg.tpz" \
		--name "oracle.perf.$stname" --expect-divergence >"$dir/$stname.perf"
	[ $keep = 1 ] || rm -f "$dir/$cfg.qlog" "$dir/$cfg.qlog.insn" "$dir/$cfg.insn"
}
# (they run at once, beside perf on the discovery boot's trace)
for st in $selftests; do
	IFS=: read -r cfg ststep stname <<<"$st"
	if ! printf '%s\n' "${names[@]}" | grep -qx "$cfg" || ! grep -q '^PASS ' "$dir/$cfg.result"; then
		continue
	fi
	names+=("$stname")
	selftest_one "$cfg" "$ststep" "$stname" &
done

# perf on the discovery boot's trace (discover_machine(): no QEMU log, perf
# against libipt only)
[ "$only" = '*' ] && names+=(discovery)
wait

passed=0 failed=0 insns=0 perf_insns=0
for name in "${names[@]}"; do
	for res in "$dir/$name.result" "$dir/$name.perf"; do
		[ "$name" = discovery ] && [ "$res" = "$dir/$name.result" ] && continue
		label=oracle.$name
		[ "${res##*.}" = perf ] && label=oracle.perf.$name
		grep -qE '^(PASS|FAIL) ' "$res" 2>/dev/null || echo "FAIL $label: no verdict" >>"$res"
		cat "$res"
		if ! grep -q '^FAIL ' "$res"; then
			passed=$((passed + 1))
			n=$(sed -nE 's/^PASS [^:]*: ([0-9]+) instructions compared.*/\1/p' "$res")
			if [ "${res##*.}" = perf ]; then
				perf_insns=$((perf_insns + ${n:-0}))
			else
				insns=$((insns + ${n:-0}))
			fi
		else
			failed=$((failed + 1))
		fi
	done
done
# where the time went: the slowest configurations (wall time, $jobs at once)
echo "oracle: the slowest configurations, in seconds:"
cat "$dir"/*.time 2>/dev/null | sort -rn | head -n 8 | sed 's/^/  /'
echo "oracle: $passed passed, $failed failed, $insns instructions compared with QEMU, $perf_insns with perf, in $(( $(date +%s) - t0 )) s"
[ $failed = 0 ] && [ $passed -gt 0 ]
