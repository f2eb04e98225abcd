/* SPDX-License-Identifier: MIT */
/*
 * The helpers nearly every file uses, in one include, as Linux's kernel.h:
 * printk (kernel/printk.c, lib/vsprintf.c), panic() and BUG_ON()
 * (kernel/panic.c), the string functions (lib/string.c) and the parsers
 * (lib/kstrto.c). Each is declared in the header named for its file;
 * this one declares nothing itself.
 */
#ifndef TOPAZ_KERNEL_H
#define TOPAZ_KERNEL_H

#include <topaz/types.h>
#include <topaz/printk.h>
#include <topaz/panic.h>
#include <topaz/string.h>
#include <topaz/kstrto.h>

#endif
