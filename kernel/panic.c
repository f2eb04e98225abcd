// SPDX-License-Identifier: MIT
/* panic() and warnings. */
#include <topaz/panic.h>
#include <topaz/kernel.h>
#include <topaz/traps.h>
#include <topaz/power.h>
#include <topaz/arch.h>
#include <topaz/shutdown.h>
#include <topaz/smp.h>

static int panicking;
static int panic_cpu = -1;	/* the CPU whose panic this is */
static LIST_HEAD(notifiers);

void panic_notifier_register(struct shutdown_hook *h)
{
	list_add_tail(&h->link, &notifiers);
}

void panic_finish(const char *why)
{
	struct shutdown_hook *h;

	int me = (int)smp_processor_id(), first = -1;

	local_irq_disable();
	if (!__atomic_compare_exchange_n(&panic_cpu, &first, me, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) && first != me) {
		/* another CPU panics already: its stop NMI will report this one */
		printk(KERN_EMERG "CPU %d: %s, while CPU %d panics: stopping here\n", me, why, first);
		for (;;)
			__asm__ volatile("hlt");
	}
	if (panicking++ > 1)	/* a panic inside the panic path: just stop */
		power_off(false);
	WRITE_ONCE(oops_in_progress, true);
	if (panicking == 1)
		smp_send_stop();	/* each other CPU reports where it was, then halts */
	printk(KERN_EMERG "---[ end Kernel panic: %s ]---\n", why);
	if (panicking == 1)
		list_for_each_entry(h, &notifiers, link)
			h->fn();
	power_off(false);
}

void panic(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	local_irq_disable();
	va_start(ap, fmt);
	kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!panicking) {
		printk(KERN_EMERG "Kernel panic: %s\n", buf);
		dump_backtrace(_THIS_IP_, (uintptr_t)__builtin_frame_address(0));
	}
	panic_finish(buf);
}

void warn_slowpath(const char *file, int line, uintptr_t caller, const char *cond)
{
	printk(KERN_WARNING "WARNING: %s at %s:%d\n", cond, file, line);
	dump_backtrace(caller, (uintptr_t)__builtin_frame_address(0));
}
