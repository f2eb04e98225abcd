#!/usr/bin/env bash
# make fuzz-fw's files and instances (issue 30, docs/fuzzing.md), three short boots of
# the sample harness (tests/efi/fuzz_magic.c: a bug behind "TPZ") through
# scripts/fuzz-fw.sh, as make fuzz-fw runs it:
#  1. instance a, 3 s from no seed (fw.fuzz.time=, as make fuzz-fw's TIME=): its finds
#     reach the host's queue build/.../a/corpus through the debug console, named by their
#     SHA-1;
#  2. instance b resumes from a's queue (fw.fuzz.corpus=) with a dictionary holding
#     the magic (fw.fuzz.dict=): it starts with more edges than a's seeds gave, finds
#     the bug, and its crash-SHA1 and crash-SHA1.tpz reach the host through the debug
#     console, the trace decodes; a copy of the console cut inside a record is said to
#     be cut;
#  3. the crash replayed (fw.fuzz.replay=): the same crash line, its trace decodes;
#  4. a crash in firmware memory (tests/efi/fuzz_guard.c: a pool overflow on its 50th
#     execution) as make fuzz-fw runs it, pt.sink=memory: its trace, crash-SHA1.tpz,
#     reaches the host beside the input, decodes without a problem and ends at the
#     crash's site; the file cut short or damaged is an error ptdecode names, and a
#     damaged one on the console is not written.
#   fuzz_fw_check.sh NAME RESULT_DIR     prints PASS/FAIL NAME.* lines
set -uo pipefail
name=$1 dir=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
work=$dir/$name.build
rm -rf "$work" && mkdir -p "$work"
# a build folder of its own (its fuzz/image queues), the binaries linked
for f in topaz.efi topaz.so efi tools; do ln -s "$build/$f" "$work/$f"; done
harness='fw.image=\EFI\tools\fuzz_magic.efi fw.fuzz.max_len=4'
run_fw() {	# run_fw STEP ARGS...: fuzz-fw.sh, its output in $dir/$name.STEP.out, its seconds
	local step=$1 t0=$SECONDS
	shift
	"$here/scripts/fuzz-fw.sh" --build "$work" --target image --quiet "$@" >"$dir/$name.$step.out" 2>&1
	echo "$step $((SECONDS - t0)) s" >>"$dir/$name.times"
}
verdict() {	# verdict CHECK WHY
	if [ -z "$2" ]; then echo "PASS $name.$1"; else echo "FAIL $name.$1: $2"; fi
}
q=$work/fuzz/image
: >"$dir/$name.times"

# 1. instance a, branch-step: the time must end it before it finds the magic alone
# (translate-step runs seed 1 to the bug in about 73000 executions, 1 to 2 s since the
# sparse news test; branch-step is several times slower)
run_fw a --instance a --time 3 --options "$harness fw.fuzz.seed=1 pt.step=branch"
why=""
# fw.fuzz.time=3 with fw.fuzz.runs=0 (no limit): the time ends it, 3 s after the start (the
# kernel's clock: the "seeds:" line is a few executions after it)
t_seeds=$(tr -d '\r' <"$q/a/serial.log" | sed -nE 's/^\[ *([0-9.]+)\] fuzz: seeds: .*/\1/p')
t_up=$(tr -d '\r' <"$q/a/serial.log" | sed -nE 's/^\[ *([0-9.]+)\] fuzz: fw.fuzz.time=3: the time is up.*/\1/p')
[ -n "$t_up" ] && [ -n "$t_seeds" ] && awk -v a="$t_seeds" -v b="$t_up" 'BEGIN { d = b - a; exit !(d > 2.5 && d < 3.5) }' ||
	why="fw.fuzz.time=3 did not end the campaign 3 s in (seeds at ${t_seeds:-?}, stop at ${t_up:-?})"
res_a=$(grep -a 'result: fuzz target=image' "$q/a/serial.log")
seed_a=$(sed -nE 's/.* seed_edges=([0-9]+) .*/\1/p' <<<"$res_a")
kept_a=$(sed -nE 's/.* kept=([0-9]+) .*/\1/p' <<<"$res_a")
[ -n "$seed_a" ] && [ "${kept_a:-0}" -gt 0 ] || why="no campaign result with inputs kept: '$res_a'"
# each input kept (the log's hex, up to 32 bytes: max_len is 4) is a file named by its SHA-1
# that came through the debug console (the same bytes kept twice are one file)
n=0
while read -r hex; do
	sha=$(xxd -r -p <<<"$hex" | sha1sum | cut -c1-40)
	[ -f "$q/a/corpus/$sha" ] && [ "$(xxd -p "$q/a/corpus/$sha")" = "${hex// /}" ] ||
		why="${why:+$why; }the kept input $hex is not a/corpus/$sha"
