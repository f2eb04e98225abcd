#!/usr/bin/env bash
# Make a FAT image laid out as an EFI system partition: topaz as the removable-
# media boot loader, and the kernel command line in \EFI\topaz\cmdline.txt.
# Write the image to a USB stick (dd) to boot topaz on a real machine.
#   mkesp.sh topaz.efi "cmdline words" out.img [shell|boot|printf|utf16] [SRC:/PATH ...]
# Each SRC:/PATH after that is copied to /PATH on the volume (folders made),
# for example a user's EFI image for fw.image=.
# With "shell", topaz is \topaz.efi started by the UEFI shell's startup.nsh
# instead, so the command line arrives as EFI load options (5 s slower: the
# shell counts down before running startup.nsh).
# "printf" and "utf16" boot as "boot" does, with cmdline.txt written otherwise
# (the tests' hostile files): "printf" through printf's %b, its escapes as bytes
# (\0 a NUL) and no newline added; "utf16" in UTF-16LE with a byte-order mark
# and CRLF, as Windows' Notepad saves "Unicode".
#   mkesp.sh --describe out.img: what the image holds and what to do with it (make image)
set -euo pipefail
if [ "${1:-}" = --describe ]; then
	img=$2
	echo "image: wrote $img: $(( $(stat -c %s "$img") >> 20 )) MiB, one FAT file system and no partition table (UEFI boots removable media so)"
	mdir -i "$img" -/ -b :: 2>/dev/null | sed -n 's|^::||p' | while IFS= read -r f; do
		case "$f" in
		*/) ;;
		/EFI/BOOT/BOOTX64.EFI) echo "  $f    topaz, the removable-media boot loader" ;;
		/EFI/topaz/cmdline.txt) echo "  $f   \"$(mtype -i "$img" "::$f" | tr -d '\r\n')\"" ;;
		*) echo "  $f" ;;
		esac
	done
	echo "next: write it to a USB stick (everything on the stick is lost; lsblk names it, /dev/sdX here):"
	echo "  sudo dd if=$img of=/dev/sdX bs=1M conv=fsync"
	echo "  then boot the stick from the firmware's boot menu with Secure Boot off: docs/real-hardware.md"
	exit 0
fi
efi=$1 cmdline=$2 out=$3 via=${4:-}
shift $(( $# < 4 ? $# : 4 ))
[ -f "$efi" ] || { echo "mkesp: no such EFI image: $efi" >&2; exit 1; }
tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp" "$tmp.txt"' EXIT
truncate -s 16M "$tmp"
mformat -i "$tmp" -v TOPAZ ::
if [ "$via" = shell ]; then
	mcopy -i "$tmp" "$efi" ::/topaz.efi
	printf 'fs0:\r\n\\topaz.efi %s\r\n' "$cmdline" > "$tmp.txt"
	mcopy -i "$tmp" "$tmp.txt" ::/startup.nsh
else
	mmd -i "$tmp" ::/EFI ::/EFI/BOOT ::/EFI/topaz
	mcopy -i "$tmp" "$efi" ::/EFI/BOOT/BOOTX64.EFI
	case "$via" in
	printf) printf '%b' "$cmdline" > "$tmp.txt" ;;
	utf16) printf '\xff\xfe' > "$tmp.txt"; printf '%s\r\n' "$cmdline" | iconv -f ASCII -t UTF-16LE >> "$tmp.txt" ;;
	*) printf '%s\n' "$cmdline" > "$tmp.txt" ;;
	esac
	mcopy -i "$tmp" "$tmp.txt" ::/EFI/topaz/cmdline.txt
fi
for extra in "$@"; do
	src=${extra%%:*} dst=${extra#*:}
	[ -f "$src" ] || { echo "mkesp: no such file: $src" >&2; exit 1; }
	dir=${dst%/*} path=""
	IFS=/ read -ra parts <<<"${dir#/}"
	for p in "${parts[@]}"; do
		path="$path/$p"
		mmd -i "$tmp" "::$path" 2>/dev/null || true
	done
	mcopy -o -i "$tmp" "$src" "::$dst"
done
mv "$tmp" "$out"
trap - EXIT
rm -f "$tmp.txt"
