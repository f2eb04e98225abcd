// SPDX-License-Identifier: MIT
/*
 * The trace engine's decisions in the hosted build: the software trace unit
 * (skylake), a session writing its container to memory, and the engine
 * registered with it, driven by scripted traps. The test plays the CPU: it
 * calls the #DB and #BP handlers and the interrupt hooks with the registers a
 * CPU would have pushed, over real code bytes (the branch emulator reads
 * them, the sites write their INT3s there). The container is then decoded
 * with the decoder library: the instruction sequence must be what the
 * "CPU" ran, and the engine's counts must agree.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>
#include "hosted.h"
#include "ptdecode.h"
#include "trace_helpers.h"
#include "../../kernel/tracing/session.h"
#include "../../kernel/trace_engine/branch_sites.h"
#include <topaz/trace_engine.h>
#include <topaz/pt_model.h>
#include <topaz/pt_options.h>
#include <topaz/msr-index.h>
#include <topaz/apic.h>
#include <topaz/cmdline.h>
#include <topaz/mm.h>

#define DR6_BS	BIT(14)
/* Memory below MAXPHYADDR (39 bits) for the page allocator: the model checks. */
#define ARENA_BASE 0x20000000UL
#define ARENA_SIZE (64UL << 20)

static u8 *code;	/* the traced code: a page of our own */
static struct trace_engine_stats base;	/* the engine counts per boot: this test's share */
static void *arena;
static struct membuf out;	/* the container */

/*
 * The PMI as the CPU delivers it. An NMI comes at once, wherever the model
 * raised it (inside a stop's handler too). A vector waits for IF=1: handlers
 * and stops run with interrupts off, so when @pmi_deferred the test takes it
 * as an interrupt in traced code at the next point the code runs
 * (take_pending_pmi()).
 */
static bool pmi_deferred, pmi_pending;
/* the NMIs that came inside a stop's handler: what after_nmi() is for */
static unsigned int nmis_in_stops, in_stop;

static void on_pmi(bool nmi)
{
	if (nmi) {
		irq_counts[X86_TRAP_NMI]++;
		nmis_in_stops += in_stop;
		hosted_in_nmi = true;
		assert_true(pt_pmi_handle());
		hosted_in_nmi = false;
	} else if (pmi_deferred) {
		pmi_pending = true;
	} else {
		assert_true(pt_pmi_handle());
	}
}

static u64 at(unsigned int off)
{
	return (u64)(uintptr_t)(code + off);
}

/*
 * The machine, the trace unit (@profile), the session (4 KiB regions, PTWRITE
 * packets with @ptw, PMIs as NMIs with @nmi), the engine (pt.step=@step).
 */