done < <(grep -a -A1 'kept (corpus' "$q/a/serial.log" | tr -d '\r' | sed -nE 's/.*the input, [0-9]+ bytes: (.*)$/\1/p')
n=$(ls "$q/a/corpus" | wc -l)
for f in "$q"/a/corpus/*; do
	[ "$(sha1sum <"$f" | cut -c1-40)" = "${f##*/}" ] || why="${why:+$why; }${f##*/} is not its bytes' SHA-1"
done
grep -q "fuzz-files: $kept_a corpus file(s) into .*/a/corpus/ ($n new)" "$dir/$name.a.out" ||
	why="${why:+$why; }the debug console did not carry the $kept_a kept inputs"
grep -qa "result: fuzz files corpus=$kept_a crashes=0 on_volume=$kept_a to_host=$kept_a" "$q/a/serial.log" ||
	why="${why:+$why; }not every kept input went to the volume and the host"
grep -q '^fuzz-fw: .*from the boot volume' "$dir/$name.a.out" &&
	why="${why:+$why; }the volume had files the console did not carry"
verdict instance-a "$why"

# 2. instance b: a's queue and a dictionary
printf '# the harness'"'"'s magic\nmagic="TPZ"\n' >"$work/magic.dict"
run_fw b --instance b --time 600 --dict "$work/magic.dict" \
	--options "$harness fw.fuzz.seed=2 fw.fuzz.runs=3000"
why=""
res_b=$(grep -a 'result: fuzz target=image' "$q/b/serial.log")
seed_b=$(sed -nE 's/.* seed_edges=([0-9]+) .*/\1/p' <<<"$res_b")
grep -qa "fw.fuzz.corpus=.EFI.topaz.fuzz.image.corpus: $n input" "$q/b/serial.log" ||
	why="b did not start from a's $n inputs"
grep -qa 'fuzz: dictionary .EFI.topaz.dict.magic.dict: 1 tokens' "$q/b/serial.log" ||
	why="${why:+$why; }b did not read the dictionary"
[ -n "$seed_b" ] && [ "$seed_b" -gt "$seed_a" ] ||
	why="${why:+$why; }b started with ${seed_b:-no} edges, a's seeds gave $seed_a"
verdict instance-b-resumes "$why"
why=""
crash=$(ls "$q"/b/crashes/crash-* 2>/dev/null | grep -v '\.tpz$' | head -1)
grep -qa 'result: fuzz crash kind=bug .*what="planted bug behind the magic TPZ"' "$q/b/serial.log" ||
	why="b did not find the bug"
if [ -f "$crash" ]; then
	[ "crash-$(sha1sum <"$crash" | cut -c1-40)" = "${crash##*/}" ] || why="${why:+$why; }${crash##*/} is not crash-SHA1"
	[ "$(head -c3 "$crash")" = TPZ ] || why="${why:+$why; }${crash##*/} does not start with TPZ"
	grep -q 'fuzz-files: 2 crashes file(s) into .*/b/crashes/ (2 new)' "$dir/$name.b.out" ||
		why="${why:+$why; }the crash and its trace did not come through the debug console"
	# a bug the harness reports: the trace ends where the execution's window does
	"$build/tools/ptdecode" --elf "$build/topaz.so" --symbols "$build/efi" -q "$crash.tpz" \
		>"$work/b-crash.decode" 2>&1 ||
		why="${why:+$why; }its trace ${crash##*/}.tpz does not decode: $(tail -2 "$work/b-crash.decode")"
	grep -qa "result: fuzz files corpus=[0-9]* crashes=1 on_volume=.* traces=1 " "$q/b/serial.log" ||
		why="${why:+$why; }no files line"
else
	why="${why:+$why; }no crash file on the host"
fi
# a's finds are not written again by b
for f in "$q"/a/corpus/*; do
	[ -e "$q/b/corpus/${f##*/}" ] && why="${why:+$why; }b wrote a's ${f##*/} again"
done
# a console cut inside the crash's trace record (the last one: the campaign stops there):
# named, not written; the input before it is
if grep -aq '@TPZ-FUZZ-FILE 1 image crashes' "$q/b/debugcon.bin"; then
	head -c -10 "$q/b/debugcon.bin" >"$work/cut.bin"
	out=$(python3 "$here/scripts/fuzz-files.py" "$work/cut.bin" "$work/cut" 2>&1)
	[ $? = 1 ] && grep -q "crashes/${crash##*/}.tpz ([0-9]* bytes) cut short: the boot ended inside it" <<<"$out" &&
		[ -f "$work/cut/crashes/${crash##*/}" ] && [ ! -e "$work/cut/crashes/${crash##*/}.tpz" ] ||
		why="${why:+$why; }a cut record: '$out'"
else
	why="${why:+$why; }no crash record on the debug console"
fi
verdict crash-file "$why"

