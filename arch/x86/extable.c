// SPDX-License-Identifier: MIT
/* Exception-table search (a linear scan: the table is small). */
#include <topaz/extable.h>

extern const struct exception_table_entry __start_ex_table[] __hidden;
extern const struct exception_table_entry __stop_ex_table[] __hidden;

uintptr_t search_exception_table(uintptr_t ip)
{
	for (const struct exception_table_entry *e = __start_ex_table; e < __stop_ex_table; e++) {
		uintptr_t insn = (uintptr_t)&e->insn + (intptr_t)e->insn;

		if (insn == ip)
			return (uintptr_t)&e->fixup + (intptr_t)e->fixup;
	}
	return 0;
}
