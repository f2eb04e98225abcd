#!/usr/bin/env bash
# make fuzz-fw: a fw.fuzz= campaign in QEMU (docs/fuzzing.md), on the software trace
# unit with the trace's coverage as feedback, its finds in libFuzzer's layout on the host.
#   fuzz-fw.sh --target NAME [--time S] [--instance ID] [--options "fw.fuzz.seed=2 ..."]
#              [--efi a.efi,b.efi] [--dict FILE] [--coverage | --replay FILE] [--quiet]
#              [--build DIR]
# Every queue of build/fuzz/NAME (its corpus/ and each instance's ID/corpus/) goes onto
# the boot volume and starts the campaign (fw.fuzz.corpus=): a session resumes, and an
# instance imports the others' finds (AFL's -M/-S idea, one round a run). New finds and
# crashes come back through the debug console into build/fuzz/NAME/[ID/]corpus, crashes
# (and from the volume afterwards: a file the console missed is taken from there); each
# crash's trace beside it, crash-SHA1.tpz, for ptdecode.
# --dict: an AFL dictionary, onto the volume for fw.fuzz.dict=.
# --coverage: no campaign; the corpus replayed once, traced (fw.fuzz.replay=), and
# ptdecode --coverage on that trace into build/fuzz/NAME/[ID/]coverage/.
# --replay FILE: no campaign; FILE (a crash-SHA1) run once, traced (fw.fuzz.replay=):
# the same crash line as in the campaign, its trace in build/fuzz/NAME/[ID/]replay.tpz.
# Exit status: the boot's (0: the campaign ended without a crash; 1: a crash or a failure).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
target="" time=60 instance="" options="" efi="" coverage=0 quiet=0 replay="" dict=""

while [ $# -gt 0 ]; do
	case "$1" in
	--target) target=$2; shift 2 ;;
	--time) time=$2; shift 2 ;;
	--instance) instance=$2; shift 2 ;;
	--options) options=$2; shift 2 ;;
	--efi) efi=$2; shift 2 ;;
	--coverage) coverage=1; shift ;;
	--replay) replay=$2; shift 2 ;;
	--dict) dict=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--build) build=$2; shift 2 ;;
	*) echo "fuzz-fw: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[[ "$target" =~ ^[A-Za-z0-9_.-]+$ ]] ||
	{ echo "fuzz-fw: TARGET='$target': give a target's name (make fuzz-fw TARGET=decompress TIME=60; fw.fuzz=list names them)" >&2; exit 2; }
[[ "$time" =~ ^[0-9]+$ ]] && [ "$time" -gt 0 ] ||
	{ echo "fuzz-fw: TIME='$time': seconds, a whole number above 0" >&2; exit 2; }
[[ "$instance" =~ ^[A-Za-z0-9_.-]*$ ]] && [ "$instance" != corpus ] && [ "$instance" != crashes ] ||
	{ echo "fuzz-fw: INSTANCE='$instance': letters, digits, _ . - (not corpus or crashes)" >&2; exit 2; }
if [ "$target" = image ] && [[ " $options " != *" fw.image="* ]]; then
	echo "fuzz-fw: TARGET=image fuzzes the harness fw.image= runs: FUZZ='fw.image=\\EFI\\tools\\fuzz_magic.efi' (EFI= adds your own)" >&2
	exit 2
fi
top=$build/fuzz/$target
out=$top${instance:+/$instance}
mkdir -p "$out/corpus" "$out/crashes"
run=$(mktemp -d "$build/fuzz-fw.XXXXXX")
trap 'rm -rf "$run"' EXIT

# every queue, each file once (named by its SHA-1: the same name, the same bytes)
mkdir -p "$run/import"
for q in "$top/corpus" "$top"/*/corpus; do
	[ -d "$q" ] || continue
	find "$q" -maxdepth 1 -type f -size +0 -exec cp -n -t "$run/import" {} + 2>/dev/null
done
queued=$(find "$run/import" -type f | wc -l)
vol='\EFI\topaz\fuzz\'"$target"'\corpus'
add=()
[ "$queued" -gt 0 ] && add=(--add-dir "$run/import:/EFI/topaz/fuzz/$target/corpus")
kb=$(du -sk "$run/import" | cut -f1)
[ "$kb" -lt 12000 ] ||
	{ echo "fuzz-fw: the queues hold ${kb} KiB: more than the 16 MiB boot volume takes; minimise them (docs/fuzzing.md)" >&2; exit 2; }

path="" hint=$options	# what FUZZ= was, for the commands suggested at the end
# put VAR FILE FOLDER: FILE onto the volume in \EFI\topaz\FOLDER; its path there in VAR
put() {
	[ -f "$2" ] || { echo "fuzz-fw: ${3^^}=$2: no such file" >&2; exit 2; }
	mkdir -p "$run/$3"
	cp "$2" "$run/$3/"
	add+=(--add-dir "$run/$3:/EFI/topaz/$3")
	printf -v "$1" '%s' "\\EFI\\topaz\\$3\\${2##*/}"
}
if [ -n "$dict" ]; then
	put path "$dict" dict
	options="fw.fuzz.dict=$path $options"
fi
if [ -n "$replay" ]; then
	put path "$replay" replay
	cmdline="fw.fuzz=$target pt=on pt.sink=debugcon fw.fuzz.replay=$path $options"
	coverage=2
elif [ $coverage = 1 ]; then
	[ "$queued" -gt 0 ] || { echo "fuzz-fw: no corpus in $top to replay: run a campaign first" >&2; exit 2; }
	cmdline="fw.fuzz=$target pt=on pt.sink=debugcon fw.fuzz.replay=$vol $options"
