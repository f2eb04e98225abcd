#!/usr/bin/env bash
# What goes on the boot volume besides topaz, for make run, make image and the
# tests: the sample images (BUILD/efi/*.efi) and the user's own (EFI=) in
# \EFI\tools, each with NAME.sym beside it when its ELF is found (the kernel
# reads it for pt.filter="filter NAME!function"); and a folder of those ELF
# files by module name, for ptdecode --symbols.
#   esp-files.sh BUILD OUT "a.efi,b.efi" "symdir[,symdir]"
# Prints one SRC:/PATH a line for scripts/mkesp.sh; writes OUT/sym/NAME.sym and
# OUT/symbols/NAME.{so,debug,elf} (links). An image's ELF is NAME.debug,
# NAME.so or NAME.elf beside it or in a SYMBOLS folder (EDK2's builds leave
# NAME.debug, GNU-EFI's link NAME.so); every ELF of a SYMBOLS folder goes into
# OUT/symbols too (firmware modules').
set -euo pipefail
build=$1 out=$2 efi_list=${3:-} sym_list=${4:-}
rm -rf "$out/sym" "$out/symbols"
mkdir -p "$out/sym" "$out/symbols"
IFS=, read -ra user_efi <<<"$efi_list"
IFS=, read -ra sym_dirs <<<"$sym_list"
for d in "${sym_dirs[@]}"; do
	[ -d "$d" ] || { echo "SYMBOLS=$d: no such folder (it should hold NAME.debug, NAME.so or NAME.elf)" >&2; exit 2; }
done

# module NAME's ELF into OUT/symbols (one file a name: the last one given wins)
link_elf() {
	rm -f "$out/symbols/$1".{debug,so,elf}
	ln -s "$(realpath "$2")" "$out/symbols/$1.${2##*.}"
}

# the ELF of image NAME: beside it, else in a SYMBOLS folder
find_elf() {
	local name=$1 dir=$2 d ext
	for d in "$dir" "${sym_dirs[@]}"; do
		for ext in debug so elf; do
			[ -f "$d/$name.$ext" ] && { echo "$d/$name.$ext"; return; }
		done
	done
	return 0
}

# NAME.sym: "OFFSET SIZE NAME" (hex, from the image's base) for each function
make_sym() {
	{
		echo "# topaz symbol file: OFFSET SIZE NAME (hex), the functions of $2"
		nm --defined-only -S "$2" | awk 'NF == 4 && $3 ~ /^[tTwW]$/ { print $1, $2, $4 }'
	} >"$out/sym/$1.sym"
}

# what goes where on the volume (a user's image replaces a sample of its name)
declare -A src=()
order=()
put() {
	[ -n "${src[$2]+x}" ] || order+=("$2")
	src[$2]=$1
}
add_image() {
	local f=$1 name elf
	name=${f##*/}
	name=${name%.*}
	elf=$(find_elf "$name" "$(dirname "$f")")
	put "$f" "/EFI/tools/${f##*/}"
	if [ -n "$elf" ]; then
		link_elf "$name" "$elf"
		make_sym "$name" "$elf"
		put "$out/sym/$name.sym" "/EFI/tools/$name.sym"
	else
		rm -f "$out/sym/$name.sym" "$out/symbols/$name".{debug,so,elf}
		unset 'src[/EFI/tools/'"$name"'.sym]'
	fi
}

for f in "$build"/efi/*.efi; do
	[ -f "$f" ] && add_image "$f"
done
for f in "${user_efi[@]}"; do
	[ -n "$f" ] || continue
	if [ ! -f "$f" ]; then
		echo "EFI=$f: no such file (EFI= takes the paths of EFI images, comma-separated)" >&2
		exit 2
	fi
	if [[ $f == *:* ]]; then
		echo "EFI=$f: a path with ':' (scripts/mkesp.sh takes SRC:/PATH): copy or link it elsewhere" >&2
		exit 2
	fi
	if [ "$(head -c 2 "$f")" != MZ ]; then
		echo "EFI=$f: not an EFI image (no MZ header; a GNU-EFI build's .so becomes one with objcopy --target efi-app-x86_64)" >&2
		exit 2
	fi
	old=${src[/EFI/tools/${f##*/}]:-}
	if [ -n "$old" ] && [ "$old" != "$f" ]; then
		echo "EFI=$f: replaces $old as \\EFI\\tools\\${f##*/}" >&2
	fi
	add_image "$f"
done
for d in "${sym_dirs[@]}"; do
	for f in "$d"/*.debug "$d"/*.so "$d"/*.elf; do
		[ -f "$f" ] || continue
		n=${f##*/}
		link_elf "${n%.*}" "$f"
	done
done
for d in "${order[@]}"; do
	if [ -n "${src[$d]+x}" ]; then echo "${src[$d]}:$d"; fi
done
