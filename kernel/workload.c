// SPDX-License-Identifier: MIT
/* The workload registry (run=). */
#include <topaz/workload.h>
#include <topaz/kernel.h>

extern const struct workload __start_workload_table[] __hidden __attribute__((weak));
extern const struct workload __stop_workload_table[] __hidden __attribute__((weak));

const struct workload *workload_find(const char *name)
{
	for (const struct workload *w = __start_workload_table; w < __stop_workload_table; w++)
		if (!strcmp(w->name, name))
			return w;
	return NULL;
}

void workload_list(void)
{
	printk("workloads (run=NAME):\n");
	for (const struct workload *w = __start_workload_table; w < __stop_workload_table; w++)
		printk("  %-12s %s\n", w->name, w->help);
}
