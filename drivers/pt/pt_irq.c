// SPDX-License-Identifier: MIT
/* The PT PMI in the kernel: LVTPC on PT_PMI_VECTOR (or NMI), the handlers. */
#include <topaz/pt.h>
#include <topaz/apic.h>
#include <topaz/traps.h>
#include <topaz/kernel.h>

static bool pt_pmi_vector(struct pt_regs *regs)
{
	return pt_pmi_handle();
}

/* An NMI that is not a PT PMI goes on to the panic path. */
static bool pt_pmi_nmi(struct pt_regs *regs)
{
	return pt_pmi_handle();
}

/** pt_irq_init() - route the ToPA PMI through LVTPC as a vector or an NMI */
void pt_irq_init(bool nmi)
{
	if (nmi) {
		trap_set_handler(X86_TRAP_NMI, pt_pmi_nmi);
		apic_write_lvtpc(APIC_DM_NMI);
	} else {
		irq_set_handler(PT_PMI_VECTOR, pt_pmi_vector);
		apic_write_lvtpc(APIC_DM_FIXED | PT_PMI_VECTOR);
	}
}
