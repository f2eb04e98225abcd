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

/**
 * apic_read_lvtpc() - read this CPU's LVT performance-counter entry
 * Return: the entry (vector, delivery mode, mask bit).
 */
u32 apic_read_lvtpc(void);
/** apic_write_lvtpc() - set this CPU's LVT performance-counter entry to @v */
void apic_write_lvtpc(u32 v);
/** apic_self_ipi() - send this CPU a fixed interrupt on @vector */
void apic_self_ipi(u8 vector);
/** apic_self_nmi() - send this CPU an NMI */
void apic_self_nmi(void);
/** apic_eoi() - signal the end of the interrupt being handled */
void apic_eoi(void);
/**
 * apic_id() - this CPU's local APIC ID
 * Return: the ID (x2APIC: 32 bits, xAPIC: 8).
 */
u32 apic_id(void);
/**
 * apic_is_x2apic() - which mode the local APIC runs in
 * Return: true for x2APIC, false for xAPIC.
 */
bool apic_is_x2apic(void);
/**
 * apic_send_ipi() - send an IPI to one CPU, waiting for delivery (xAPIC)
 * @dest: the destination's local APIC ID
 * @low: the ICR's low word: delivery mode, level, vector
 */
void apic_send_ipi(u32 dest, u32 low);
/**
 * apic_send_ipi_allbutself() - send @low (ICR low word) to every other CPU
 * (destination shorthand)
 */
void apic_send_ipi_allbutself(u32 low);
/** apic_init_secondary() - enable an application processor's local APIC, in the boot CPU's mode */
void apic_init_secondary(void);
/**
 * apic_attach() - use the local APIC as the firmware left it (its mode and
 * base, nothing written): the firmware phase, where the APIC and its timer
 * are the firmware's
 */
void apic_attach(void);
/** apic_init() - enable the local APIC, mask the PIC, set LVTPC masked on PT_PMI_VECTOR */
void apic_init(void);
/** apic_timer_start() - the boot CPU's timer: @hz interrupts a second on @vector */
void apic_timer_start(u32 vector, u64 hz);
/**
 * apic_timer_start_secondary() - this CPU's periodic timer on @vector, at the
 * boot CPU's calibrated rate
 */
void apic_timer_start_secondary(u32 vector);

/**
 * apic_pmi_deliver() - what the performance-monitoring hardware does when it
 * signals a PMI: deliver through the LVTPC entry (a vector, or an NMI when the
 * delivery mode says so) and set the entry's mask bit, as real CPUs do.
 * Returns false when LVTPC was masked and nothing was delivered.
 */
bool apic_pmi_deliver(void);

#endif