static int setup_with(const char *step, const char *profile, bool ptw, bool nmi)
{
	char line[32];

	struct trace_sink sink = { membuf_write, &out };
	struct pt_session_unit unit = { .model = true, .bytes_lost = pt_model_bytes_lost };
	struct pt_options o = pt_opts;

	if (!arena) {
		/* once: the engine's tables outlive a test (freed on re-init) */
		arena = mmap((void *)ARENA_BASE, ARENA_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
		if (arena != (void *)ARENA_BASE)
			return -1;
		page_alloc_init();
		if (page_alloc_add_range(ARENA_BASE, ARENA_BASE + ARENA_SIZE))
			return -1;
	}
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (code == MAP_FAILED)
		return -1;
	memset(code, 0xcc, 4096);
	hosted_cpuid_reset();
	hosted_msr_reset();
	hosted_msr_define(MSR_CORE_PERF_GLOBAL_STATUS, 0);	/* the model claims bit 55 */
	pt_model_uninstall();
	if (pt_model_init(profile, false) != 1)
		return -1;
	if (pt_pmu_hw_init())
		return -1;
	hosted_lvtpc = nmi ? APIC_DM_NMI : PT_PMI_VECTOR;
	pmi_deferred = pmi_pending = false;
	hosted_pmi_handler = on_pmi;
	hosted_console_quiet = true;
	snprintf(line, sizeof(line), "pt.step=%s", step);
	cmdline_parse(line, NULL);
	o.buf_size = 16384;
	o.region_size = 4096;
	o.filter = NULL;
	o.ptw = ptw;
	membuf_free(&out);
	if (pt_session_open(&o, false, &sink, &unit, 0x100000, 0x20000, NULL))
		return -1;
	trace_engine_init();
	if (!pt_session_engine() || !hosted_trap_handlers[X86_TRAP_DB] ||
	    (!strcmp(step, "branch") && !hosted_trap_handlers[X86_TRAP_BP]))
		return -1;
	pt_session_engine()->stats(smp_processor_id(), &base);
	return 0;
}

/* How a test's machine is set up: its cmocka initial state. */
struct machine {
	const char *step, *profile;
	bool ptw, nmi;
};

static const struct machine branch_skylake = { "branch", "skylake", false, false };
static const struct machine single_skylake = { "single", "skylake", false, false };
static const struct machine branch_arrowlake_ptw = { "branch", "arrowlake", true, false };
static const struct machine single_arrowlake_ptw = { "single", "arrowlake", true, false };
static const struct machine branch_skylake_nmi = { "branch", "skylake", false, true };
static const struct machine single_skylake_nmi = { "single", "skylake", false, true };

static int setup(void **state)
{
	const struct machine *m = *state;

	return setup_with(m->step, m->profile, m->ptw, m->nmi);
}

static int teardown(void **state)
{
	(void)state;
	pt_session_set_engine(NULL);
	munmap(code, 4096);
	return 0;
}

/* The CPU's side of a trap at @rip (vector @v). */
static struct pt_regs regs_at(u64 rip, unsigned int v)
{
	struct pt_regs r;

	memset(&r, 0, sizeof(r));
	r.rip = rip;
	r.vector = v;
	r.rflags = 0x202;	/* IF, ZF clear: a JNZ is taken */
	r.rax = at(0);		/* where a JMP *%rax goes */
	return r;
}

/* #DB after a single step that landed at @rip. */
static void step_to(u64 rip)
{
	struct pt_regs r = regs_at(rip, X86_TRAP_DB);

	hosted_dr6 = DR6_BS;
	assert_true(hosted_trap_handlers[X86_TRAP_DB](&r));
}

/* An interrupt at @rip whose handler returns to @ret. */
static void interrupt(u64 rip, u64 ret)
{
	struct pt_regs r = regs_at(rip, 32);

	hosted_trace_hooks->enter(&r);
	r.rip = ret;
	hosted_trace_hooks->exit(&r);
}

/* A PMI waiting for IF=1 arrives at @rip, in traced code. */
static void take_pending_pmi(u64 rip)
{
	struct pt_regs r = regs_at(rip, PT_PMI_VECTOR);

	if (!pmi_pending)
		return;
	pmi_pending = false;
	hosted_trace_hooks->enter(&r);
	assert_true(pt_pmi_handle());
	hosted_trace_hooks->exit(&r);
}

/* The INT3 on the branch at @ip: returns where the emulated branch went. */
static u64 breakpoint(u64 ip)
{
	struct pt_regs r = regs_at(ip + 1, X86_TRAP_BP);

	assert_int_equal(code[ip - at(0)], 0xcc);	/* the engine's INT3 is there */
	in_stop = 1;
	assert_true(hosted_trap_handlers[X86_TRAP_BP](&r));
	in_stop = 0;
	return r.rip;
}

/* INT3 at @ip as isr_bp takes it: the fast path first, then the full one. */
static u64 int3(u64 ip, unsigned int *fast)
{
	struct trap_frame f = { .rip = ip + 1, .rflags = 0x202 };

	if (hosted_bp_fast && hosted_bp_fast(&f)) {
		(*fast)++;
		return f.rip;
	}
	return breakpoint(ip);
}

#define MAX_DECODED 16384

struct decoded {
	u64 ips[MAX_DECODED];
	size_t n;
	u64 ptw[8];
	size_t n_ptw;
	size_t async_disabled, enabled;
};

static void collect(void *ctx, const struct ptd_event *ev)
{
	struct decoded *d = ctx;

	switch (ev->type) {
	case PTD_EV_INSN:
		if (d->n < MAX_DECODED)
			d->ips[d->n] = ev->ip;
		d->n++;
		break;
	case PTD_EV_PTWRITE:
		if (d->n_ptw < ARRAY_SIZE(d->ptw))
			d->ptw[d->n_ptw] = ev->value;
		d->n_ptw++;
		break;
	case PTD_EV_ASYNC_DISABLED:
		d->async_disabled++;
		break;
	case PTD_EV_ENABLED:
		d->enabled++;
		break;
	default:
		break;
	}
}

static struct decoded dec;	/* too big for the stack */

/* Close the window and the session, decode the container. */
static void finish_and_decode(struct decoded *d, struct trace_engine_stats *st, size_t *problems)
{
	const struct trace_engine_ops *e = pt_session_engine();
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_consumer cons = { collect, d };

	pt_trace_end();
	e->stats(smp_processor_id(), st);
	st->insns -= base.insns;
	st->async -= base.async;
	st->async_chained -= base.async_chained;
	st->async_chained_ran -= base.async_chained_ran;
	e->write_sideband(pt_session_add_image);	/* our code page: "firmware" */
	pt_session_close();
	memset(d, 0, sizeof(*d));
	ptd_container_parse(&c, "engine.tpz", out.p, out.len);
	ptd_image_init(&img);
	ptd_image_add_sideband(&img, &c);
	ptd_image_finish(&img);
	ptd_ctx_init(&x, &c, &img);
	ptd_decode_flow(&x, &cons, 1);
	*problems = c.diags.n;
	for (size_t i = 0; i < c.diags.n; i++)
		fprintf(stderr, "problem: %s\n", c.diags.v[i].msg);
	ptd_ctx_free(&x);
	ptd_image_free(&img);
	ptd_container_free(&c);
}

/* The decoded flow is @want, the engine counted as many, no problem. */
static void check_window(const struct decoded *d, const struct trace_engine_stats *st,
			 size_t problems, const u64 *want, size_t n)
{
	assert_int_equal(problems, 0);
	assert_int_equal(d->n, n);
	assert_true(n <= MAX_DECODED);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(d->ips[i], want[i]);
	assert_int_equal(st->insns, n);
}

/* The code (+0..+7: @head, +0x10: nop; ret), TraceEn=1, the first #DB at +0. */
static void begin_window(const char *head)
{
	memcpy(code, head, strlen(head));
	memcpy(code + 0x10, "\x90\xc3", 2);
	pt_trace_begin();		/* arm, TraceEn=1; "follow" is ours to script */
	step_to(at(0));			/* the first instruction of the window */
}

/* The window ran +0 to +4 (the branch at +4 last): decoded and counted so. */
static void end_window_ran_five(struct trace_engine_stats *st)
{
	const u64 want[] = { at(0), at(1), at(2), at(3), at(4) };
	size_t problems;

	finish_and_decode(&dec, st, &problems);
	check_window(&dec, st, problems, want, ARRAY_SIZE(want));
}

/*
 * Branch-step: an interrupt, its handler returns, the code runs on two
 * instructions without a stop, a second interrupt, then the branch. Every
 * instruction run is in the trace (issue 16: the stretch between the two
 * interrupts was missing), and the engine counts what the CPU ran.
 *
 *   +0 nop  +1 nop  +2 nop  +3 nop  +4 jmp +0x10   ...   +0x10 nop  +0x11 ret
 */
static void test_second_interrupt_after_the_code_ran_on(void **state)
{
	struct trace_engine_stats st;

	(void)state;
	begin_window("\x90\x90\x90\x90\xeb\x0a");
	interrupt(at(1), at(1));	/* +0 ran, the handler returns to +1 */
	interrupt(at(3), at(3));	/* +1 and +2 ran, no stop between */
	assert_int_equal(breakpoint(at(4)), at(0x10));	/* +3, then the jmp */
	end_window_ran_five(&st);
	assert_int_equal(st.async, 2);
	assert_int_equal(st.async_chained, 1);
	assert_int_equal(st.async_chained_ran, 1);
	/* each interrupt is the model's: FUP, TIP.PGD; TIP.PGE at its return
	 * (and the window's end is one more FUP, TIP.PGD) */
	assert_int_equal(dec.async_disabled, 2 + 1);
	assert_int_equal(dec.enabled, 3);
	assert_int_equal(code[4], 0xeb);	/* the code is as it was */
}

/*
 * Four CPUs share the INT3s: this one traps on the branch at +4, and before
 * its handler looks the site up another CPU gives the site's byte back
 * (branch_site_disable(): its emulation faulted there). The INT3 was ours:
 * the handler runs the original JMP single-stepped, and the trace has it
 * (this was a panic: "not ours").
 */
static void test_site_given_back_by_another_cpu(void **state)
{
	struct pt_regs r = regs_at(at(4) + 1, X86_TRAP_BP);
	struct trace_engine_stats st;

	(void)state;
	begin_window("\x90\x90\x90\x90\xeb\x0a");
	assert_int_equal(code[4], 0xcc);
	branch_site_disable(branch_site_find(at(4)));	/* "the other CPU" */
	assert_int_equal(code[4], 0xeb);
	assert_true(hosted_trap_handlers[X86_TRAP_BP](&r));
	assert_int_equal(r.rip, at(4));		/* the JMP runs again, on the CPU */
	assert_true(r.rflags & X86_EFLAGS_TF);
	step_to(at(0x10));			/* its #DB */
	end_window_ran_five(&st);
}

/*
 * Another CPU, not tracing, traps on an INT3 just as the last tracer's end
 * puts every byte back: no site is left at its address, but the byte there
 * is the original again, so the INT3 was ours and the instruction runs
 * again. An INT3 that is still there is not ours: the panic path's.
 */
static void test_int3_restored_under_another_cpu(void **state)
{
	struct pt_regs r = regs_at(at(4) + 1, X86_TRAP_BP);

	(void)state;
	begin_window("\x90\x90\x90\x90\xeb\x0a");
	assert_int_equal(breakpoint(at(4)), at(0x10));
	assert_int_equal(code[0x11], 0xcc);	/* the RET's site */
	pt_trace_end();				/* the last tracer: the bytes go back */
	assert_int_equal(code[4], 0xeb);
	assert_true(hosted_trap_handlers[X86_TRAP_BP](&r));
	assert_int_equal(r.rip, at(4));
	assert_false(r.rflags & X86_EFLAGS_TF);
	code[4] = 0xcc;				/* one that is not ours */
	r = regs_at(at(4) + 1, X86_TRAP_BP);
	assert_false(hosted_trap_handlers[X86_TRAP_BP](&r));
	code[4] = 0xeb;
	pt_session_close();
}

/*
 * A second interrupt at the first one's return point (pending at the IRET):
 * the code did not run, the trace stays paused, nothing is counted twice.
 */
static void test_second_interrupt_before_the_code_ran(void **state)
{
	struct trace_engine_stats st;

	(void)state;
	begin_window("\x90\x90\x90\x90\xeb\x0a");
	interrupt(at(2), at(2));	/* +0, +1 ran */
	interrupt(at(2), at(2));	/* again at +2: nothing ran */
	assert_int_equal(breakpoint(at(4)), at(0x10));
	end_window_ran_five(&st);
	assert_int_equal(st.async_chained, 1);
	assert_int_equal(st.async_chained_ran, 0);
	assert_int_equal(dec.async_disabled, 1 + 1);	/* the second made no packet */
	assert_int_equal(dec.enabled, 2);
}

/*
 * Single-step: a #DB after every instruction, an interrupt between two, and
 * an STI whose next instruction (the branch) gets no #DB of its own (QEMU
 * holds it off in the interrupt shadow): the #DB after the branch reports on
 * both, and both are retired.
 *
 *   +0 nop  +1 nop  +2 nop  +3 sti  +4 jmp +0x10
 */
static void test_single_step_interrupt_and_sti(void **state)
{
	struct trace_engine_stats st;

	(void)state;
	begin_window("\x90\x90\x90\xfb\xeb\x0a");
	step_to(at(1));			/* +0 retired */
	step_to(at(2));			/* +1 */
	interrupt(at(2), at(2));	/* before +2 */
	step_to(at(3));			/* +2 */
	step_to(at(0x10));		/* +3 (sti) and +4 (jmp), one #DB */
	end_window_ran_five(&st);
	assert_int_equal(st.async, 1);
	assert_int_equal(st.async_chained, 0);
}

/*
 * PTWRITE on a CPU without it: the window runs a register-form PTWRITE and
 * the trace has its PTW packet with the register's value, after the
 * instruction before it. Single-step takes the #UD (an event the engine must
 * not report as an interrupt); branch-step emulates it at its INT3.
 *
 *   +0 nop  +1 ptwrite rax  +6 jmp +0x10
 */
#define PTW_CODE	"\x90\xf3\x48\x0f\xae\xe0\xeb\x08"
#define PTW_VALUE	0x1122334455667788ULL

static void end_window_ptwrite(void)
{
	const u64 want[] = { at(0), at(1), at(6) };
	struct trace_engine_stats st;
	size_t problems;

	finish_and_decode(&dec, &st, &problems);
	check_window(&dec, &st, problems, want, ARRAY_SIZE(want));
	assert_int_equal(dec.n_ptw, 1);
	assert_int_equal(dec.ptw[0], PTW_VALUE);
	assert_int_equal(st.async, 0);		/* the #UD was no interrupt */
	assert_int_equal(dec.async_disabled, 1);	/* the window's end only */
}

static void test_ptwrite_single_step_ud(void **state)
{
	struct pt_regs r;

	(void)state;
	begin_window(PTW_CODE);
	step_to(at(1));				/* +0 retired */
	r = regs_at(at(1), X86_TRAP_UD);	/* the PTWRITE faults */
	r.rax = PTW_VALUE;
	hosted_trace_hooks->enter(&r);
	assert_true(hosted_trap_handlers[X86_TRAP_UD](&r));
	hosted_trace_hooks->exit(&r);
	assert_int_equal(r.rip, at(6));		/* it returns past the PTWRITE */
	step_to(at(0x10));			/* the jmp */
	end_window_ptwrite();
}

static void test_ptwrite_branch_step(void **state)
{
	struct pt_regs r;

	(void)state;
	begin_window(PTW_CODE);
	r = regs_at(at(2), X86_TRAP_BP);	/* the INT3 on the PTWRITE */
	r.rax = PTW_VALUE;
	assert_int_equal(code[1], 0xcc);
	assert_true(hosted_trap_handlers[X86_TRAP_BP](&r));
	assert_int_equal(r.rip, at(6));
	assert_int_equal(breakpoint(at(6)), at(0x10));
	end_window_ptwrite();
	assert_int_equal(code[1], 0xf3);	/* the code is as it was */
}

/*
 * Single-step over a REP string instruction: its #DB after each iteration
 * reports on the same instruction, which retires once, at the last.
 *
 *   +0 nop  +1 rep movsb  +3 nop  +4 jmp +0x10
 */
static void test_single_step_rep_string(void **state)
{
	const u64 want[] = { at(0), at(1), at(3), at(4) };
	struct trace_engine_stats st;
	size_t problems;

	(void)state;
	begin_window("\x90\xf3\xa4\x90\xeb\x0a");
	step_to(at(1));
	for (int i = 0; i < 3; i++)
		step_to(at(1));		/* one iteration each */
	step_to(at(3));			/* the last: rep movsb retired */
	step_to(at(4));
	step_to(at(0x10));
	finish_and_decode(&dec, &st, &problems);
	check_window(&dec, &st, problems, want, ARRAY_SIZE(want));
}

/*
 * A long branch-step window: a loop whose branch stops each time, an
 * interrupt every @period-th iteration, and ToPA regions that fill many
 * times, so PMIs arrive: as vectors between stops and handlers, or as NMIs
 * inside them. The decoded flow is the loop's, instruction for instruction.
 *
 *   +0 nop  +1 jnz +0 (taken, the fast INT3 path)  or  +1 jmp *%rax (a TIP each)
 */
#define LOOP_ITERS	6000
#define LOOP_JNZ	"\x90\x75\xfd"
#define LOOP_JMP_RAX	"\x90\xff\xe0"

static void check_loop(struct trace_engine_stats *st, unsigned int period)
{
	size_t problems;

	finish_and_decode(&dec, st, &problems);
	assert_int_equal(problems, 0);
	assert_int_equal(dec.n, 2 * LOOP_ITERS);
	assert_int_equal(st->insns, 2 * LOOP_ITERS);
	for (size_t i = 0; i < dec.n && i < MAX_DECODED; i++)
		assert_int_equal(dec.ips[i], at(i & 1));
	assert_true(dec.async_disabled >= LOOP_ITERS / period);
}

static void run_loop(const char *loop, unsigned int period, struct trace_engine_stats *st,
		     unsigned int *fast)
{
	begin_window(loop);
	for (unsigned int i = 0; i < LOOP_ITERS; i++) {
		if (i % period == 1) {
			interrupt(at(1), at(1));	/* before the branch */
			take_pending_pmi(at(1));
		}
		assert_int_equal(int3(at(1), fast), at(0));
		take_pending_pmi(at(0));
	}
	check_loop(st, period);
}

static void test_loop_pmis_as_vectors(void **state)
{
	struct trace_engine_stats st;
	unsigned int fast = 0;
	struct pt_cpu_stats ds;
	u64 pmis;

	(void)state;
	pt_get_cpu_stats((int)smp_processor_id(), &ds);
	pmis = ds.pmis;
	pmi_deferred = true;
	run_loop(LOOP_JNZ, 4, &st, &fast);
	pt_get_cpu_stats((int)smp_processor_id(), &ds);
	pmis = ds.pmis - pmis;
	assert_true(pmis >= 2);
	assert_true(fast >= LOOP_ITERS / 2);	/* the common stop took the fast path */
	assert_int_equal(st.async, LOOP_ITERS / 4 + pmis);	/* each PMI was one too */
}

static void test_loop_pmis_as_nmis(void **state)
{
	struct trace_engine_stats st;
	unsigned int fast = 0;
	u64 nmis = irq_counts[X86_TRAP_NMI];

	(void)state;
	nmis_in_stops = 0;
	run_loop(LOOP_JMP_RAX, 16, &st, &fast);
	assert_true(irq_counts[X86_TRAP_NMI] - nmis >= 3);
	assert_true(nmis_in_stops >= 1);
	assert_int_equal(st.async, LOOP_ITERS / 16);	/* NMIs came inside handlers */
}

/*
 * The same loop single-stepped, an interrupt before the nop each second
 * iteration. The model hears of its return at the #DB after the nop; a PMI
 * those packets raise comes as an NMI right there, where the model is at
 * the nop: the trace must go on from the nop (without the model's enable
 * point at the event's end it went on from the branch, the nop lost).
 */
static void test_single_step_loop_pmis_as_nmis(void **state)
{
	struct trace_engine_stats st;
	u64 nmis = irq_counts[X86_TRAP_NMI];

	(void)state;
	begin_window(LOOP_JMP_RAX);
	for (unsigned int i = 0; i < LOOP_ITERS; i++) {
		if (i % 2 == 0)
			interrupt(at(0), at(0));
		step_to(at(1));		/* the nop */
		step_to(at(0));		/* the jmp */
	}
	check_loop(&st, 2);
	assert_true(irq_counts[X86_TRAP_NMI] - nmis >= 3);
	assert_int_equal(st.async, LOOP_ITERS / 2);
}

int main(void)
{
#define T(fn, machine) cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&machine)
	const struct CMUnitTest tests[] = {
		T(test_second_interrupt_after_the_code_ran_on, branch_skylake),
		T(test_second_interrupt_before_the_code_ran, branch_skylake),
		T(test_site_given_back_by_another_cpu, branch_skylake),
		T(test_int3_restored_under_another_cpu, branch_skylake),
		T(test_single_step_interrupt_and_sti, single_skylake),
		T(test_ptwrite_single_step_ud, single_arrowlake_ptw),
		T(test_ptwrite_branch_step, branch_arrowlake_ptw),
		T(test_single_step_rep_string, single_skylake),
		T(test_loop_pmis_as_vectors, branch_skylake),
		T(test_loop_pmis_as_nmis, branch_skylake_nmi),
		T(test_single_step_loop_pmis_as_nmis, single_skylake_nmi),
	};
	return cmocka_run_group_tests_name("trace_engine", tests, NULL, NULL);
}
