// SPDX-License-Identifier: MIT
/* Interrupts arrive: a self-IPI, the timer, and the PMI path through LVTPC. */
#include <topaz/ktest.h>
#include <topaz/apic.h>
#include <topaz/traps.h>
#include <topaz/time.h>
#include <topaz/arch.h>
#include <topaz/kernel.h>

static volatile unsigned int ipi_hits, pmi_hits, nmi_hits;

static bool on_ipi(struct pt_regs *r) { ipi_hits++; return true; }
static bool on_pmi(struct pt_regs *r) { pmi_hits++; return true; }
static bool on_nmi(struct pt_regs *r) { nmi_hits++; return true; }

static bool wait_for(volatile unsigned int *v, unsigned int want)
{
	for (int i = 0; i < 10000 && *v < want; i++)
		udelay(10);
	return *v >= want;
}

KTEST(apic, self_ipi_arrives)
{
	unsigned int before;

	KT_ASSERT(!irqs_disabled());
	irq_set_handler(TEST_IPI_VECTOR, on_ipi);
	before = ipi_hits;
	apic_self_ipi(TEST_IPI_VECTOR);
	KT_EXPECT(wait_for(&ipi_hits, before + 1));
	apic_self_ipi(TEST_IPI_VECTOR);
	KT_EXPECT(wait_for(&ipi_hits, before + 2));
	KT_EXPECT_EQ(irq_counts[TEST_IPI_VECTOR] >= 2, 1);
	irq_set_handler(TEST_IPI_VECTOR, NULL);
}

KTEST(apic, timer_ticks)
{
	u64 j0 = jiffies;

	KT_ASSERT(!irqs_disabled());
	udelay(100000);		/* 100 ms: about 10 ticks at HZ=100 */
	KT_EXPECT(jiffies - j0 >= 3);
	KT_EXPECT(jiffies - j0 <= 40);
}

KTEST(apic, lvtpc_vector_delivery_masks)
{
	irq_set_handler(PT_PMI_VECTOR, on_pmi);
	apic_write_lvtpc(APIC_DM_FIXED | PT_PMI_VECTOR);
	unsigned int before = pmi_hits;

	KT_EXPECT(apic_pmi_deliver());
	KT_EXPECT(wait_for(&pmi_hits, before + 1));
	KT_EXPECT(apic_read_lvtpc() & APIC_LVT_MASKED);	/* masked on delivery */
	KT_EXPECT(!apic_pmi_deliver());				/* masked: nothing */
	udelay(1000);
	KT_EXPECT_EQ(pmi_hits, before + 1);
	apic_write_lvtpc(APIC_LVT_MASKED | PT_PMI_VECTOR);
	irq_set_handler(PT_PMI_VECTOR, NULL);
}

KTEST(apic, lvtpc_nmi_delivery)
{
	trap_set_handler(X86_TRAP_NMI, on_nmi);
	apic_write_lvtpc(APIC_DM_NMI);
	unsigned int before = nmi_hits;

	KT_EXPECT(apic_pmi_deliver());
	KT_EXPECT(wait_for(&nmi_hits, before + 1));
	KT_EXPECT(apic_read_lvtpc() & APIC_LVT_MASKED);
	apic_write_lvtpc(APIC_LVT_MASKED | PT_PMI_VECTOR);
	trap_set_handler(X86_TRAP_NMI, NULL);
}
