#!/usr/bin/env bash
# Boot topaz in QEMU (TCG) with OVMF, with a command line, and report how it ended.
#   boot.sh [--cmdline "..."] [--via-shell | --cmdline-file printf|utf16] [--log FILE] [--debugcon FILE | --no-debugcon]
#           [--mem SIZE] [--smp N] [--timeout S] [--show] [--fetch DIR]
#           [--efi A.efi[,B.efi]] [--symbols DIR[,DIR]] [--esp-files DIR] [--add-dir DIR:/PATH]
#           [-- QEMU ARGS]
# --cmdline-file: cmdline.txt written another way (scripts/mkesp.sh: escapes as bytes, UTF-16LE).
# --fetch: the files topaz wrote to the boot volume's \EFI\topaz (pt.sink=file's
# trace-NNNN.tpz) into DIR afterwards, DIR emptied first.
# --efi: the user's images, in \EFI\tools with the samples (make run EFI=); --symbols: folders
# of their ELF files (SYMBOLS=); --esp-files: where scripts/esp-files.sh leaves the symbol
# files and the ELF folder for ptdecode --symbols (DIR/symbols; make run: build/esp-files).
# --add-dir: each file of DIR onto the volume in /PATH (make fuzz-fw: a corpus to resume).
# Exit status: QEMU's (33 = topaz passed, 35 = topaz failed), 124 on a timeout;
# with --show (make run) 0 for passed and 1 for failed.
set -uo pipefail
# What --show displays: the console without the firmware's screen control
# (OVMF clears the screen and moves the cursor home: ESC[2J, ESC[01;01H,
# ESC[=3h), which would wipe the user's terminal; colours (ESC[...m) stay.
# The log file keeps every byte. `boot.sh --filter` is the filter alone.
screen_filter() { LC_ALL=C sed -u -E $'s/\x1b\\[[=?]?[0-9;]*[A-La-ln-z]//g'; }
[ "${1:-}" = --filter ] && { screen_filter; exit; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$here/build}
cmdline="" via="" log="" dcon=/dev/null mem=512M smp=1 timeout=120 show=0 extra=() fetch=""
efi="" symbols="" esp_files="" add_dirs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--cmdline) cmdline=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--debugcon) dcon=$2; shift 2 ;;
	--no-debugcon) dcon=""; shift ;;	# a machine without port 0xe9
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--show) show=1; shift ;;
	--via-shell) via=shell; shift ;;
	--cmdline-file) via=$2; shift 2 ;;
	--fetch) fetch=$2; shift 2 ;;
	--efi) efi=$2; shift 2 ;;
	--symbols) symbols=$2; shift 2 ;;
	--esp-files) esp_files=$2; shift 2 ;;
	--add-dir) add_dirs+=("$2"); shift 2 ;;
	--) shift; extra=("$@"); break ;;
	*) echo "boot.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[[ "$timeout" =~ ^[0-9]+(\.[0-9]+)?[smhd]?$ ]] ||
	{ echo "boot.sh: --timeout (make run's TIMEOUT=) '$timeout': not a time (seconds: 300, or 5m)" >&2; exit 2; }
ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.fd
for f in "$build/topaz.efi" "$ovmf_code" "$ovmf_vars"; do
	[ -f "$f" ] || { echo "boot.sh: missing $f (run 'make kernel' / scripts/setup.sh)" >&2; exit 2; }
done
run=$(mktemp -d "$build/run.XXXXXX")
[ -n "$log" ] || log=$run/serial.log
# OVMF's variable store as its first boot leaves it (the boot options, the
# console and language variables it writes then), made once in the build
# folder and copied for each boot: a machine that booted before. Written
# afresh by every boot, those flash writes were a quarter of a plain boot's
# CPU time under TCG (1.2 s of 5). Made by booting topaz's `help`; if that
# fails, boots start from the empty store as before.
vars_cache=$build/ovmf-vars.fd
# whether the store is to be made: none, or older than OVMF's, and no failed
# try since topaz was built (that one's reason is in $vars_cache.failed)
vars_stale() {
	{ [ ! -s "$vars_cache" ] || [ "$ovmf_vars" -nt "$vars_cache" ]; } &&
		! { [ -e "$vars_cache.failed" ] && [ "$vars_cache.failed" -nt "$build/topaz.efi" ]; }
}
prepare_vars() {
	local status
	rm -f "$vars_cache.tmp"
	BOOT_SAVE_VARS=$vars_cache.tmp "$0" --cmdline help --timeout 120 >/dev/null 2>&1
	status=$?
	if [ $status = 33 ] && [ -s "$vars_cache.tmp" ]; then
		mv "$vars_cache.tmp" "$vars_cache"
		rm -f "$vars_cache.failed"
	else
		echo "boot.sh: preparing OVMF's variable store ($vars_cache): topaz's help boot ended with status $status; boots start from the empty store" |
			tee "$vars_cache.failed" >&2
	fi
}
# (BOOT_SAVE_VARS=FILE: the boot that prepares it, from the empty store)
if [ -z "${BOOT_SAVE_VARS:-}" ] && vars_stale; then
	# one boot prepares it, the others wait for it
	exec 9>"$build/ovmf-vars.lock"
	flock 9
	vars_stale && prepare_vars
	exec 9>&-
