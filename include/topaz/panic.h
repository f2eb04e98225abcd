/* SPDX-License-Identifier: MIT */
/* panic(), BUG_ON() and warnings (kernel/panic.c; tests/host supplies its own). */
#ifndef TOPAZ_PANIC_H
#define TOPAZ_PANIC_H

#include <topaz/types.h>

/**
 * panic() - report a fatal error with a backtrace and power off with failure
 * @fmt: printf-style reason
 */
__printf(1, 2) __noreturn void panic(const char *fmt, ...);
/**
 * panic_finish() - the last step of panic() and of an unhandled exception
 * report: stop the other CPUs, run the panic notifiers, power off
 * @why: what happened, for a CPU that panics while another does
 */
__noreturn void panic_finish(const char *why);

struct shutdown_hook;
/**
 * panic_notifier_register() - run @h->fn on the panic path, after the report
 * and before power-off (the PT flight recorder dumps its trace there)
 */
void panic_notifier_register(struct shutdown_hook *h);

/**
 * warn_slowpath() - WARN_ON()'s report: the condition, where, and a backtrace
 * @file: @line: the WARN_ON()'s place
 * @caller: where the backtrace starts
 * @cond: the condition, as text
 */
void warn_slowpath(const char *file, int line, uintptr_t caller, const char *cond);

#define BUG_ON(cond) do { if (unlikely(cond)) \
	panic("BUG_ON(%s) at %s:%d", #cond, __FILE__, __LINE__); } while (0)
#define BUG() panic("BUG at %s:%d", __FILE__, __LINE__)
#define WARN_ON(cond) ({ bool __c = !!(cond);				\
	if (unlikely(__c)) {						\
		warn_slowpath(__FILE__, __LINE__, _THIS_IP_, #cond);	\
	}								\
	__c; })

#endif
