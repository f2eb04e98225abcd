// SPDX-License-Identifier: MIT
/* The workload registry (run=). */
#include <topaz/workload.h>
#include <topaz/kernel.h>
#include <topaz/tracing.h>
#include <topaz/time.h>
#include <topaz/arch.h>

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

int workload_run_list(const char *key, const char *spec,
		      const struct workload *(*find)(const char *name), void (*list)(void),
		      const char *label)
{
	static const char untraced[] = ":untraced";
	const size_t ul = sizeof(untraced) - 1;
	char name[32];
	int bad = 0;

	for (const char *s = spec; *s;) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		const struct workload *w;
		bool plain = false;

		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, s, n);
		name[n] = '\0';
		/* NAME:untraced runs it without a window (the bench's yardstick in the same boot) */
		if (n > ul && !strcmp(name + n - ul, untraced)) {
			name[n - ul] = '\0';
			plain = true;
		}
		w = find(name);
		if (!w) {
			printk(KERN_ERR "%s=%s: no %s '%s'\n", key, spec, label, name);
			list();
			bad++;
		} else {
			/* traced in a window of its own when tracing is on */
			u64 t0 = rdtsc(), r = pt_boot_active() && !plain ? pt_run_traced(w) : w->fn();

			printk("%srun: %s%s returned %#llx in %llu us\n", key[0] == 'f' ? "fw: " : "", w->name,
			       plain ? untraced : "", r,
			       tsc_to_ns(rdtsc() - t0) / 1000);
		}
		if (!e)
			break;
		s = e + 1;
	}
	return bad;
}
