// SPDX-License-Identifier: MIT
/* The PT PMI in the kernel: LVTPC on PT_PMI_VECTOR (or NMI), the handlers. */
#include <topaz/pt.h>
#include <topaz/apic.h>
#include <topaz/traps.h>
#include <topaz/kernel.h>
#include <topaz/smp.h>

static bool pt_pmi_vector(struct pt_regs *regs)
{
	return pt_pmi_handle();
}

/* An NMI that is not a PT PMI goes on to the panic path. */
static bool pt_pmi_nmi(struct pt_regs *regs)
{
	return pt_pmi_handle();
}

static u8 pmi_vector = PT_PMI_VECTOR;

void pt_irq_set_vector(u8 vector)
{
	pmi_vector = vector;
}

static void set_lvtpc(void *value)
{
	apic_write_lvtpc(*(const u32 *)value);
}

/* every online CPU: each CPU's PMI is its own ring's */
void pt_irq_init(bool nmi)
{
	static u32 lvt;

	if (nmi) {
		trap_set_handler(X86_TRAP_NMI, pt_pmi_nmi);
		lvt = APIC_DM_NMI;
	} else {
		irq_set_handler(pmi_vector, pt_pmi_vector);
		lvt = APIC_DM_FIXED | pmi_vector;
	}
	on_each_cpu(set_lvtpc, &lvt, true);
}
