// SPDX-License-Identifier: MIT
/* QEMU's debug console on port 0xe9: bytes pass through unchanged. */
#include <topaz/serial.h>
#include <topaz/arch.h>

void debugcon_write(const void *buf, size_t n)
{
	const u8 *p = buf;

	/* rep outsb moves the whole buffer in one instruction. */
	__asm__ volatile("rep outsb" : "+S"(p), "+c"(n) : "d"((u16)DEBUGCON_PORT) : "memory");
}

bool debugcon_present(void)
{
	return inb(DEBUGCON_PORT) == DEBUGCON_PORT;
}
