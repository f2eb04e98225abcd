// SPDX-License-Identifier: MIT
/*
 * Each CPU's GDT, with a 64-bit TSS whose IST stacks take #DF, NMI, #MC and
 * #DB, and its GS base: the per-CPU header that smp_processor_id() reads.
 */
#include <topaz/gdt.h>
#include <topaz/cpu.h>
#include <topaz/arch.h>
#include <topaz/percpu.h>
#include <topaz/kernel.h>

#define MSR_GS_BASE	0xc0000101

struct tss64 {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3;
	u16 iomap_base;
} __packed;

/*
 * A CPU's descriptor tables. gdt_init() fills them in before that CPU's GS
 * base is set (it sets it), so they are reached by CPU number, not this CPU's.
 */
struct cpu_gdt {
	u64 desc[5];
	struct tss64 tss;
} __aligned(16);

static DEFINE_PER_CPU(struct cpu_gdt, cpu_gdts);
DEFINE_PER_CPU(struct percpu_hdr, percpu_hdrs);
_Static_assert(offsetof(struct percpu_hdr, cpu) == PERCPU_OFF_CPU, "percpu.h offsets");
_Static_assert(offsetof(struct percpu_hdr, no_iret) == PERCPU_OFF_NO_IRET, "percpu.h offsets");

/**
 * percpu_set_gs() - point this CPU's GS base at CPU @cpu's per-CPU header
 *
 * Before anything that asks smp_processor_id(). Loading a null GS selector
 * (gdt_load) clears the base on some CPUs and in QEMU, so gdt_init() sets it
 * again after.
 */
void percpu_set_gs(unsigned int cpu)
{
	struct percpu_hdr *h = per_cpu_ptr(percpu_hdrs, cpu);

	h->self = h;
	h->cpu = cpu;
	/* the raw write: the MSR interceptor's lookups would ask for the CPU number */
	arch_wrmsr_safe(MSR_GS_BASE, (u64)(uintptr_t)h);
}

void gdt_init(unsigned int cpu, uintptr_t ist_tops[4])
{
	struct cpu_gdt *c = per_cpu_ptr(cpu_gdts, cpu);
	struct tss64 *t = &c->tss;
	u64 *g = c->desc;
	u64 base = (u64)(uintptr_t)t, limit = sizeof(*t) - 1;
	struct gdtr gdtr = { sizeof(c->desc) - 1, (u64)(uintptr_t)g };

	for (int i = 0; i < 4; i++)
		t->ist[i] = ist_tops[i];
	t->iomap_base = sizeof(*t);	/* no I/O bitmap */

	g[0] = 0;
	g[1] = 0x00af9b000000ffffull;	/* 0x08: 64-bit code, DPL0 */
	g[2] = 0x00cf93000000ffffull;	/* 0x10: data, DPL0 */
	/* 0x18: available 64-bit TSS (type 9), 16 bytes */
	g[3] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
	       (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	g[4] = base >> 32;
	gdt_load(&gdtr, KERNEL_CS, KERNEL_DS, TSS_SEL);
	percpu_set_gs(cpu);
}
