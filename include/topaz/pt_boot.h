/* SPDX-License-Identifier: MIT */
/* pt=on in the kernel: the session on its sink, and traced workload runs. */
#ifndef TOPAZ_PT_BOOT_H
#define TOPAZ_PT_BOOT_H

#include <topaz/types.h>

struct boot_info;
struct workload;

/**
 * pt_unit_boot() - install the software trace unit as pt.model=, pt.profile=
 * and pt.skid= ask (auto: when the CPU has no Intel PT)
 * Return: as pt_model_init(): 1 installed, 0 not needed or pt.model=off, -errno.
 */
int pt_unit_boot(void);
/** pt_boot_init() - with pt=on: open the session on pt.sink=; 0, or -errno (reported) */
int pt_boot_init(const struct boot_info *bi);
bool pt_boot_active(void);
/** pt_run_traced() - run @w between pt_trace_begin() and pt_trace_end() */
u64 pt_run_traced(const struct workload *w);
/** pt_boot_finish() - sideband, trailer, and a summary of what was traced */
void pt_boot_finish(void);

#endif
