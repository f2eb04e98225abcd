#!/usr/bin/env bash
# make image as a user runs it, the image read back with mtools: topaz as the
# removable-media loader, cmdline.txt, and in \EFI\tools the sample images and
# the user's own (EFI=), each with the symbol file made from its ELF (beside
# it, or in SYMBOLS=); a file EFI= cannot have is refused by name. One
# PASS/FAIL line.
#   image_check.sh BUILD
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name=image.contents
why=""
mkdir -p "$tmp/app" "$tmp/syms" "$tmp/other"
# two user images from the sample: one with its ELF beside it, one with it in SYMBOLS=
cp "$build/efi/hello.efi" "$tmp/app/myapp.efi"
cp "$build/efi/hello.so" "$tmp/app/myapp.so"
cp "$build/efi/hello.efi" "$tmp/other/tool.efi"
cp "$build/efi/hello.so" "$tmp/syms/tool.debug"
out=$(make -s --no-print-directory -C "$here" BUILD="$build" image ESP_IMG="$tmp/esp.img" \
	EFI="$tmp/app/myapp.efi,$tmp/other/tool.efi" SYMBOLS="$tmp/syms" CMDLINE='pt=on run=demo' 2>&1) ||
	why="make image failed: $out; "
img=$tmp/esp.img
have() { mdir -b -/ -i "$img" ::/ 2>/dev/null | grep -qxF "::$1"; }
if [ -z "$why" ]; then
	for f in /EFI/BOOT/BOOTX64.EFI /EFI/topaz/cmdline.txt /EFI/tools/hello.efi /EFI/tools/hello.sym \
		/EFI/tools/myapp.efi /EFI/tools/myapp.sym /EFI/tools/tool.efi /EFI/tools/tool.sym; do
		have "$f" || why="$why$f missing; "
	done
	[ "$(mtype -i "$img" ::/EFI/topaz/cmdline.txt 2>/dev/null)" = 'pt=on run=demo' ] ||
		why="${why}cmdline.txt is not the line given; "
	mcopy -n -i "$img" ::/EFI/tools/myapp.efi "$tmp/back.efi" 2>/dev/null
	cmp -s "$tmp/back.efi" "$tmp/app/myapp.efi" || why="${why}myapp.efi is not the user's bytes; "
	# the symbol file: fib at the offset the ELF has it
	fib=$(nm "$build/efi/hello.so" | awk '$3 == "fib" { print $1 }')
	for s in myapp tool; do
		mtype -i "$img" "::/EFI/tools/$s.sym" 2>/dev/null | grep -qE "^$fib [0-9a-f]+ fib$" ||
			why="${why}$s.sym has no 'fib' at $fib; "
	done
	grep -q '^  /EFI/tools/myapp.efi$' <<<"$out" || why="${why}make image did not say it wrote myapp.efi ($out); "
fi
# refused by name before any image is written
out=$(make -s --no-print-directory -C "$here" BUILD="$build" image ESP_IMG="$tmp/bad.img" \
	EFI="$tmp/app/nosuch.efi" 2>&1) && why="${why}EFI= of a missing file was accepted; "
grep -qF "EFI=$tmp/app/nosuch.efi: no such file" <<<"$out" || why="${why}no message naming the missing file ($out); "
[ -e "$tmp/bad.img" ] && why="${why}an image was written anyway; "
out=$(make -s --no-print-directory -C "$here" BUILD="$build" image ESP_IMG="$tmp/bad.img" \
	EFI="$tmp/app/myapp.so" 2>&1) && why="${why}EFI= of an ELF file was accepted; "
grep -qF "myapp.so: not an EFI image" <<<"$out" || why="${why}no message naming the non-EFI file ($out); "
if [ -z "$why" ]; then echo "PASS $name"; else echo "FAIL $name: ${why%; }"; fi
