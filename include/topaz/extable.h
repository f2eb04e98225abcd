/* SPDX-License-Identifier: MIT */
/* Exception fixups, as Linux's exception tables: an instruction that may fault
 * names where execution continues if it does. Entries are 32-bit offsets
 * relative to themselves, so the table needs no relocations. */
#ifndef TOPAZ_EXTABLE_H
#define TOPAZ_EXTABLE_H

#include <topaz/types.h>

struct exception_table_entry {
	s32 insn;
	s32 fixup;
};

#define _ASM_EXTABLE(from, to)					\
	" .pushsection ex_table, \"a\"\n"			\
	" .balign 4\n"						\
	" .long (" #from ") - .\n"				\
	" .long (" #to ") - .\n"				\
	" .popsection\n"

/*
 * The common case: if the instruction at label 1 faults, store @val in the
 * asm operand @dst and resume at label 2. Use as the tail of an asm string
 * whose faulting instruction is labelled "1:" and is followed by "2:".
 */
#define _ASM_FIXUP_SET(dst, val)					\
	" .pushsection .text.fixup, \"ax\"\n"			\
	"3: mov " val ", " dst "\n"					\
	" jmp 2b\n"							\
	" .popsection\n"						\
	_ASM_EXTABLE(1b, 3b)

/** search_exception_table() - the fixup address for a fault at @ip, or 0 */
uintptr_t search_exception_table(uintptr_t ip);

#endif
