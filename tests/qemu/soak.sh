#!/usr/bin/env bash
# Run QEMU cases (tests/qemu/cases.sh) again and again, for what fails only now and then: an
# event the timer sends into one place or another, a host too loaded to run every vCPU.
#   soak.sh [-n N] [NAME...]   each case N times (8), by default the ones below
# Each run goes through tests/run-all.sh --only NAME, with all its checks; the log of a run
# that failed is kept as build/soak/NAME.RUN.log. Exit status 1 when any run failed.
# Slow (a minute a run, more on a loaded host): not in make test, which runs each case once.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
n=8
if [ "${1:-}" = -n ]; then
	n=$2
	shift 2
fi
case $n in '' | *[!0-9]*) echo "soak.sh: -n wants a run count, not '$n'" >&2; exit 2 ;; esac
# the interactive Shell's fw.timeout= (its panic came 1 run in 4); SMP=4's IPI calls
[ $# -gt 0 ] || set -- trace-fw-timeout-shell smp-4
for name in "$@"; do
	grep -q "^$name|" "$here/tests/qemu/cases.sh" ||
		{ echo "soak.sh: no case '$name' in tests/qemu/cases.sh" >&2; exit 2; }
done
mkdir -p "$build/soak"
status=0
for name in "$@"; do
	bad=0
	for run in $(seq 1 "$n"); do
		out=$("$here/tests/run-all.sh" --qemu-only --no-oracle --only "$name" -j 1 2>&1)
		if ! grep -q ' 0 failed$' <<<"$out"; then
			bad=$((bad + 1))
			cp "$build/qemu-results/$name.log" "$build/soak/$name.$run.log" 2>/dev/null
			echo "soak: $name run $run of $n failed: $(grep -m1 '^FAIL' <<<"$out")"
		fi
	done
	echo "soak: $name: $((n - bad)) of $n runs passed"
	[ $bad = 0 ] || status=1
done
exit $status
