/* SPDX-License-Identifier: MIT */
/* printk with Linux's log-level prefixes. The kernel sends it to COM1; the
 * hosted build to stderr and to a capture buffer that tests can read. */
#ifndef TOPAZ_PRINTK_H
#define TOPAZ_PRINTK_H

#include <topaz/types.h>

#define KERN_SOH	"\001"
#define KERN_EMERG	KERN_SOH "0"
#define KERN_ALERT	KERN_SOH "1"
#define KERN_CRIT	KERN_SOH "2"
#define KERN_ERR	KERN_SOH "3"
#define KERN_WARNING	KERN_SOH "4"
#define KERN_NOTICE	KERN_SOH "5"
#define KERN_INFO	KERN_SOH "6"
#define KERN_DEBUG	KERN_SOH "7"
#define KERN_CONT	KERN_SOH "c"

#define LOGLEVEL_DEFAULT 6	/* messages without a prefix */

/* Messages with a level below this number are printed. */
extern int console_loglevel;
/* A panic is under way: printk stops waiting for a lock a stopped CPU holds. */
extern bool oops_in_progress;

/**
 * printk() - format a message and write it to the console when its level
 * (an optional KERN_* prefix; KERN_CONT continues the last line) passes the
 * log level; a new line gets a time stamp
 * @fmt: the format, as kvsnprintf()'s
 * Return: the length of the formatted message (at most 511 bytes).
 */
__printf(1, 2) int printk(const char *fmt, ...);
/**
 * vprintk() - printk() with a va_list
 * @fmt: the format, optionally after a KERN_* level
 * @ap: its arguments
 * Return: the length of the formatted message (at most 511 bytes).
 */
int vprintk(const char *fmt, va_list ap);

#define pr_emerg(fmt, ...)	printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...)	printk(KERN_CRIT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...)	printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...)	printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_debug(fmt, ...)	printk(KERN_DEBUG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...)	printk(KERN_CONT fmt, ##__VA_ARGS__)

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif

/**
 * printk_capture_start() - also copy console output into @buf (tests read it back)
 * @buf: destination, kept NUL-terminated
 * @size: size of @buf
 */
void printk_capture_start(char *buf, size_t size);
/** printk_capture_stop() - stop copying; returns the number of bytes captured */
size_t printk_capture_stop(void);

/**
 * kvsnprintf() - format into @buf, as vsnprintf(), for both builds
 * (lib/vsprintf.c): %d %i %u %x %X %o %c %s %p %% with flags -0+# space,
 * width, precision, and the length modifiers hh h l ll z t j; %pS prints a
 * symbol ("func+0xoff")
 * @buf: the destination, NUL-terminated when @size is not 0
 * @size: @buf's size
 * @fmt: the format
 * @ap: its arguments
 * Return: the length the whole output has, even when @buf cut it short.
 */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
/**
 * ksnprintf() - kvsnprintf() with variable arguments
 * @buf: the destination
 * @size: @buf's size
 * @fmt: the format
 * Return: as kvsnprintf()'s.
 */
__printf(3, 4) int ksnprintf(char *buf, size_t size, const char *fmt, ...);

#endif
