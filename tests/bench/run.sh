#!/bin/sh
# SPDX-License-Identifier: MIT
# The allocator benchmark (make bench): fixed-size churn against glibc,
# mimalloc and jemalloc, medians of several runs, and instruction counts
# from callgrind. Then the PT driver's benchmark (tests/bench/pt_run.sh).
#
#   tests/bench/run.sh BENCH_DIR [RUNS] [PAIRS]
#
# Throughput: alloc+free pairs per second, median of RUNS runs (default 5)
# of PAIRS pairs (default 5000000); the ratios are topaz over each peer.
# Instructions (callgrind, deterministic):
#   loop - every instruction of the measured loop per pair, harness included
#          (the same harness for every allocator);
#   api  - topaz only: instructions inside kmem_cache_alloc + kmem_cache_free
#          per pair, slow paths included (--toggle-collect on both).
# kmalloc: kmalloc + kfree instructions per pair by size, against the
# kmem_cache pair, and the threaded pattern's size mix in the whole loop
# against the peers' malloc/free (the deterministic side of that pattern).
# Probe costs: api instructions per call with the probe points compiled out
# (bench-topaz-noprobe), present with no handler, and with the count handler.
# Then the threaded benchmark (tests/bench/slab_smp.c): 1, 2 and 4 threads
# as CPUs, each pattern's median of RUNS rounds, the allocators interleaved
# (one run each per round); SLAB_SMP_ONLY=1 runs only it.
# Exits 1 when a deterministic (instruction-count) target is missed, or when
# topaz does not get every page back after the threaded runs.
set -eu

B=${1:?usage: run.sh BENCH_DIR [RUNS] [PAIRS]}
RUNS=${2:-5}
PAIRS=${3:-5000000}
CG_PAIRS=200000
SIZES="64 256 1024"
BATCHES="1 64 1024"
ALLOCS="topaz glibc mimalloc jemalloc"
SMP_MS=150
SMP_THREADS="1 2 4"
SMP_ALLOCS="topaz mimalloc jemalloc glibc"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

smp_mops() {	# alloc pattern threads -> the median over the rounds' Mop/s, or nothing
	sed -n "s/^slab_smp .* pattern=$2 threads=$3 .* mops=\([0-9.]*\) .*/\1/p" "$TMP/smp.$1" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() {	# a b -> a / b with two decimals, or - when either is missing
	awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else print "-" }'
}