else
	cmdline="fw.fuzz=$target pt=on pt.coverage=on pt.sink=memory fw.fuzz.runs=0 fw.fuzz.time=$time"
	[ "$queued" -gt 0 ] && cmdline="$cmdline fw.fuzz.corpus=$vol"
	cmdline="$cmdline $options"
fi
log=$out/serial.log
case $coverage in
0) what="${time} s, starting from $queued inputs of $top's queues" ;;
1) what="replaying $queued inputs, traced" ;;
*) what="replaying $replay, traced" ;;
esac
echo "fuzz-fw: $target${instance:+ (instance $instance)}: $what"
echo "fuzz-fw: command line: $cmdline"
bootargs=(--cmdline "$cmdline" --timeout $((time + 300)) --debugcon "$run/debugcon" --log "$log"
	  --efi "$efi" --fetch "$run/volume" "${add[@]}")
# A crash may leave the firmware broken (a target that wrote over its memory), and the
# phase's end (the files, the leak check, ExitBootServices) may then hang: once the
# crash's first line is out, the boot gets $grace s to end, then QEMU is stopped (the
# crash can break topaz's memory too: a zero fill across it).
grace=${FUZZ_FW_GRACE:-60}
: >"$log"
(
	while ! grep -aq 'fuzz: crash: kind=' "$log" 2>/dev/null; do
		sleep 1
		[ -e "$run/ended" ] && exit 0
	done
	for _ in $(seq "$grace"); do
		sleep 1
		[ -e "$run/ended" ] && exit 0
	done
	touch "$run/stopped"
	pkill -TERM -f -- "file:$run/debugcon" 2>/dev/null
) &
watch=$!
if [ $quiet = 1 ]; then
	"$here/tests/qemu/boot.sh" "${bootargs[@]}" >"$run/boot.out" 2>&1
else
	"$here/tests/qemu/boot.sh" --show "${bootargs[@]}"	# the console as it goes
fi
status=$?
touch "$run/ended"
wait $watch 2>/dev/null
if [ -e "$run/stopped" ]; then
	echo "fuzz-fw: the firmware did not end the boot within ${grace} s of the crash (the crash can leave it broken): QEMU stopped; what the debug console carried is kept" >&2
	status=35
fi
[ $quiet = 1 ] && [ $status != 33 ] && [ $status != 35 ] && cat "$run/boot.out" >&2
status=$(( status == 0 ? 33 : status == 1 ? 35 : status ))	# (--show: 0 passed, 1 failed)
if [ $coverage != 0 ]; then
	cp "$run/debugcon" "$out/replay.tpz"
	grep -a 'result: fuzz ' "$log" | sed 's/^\[[ 0-9.]*\] //'
	if [ $coverage = 2 ]; then
		echo "fuzz-fw: the replay's trace: $out/replay.tpz (decode: $build/tools/ptdecode --elf $build/topaz.so $out/replay.tpz); console: $log"
		exit $(( status == 33 ? 0 : 1 ))
	fi
	"$build/tools/ptdecode" --coverage "$out/coverage" --elf "$build/topaz.so" -q "$out/replay.tpz" ||
		{ echo "fuzz-fw: ptdecode --coverage failed on $out/replay.tpz" >&2; exit 1; }
	echo "fuzz-fw: the corpus's coverage: $out/coverage/ (summary.txt; *.drcov for Lighthouse or Cartographer)"
	exit $(( status == 0 || status == 33 ? 0 : 1 ))
fi
cp "$run/debugcon" "$out/debugcon.bin"
python3 "$here/scripts/fuzz-files.py" "$out/debugcon.bin" "$out" --target "$target"
files=$?
# what the console missed (a console-less machine; pt.sink=debugcon) from the volume
for d in corpus crashes; do
	n=0
	for f in "$run/volume/fuzz/$target/$d"/*; do
		[ -f "$f" ] && [ ! -e "$out/$d/${f##*/}" ] || continue
		# (the imported queues are on the volume too: only this run's finds)
		[ -e "$run/import/${f##*/}" ] || { cp "$f" "$out/$d/"; n=$((n + 1)); }
	done
	[ $n = 0 ] || echo "fuzz-fw: $n $d file(s) from the boot volume that the debug console did not carry"
done
grep -a 'result: fuzz ' "$log" | sed 's/^\[[ 0-9.]*\] //'
echo "fuzz-fw: corpus: $out/corpus/ ($(find "$out/corpus" -type f | wc -l) files); crashes: $out/crashes/ ($(find "$out/crashes" -type f | wc -l) files); console: $log"
for c in "$out"/crashes/crash-*; do
	[ -f "$c" ] && [ "${c%.tpz}" = "$c" ] || continue
	echo "fuzz-fw: replay a crash, traced: make fuzz-fw TARGET=$target REPLAY=$c${hint:+ FUZZ='$hint'}"
	[ -f "$c.tpz" ] && echo "fuzz-fw: its trace, up to the crash: $build/tools/ptdecode --elf $build/topaz.so --symbols $build/efi --insn $c.tpz | tail"
	break
done
echo "fuzz-fw: the corpus's coverage (replays it traced, then ptdecode --coverage): make fuzz-fw TARGET=$target${instance:+ INSTANCE=$instance} COVERAGE=1${hint:+ FUZZ='$hint'}"
[ $files = 0 ] || status=35
case $status in
33) exit 0 ;;
*) exit 1 ;;
esac
