// SPDX-License-Identifier: MIT
/*
 * The branch-step self-check at boot: a probe function with each kind of
 * near branch the emulator runs (Jcc both ways, direct and indirect CALL,
 * RET, JMP) gives the same result under the INT3s as run by the CPU, stops
 * at them, and its code is the same byte for byte afterwards. It proves the
 * code can be patched here (W^X mappings, firmware, a CPU's quirks) before a
 * trace depends on it, and warms the stop path.
 */
#define pr_fmt(fmt) "trace: " fmt
#include <topaz/tracing.h>
#include "engine.h"
#include "branch_emul.h"
#include <topaz/symbols.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/arch.h>

/**
 * engine_check_step() - a stop of the self-check (CHECKING)
 * @e: this CPU's engine
 * @regs: the probe's registers
 * @s: the INT3's branch site
 * @ip: its address
 *
 * The same stop as a traced one, without the model; the check ends where
 * the probe function returns to its caller.
 *
 * Return: true (the INT3 was the engine's).
 */
__noinline bool engine_check_step(struct engine *e, struct pt_regs *regs, struct branch_site *s,
				  u64 ip)
{
	struct branch_result res;
	const struct branch_block *b;
	bool created;
	int err;

	regs->rip = ip;
	if (branch_emul_run(&s->emul, ip, regs, &res)) {
		branch_site_disable(s);
		e->state = ENG_OFF;	/* the CPU takes it from here */
		return true;
	}
	e->check_stops++;
	if (s->cls == PTM_RET && (res.target < e->check_lo || res.target >= e->check_hi)) {
		e->state = ENG_CHECK_DONE;	/* back in the caller: done */
		return true;
	}
	b = branch_block_get(regs->rip, &created, &err);
	if (!b)
		e->state = ENG_OFF;	/* the INT3s in place still run, untraced */
	return true;
}

#ifndef TOPAZ_HOSTED	/* it runs INT3s natively: the hosted tests script the stops instead */
static __noinline u64 check_leaf_a(u64 x)
{
	return x * 3 + 1;
}

static __noinline u64 check_leaf_b(u64 x)
{
	return (x >> 1) ^ 0x5a;
}

static u64 (*volatile check_ops[2])(u64) = { check_leaf_a, check_leaf_b };

static __noinline u64 check_probe(u64 n)
{
	u64 acc = 1;

	for (u64 i = 0; i < n; i++) {
		if (i % 3 == 0)
			acc += check_leaf_a(acc);
		else
			acc ^= check_ops[i & 1](acc + i);
		if (acc > 100000)
			acc %= 977;
	}
	return acc;
}

/* What the probe's runs gave. */
struct check_result {
	u64 got, got_no_iret, nested;
	bool done;
};

/*
 * The probe run under its INT3s, followed (CHECKING), then again untraced
 * as in an NMI handler. Returns the first block (NULL: none, *@err why).
 */
static const struct branch_block *check_runs(struct engine *e, struct check_result *r, int *err)
{
	const struct branch_block *b;
	bool created;

	e->check_stops = 0;
	b = branch_block_get((uintptr_t)check_probe, &created, err);
	if (!b)
		return NULL;
	e->state = ENG_CHECKING;
	r->got = check_probe(100);
	r->done = e->state == ENG_CHECK_DONE;
	/* again, the INT3s in place, run untraced as in a handler and
	 * returned from as in an NMI handler (POPFQ; RET) */
	r->nested = e->st.nested;
	e->state = ENG_CHECK_UNTRACED;
	r->got_no_iret = check_probe(100);
	e->state = ENG_OFF;
	r->nested = e->st.nested - r->nested;
	e->st.nested -= r->nested;
	return b;
}

/**
 * branch_step_self_check() - the boot self-check of branch-step on this CPU
 *
 * Return: 0 when branch-step works here, else a negative errno.
 */
int branch_step_self_check(void)
{
	struct engine *e = this_cpu_ptr(engines);
	const u8 *code = (const u8 *)check_probe;
	u8 before[64];
	struct branch_sites_stats bst;
	struct check_result r = { 0 };
	uintptr_t off, size;
	const char *name;
	u64 want = check_probe(100);
	unsigned long flags;
	unsigned int restored;
	bool ran;
	int err;

	if (ksym_lookup((uintptr_t)check_probe, &name, &off, &size) || off)
		return -ENOENT;
	e->check_lo = (uintptr_t)check_probe;
	e->check_hi = e->check_lo + size;
	memcpy(before, code, min(sizeof(before), (size_t)size));
	flags = local_irq_save();	/* no interrupt while the INT3s are in */
	ran = check_runs(e, &r, &err) != NULL;
	restored = branch_sites_restore();
	local_irq_restore(flags);
	if (!ran)
		return err;
	branch_sites_get_stats(&bst);
	e->sites_base = bst.patched;
	if (r.got != want || r.got_no_iret != want || !r.done || r.nested < e->check_stops ||
	    memcmp(before, code, min(sizeof(before), (size_t)size))) {
		pr_err("pt.step=branch: self-check failed: results %#llx and %#llx (the CPU's %#llx), "
		       "%s, %llu and %llu stops, %u INT3s restored\n",
		       r.got, r.got_no_iret,
		       want, r.done ? "returned" : "lost the flow",
		       e->check_stops, r.nested, restored);
		return -EIO;
	}
	pr_info("branch-step self-check: %llu stops at %u INT3s, result as the CPU's, code restored; "
		"%llu more returning as from an NMI\n", e->check_stops,
		restored, r.nested);
	return 0;
}
#endif
