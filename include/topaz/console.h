/* SPDX-License-Identifier: MIT */
/* Where printk's text goes: one write function per build (COM1 in the kernel). */
#ifndef TOPAZ_CONSOLE_H
#define TOPAZ_CONSOLE_H

#include <topaz/types.h>

void console_write(const char *s, size_t n);

#endif
