/* SPDX-License-Identifier: MIT */
/* The local APIC as the rest of topaz sees it (xAPIC or x2APIC underneath). */
#ifndef TOPAZ_APIC_H
#define TOPAZ_APIC_H

#include <topaz/types.h>

#define APIC_LVT_MASKED		BIT(16)
#define APIC_DM_FIXED		(0u << 8)
#define APIC_DM_NMI		(4u << 8)
#define APIC_DM_INIT		(5u << 8)
#define APIC_DM_STARTUP		(6u << 8)
#define APIC_INT_ASSERT		BIT(14)
#define APIC_DM_MASK		(7u << 8)
#define APIC_VECTOR_MASK	0xffu

/* Vectors topaz uses. */
#define TIMER_VECTOR		0x20
#define PT_PMI_VECTOR		0xfe
#define TEST_IPI_VECTOR		0xf0
#define CALL_FUNCTION_VECTOR	0xf1	/* smp_call_function_single() */
#define SPURIOUS_VECTOR		0xff

u32 apic_read_lvtpc(void);
void apic_write_lvtpc(u32 v);
void apic_self_ipi(u8 vector);
void apic_self_nmi(void);
void apic_eoi(void);
u32 apic_id(void);
bool apic_is_x2apic(void);
void apic_send_ipi(u32 dest, u32 low);
void apic_send_ipi_allbutself(u32 low);
void apic_init_secondary(void);
void apic_attach(void);
/** apic_init() - enable the local APIC, mask the PIC, set LVTPC masked on PT_PMI_VECTOR */
void apic_init(void);
/** apic_timer_start() - the boot CPU's timer: @hz interrupts a second on @vector */
void apic_timer_start(u32 vector, u64 hz);
void apic_timer_start_secondary(u32 vector);

/**
 * apic_pmi_deliver() - what the performance-monitoring hardware does when it
 * signals a PMI: deliver through the LVTPC entry (a vector, or an NMI when the
 * delivery mode says so) and set the entry's mask bit, as real CPUs do.
 * Returns false when LVTPC was masked and nothing was delivered.
 */
bool apic_pmi_deliver(void);

#endif
