// SPDX-License-Identifier: MIT
/*
 * The local APIC, in xAPIC (MMIO) or x2APIC (MSR) mode behind one register
 * interface, and the legacy PIC masked. apic.mode= chooses; auto takes
 * x2APIC when the CPU has it.
 */
#define pr_fmt(fmt) "apic: " fmt
#include <topaz/apic.h>
#include <topaz/arch.h>
#include <topaz/cpu.h>
#include <topaz/time.h>
#include <topaz/cmdline.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>


#define APIC_ID		0x020
#define APIC_VERSION	0x030
#define APIC_EOI	0x0b0
#define APIC_SVR	0x0f0
#define APIC_ESR	0x280
#define APIC_ICR	0x300
#define APIC_ICR2	0x310
#define APIC_LVTT	0x320
#define APIC_LVTPC	0x340
#define APIC_LVT0	0x350
#define APIC_LVT1	0x360
#define APIC_LVTERR	0x370
#define APIC_TMICT	0x380
#define APIC_TMCCT	0x390
#define APIC_TDCR	0x3e0
#define X2APIC_MSR(reg)	(0x800 + ((reg) >> 4))
#define X2APIC_SELF_IPI	0x83f
#define APICBASE_ENABLE	BIT(11)
#define APICBASE_X2APIC	BIT(10)
#define APIC_TIMER_PERIODIC BIT(17)

static volatile u32 *xapic;
static bool x2apic;
enum { APIC_MODE_AUTO, APIC_MODE_XAPIC, APIC_MODE_X2APIC };
static int apic_mode = APIC_MODE_AUTO;
static const char *const apic_mode_names[] = { "auto", "xapic", "x2apic", NULL };
KPARAM_ENUM("apic.mode", apic_mode, &apic_mode, apic_mode_names, "local APIC mode: auto, xapic or x2apic");

static u32 apic_read(u32 reg)
{
	if (x2apic) {
		u64 v = 0;
		rdmsr_safe(X2APIC_MSR(reg), &v);
		return (u32)v;
	}
	return xapic[reg / 4];
}

static void apic_write(u32 reg, u32 v)
{
	if (x2apic)
		wrmsr_safe(X2APIC_MSR(reg), v);
	else
		xapic[reg / 4] = v;
}

bool apic_is_x2apic(void) { return x2apic; }
u32 apic_id(void) { return x2apic ? apic_read(APIC_ID) : apic_read(APIC_ID) >> 24; }
u32 apic_read_lvtpc(void) { return apic_read(APIC_LVTPC); }
void apic_write_lvtpc(u32 v) { apic_write(APIC_LVTPC, v); }
void apic_eoi(void) { apic_write(APIC_EOI, 0); }

static void send_self(u32 low)
{
	if (x2apic) {
		wrmsr_safe(X2APIC_MSR(APIC_ICR), low | (1u << 18));
		return;
	}
	while (apic_read(APIC_ICR) & BIT(12))	/* delivery pending */
		cpu_relax();
	apic_write(APIC_ICR2, 0);
	apic_write(APIC_ICR, low | (1u << 18));	/* destination shorthand: self */
}

void apic_self_ipi(u8 vector)
{
	if (x2apic)
		wrmsr_safe(X2APIC_SELF_IPI, vector);
	else
		send_self(APIC_DM_FIXED | vector | BIT(14));
}

void apic_self_nmi(void)
{
	send_self(APIC_DM_NMI | BIT(14));
}

bool apic_pmi_deliver(void)
{
	u32 lvt = apic_read(APIC_LVTPC);

	if (lvt & APIC_LVT_MASKED)
		return false;
	/* Hardware masks LVTPC when it delivers a PMI; the handler unmasks. */
	apic_write(APIC_LVTPC, lvt | APIC_LVT_MASKED);
	if ((lvt & APIC_DM_MASK) == APIC_DM_NMI)
		apic_self_nmi();
	else
		apic_self_ipi((u8)(lvt & APIC_VECTOR_MASK));
	return true;
}

static void pic_mask_all(void)
{
	/* Remap the 8259s away from the exception vectors, then mask every line. */
	outb(0x20, 0x11); outb(0xa0, 0x11);
	outb(0x21, 0x70); outb(0xa1, 0x78);
	outb(0x21, 0x04); outb(0xa1, 0x02);
	outb(0x21, 0x01); outb(0xa1, 0x01);
	outb(0x21, 0xff); outb(0xa1, 0xff);
}

/* This CPU's local APIC: software-enabled, LINT0/1 and errors masked, LVTPC masked. */
static void apic_setup_this_cpu(void)
{
	apic_write(APIC_SVR, 0x100 | SPURIOUS_VECTOR);	/* software enable */
	apic_write(APIC_LVT0, APIC_LVT_MASKED);
	apic_write(APIC_LVT1, APIC_LVT_MASKED);
	apic_write(APIC_LVTERR, APIC_LVT_MASKED | 0xfd);
	apic_write(APIC_LVTPC, APIC_LVT_MASKED | PT_PMI_VECTOR);
	apic_write(APIC_ESR, 0);
	apic_eoi();
}

