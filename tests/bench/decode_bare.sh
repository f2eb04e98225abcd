#!/usr/bin/env bash
# Decode speed against the floor (make bench): `ptdecode --stats` against bare
# libipt (ipt-bare, tests/bench/ipt_bare.c: pt_insn_next() counting
# instructions, nothing else) on one trace of at least 10 million
# instructions, and `ptdecode --out-dir` (every output) beside them.
#   decode_bare.sh BUILD_DIR [WORKLOAD [COUNT]]   (default: slab 72 times, about 10.7 million instructions)
#
# Wall time of the whole process (container, ELF, decode), median of RUNS (7)
# runs each, taken in turn so the machine's slow moments fall on all three.
# Then one callgrind run of each decoder: the instructions they execute, which
# the machine's load does not move (CALLGRIND=0 skips it).
# Target: ptdecode --stats within 1.3 times bare libipt. Exit status 1 when
# the two decode a different number of instructions, the trace is too short,
# or the callgrind ratio misses the target (deterministic); the wall-time
# target is reported met or NOT MET, as the other benches do.
#
# Then the coverage decoder (cov-bare, tests/bench/cov_bare.c: ptcov over the
# same segments, code read from the same image) against bare libipt, on the
# same trace: the whole process (wall, median of RUNS, in the same turns) and
# the decoding alone (in-process, the fastest of DECODE_RUNS (5) runs each;
# callgrind counting inside bare_decode_segment() and cov_decode_segments()).
# Target: the coverage decoder at least 5 times faster; exit status 1 when
# the decoding's callgrind ratio misses it.
# TRACE=FILE decodes FILE (a container of the kernel in BUILD_DIR) instead of
# booting for one.
set -uo pipefail
export LC_ALL=C
build=${1:-build}
wl=${2:-slab}
count=${3:-72}
runs=${RUNS:-7}
here=$(cd "$(dirname "$0")/../.." && pwd)
tool=$build/tools/ptdecode bare=$build/bench/ipt-bare elf=$build/topaz.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
target() {	# name value
	if awk -v r="$2" 'BEGIN { exit !(r <= 1.3) }'; then
		echo "  met: $1 ($2, target <= 1.3)"
	else
		echo "  NOT MET: $1 ($2, target <= 1.3)"
		return 1
	fi
}
speedup() {	# name value (how many times faster)
	if awk -v r="$2" 'BEGIN { exit !(r >= 5) }'; then
		echo "  met: $1 ($2x, target >= 5x)"
	else
		echo "  NOT MET: $1 ($2x, target >= 5x)"
		return 1
	fi
}

for f in "$tool" "$bare" "$elf"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "decode_bare: missing $f (make bench builds it)" >&2; exit 2; }
done
job=$(for _ in $(seq "$count"); do printf '%s,' "$wl"; done)
job=${job%,}
if [ -n "${TRACE:-}" ]; then
	cp "$TRACE" "$tmp/t.tpz"
else
	BUILD=$build "$here/tests/qemu/boot.sh" --timeout 900 --cmdline "pt=on pt.buf=1M run=$job" \
		--log "$tmp/boot.log" --debugcon "$tmp/t.tpz" >/dev/null 2>&1
fi
[ -s "$tmp/t.tpz" ] || { echo "decode_bare: the boot left no trace (log: $tmp/boot.log)" >&2; exit 2; }
trace=$tmp/t.tpz
cov=$build/bench/cov-bare
[ -x "$cov" ] || cov=

# The same instructions from both, or the comparison means nothing.
stats=$("$tool" --elf "$elf" --stats "$trace")
insns=$(sed -n 's/^result: decode insns=\([0-9]*\) .*/\1/p' <<<"$stats")
problems=$(sed -n 's/^result: .* problems=\([0-9]*\) .*/\1/p' <<<"$stats")
bare_insns=$("$bare" --elf "$elf" "$trace" | sed -n 's/^insns=\([0-9]*\) .*/\1/p')
if [ -z "$insns" ] || [ "$insns" != "$bare_insns" ]; then
	echo "decode_bare: ptdecode decoded ${insns:-?} instructions, bare libipt ${bare_insns:-?}" >&2
	exit 1
fi
if [ "$insns" -lt 10000000 ]; then
	echo "decode_bare: the trace has $insns instructions, fewer than 10 million (run=$wl x$count)" >&2
	exit 1
fi

: >"$tmp/stats.t"; : >"$tmp/bare.t"; : >"$tmp/out.t"; : >"$tmp/cov.t"
timed() {	# file command...
	local t0=$EPOCHREALTIME
	"${@:2}" >/dev/null 2>&1
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f\n", b - a }' >>"$1"
}
for _ in $(seq "$runs"); do
	timed "$tmp/stats.t" "$tool" --elf "$elf" --stats "$trace"
	timed "$tmp/bare.t" "$bare" --elf "$elf" "$trace"
	rm -rf "$tmp/out"
	timed "$tmp/out.t" "$tool" --elf "$elf" --out-dir "$tmp/out" "$trace"
	[ -z "$cov" ] || timed "$tmp/cov.t" "$cov" --elf "$elf" "$trace"
done
out_mb=$(du -sm "$tmp/out" | cut -f1)
rm -rf "$tmp/out"
s=$(median <"$tmp/stats.t") b=$(median <"$tmp/bare.t") o=$(median <"$tmp/out.t")
wall=$(ratio "$s" "$b")
smin=$(sort -g "$tmp/stats.t" | head -1) bmin=$(sort -g "$tmp/bare.t" | head -1)