# 3. the crash replayed, traced
why=""
if [ -f "$crash" ]; then
	strip() { sed -nE 's/.*(result: fuzz crash kind=bug .*)/\1/p' | sed -E 's/execs=[0-9]+ //'; }
	line_b=$(strip <"$q/b/serial.log")
	run_fw replay --instance b --replay "$crash" --options "$harness"
	line_r=$(strip <"$dir/$name.replay.out")
	[ -n "$line_b" ] && [ "$line_b" = "$line_r" ] ||
		why="the replay's crash line '$line_r' is not the campaign's '$line_b'"
	"$build/tools/ptdecode" --elf "$build/topaz.so" -q "$q/b/replay.tpz" >"$work/replay.decode" 2>&1 ||
		why="${why:+$why; }its trace does not decode: $(tail -2 "$work/replay.decode")"
else
	why="no crash to replay"
fi
verdict replay "$why"
# 4. a crash's trace as make fuzz-fw keeps it (pt.sink=memory)
why=""
run_fw guard --instance g --time 600 \
	--options 'fw.image="\EFI\tools\fuzz_guard.efi overflow after=50" fw.fuzz.guard=pool fw.fuzz.max_len=16 fw.fuzz.runs=1000'
site=$(sed -nE 's/.*result: fuzz crash kind=pool-overflow .*site=([^ ]+).*/\1/p' "$q/g/serial.log" | tail -n 1)
crash=$(ls "$q"/g/crashes/crash-* 2>/dev/null | grep -v '\.tpz$' | head -1)
tpz=$crash.tpz
if [ -z "$site" ]; then
	why="no pool-overflow crash with a site"
elif [ ! -f "$crash" ] || [ ! -f "$tpz" ]; then
	why="no crash input with its trace on the host: $(ls "$q/g/crashes" | paste -sd' ')"
else
	grep -q "its trace, up to the crash: .*ptdecode .*--insn $tpz" "$dir/$name.guard.out" ||
		why="fuzz-fw.sh did not say how to decode the crash's trace"
	dec() { "$build/tools/ptdecode" --elf "$build/topaz.so" --symbols "$build/efi" --insn "$@"; }
	dec "$tpz" >"$work/g.insn" 2>"$work/g.err"
	rc=$?
	end=$(sed -nE 's/^\[disabled at ([^]]+)\]$/\1/p' "$work/g.insn" | tail -n 1)
	[ $rc = 0 ] && [ ! -s "$work/g.err" ] ||
		why="${why:+$why; }ptdecode: exit $rc, $(head -2 "$work/g.err")"
	[ "$(tail -n 1 "$work/g.insn")" = "[end of trace]" ] && [ -n "$end" ] &&
		[ "${site%+*}" = "${end%+*}" ] && [ $((${site##*+})) = $((${end##*+})) ] ||
		why="${why:+$why; }the crash's trace ends at '${end:-nothing}' ($(tail -n 1 "$work/g.insn")), the crash was at '$site'"
	# the file cut short, and a byte of its trace damaged: errors that say so
	size=$(stat -c %s "$tpz")
	head -c $((size / 2)) "$tpz" >"$work/g-cut.tpz"
	out=$(dec "$work/g-cut.tpz" 2>&1 >/dev/null)
	[ $? != 0 ] && grep -q 'truncated: the record has' <<<"$out" && grep -q 'no trailer record' <<<"$out" ||
		why="${why:+$why; }a cut trace file: '$(head -2 <<<"$out")'"
	cp "$tpz" "$work/g-bad.tpz"
	printf '\377' | dd of="$work/g-bad.tpz" bs=1 seek=400 conv=notrunc status=none
	out=$(dec "$work/g-bad.tpz" 2>&1 >/dev/null)
	[ $? != 0 ] && grep -q 'payload CRC mismatch' <<<"$out" ||
		why="${why:+$why; }a damaged trace file: '$(head -2 <<<"$out")'"
	# on the console: the same damage in the trace's record is named, nothing written
	python3 - "$q/g/debugcon.bin" "$work/g-bad.bin" "${tpz##*/}" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
at = data.index(b" crashes " + sys.argv[3].encode() + b" ")
at = data.index(b"\n", at) + 1 + 400
data[at] ^= 0xff
open(sys.argv[2], "wb").write(data)
PY
	out=$(python3 "$here/scripts/fuzz-files.py" "$work/g-bad.bin" "$work/g-bad" 2>&1)
	[ $? = 1 ] && grep -q "crashes/${tpz##*/}: not a whole trace container: record 1 .*CRC is wrong" <<<"$out" &&
		[ ! -e "$work/g-bad/crashes/${tpz##*/}" ] || why="${why:+$why; }a damaged trace record: '$out'"
fi
verdict crash-trace "$why"
# for run-all.sh's list of the slowest: the three boots' seconds
echo "$(awk '{ s += $2 } END { print s }' "$dir/$name.times") $name ($(paste -sd, "$dir/$name.times"))" >"$dir/$name.time"
