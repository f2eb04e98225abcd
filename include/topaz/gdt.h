/* SPDX-License-Identifier: MIT */
/* Each CPU's GDT and TSS, and its GS base (arch/x86/gdt.c). */
#ifndef TOPAZ_GDT_H
#define TOPAZ_GDT_H

#include <topaz/types.h>

/* GDT selectors */
#define KERNEL_CS	0x08
#define KERNEL_DS	0x10
#define TSS_SEL		0x18

/** gdt_init() - load CPU @cpu's GDT and TSS (IST stacks @ist_tops) and its GS base */
void gdt_init(unsigned int cpu, uintptr_t ist_tops[4]);
/** percpu_set_gs() - point this CPU's GS base at CPU @cpu's per-CPU area */
void percpu_set_gs(unsigned int cpu);

/* What LGDT reads. */
struct gdtr {
	u16 limit;
	u64 base;
} __packed;

/**
 * gdt_load() - entry.S: LGDT, reload CS and the data selectors, LTR
 * @gdtr: the GDT's pseudo-descriptor
 * @cs: the code selector
 * @ds: the data selector
 * @tss_sel: the TSS selector
 */
void gdt_load(struct gdtr *gdtr, u64 cs, u64 ds, u64 tss_sel);

#endif
