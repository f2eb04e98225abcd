// SPDX-License-Identifier: MIT
/* Time: the TSC calibrated against PIT channel 2, and the APIC timer tick. */
#include <topaz/time.h>
#include <topaz/cmdline.h>
#include <topaz/apic.h>
#include <topaz/arch.h>
#include <topaz/traps.h>
#include <topaz/kernel.h>
#include <topaz/percpu.h>

#define PIT_HZ		1193182u
#define PIT_CH2		0x42
#define PIT_CMD		0x43
#define PIT_GATE	0x61

u64 tsc_khz;
volatile u64 jiffies;
static u64 tsc_boot;

/* Count TSC cycles over 10 ms of PIT channel 2 in one-shot mode. */
static u64 measure_tsc_khz(void)
{
	const u32 ticks = PIT_HZ / 100;
	u64 t0, t1;
	u8 gate = inb(PIT_GATE);

	outb(PIT_GATE, (u8)((gate & ~0x02) | 0x01));	/* gate on, speaker off */
	outb(PIT_CMD, 0xb0);				/* ch2, lo/hi, mode 0, binary */
	outb(PIT_CH2, ticks & 0xff);
	outb(PIT_CH2, (u8)(ticks >> 8));
	t0 = rdtsc();
	for (u64 spin = 0; !(inb(PIT_GATE) & 0x20); spin++)
		if (spin > 100000000ull)
			return 0;
	t1 = rdtsc();
	outb(PIT_GATE, gate);
	return (t1 - t0) / 10;
}

void tsc_calibrate(void)
{
	u64 best = 0;

	/* The shortest of three runs: a slow emulator only ever lengthens one. */
	for (int i = 0; i < 3; i++) {
		u64 k = measure_tsc_khz();
		if (k && (!best || k < best))
			best = k;
	}
	tsc_khz = best ? best : 1000000;	/* 1 GHz if the PIT is missing */
	tsc_boot = rdtsc();
}

u64 tsc_to_ns(u64 cycles)
{
	if (!tsc_khz)
		return 0;
	return cycles / tsc_khz * 1000000u + cycles % tsc_khz * 1000000u / tsc_khz;
}

u64 ktime_get_ns(void)
{
	return tsc_boot ? tsc_to_ns(rdtsc() - tsc_boot) : 0;
}

void udelay(u64 us)
{
	u64 end = rdtsc() + us * tsc_khz / 1000;

	while (rdtsc() < end)
		cpu_relax();
}

DEFINE_PER_CPU(u64, timer_ticks);

/* Every CPU's timer ticks; jiffies counts the boot CPU's, as time. */
static bool timer_tick(struct pt_regs *regs)
{
	unsigned int cpu = smp_processor_id();

	(*per_cpu_ptr(timer_ticks, cpu))++;
	if (cpu == 0)
		jiffies++;
	return true;
}


/* A faster tick puts more interrupts into traced code (the oracle's dense
 * configurations): each is an asynchronous event the trace must show. */
static u64 timer_hz = HZ;
KPARAM_UINT("timer.hz", timer_hz, &timer_hz, 1, 100000,
	    "local APIC timer tick rate in Hz (default 100)");

void timer_init(void)
{
	irq_set_handler(TIMER_VECTOR, timer_tick);
	apic_timer_start(TIMER_VECTOR, timer_hz);
}
