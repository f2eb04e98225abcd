#!/usr/bin/env bash
# How ptdecode's time grows with the records of a container (make bench):
# 10k, 20k and 40k sideband IMAGE records, and as many CPUs with a stream
# each (written by the host test test_trace_input, which decodes them whole).
# Both were quadratic once (40k images 62.7 s, 40k CPUs 842 s); linear, 40k
# takes about four times 10k. Wall time of `ptdecode --stats`, median of RUNS
# (3); fails when 40k costs more than 8 times 10k (quadratic is 16).
#   decode_scale.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
tool=$build/tools/ptdecode
gen=$build/host/test_trace_input
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$tool" ] && [ -x "$gen" ] || { echo "decode_scale: build $tool and $gen first (make tools host-tests)" >&2; exit 2; }
runs=${RUNS:-3}
status=0
median() { sort -g | awk '{ v[NR] = $1 } END { print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0 }'; }

echo
echo "decode time against records in a container: ptdecode --stats, wall s, median of $runs"
echo "| records | 10k | 20k | 40k | 40k / 10k |"
echo "|---|---|---|---|---|"
for kind in images cpus; do
	row="| $kind"
	declare -A t=()
	for n in 10000 20000 40000; do
		"$gen" "$kind" "$n" "$tmp/$kind-$n.tpz" || { echo "decode_scale: cannot write $kind $n" >&2; exit 2; }
		for _ in $(seq "$runs"); do
			s=$(date +%s.%N)
			"$tool" --stats "$tmp/$kind-$n.tpz" >/dev/null 2>&1
			rc=$?
			e=$(date +%s.%N)
			[ "$rc" -le 1 ] || { echo "decode_scale: ptdecode --stats on $kind $n exited $rc" >&2; status=1; }
			awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f\n", b - a }'
		done | median > "$tmp/t"
		t[$n]=$(cat "$tmp/t")
		row="$row | ${t[$n]}"
	done
	ratio=$(awk -v a="${t[10000]}" -v b="${t[40000]}" 'BEGIN { printf "%.1f", b / a }')
	echo "$row | ${ratio}x |"
	if awk -v a="${t[10000]}" -v b="${t[40000]}" 'BEGIN { exit !(b > 8 * a + 0.05) }'; then
		echo "decode_scale: $kind: 40k records took ${ratio}x the time of 10k (linear is 4x)" >&2
		status=1
	fi
	unset t
done
exit $status
