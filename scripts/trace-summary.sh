#!/usr/bin/env bash
# The end of `make run`: decode the trace container the kernel sent (QEMU's
# debugcon file, else the framed copy in the serial log) with the kernel ELF,
# print a short summary and say where the full outputs are; its coverage into
# build/coverage/ (drcov, lcov: the genhtml command); export it as
# build/perf.data for Linux perf and print the commands that read it.
#   trace-summary.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
tool=$build/tools/ptdecode
trace=$build/trace.tpz
log=$build/serial.log
out=$build/trace
[ -x "$tool" ] || { echo "trace: $tool is missing (make tools)" >&2; exit 1; }
if [ ! -s "$trace" ] && grep -qa '@TPZ-BEGIN' "$log" 2>/dev/null; then
	echo "trace: extracting the framed trace from $log"
	"$tool" --extract-serial "$log" -o "$trace"
fi
if [ ! -s "$trace" ]; then
	echo "trace: none captured (no container on debugcon or in $log)"
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
"$tool" --elf "$build/topaz.so" "${symopt[@]}" --out-dir "$out" --perf-data "$build/perf.data" --max-problems 10 "$trace"
case $? in
0|1) ;;
*) echo "trace: $trace could not be decoded" >&2; exit 1 ;;
esac
# the blocks and edges it reached: drcov for a disassembler, lcov for genhtml
# (afresh: no module of an earlier boot left there)
rm -rf "$build/coverage"
if "$tool" --coverage "$build/coverage" --elf "$build/topaz.so" "${symopt[@]}" -q "$trace" \
	>/dev/null 2>&1 || [ $? = 1 ]; then
	echo "coverage: $build/coverage/ (summary.txt; *.drcov for Lighthouse or Cartographer):"
	ls "$build"/coverage/*.info >/dev/null 2>&1 &&
		echo "  genhtml -o $build/coverage/html $build/coverage/*.info    # the source lines reached, as HTML"
fi
if [ -s "$build/perf.data" ]; then
	echo "perf: $build/perf.data (Linux perf's own Intel PT decoder):"
	echo "  perf script -i $build/perf.data --itrace=i1i -F ip,sym,symoff    # every instruction"
	echo "  perf script -i $build/perf.data --itrace=be -F ip,addr,sym       # the branches"
	echo "  perf report -i $build/perf.data --itrace=i100ig --stdio          # a call graph"
fi