# The threaded benchmark's table; returns 1 when slab_smp-topaz failed its checks.
slab_smp_table() {
	smp_status=0
	threads=$(echo "$SMP_THREADS" | tr ' ' ,)
	cpus=$(nproc)
	# Interleaved rounds: each round runs every allocator once at each pattern
	# and thread count, so a change in the machine's load (other jobs on a
	# shared machine) falls on every allocator alike, not on whichever ran then.
	for a in $SMP_ALLOCS; do : >"$TMP/smp.$a"; : >"$TMP/smperr.$a"; done
	r=0
	while [ $r -lt "$RUNS" ]; do
		for a in $SMP_ALLOCS; do
			"$B/slab_smp-$a" --threads "$threads" --runs 1 --ms $SMP_MS >>"$TMP/smp.$a" \
				2>>"$TMP/smperr.$a" || smp_status=1
		done
		r=$((r + 1))
	done
	echo "threaded slab benchmark (slab_smp): threads as CPUs, Mop/s = million objects allocated"
	echo "and freed per second over all threads, median of $RUNS interleaved rounds (each round runs every"
	echo "allocator once, $SMP_MS ms a run); xN/1 = N-thread over 1-thread throughput; /mimalloc,"
	echo "/jemalloc = topaz over the peer at the same thread count."
	echo "  local:   each thread allocates a batch of 128 64-byte objects (kmem_cache; malloc), frees them"
	echo "  kmalloc: the same with sizes 16-512 B (kmalloc/kfree; malloc/free)"
	echo "  pc:      producer/consumer pairs through a lock-free SPSC ring, the consumer frees (remote"
	echo "           frees); 1 thread fills and drains the ring itself (no remote frees, no cross-core traffic)"
	echo "This machine has $cpus CPUs (threads pinned round-robin)$(awk -v c="$cpus" -v t="$SMP_THREADS" \
		'BEGIN { n = split(t, v, " "); m = 0; for (i = 1; i <= n; i++) if (v[i] + 0 > c + 0) m = v[i]
			 if (m) printf ": %d threads oversubscribe them (%d per CPU, time-sliced), so their\nscaling is bounded by %d CPUs and a preempted lock holder or ring partner stalls the others", m, m / c, c }')."
	echo
	printf "| %-7s | %3s | %9s %6s | %9s %6s | %9s %6s | %9s %6s | %9s | %9s |\n" \
		pattern thr "topaz" "xN/1" "mimalloc" "xN/1" "jemalloc" "xN/1" "glibc" "xN/1" "/mimalloc" "/jemalloc"
	printf "|---------|----:|-----------------:|-----------------:|-----------------:|-----------------:|----------:|----------:|\n"
	for pat in local kmalloc pc; do
		for t in $SMP_THREADS; do
			printf "| %-7s | %3s |" "$pat" "$t"
			for a in $SMP_ALLOCS; do
				m=$(smp_mops "$a" "$pat" "$t") one=$(smp_mops "$a" "$pat" 1)
				printf " %9s %6s |" "${m:--}" "$(ratio "$m" "$one")"
			done
			printf " %9s | %9s |\n" "$(ratio "$(smp_mops topaz "$pat" "$t")" "$(smp_mops mimalloc "$pat" "$t")")" \
				"$(ratio "$(smp_mops topaz "$pat" "$t")" "$(smp_mops jemalloc "$pat" "$t")")"
		done
	done
	echo
	for pat in local kmalloc pc; do	# informational: timing is noisy
		ok=met r=""
		for t in $SMP_THREADS; do
			a=$(smp_mops topaz "$pat" "$t") b=$(smp_mops mimalloc "$pat" "$t")
			awk -v a="$a" -v b="$b" 'BEGIN { exit !(a != "" && b != "" && a + 0 >= b + 0) }' || ok="NOT MET"
			r="$r${r:+ / }$(ratio "$a" "$b")"
		done
		printf "  %-8s %-7s at least mimalloc's at %s threads (topaz / mimalloc: %s; timing is noisy)\n" \
			"$ok:" "$pat" "$(echo "$SMP_THREADS" | tr ' ' ,)" "$r"
	done
	if [ $smp_status = 0 ]; then
		echo "topaz: every page back in the page allocator after each pattern and thread count, no slab errors"
	else
		echo "NOT MET: a slab_smp binary failed (topaz: pages not back or slab errors):"
		grep -h FAIL "$TMP"/smp.* || true
		for a in $SMP_ALLOCS; do
			[ -s "$TMP/smperr.$a" ] && { echo "slab_smp-$a stderr (first lines):"; head -20 "$TMP/smperr.$a"; }
		done
	fi
	return $smp_status
}

if [ "${SLAB_SMP_ONLY:-0}" = 1 ]; then
	slab_smp_table
	exit
fi

command -v valgrind >/dev/null || { echo "run.sh: valgrind is needed (apt-get install valgrind)" >&2; exit 2; }

