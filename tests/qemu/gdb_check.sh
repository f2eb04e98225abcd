#!/usr/bin/env bash
# make debug, run as a user would but without a terminal: QEMU halted for gdb,
# gdb in batch mode with scripts/topaz-gdb.py, `hbreak work_sort`, continue:
# gdb must stop in work_sort, and topaz must then finish its job. The same
# boot checks what make debug displays (boot.sh --show): the firmware's
# screen-clear codes are in the serial log and not on the screen.
#   gdb_check.sh NAME RESULT_DIR     prints PASS/FAIL NAME... lines
set -uo pipefail
name=$1 dir=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
log=$dir/$name.serial shown=$dir/$name.shown out=$dir/$name.clean
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
setsid make --no-print-directory -C "$here" BUILD="$build" debug GDBPORT="$port" DEBUGLOG="$log" \
	CMDLINE="run=sort" SMP=1 >"$shown" 2>&1 &
qemu=$!
TOPAZ_GDB_PORT=$port TOPAZ_DEBUG_LOG=$log TOPAZ_BUILD=$build timeout 240 \
	gdb -batch -nx -x "$here/scripts/topaz-gdb.py" -ex 'hbreak work_sort' -ex continue \
	-ex 'info symbol $pc' >"$out" 2>&1
gdb_status=$?
# gdb detached at its end: topaz goes on to power off
for _ in $(seq 120); do kill -0 $qemu 2>/dev/null || break; sleep 1; done
kill -0 $qemu 2>/dev/null && kill -- -$qemu 2>/dev/null
wait $qemu
status=$?
why=""
grep -q '^Breakpoint 1[.0-9]*, work_sort ()' "$out" || why="gdb did not stop at work_sort"
grep -q '^work_sort in section .text' "$out" || why="${why:+$why; }\$pc is not in work_sort"
[ $gdb_status = 0 ] || why="${why:+$why; }gdb exited $gdb_status"
[ $status = 0 ] || why="${why:+$why; }make debug exited $status"
grep -q 'run: sort returned' "$shown" || why="${why:+$why; }the job did not run after gdb let it go"
if [ -n "$why" ]; then
	echo "FAIL $name: $why (gdb: $(grep -v '^$' "$out" | tail -n 2 | tr '\n' ' '))"
else
	echo "PASS $name: make debug and gdb -batch -x scripts/topaz-gdb.py stopped at hbreak work_sort"
fi
screen=$'\e\\[[=?]?[0-9;]*[HJh]'	# clear, cursor home, screen mode
if grep -q $'\e\\[2J' "$log" && ! grep -qE "$screen" "$shown"; then
	echo "PASS $name.screen: the firmware's screen-clear codes are in the log, not on the screen"
else
	echo "FAIL $name.screen: ESC[2J in the log: $(grep -c $'\e\\[2J' "$log"); shown: $(grep -cE "$screen" "$shown")"
fi
