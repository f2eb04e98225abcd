/* SPDX-License-Identifier: MIT */
/* Where printk's text goes: one write function per build (COM1 in the kernel). */
#ifndef TOPAZ_CONSOLE_H
#define TOPAZ_CONSOLE_H

#include <topaz/types.h>

/** console_write() - write @n bytes of @s to the console (the serial port) */
void console_write(const char *s, size_t n);

#endif