median() {	# numbers on stdin
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ops() {		# alloc size batch [args...] -> median ops/s
	a=$1 size=$2 batch=$3
	shift 3
	i=0
	while [ $i -lt "$RUNS" ]; do
		"$B/bench-$a" --size "$size" --batch "$batch" --pairs "$PAIRS" "$@" | sed 's/.*ops_per_s=//'
		i=$((i + 1))
	done | median
}

loop_instr() {	# alloc size batch [args...] -> instructions per pair in the measured loop
	a=$1 size=$2 batch=$3
	shift 3
	out=$TMP/cg.$a.$size.$batch
	line=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
		"$B/bench-$a" --size "$size" --batch "$batch" --pairs $CG_PAIRS --callgrind "$@" 2>/dev/null)
	pairs=$(echo "$line" | sed 's/.* pairs=\([0-9]*\).*/\1/')
	ir=$(awk '/^summary:/ { print $2 }' "$out")
	awk -v ir="$ir" -v p="$pairs" 'BEGIN { printf "%.1f\n", ir / p }'
}

API_FUNCS="__kmem_cache_alloc_nz kmem_cache_free"	# what api_instr counts
api_instr() {	# binary size batch [args...] -> instructions per pair inside API_FUNCS
	bin=$1 size=$2 batch=$3
	shift 3
	out=$TMP/api.$bin.$size.$batch
	# shellcheck disable=SC2046
	line=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
		$(for f in $API_FUNCS; do printf -- '--toggle-collect=%s ' "$f"; done) \
		"$B/$bin" --size "$size" --batch "$batch" --pairs $CG_PAIRS "$@" 2>/dev/null)
	pairs=$(echo "$line" | sed 's/.* pairs=\([0-9]*\).*/\1/')
	warm=$(echo "$line" | sed 's/.* warm_pairs=\([0-9]*\).*/\1/')
	ir=$(awk '/^summary:/ { print $2 }' "$out")
	awk -v ir="$ir" -v p="$((pairs + warm))" 'BEGIN { printf "%.1f\n", ir / p }'
}

echo "topaz allocator benchmark: fixed-size churn (batch allocations, then the frees, in order)"
echo "runs=$RUNS pairs/run=$PAIRS (median), callgrind pairs=$CG_PAIRS; $(uname -m), $(nproc) CPUs"
echo
printf "| %5s | %5s | %12s | %8s | %8s | %8s | %9s | %9s | %9s | %9s | %9s |\n" \
	size batch "topaz Mop/s" "/glibc" "/mimalloc" "/jemalloc" "api ins" "loop ins" "glibc" "mimalloc" "jemalloc"
printf "|------:|------:|-------------:|---------:|---------:|---------:|----------:|----------:|----------:|----------:|----------:|\n"
worst_ratio=999
for size in $SIZES; do
	for batch in $BATCHES; do
		for a in $ALLOCS; do
			eval "ops_$a=\$(ops $a $size $batch)"
			eval "ins_$a=\$(loop_instr $a $size $batch)"
		done
		api=$(api_instr bench-topaz "$size" "$batch")
		# shellcheck disable=SC2154
		printf "| %5s | %5s | %12.1f | %8.2f | %8.2f | %8.2f | %9s | %9s | %9s | %9s | %9s |\n" \
			"$size" "$batch" "$(awk -v o="$ops_topaz" 'BEGIN { print o / 1e6 }')" \
			"$(awk -v a="$ops_topaz" -v b="$ops_glibc" 'BEGIN { print a / b }')" \
			"$(awk -v a="$ops_topaz" -v b="$ops_mimalloc" 'BEGIN { print a / b }')" \
			"$(awk -v a="$ops_topaz" -v b="$ops_jemalloc" 'BEGIN { print a / b }')" \
			"$api" "$ins_topaz" "$ins_glibc" "$ins_mimalloc" "$ins_jemalloc"
		worst_ratio=$(awk -v w="$worst_ratio" -v a="$ops_topaz" -v b="$ops_mimalloc" \
			'BEGIN { r = a / b; print (r < w ? r : w) }')
	done
done
echo
echo "Ratios are topaz's ops/s over the peer's (above 1: topaz faster). \"api ins\": instructions"
echo "in kmem_cache_alloc + kmem_cache_free per pair; \"loop ins\": the whole measured loop per pair."
echo

