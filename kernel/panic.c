// SPDX-License-Identifier: MIT
/* panic() and warnings. */
#include <topaz/kernel.h>
#include <topaz/traps.h>
#include <topaz/power.h>
#include <topaz/arch.h>
#include <topaz/shutdown.h>

static int panicking;
static LIST_HEAD(notifiers);

void panic_notifier_register(struct shutdown_hook *h)
{
	list_add_tail(&h->link, &notifiers);
}

void panic_finish(const char *why)
{
	struct shutdown_hook *h;

	local_irq_disable();
	if (panicking++ > 1)	/* a panic inside the panic path: just stop */
		power_off(false);
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