/** apic_init_secondary() - an application processor's local APIC, in the boot CPU's mode */
void apic_init_secondary(void)
{
	u64 base = rdmsr(MSR_IA32_APICBASE) | APICBASE_ENABLE;

	if (x2apic)
		base |= APICBASE_X2APIC;
	wrmsr(MSR_IA32_APICBASE, base);
	apic_setup_this_cpu();
}

static void icr_wait_idle(void)
{
	for (u64 spin = 0; !x2apic && (apic_read(APIC_ICR) & BIT(12)) && spin < 10000000; spin++)
		cpu_relax();
}

/*
 * xAPIC: the destination (ICR2), then the command (ICR), which sends. With
 * interrupts off between them: a handler that sends an IPI of its own there
 * (a cross-CPU call's wake-up to its waiter) would leave its destination in
 * ICR2, and this IPI would go to that CPU instead: a call posted and never
 * made, its caller waiting for ever.
 */
static void xapic_send(u32 icr2, u32 icr)
{
	unsigned long flags = local_irq_save();

	icr_wait_idle();
	apic_write(APIC_ICR2, icr2);
	apic_write(APIC_ICR, icr);
	icr_wait_idle();
	local_irq_restore(flags);
}

/** apic_send_ipi() - send @low (delivery mode, level, vector) to the local APIC @dest */
void apic_send_ipi(u32 dest, u32 low)
{
	if (x2apic) {
		wrmsr_safe(X2APIC_MSR(APIC_ICR), ((u64)dest << 32) | low);
		return;
	}
	xapic_send(dest << 24, low);
}

/** apic_send_ipi_allbutself() - send @low to every other CPU (destination shorthand) */
void apic_send_ipi_allbutself(u32 low)
{
	if (x2apic) {
		wrmsr_safe(X2APIC_MSR(APIC_ICR), low | (3u << 18));
		return;
	}
	xapic_send(0, low | (3u << 18));
}

/** apic_init() - enable the local APIC, mask the PIC, set LVTPC masked on PT_PMI_VECTOR */
void apic_init(void)
{
	u64 base = rdmsr(MSR_IA32_APICBASE);
	bool want_x2 = boot_cpu.has_x2apic;

	if (apic_mode == APIC_MODE_XAPIC)
		want_x2 = false;
	else if (apic_mode == APIC_MODE_X2APIC) {
		if (!boot_cpu.has_x2apic)
			pr_err("apic.mode=x2apic: this CPU has no x2APIC (CPUID.1:ECX[21]); using xAPIC\n");
		want_x2 = boot_cpu.has_x2apic;
	}
	pic_mask_all();
	base |= APICBASE_ENABLE;
	if (want_x2)
		base |= APICBASE_X2APIC;
	wrmsr(MSR_IA32_APICBASE, base);
	x2apic = want_x2;
	xapic = (volatile u32 *)(uintptr_t)(base & 0xffffff000ull);
	apic_setup_this_cpu();
	pr_info("local APIC id %u, version %#x, %s mode%s\n", apic_id(),
		apic_read(APIC_VERSION) & 0xff, x2apic ? "x2APIC" : "xAPIC",
		x2apic ? "" : " at the APIC_BASE MMIO page");
}

/**
 * apic_attach() - use the local APIC as the firmware left it (its mode and
 * base, nothing written): the firmware phase, where the APIC and its timer
 * are the firmware's
 */
void apic_attach(void)
{
	u64 base = rdmsr(MSR_IA32_APICBASE);

	x2apic = base & APICBASE_X2APIC;
	xapic = (volatile u32 *)(uintptr_t)(base & 0xffffff000ull);
}

static u32 timer_count;	/* the boot CPU's calibration, for the others */

/* Periodic timer: count the APIC timer against the calibrated TSC. */
void apic_timer_start(u32 vector, u64 hz)
{
	u64 t0, cycles;
	u32 elapsed;

	apic_write(APIC_TDCR, 0x3);		/* divide by 16 */
	apic_write(APIC_LVTT, APIC_LVT_MASKED | vector);
	apic_write(APIC_TMICT, 0xffffffffu);
	t0 = rdtsc();
	udelay(10000);
	cycles = rdtsc() - t0;
	elapsed = 0xffffffffu - apic_read(APIC_TMCCT);
	apic_write(APIC_TMICT, 0);
	u64 per_sec = cycles ? (u64)elapsed * tsc_khz * 1000 / cycles : 0;
	u32 count = per_sec ? (u32)(per_sec / hz) : 100000;

	timer_count = count ? count : 1;
	apic_write(APIC_LVTT, APIC_TIMER_PERIODIC | vector);
	apic_write(APIC_TMICT, timer_count);
	pr_info("timer: %llu Hz APIC timer clock (/16), %llu Hz tick, count %u\n",
		per_sec, hz, count);
}

/** apic_timer_start_secondary() - this CPU's timer at the boot CPU's calibrated rate */
void apic_timer_start_secondary(u32 vector)
{
	apic_write(APIC_TDCR, 0x3);
	apic_write(APIC_LVTT, APIC_TIMER_PERIODIC | vector);
	apic_write(APIC_TMICT, timer_count ? timer_count : 100000);
}