# Probe point costs, on the hottest configuration (batch 1: pure fast path).
none=$(api_instr bench-topaz-noprobe 64 1)
idle=$(api_instr bench-topaz 64 1)
count=$(api_instr bench-topaz 64 1 --probe count)
fast=$none
per_idle=$(awk -v a="$idle" -v b="$none" 'BEGIN { printf "%.1f", (a - b) / 2 }')
per_count=$(awk -v a="$count" -v b="$none" 'BEGIN { printf "%.1f", (a - b) / 2 }')
echo "probe points (64 B, batch 1, instructions per alloc+free pair inside the API):"
echo "  compiled out: $none   present, no handler: $idle   count handler on vm.kmem_cache_*: $count"
echo "  cost per call: no handler $per_idle, count handler $per_count"
echo

# kmalloc + kfree (kmalloc() with a constant gfp is __kmalloc_nz()), by size
# and for the threaded benchmark's mix, at its batch (128), against the
# kmem_cache pair at the same batch.
KM_SIZES="16 24 32 48 64 96 128 192 256 512 mix"
cache128=$(api_instr bench-topaz 64 128)
printf "kmalloc + kfree instructions per pair inside the API (batch 128; kmem_cache 64 B: %s)\n|" "$cache128"
for s in $KM_SIZES; do printf " %5s |" "$s"; done
printf "\n|"
for s in $KM_SIZES; do printf -- "------:|"; done
printf "\n|"
km_worst=0
for s in $KM_SIZES; do
	v=$(API_FUNCS="__kmalloc_nz kfree" api_instr bench-topaz "$s" 128 --api kmalloc)
	printf " %5s |" "$v"
	km_worst=$(awk -v w="$km_worst" -v v="$v" 'BEGIN { print (v > w ? v : w) }')
done
km_over=$(awk -v a="$km_worst" -v b="$cache128" 'BEGIN { printf "%.1f", a - b }')
printf "\n\n"
# The same mix against the peers' malloc/free, whole loop (harness included,
# the same for all): the deterministic side of the threaded kmalloc pattern.
km_loop=$(loop_instr topaz mix 128 --api kmalloc)
printf "kmalloc mix (batch 128), instructions per pair in the whole loop: topaz %s" "$km_loop"
for a in mimalloc jemalloc glibc; do
	eval "km_loop_$a=\$(loop_instr $a mix 128)"
	eval "printf ', %s %s' $a \"\$km_loop_$a\""
done
printf "\n\n"

status=0
check() {	# description value op limit
	if awk -v v="$2" -v l="$4" "BEGIN { exit !(v $3 l) }"; then
		echo "  met:     $1 ($2 $3 $4)"
	else
		echo "  NOT MET: $1 ($2, target $3 $4)"
		status=1
	fi
}
echo "targets:"
check "fast path instructions per alloc+free pair, debugging off (probes compiled out)" "$fast" "<=" 20
check "disabled probe point, instructions per call over none" "$per_idle" "<=" 2
check "count handler, instructions per call over none" "$per_count" "<=" 80
check "kmalloc+kfree pair over the kmem_cache pair, instructions, worst size or the mix" "$km_over" "<=" 14
# shellcheck disable=SC2154
check "kmalloc mix loop instructions per pair, at most mimalloc's malloc/free" "$km_loop" "<=" "$km_loop_mimalloc"
if awk -v r="$worst_ratio" 'BEGIN { exit !(r >= 1) }'; then
	echo "  met:     throughput at least mimalloc's on every size and batch (worst ratio $worst_ratio)"
else
	echo "  NOT MET: throughput at least mimalloc's on every size and batch (worst ratio $worst_ratio; timing is noisy)"
fi

echo
slab_smp_table || status=1

# The PT driver's benchmark (PMI and buffer setup costs): its own table and targets.
echo
"$(dirname "$0")/pt_run.sh" "$B" || status=1
exit $status
