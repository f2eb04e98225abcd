// SPDX-License-Identifier: MIT
/* The kernel console: printk's text goes to COM1. */
#include <topaz/console.h>
#include <topaz/serial.h>

void console_write(const char *s, size_t n)
{
	uart_write(s, n);
}
