// SPDX-License-Identifier: MIT
/* printk: level filtering, time stamps and the test capture buffer. */
#include <topaz/printk.h>
#include <topaz/console.h>
#include <topaz/time.h>
#include <topaz/cmdline.h>
#include <topaz/arch.h>
#include <topaz/kernel.h>
#include <topaz/spinlock.h>

int console_loglevel = 7;	/* as Linux: levels 0-6 shown, debug hidden */
static u64 loglevel_param = 7;
KPARAM_UINT("loglevel", loglevel, &loglevel_param, 0, 8,
	    "console log level: messages of a lower level are shown (0-8)");

/*
 * One line at a time from every CPU. Owned by this CPU already (an NMI in the
 * middle of a printk): print anyway. During a panic a CPU stopped while it
 * held the lock never gives it back: after a while the panicking CPU goes on.
 */
static spinlock_t printk_lock;
bool oops_in_progress;

static bool printk_lock_take(void)
{
	return spin_lock_unless_stuck(&printk_lock, &oops_in_progress);
}

static char *capture_buf;
static size_t capture_size, capture_len;
static int last_level = LOGLEVEL_DEFAULT;
static bool line_open;

void printk_capture_start(char *buf, size_t size)
{
	unsigned long f = local_irq_save();

	capture_buf = buf;
	capture_size = size;
	capture_len = 0;
	if (size)
		buf[0] = '\0';
	local_irq_restore(f);
}

size_t printk_capture_stop(void)
{
	unsigned long f = local_irq_save();
	size_t n = capture_len;

	capture_buf = NULL;
	capture_size = 0;
	local_irq_restore(f);
	return n;
}

static void emit(const char *s, size_t n)
{
	console_write(s, n);
	if (capture_buf && capture_len + 1 < capture_size) {
		size_t room = capture_size - 1 - capture_len;
		size_t k = n < room ? n : room;

		memcpy(capture_buf + capture_len, s, k);
		capture_len += k;
		capture_buf[capture_len] = '\0';
	}
}

int vprintk(const char *fmt, va_list ap)
{
	char buf[512];
	int level = LOGLEVEL_DEFAULT;
	bool cont = false;
	int len;
	unsigned long f;
	bool locked;

	if (fmt[0] == KERN_SOH[0] && fmt[1]) {
		if (fmt[1] == 'c')
			cont = true;
		else if (fmt[1] >= '0' && fmt[1] <= '7')
			level = fmt[1] - '0';
		fmt += 2;
	}
	/* The command line may have changed the level since the last call. */
	console_loglevel = (int)loglevel_param;
	if (cont)
		level = last_level;
	else
		last_level = level;
	len = kvsnprintf(buf, sizeof(buf), fmt, ap);
	if (len >= (int)sizeof(buf))
		len = sizeof(buf) - 1;
	if (level >= console_loglevel)
		return len;

	f = local_irq_save();
	locked = printk_lock_take();
	if (!cont || !line_open) {
		u64 ns = ktime_get_ns();
		char ts[32];
		int n = ksnprintf(ts, sizeof(ts), "[%5llu.%06llu] ",
				  ns / 1000000000ull,
				  ns / 1000ull % 1000000ull);
		if (line_open)
			emit("\n", 1);
		emit(ts, (size_t)n);
	}
	emit(buf, (size_t)len);
	line_open = len > 0 ? buf[len - 1] != '\n' : line_open;
	if (locked)
		spin_unlock(&printk_lock);
	local_irq_restore(f);
	return len;
}

int printk(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vprintk(fmt, ap);
	va_end(ap);
	return r;
}
