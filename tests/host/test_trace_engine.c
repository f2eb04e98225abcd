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

static void on_pmi(bool nmi)
{
	assert_true(pt_pmi_handle());
}

static u64 at(unsigned int off)
{
	return (u64)(uintptr_t)(code + off);
}

/* The machine, the trace unit, the session (4 KiB regions), the engine (pt.step=@step). */
static int setup_step(const char *step)
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
	if (pt_model_init("skylake", false) != 1)
		return -1;
	if (pt_pmu_hw_init())
		return -1;
	hosted_lvtpc = PT_PMI_VECTOR;
	hosted_pmi_handler = on_pmi;
	hosted_console_quiet = true;
	snprintf(line, sizeof(line), "pt.step=%s", step);
	cmdline_parse(line, NULL);
	o.enabled = true;
	o.buf_size = 16384;
	o.region_size = 4096;
	o.filter = NULL;
	o.snapshot = false;
	membuf_free(&out);
	if (pt_session_open(&o, &sink, &unit, 0x100000, 0x20000, NULL))
		return -1;
	trace_engine_init();
	if (!pt_session_engine() || !hosted_trap_handlers[X86_TRAP_DB] ||
	    (!strcmp(step, "branch") && !hosted_trap_handlers[X86_TRAP_BP]))
		return -1;
	pt_session_engine()->stats(&base);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_step("branch");
}

static int setup_single(void **state)
{
	(void)state;
	return setup_step("single");
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
	r.rflags = 0x202;
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

/* The INT3 on the branch at @ip: returns where the emulated branch went. */
static u64 breakpoint(u64 ip)
{
	struct pt_regs r = regs_at(ip + 1, X86_TRAP_BP);

	assert_int_equal(code[ip - at(0)], 0xcc);	/* the engine's INT3 is there */
	assert_true(hosted_trap_handlers[X86_TRAP_BP](&r));
	return r.rip;
}

struct decoded {
	u64 ips[64];
	size_t n;
};

static void collect(void *ctx, const struct ptd_event *ev)
{
	struct decoded *d = ctx;

	if (ev->type == PTD_EV_INSN && d->n < 64)
		d->ips[d->n++] = ev->ip;
}

/* Close the window and the session, decode the container. */
static void finish_and_decode(struct decoded *d, struct trace_engine_stats *st, size_t *problems)
{
	const struct trace_engine_ops *e = pt_session_engine();
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_consumer cons = { collect, d };

	pt_trace_end();
	e->stats(st);
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
	for (size_t i = 0; i < n; i++)
		assert_int_equal(d->ips[i], want[i]);
	assert_int_equal(st->insns, n);
}

/* The code (+0..+5: @head, +0x10: nop; ret), TraceEn=1, the first #DB at +0. */
static void begin_window(const char *head)
{
	memcpy(code, head, 6);
	memcpy(code + 0x10, "\x90\xc3", 2);
	pt_trace_begin();		/* arm, TraceEn=1; "follow" is ours to script */
	step_to(at(0));			/* the first instruction of the window */
}

/* The window ran +0 to +4 (the branch at +4 last): decoded and counted so. */
static void end_window_ran_five(struct trace_engine_stats *st)
{
	const u64 want[] = { at(0), at(1), at(2), at(3), at(4) };
	struct decoded d;
	size_t problems;

	finish_and_decode(&d, st, &problems);
	check_window(&d, st, problems, want, ARRAY_SIZE(want));
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
	assert_int_equal(code[4], 0xeb);	/* the code is as it was */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_second_interrupt_after_the_code_ran_on, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_second_interrupt_before_the_code_ran, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_single_step_interrupt_and_sti, setup_single,
						teardown),
	};
	return cmocka_run_group_tests_name("trace_engine", tests, NULL, NULL);
}
