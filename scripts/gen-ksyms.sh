#!/usr/bin/env bash
# Generate the kernel's run-time symbol table (an assembler file) from a
# linked topaz.so, or an empty one for the first link pass, or check that the
# second pass moved no symbol.
#   gen-ksyms.sh --empty
#   gen-ksyms.sh build/topaz.pass1.so
#   gen-ksyms.sh --check build/topaz.pass1.so build/topaz.so
set -euo pipefail

emit_header() {
	cat <<'ASM'
	.section .note.GNU-stack, "", @progbits
	.section .ksyms, "a"
	.balign 8
	.globl __ksyms_count
	.hidden __ksyms_count
	.globl __ksyms_entries
	.hidden __ksyms_entries
	.globl __ksyms_names
	.hidden __ksyms_names
ASM
}

# Text and data symbols with their sizes; local ones too (static functions
# matter for backtraces). Linker-made and table symbols are left out.
symbols() {
	nm -n -S --defined-only "$1" | awk '
		NF == 4 && $3 ~ /^[tTdDbBrR]$/ && $4 !~ /^(__ksyms_|\.)/ { print $1, $2, $3, $4; next }
		NF == 3 && $2 ~ /^[tT]$/ && $3 !~ /^(__ksyms_|\.|_text$|__text_)/ { print $1, "0", $2, $3 }'
}

case "${1:-}" in
--empty)
	emit_header
	printf '__ksyms_count:\n\t.long 0\n\t.balign 8\n__ksyms_entries:\n__ksyms_names:\n\t.byte 0\n'
	;;
--check)
	a=$(symbols "$2" | grep -v ' [bBdD] ')
	b=$(symbols "$3" | grep -v ' [bBdD] ')
	if [ "$a" != "$b" ]; then
		echo "gen-ksyms: the second link pass moved symbols:" >&2
		diff <(echo "$a") <(echo "$b") | head -20 >&2
		exit 1
	fi
	;;
"")
	echo "usage: gen-ksyms.sh --empty | FILE.so | --check A.so B.so" >&2
	exit 2
	;;
*)
	emit_header
	symbols "$1" | awk '
		{ addr[n] = $1; size[n] = $2; type[n] = $3; name[n] = $4; n++ }
		END {
			printf "__ksyms_count:\n\t.long %d\n\t.balign 8\n__ksyms_entries:\n", n
			off = 0
			for (i = 0; i < n; i++) {
				printf "\t.long 0x%s, 0x%s, %d, %d\n", addr[i], size[i], off, ord(type[i])
				off += length(name[i]) + 1
			}
			printf "__ksyms_names:\n"
			for (i = 0; i < n; i++)
				printf "\t.asciz \"%s\"\n", name[i]
		}
		function ord(c) { return index("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", c) + (c ~ /[A-Z]/ ? 64 : 96 - 26) }'
	;;
esac
