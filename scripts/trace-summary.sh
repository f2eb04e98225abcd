#!/usr/bin/env bash
# The end of `make run`: decode the trace container the kernel sent (QEMU's
# debugcon file, else the framed copy in the serial log, else the file it
# wrote to the boot volume, pt.sink=file) with the kernel ELF, print a short
# summary and say where the outputs are; its coverage into coverage/ (drcov,
# lcov: the genhtml command); export it as perf.data for Linux perf and print
# the commands that read it.
#   trace-summary.sh [--insn] BUILD_DIR [RUN_DIR]
#   trace-summary.sh --clean BUILD_DIR [RUN_DIR]
# BUILD_DIR has ptdecode and topaz.so; RUN_DIR (BUILD_DIR by default) the
# run's files: trace.tpz, serial.log, volume/ (boot.sh --fetch) and the
# outputs trace/, perf.data, perf.data.images/, coverage/.
# The outputs are what a user reads (summary, stats, calls, folded stacks,
# flame graph, perf.data); --insn (make run INSN=1) adds the listings,
# insn.txt and packets.txt (6.7 GB and 46 MB for fw.run=all).
# --clean, before a boot: every file of the last run goes, so a run that
# captures nothing leaves nothing that looks current.
set -uo pipefail
listings=()
case "${1:-}" in
--clean) clean=1; shift ;;
--insn) clean=0 listings=(--insn --packets); shift ;;
*) clean=0 ;;
esac
build=${1:-build}
run=${2:-$build}
tool=$build/tools/ptdecode
trace=$run/trace.tpz
log=$run/serial.log
out=$run/trace
# an earlier run's outputs would look like this one's
rm -rf "$out" "$run/perf.data" "$run/perf.data.images" "$run/coverage"
if [ $clean = 1 ]; then
	rm -rf "$trace" "$log" "$run/volume"
	exit 0
fi
[ -x "$tool" ] || { echo "trace: $tool is missing (make tools)" >&2; exit 1; }
if [ ! -s "$trace" ] && grep -qa '@TPZ-BEGIN' "$log" 2>/dev/null; then
	echo "trace: extracting the framed trace from $log"
	"$tool" --extract-serial "$log" -o "$trace"
fi
if [ ! -s "$trace" ]; then
	# pt.sink=file: what topaz wrote to \EFI\topaz (the last, if several)
	files=("$run"/volume/trace-*.tpz)	# (sorted: the last is the newest)
	file=${files[-1]}
	if [ -s "$file" ]; then
		printf 'trace: \\EFI\\topaz\\%s from the boot volume, in %s\n' "${file##*/}" "$file"
		trace=$file
	fi
fi
if [ ! -s "$trace" ]; then
	echo "trace: none captured (no container on debugcon, in $log or on the boot volume)"
	exit 0
fi
# a container of no trace bytes (a boot that failed before tracing): nothing
# to decode or export (its first packet line is enough to know)
if [ "$("$tool" --packets -q "$trace" 2>/dev/null | head -c 1 | wc -c)" = 0 ]; then
	echo "trace: none captured ($trace has no trace bytes in it: see the boot log above)"
	exit 0
fi
# the firmware modules' names (hello!fib): the ELF files of the images on the
# boot volume and SYMBOLS= (scripts/esp-files.sh), else the samples'; only when
# one is a module of the trace's sideband (ptdecode counts a folder with none
# as a problem)
syms=$build/esp-files/symbols
[ -d "$syms" ] || syms=$build/efi
symopt=()
for m in $(sed -nE 's/.*fw: sideband: ([^ ]+) at 0x.*/\1/p' "$log" 2>/dev/null | sort -u); do
	if [ -e "$syms/$m.debug" ] || [ -e "$syms/$m.so" ] || [ -e "$syms/$m.elf" ]; then
		symopt=(--symbols "$syms")
		break
	fi
done
echo "trace: decoding $trace ($(stat -c %s "$trace") bytes) with $build/topaz.so${symopt[1]:+ and the symbols in ${symopt[1]}}"
"$tool" --elf "$build/topaz.so" "${symopt[@]}" --out-dir "$out" --calls --stats --folded "${listings[@]}" \
	--perf-data "$run/perf.data" --max-problems 10 "$trace"
case $? in
0|1) ;;
*) echo "trace: $trace could not be decoded" >&2; exit 1 ;;
esac
[ ${#listings[@]} = 0 ] &&
	echo "  make run INSN=1 writes them; or, paged: $tool --elf $build/topaz.so --insn $trace | less"
# the blocks and edges it reached: drcov for a disassembler, lcov for genhtml
# (stderr: its progress line on a terminal; -q, no problems: the decode above said them)
if "$tool" --coverage "$run/coverage" --elf "$build/topaz.so" "${symopt[@]}" -q "$trace" \
	>/dev/null || [ $? = 1 ]; then
	echo "coverage: $run/coverage/ (summary.txt; *.drcov for Lighthouse or Cartographer):"
	ls "$run"/coverage/*.info >/dev/null 2>&1 &&
		echo "  genhtml -o $run/coverage/html $run/coverage/*.info    # the source lines reached, as HTML"
fi
if [ -s "$run/perf.data" ]; then
	echo "perf: $run/perf.data (Linux perf's own Intel PT decoder):"
	echo "  perf script -i $run/perf.data --itrace=i1i -F ip,sym,symoff    # every instruction"
	echo "  perf script -i $run/perf.data --itrace=be -F ip,addr,sym       # the branches"
	echo "  perf report -i $run/perf.data --itrace=i100ig --stdio          # a call graph"
fi
