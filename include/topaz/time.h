/* SPDX-License-Identifier: MIT */
#ifndef TOPAZ_TIME_H
#define TOPAZ_TIME_H

#include <topaz/types.h>

extern u64 tsc_khz;		/* measured against the PIT at boot */
extern volatile u64 jiffies;	/* timer ticks since the timer started */
#define HZ 100

/** tsc_calibrate() - measure the TSC's rate against the PIT (1 GHz assumed without one) */
void tsc_calibrate(void);
/**
 * tsc_to_ns() - convert TSC cycles to nanoseconds at the calibrated rate
 * Return: @cycles in ns.
 */
u64 tsc_to_ns(u64 cycles);
/**
 * ktime_get_ns() - the time since boot, for the log's time stamps
 * Return: nanoseconds since tsc_calibrate(); 0 before it.
 */
u64 ktime_get_ns(void);
/** udelay() - spin for @us microseconds (TSC) */
void udelay(u64 us);
/** timer_init() - start the local APIC timer at HZ on TIMER_VECTOR */
void timer_init(void);

#endif