echo
echo "decode speed against bare libipt: one trace of run=$wl x$count ($(stat -c %s "$trace") bytes," \
	"$insns instructions from both, $problems problems), median of $runs runs"
printf 'ptdecode --stats: %.3f s, bare libipt: %.3f s, ratio %s (target <= 1.3)\n' "$s" "$b" "$wall"
printf '  the fastest runs: %.3f s and %.3f s, ratio %s (on a busy machine the medians move)\n' \
	"$smin" "$bmin" "$(ratio "$smin" "$bmin")"
printf 'ptdecode --out-dir (every output, %s MB): %.3f s, %.2f Minsn/s\n' "$out_mb" "$o" \
	"$(awk -v n="$insns" -v t="$o" 'BEGIN { print t ? n / t / 1e6 : 0 }')"

status=0
cg=
if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
	ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		sed -n 's/.*Collected : //p'; }
	ir "$tool" --elf "$elf" --stats "$trace" >"$tmp/stats.ir" &
	ir "$bare" --elf "$elf" "$trace" >"$tmp/bare.ir"
	wait
	si=$(cat "$tmp/stats.ir") bi=$(cat "$tmp/bare.ir")
	cg=$(ratio "$si" "$bi")
	echo "callgrind, instructions executed: ptdecode --stats $si, bare libipt $bi, ratio $cg" \
		"($(awk -v a="$si" -v b="$bi" -v n="$insns" 'BEGIN { printf "%.0f", (a - b) / n }') more per decoded instruction)"
fi
echo "targets:"
target "ptdecode --stats over bare libipt, wall time" "$wall"
if [ -n "$cg" ]; then
	target "ptdecode --stats over bare libipt, instructions executed (callgrind)" "$cg" || status=1
fi

# ---------------------------------------------------------------- coverage
if [ -z "$cov" ]; then
	echo "decode_bare: no $build/bench/cov-bare (make bench builds it): the coverage decoder not measured" >&2
	exit $status
fi
field() { sed -n "s/.*\b$1=\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }
druns=${DECODE_RUNS:-5}
cov_line=$("$cov" --runs "$druns" --elf "$elf" "$trace")
bare_line=$("$bare" --runs "$druns" --elf "$elf" "$trace")
cov_insns=$(field insns "$cov_line")
c=$(median <"$tmp/cov.t")
cwall=$(ratio "$b" "$c")
cd_s=$(field decode_s "$cov_line") bd_s=$(field decode_s "$bare_line")
cdec=$(ratio "$bd_s" "$cd_s")
echo
echo "coverage decoder (ptcov) against bare libipt (pt_insn_next), the same trace:"
echo "  ptcov: $(field blocks "$cov_line") blocks, $(field edges "$cov_line") edges," \
	"$(field transitions "$cov_line") blocks entered, $cov_insns instructions in them" \
	"(libipt: $insns), $(field gaps "$cov_line") gaps, $(field decodes "$cov_line") blocks decoded"
grep '^gap ' <<<"$cov_line" | sed 's/^/  ptcov /'
printf 'whole process, median of %s: ptcov %.3f s, bare libipt %.3f s: ptcov %sx faster\n' \
	"$runs" "$c" "$b" "$cwall"
printf 'decoding only, fastest of %s in-process runs: ptcov %.4f s (%.1f Minsn/s), bare libipt %.4f s (%.1f Minsn/s): ptcov %sx faster\n' \
	"$druns" "$cd_s" "$(awk -v n="$insns" -v t="$cd_s" 'BEGIN { print t ? n / t / 1e6 : 0 }')" \
	"$bd_s" "$(awk -v n="$insns" -v t="$bd_s" 'BEGIN { print t ? n / t / 1e6 : 0 }')" "$cdec"
ccg=
if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
	# the decoding alone: inside bare_decode_segment() (libipt), cov_decode_segments() (ptcov)
	irt() { local fn=$1; shift; valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		--toggle-collect="$fn" "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'; }
	irt cov_decode_segments "$cov" --elf "$elf" "$trace" >"$tmp/cov.ir" &
	irt bare_decode_segment "$bare" --elf "$elf" "$trace" >"$tmp/bared.ir"
	wait
	ir "$cov" --elf "$elf" "$trace" >"$tmp/covw.ir"
	ci=$(cat "$tmp/cov.ir") bdi=$(cat "$tmp/bared.ir") cwi=$(cat "$tmp/covw.ir")
	ccg=$(ratio "$bdi" "$ci")
	echo "callgrind, the decoding only: ptcov $ci, bare libipt $bdi: ptcov ${ccg}x fewer" \
		"($(awk -v a="$ci" -v n="$insns" 'BEGIN { printf "%.2f", a / n }') per traced instruction," \
		"libipt $(awk -v a="$bdi" -v n="$insns" 'BEGIN { printf "%.2f", a / n }'))"
	echo "callgrind, the whole process: ptcov $cwi, bare libipt $bi: ptcov $(ratio "$bi" "$cwi")x fewer"
fi
echo "targets:"
speedup "ptcov over bare libipt, the whole process, wall time" "$cwall"
speedup "ptcov over bare libipt, the decoding, wall time" "$cdec"
if [ -n "$ccg" ]; then
	speedup "ptcov over bare libipt, the decoding, instructions executed (callgrind)" "$ccg" || status=1
fi
exit $status
