/* SPDX-License-Identifier: MIT */
#ifndef TOPAZ_SERIAL_H
#define TOPAZ_SERIAL_H

#include <topaz/types.h>

#define COM1_PORT 0x3f8

/** uart_early_init() - COM1 at 115200 8N1, usable before and after ExitBootServices */
void uart_early_init(void);
/** uart_write() - write @n bytes of @s to COM1 (LF as CR LF), when a UART is there */
void uart_write(const char *s, size_t n);
/**
 * uart_present() - whether uart_early_init() found a UART at COM1
 * Return: true when it did.
 */
bool uart_present(void);

/* QEMU's debugcon (port 0xe9): binary-clean, fast output for trace data. */
#define DEBUGCON_PORT 0xe9
/** debugcon_write() - write @n bytes of @buf to QEMU's debugcon, unchanged */
void debugcon_write(const void *buf, size_t n);
/**
 * debugcon_present() - whether a debug console answers at port 0xe9
 *
 * QEMU's isa-debugcon reads back 0xe9 (its "readback" property); a port
 * with no device reads 0xff, in QEMU and on real machines.
 */
bool debugcon_present(void);

#endif