fi
if [ -z "${BOOT_SAVE_VARS:-}" ] && [ -s "$vars_cache" ] && ! [ "$ovmf_vars" -nt "$vars_cache" ]; then
	cp "$vars_cache" "$run/vars.fd"
else
	cp "$ovmf_vars" "$run/vars.fd"
fi
# the sample EFI images for fw.image= (make efi-samples) and the user's, in \EFI\tools
files=$("$here/scripts/esp-files.sh" "$build" "${esp_files:-$run}" "$efi" "$symbols") ||
	{ rm -rf "$run"; exit 2; }
mapfile -t files < <([ -n "$files" ] && printf '%s\n' "$files")
for d in "${add_dirs[@]}"; do
	for f in "${d%%:*}"/*; do
		[ -f "$f" ] && files+=("$f:${d#*:}/${f##*/}")
	done
done
"$here/scripts/mkesp.sh" "$build/topaz.efi" "$cmdline" "$run/esp.img" "${via:-boot}" "${files[@]}" || exit 2

accel=tcg
[ "$smp" -gt 1 ] && accel=tcg,thread=multi	# MTTCG: each CPU its own host thread
args=(-machine q35 -accel "$accel" -cpu max -m "$mem" -smp "$smp" -display none -monitor none
      -no-reboot -net none
      -drive if=pflash,format=raw,unit=0,readonly=on,file="$ovmf_code"
      -drive if=pflash,format=raw,unit=1,file="$run/vars.fd"
      # the volume has the first boot index: OVMF tries it before its other boot
      # options (the DVD drive QEMU adds, which it tried first and failed)
      -drive if=none,id=esp,format=raw,file="$run/esp.img"
      -device ide-hd,drive=esp,bus=ide.0,bootindex=0
      -device isa-debug-exit,iobase=0xf4,iosize=0x04)
[ -n "$dcon" ] && args+=(-debugcon file:"$dcon")
if [ $show = 1 ]; then
	args+=(-chardev stdio,id=com1,logfile="$log",signal=off -serial chardev:com1)
else
	args+=(-serial file:"$log")
fi
if [ $show = 1 ]; then
	timeout --foreground -k 5 "$timeout" qemu-system-x86_64 "${args[@]}" "${extra[@]}" </dev/null |
		screen_filter
	status=${PIPESTATUS[0]}
else
	timeout --foreground -k 5 "$timeout" qemu-system-x86_64 "${args[@]}" "${extra[@]}" </dev/null
	status=$?
fi
[ -n "${BOOT_SAVE_VARS:-}" ] && [ "$status" = 33 ] && cp "$run/vars.fd" "$BOOT_SAVE_VARS"
if [ -n "$fetch" ]; then
	# all of \EFI\topaz but what mkesp.sh put there; none when topaz made no folder
	rm -rf "$fetch" && mkdir -p "$fetch" &&
		{ mcopy -s -n -i "$run/esp.img" '::/EFI/topaz/*' "$fetch/" 2>/dev/null || :; } &&
		rm -f "$fetch/cmdline.txt"
fi
rm -rf "$run"
if [ $show = 1 ]; then
	case $status in
	33) echo "boot.sh: topaz powered off: success"; exit 0 ;;
	35) echo "boot.sh: topaz powered off: failure" >&2; exit 1 ;;
	esac
fi
case $status in
33) [ $show = 1 ] && echo "boot.sh: topaz powered off: success" ;;
35) [ $show = 1 ] && echo "boot.sh: topaz powered off: failure" ;;
124) echo "boot.sh: timed out after $timeout$([[ $timeout == *[smhd] ]] || echo s) (hang? make run TIMEOUT=S gives it longer)" >&2 ;;
esac
exit $status
