// SPDX-License-Identifier: MIT
/* The GDT with a 64-bit TSS whose IST stacks take #DF, NMI, #MC and #DB. */
#include <topaz/cpu.h>
#include <topaz/kernel.h>

struct tss64 {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3;
	u16 iomap_base;
} __packed;

static struct tss64 tss __aligned(16);
static u64 gdt[5] __aligned(16);

struct gdtr {
	u16 limit;
	u64 base;
} __packed;

void gdt_load(struct gdtr *gdtr, u64 cs, u64 ds, u64 tss_sel);

void gdt_init(uintptr_t ist_tops[4])
{
	u64 base = (u64)(uintptr_t)&tss, limit = sizeof(tss) - 1;
	struct gdtr gdtr = { sizeof(gdt) - 1, (u64)(uintptr_t)gdt };

	for (int i = 0; i < 4; i++)
		tss.ist[i] = ist_tops[i];
	tss.iomap_base = sizeof(tss);	/* no I/O bitmap */

	gdt[0] = 0;
	gdt[1] = 0x00af9b000000ffffull;	/* 0x08: 64-bit code, DPL0 */
	gdt[2] = 0x00cf93000000ffffull;	/* 0x10: data, DPL0 */
	/* 0x18: available 64-bit TSS (type 9), 16 bytes */
	gdt[3] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
		 (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	gdt[4] = base >> 32;
	gdt_load(&gdtr, KERNEL_CS, KERNEL_DS, TSS_SEL);
}
