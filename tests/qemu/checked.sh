# shellcheck shell=bash
# Sourced by tests/run-all.sh and tests/qemu/oracle.sh: how the suite runs a
# checker (perf_check.py, calltree_check.py, coverage_check.py, ...).

# checked NAME CMD...: run CMD under the memory bound CHECK_MEM_KB (ulimit
# -v: each of its processes may map that many KiB) and print its output, so
# that NAME's check ends in PASS or FAIL whatever happens. Its own verdict
# lines stand when its exit status agrees (0, or 1 with a FAIL line); a
# checker that exits otherwise, prints no verdict, or is killed (the bound's
# MemoryError, a crash, the OOM killer's SIGKILL) is one FAIL line that
# says so, its verdict lines shown indented (not counted).
checked() {
	local name=$1 out status why last
	shift
	out=$( (ulimit -v "${CHECK_MEM_KB:?}" && exec "$@") 2>&1)
	status=$?
	if { [ $status = 0 ] && grep -qE '^(PASS|FAIL) ' <<<"$out"; } ||
		{ [ $status = 1 ] && grep -q '^FAIL ' <<<"$out"; }; then
		printf '%s\n' "$out"
		return
	fi
	if [ $status -gt 128 ]; then
		why="killed by SIG$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))"
	elif grep -qE '^(PASS|FAIL) ' <<<"$out"; then
		why="exit status $status after its verdict"
	else
		why="exit status $status without a verdict"
	fi
	if grep -q 'MemoryError\|Cannot allocate memory\|out of memory' <<<"$out"; then
		why+=" (the suite's memory bound: $((CHECK_MEM_KB / 1024)) MiB a process)"
	fi
	last=$(grep -v '^[[:space:]]*$' <<<"$out" | tail -n 1)
	[ -z "$out" ] || sed -E 's/^(PASS|FAIL) /  (not counted) \1 /' <<<"$out"
	echo "FAIL $name: $why${last:+; its last line: ${last:0:200}}"
}

# cpu_ticks VAR: the CPU time (user + system, in clock ticks: getconf
# CLK_TCK) of the shell's waited-for children so far, into VAR; read from
# /proc without a fork, so that a case's own share is known on a loaded host
# where wall time is not.
cpu_ticks() {
	local s
	read -ra s <"/proc/$BASHPID/stat"
	printf -v "$1" '%s' $((s[15] + s[16]))
}
# cpu_secs TICKS: TICKS as seconds with one decimal
cpu_secs() {
	local hz=${CLK_TCK:=$(getconf CLK_TCK 2>/dev/null || echo 100)}
	printf '%d.%d' $(($1 / hz)) $(($1 * 10 / hz % 10))
}
