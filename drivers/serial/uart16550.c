// SPDX-License-Identifier: MIT
/* A polled 16550 UART driver for COM1. */
#include <topaz/serial.h>
#include <topaz/arch.h>

#define THR 0
#define IER 1
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define SCR 7
#define LSR_THRE 0x20

static bool present;

void uart_early_init(void)
{
	u16 p = COM1_PORT;

	/* A UART keeps what is written to its scratch register; a hole does not. */
	outb(p + SCR, 0x5a);
	present = inb(p + SCR) == 0x5a;
	if (!present)
		return;
	outb(p + IER, 0x00);		/* polled: no interrupts */
	outb(p + LCR, 0x80);		/* DLAB */
	outb(p + 0, 1);			/* 115200 baud */
	outb(p + 1, 0);
	outb(p + LCR, 0x03);		/* 8N1 */
	outb(p + FCR, 0xc7);		/* FIFO on, cleared */
	outb(p + MCR, 0x03);		/* DTR, RTS */
}

bool uart_present(void)
{
	return present;
}

static void put(char c)
{
	for (unsigned int spin = 0; !(inb(COM1_PORT + LSR) & LSR_THRE) && spin < 100000; spin++)
		cpu_relax();
	outb(COM1_PORT + THR, (u8)c);
}

void uart_write(const char *s, size_t n)
{
	if (!present)
		return;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			put('\r');
		put(s[i]);
	}
}
