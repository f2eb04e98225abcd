/* SPDX-License-Identifier: MIT */
#ifndef TOPAZ_TIME_H
#define TOPAZ_TIME_H

#include <topaz/types.h>

extern u64 tsc_khz;		/* measured against the PIT at boot */
extern volatile u64 jiffies;	/* timer ticks since the timer started */
#define HZ 100

void tsc_calibrate(void);
u64 tsc_to_ns(u64 cycles);
/* Nanoseconds since boot for the log's time stamps; 0 until calibrated. */
u64 ktime_get_ns(void);
void udelay(u64 us);
/** timer_init() - start the local APIC timer at HZ on TIMER_VECTOR */
void timer_init(void);

#endif
