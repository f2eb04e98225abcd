// SPDX-License-Identifier: MIT
/*
 * probe=POINT:trace - probe hits written into the trace with PTWRITE, so
 * allocations appear inline in the control flow. Each hit writes two PTW
 * packets: first (bytes_alloc << 32 | bytes_req), then ptr (0 when the point
 * has none). Needs pt=on pt.ptw=1 on a CPU (or profile) with PTWRITE.
 */
#define pr_fmt(fmt) "pt: " fmt
#include <topaz/probe.h>
#include "session.h"
#include <topaz/kernel.h>

static u64 written, dropped;

/* PTWRITE r64 (F3 REX.W 0F AE /4): the operand goes into a PTW packet. */
static __noinline void ptwrite64(u64 v)
{
	__asm__ volatile(".byte 0xf3, 0x48, 0x0f, 0xae, 0xe0" :: "a"(v) : "memory");
}

static void trace_hit(struct probe_hit *hit, void *data)
{
	u64 req = 0, alloc = 0, ptr = 0;

	if (!pt_session_ptwrite_on()) {
		dropped++;
		return;
	}
	probe_get_u64(hit, "bytes_req", &req);
	probe_get_u64(hit, "bytes_alloc", &alloc);
	probe_get_u64(hit, "ptr", &ptr);
	ptwrite64(alloc << 32 | (req & 0xffffffffu));
	ptwrite64(ptr);
	written++;
}

static struct probe_action trace_action = {
	.name = "trace",
	.fn = trace_hit,
	.help = "write the hit into the PT trace as PTW packets (pt=on pt.ptw=1)",
};

/** pt_ptwrite_register() - offer the :trace action (before probes_init()) */
void pt_ptwrite_register(void)
{
	probe_action_register(&trace_action);
}
