// SPDX-License-Identifier: MIT
/* pt=on: the trace session's sink, the PMI, the engine, and the summary. */
#define pr_fmt(fmt) "pt: " fmt
#include <topaz/tracing.h>
#include "session.h"
#include <topaz/workload.h>
#include <topaz/bootinfo.h>
#include <topaz/serial.h>
#include <topaz/shutdown.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/power.h>
#include <topaz/time.h>
#include <topaz/smp.h>
#include <topaz/pt_options.h>
#include <topaz/cmdline.h>

extern const u8 __build_id_note[] __hidden;

static bool active;
/* pt.sink= as it turned out: a sink the machine lacks falls back (pt_boot_init()) */
static enum pt_sink_kind sink_kind;
static bool window_open;	/* a workload runs traced: other CPUs' jobs are traced too */
static struct trace_framer framer;
static struct trace_mem_sink mem_sink;

static int debugcon_sink(void *ctx, const void *buf, size_t n)
{
	debugcon_write(buf, n);
	return 0;
}

static void serial_out(void *ctx, const char *s, size_t n)
{
	uart_write(s, n);
}

/* A crash comes with the control flow that led to it. */

static void pt_panic_dump(void)
{
	if (!active)
		return;
	pt_trace_abort();
	printk(KERN_EMERG "pt: panic: writing the trace (%s)\n",
	       pt_session_opts.snapshot ? "the flight recorder's last bytes" : "what was not drained yet");
	pt_boot_finish();
}
static struct shutdown_hook panic_dump = { .name = "pt", .fn = pt_panic_dump };

/* A job on another CPU while a workload runs traced: that CPU's own window. */
/*
 * A panic's stop NMI on this CPU: put off to the end of a container write
 * (the panicking CPU waits for its lock), and wholly to the end of a trace
 * unit call (the stop hook and a PMI handler would turn the unit off half-way
 * through a packet: an NMI is taken at an instruction boundary).
 */
static enum smp_stop_when stop_when(void)
{
	if (pt_unit_busy())
		return SMP_STOP_PUT_OFF_NMI;
	return pt_session_writing_here() ? SMP_STOP_PUT_OFF : SMP_STOP_NOW;
}

static void traced_job(smp_call_func_t fn, void *info)
{
	if (!READ_ONCE(window_open) || !pt_session_has_cpu(smp_processor_id())) {
		fn(info);
		return;
	}
	pt_trace_begin();
	fn(info);
	pt_trace_end();
}

int pt_boot_init(struct boot_info *bi)
{
	struct pt_session_unit unit;
	struct trace_sink sink;
	int err;

	if (!pt_session_opts.enabled)
		return 0;
	sink_kind = pt_session_opts.sink;
	if (sink_kind == PT_SINK_FILE && !bi->fw_phase_active) {
		pr_warn("pt.sink=file: files are written through the firmware, before ExitBootServices (the firmware phase, fw.run= or fw.image=); the trace stays in memory (pt.sink=memory) and is lost at power-off\n");
		sink_kind = PT_SINK_MEMORY;
	}
	if (sink_kind == PT_SINK_DEBUGCON && !debugcon_present()) {
		/* without the device every byte would vanish: the serial port is slower but read */
		if (bi->fw_phase_active) {
			/* a real machine: a USB stick's user has the file system, maybe no serial port */
			pr_warn("pt.sink=debugcon: no debug console at port 0xe9; the trace goes to a file on the boot volume (pt.sink=file)\n");
			sink_kind = PT_SINK_FILE;
		} else if (uart_present()) {
			pr_warn("pt.sink=debugcon: no debug console at port 0xe9 (QEMU: -debugcon file:NAME); the trace goes to the serial port, framed (pt.sink=serial)\n");
			sink_kind = PT_SINK_SERIAL;
		} else {
			pr_warn("pt.sink=debugcon: no debug console at port 0xe9 and no serial port; the trace stays in memory (pt.sink=memory) and is lost at power-off: on a real machine trace in the firmware phase (fw.run=, fw.image=: a file on the boot volume) or use a serial port (docs/real-hardware.md)\n");
			sink_kind = PT_SINK_MEMORY;
		}
	}
	switch (sink_kind) {
	case PT_SINK_SERIAL:
		trace_framer_begin(&framer, serial_out, NULL);
		sink = trace_framer_sink(&framer);
		break;
	case PT_SINK_MEMORY:
	case PT_SINK_FILE:	/* in memory until the firmware phase writes the file */
		sink = (struct trace_sink){ trace_mem_sink_write, &mem_sink };
		break;
	default:
		sink = (struct trace_sink){ debugcon_sink, NULL };
		break;
	}
	pt_unit_describe(&unit);
	err = pt_session_open(&pt_opts, pt_session_opts.snapshot, &sink, &unit, bi->image_base,
			      bi->image_size, __build_id_note);
	if (err) {
		const char *key = pt_options_refused();

		if (key) {
			/* the word is named, and fails the boot as a bad value does */
			pr_err("pt=on: tracing is off: %s cannot be applied (said above)\n", key);
			cmdline_note_refused(&bi->cmdline_result, key, "refused");
		} else {
			pr_err("pt=on: tracing is off (error %d)\n", err);
		}
		return err;
	}
	pt_irq_init(pt_session_opts.pmi == PT_PMI_AS_NMI);
	panic_notifier_register(&panic_dump);
	smp_set_job_wrapper(traced_job);
	smp_set_stop_hook(pt_session_park_this_cpu, stop_when);
	active = true;
	pr_info("tracing with %s, %lluK buffer (%s), %s mode, sink %s\n",
		unit.model ? "the software trace unit" : "Intel PT",
		pt_opts.buf_size >> 10,
		pt_event_single_range(&this_cpu_ptr(pt_streams)->event) ? "single-range" : "ToPA",
		pt_session_opts.snapshot ? "snapshot" : "normal",
		sink_kind == PT_SINK_SERIAL ? "serial" : sink_kind == PT_SINK_MEMORY ? "memory" :
		sink_kind == PT_SINK_FILE ? "file" :
		"debugcon");
	return 0;
}

bool pt_boot_active(void)
{
	return active;
}

bool pt_boot_pmi_nmi(void)
{
	return pt_session_opts.pmi == PT_PMI_AS_NMI;
}

bool pt_boot_writes_file(void)
{
	return sink_kind == PT_SINK_FILE;
}

bool pt_boot_sink_is_memory(void)
{
	return sink_kind == PT_SINK_MEMORY;
}

const void *pt_boot_container(u64 *len, u64 *failed_at)
{
	*len = mem_sink.len;
	*failed_at = mem_sink.failed_at;
	return mem_sink.buf;
}

u64 pt_run_traced(const struct workload *w)
{
	u64 t0, t1, t2, t3, r;

	/* inline TSC reads: a call here would be traced too */
	t0 = __builtin_ia32_rdtsc();
	WRITE_ONCE(window_open, true);
	pt_trace_begin();
	t1 = __builtin_ia32_rdtsc();
	r = w->fn();
	t2 = __builtin_ia32_rdtsc();
	pt_trace_end();
	WRITE_ONCE(window_open, false);
	t3 = __builtin_ia32_rdtsc();
	pr_info("trace: %s ran traced in %llu us (starting the trace %llu us, stopping it %llu us)\n",
		w->name, tsc_to_ns(t2 - t1) / 1000,
		tsc_to_ns(t1 - t0) / 1000,
		tsc_to_ns(t3 - t2) / 1000);
	return r;
}

/* Sums over the CPUs with a stream, and each CPU's own line. */
struct cpu_sums {
	struct trace_engine_stats eng;
	struct pt_unit_counts unit;
	bool unit_counts;	/* the trace unit keeps counts (the model) */
	unsigned int ncpus;
	u64 bytes, lost, pmis, stale, pad, truncations, errors;
};

static void add_engine(struct trace_engine_stats *a, const struct trace_engine_stats *b)
{
	a->insns += b->insns;
	a->branches += b->branches;
	a->db_traps += b->db_traps;
	a->bp_traps += b->bp_traps;
	a->nested += b->nested;
	a->fallbacks += b->fallbacks;
	a->async += b->async;
	a->async_chained += b->async_chained;
	a->async_chained_ran += b->async_chained_ran;
	a->sites = max(a->sites, b->sites);	/* INT3s are shared: the count is global */
	a->foreign_pages = max(a->foreign_pages, b->foreign_pages);
	if (!a->missed)
		a->missed_ip = b->missed_ip;
	a->missed += b->missed;
	a->xlat_blocks += b->xlat_blocks;
	a->xlat_code += b->xlat_code;
	a->xlat_exits += b->xlat_exits;
	a->xlat_flushes += b->xlat_flushes;
	a->xlat_misses += b->xlat_misses;
	a->xlat_resets += b->xlat_resets;
	a->xlat_inline_tnt += b->xlat_inline_tnt;
	a->xlat_inline_plain += b->xlat_inline_plain;
	a->xlat_inline_tip += b->xlat_inline_tip;
	a->xlat_fast_paths += b->xlat_fast_paths;
	a->xlat_cond_paths += b->xlat_cond_paths;
	a->xlat_fast_plain += b->xlat_fast_plain;
	a->xlat_plain_paths += b->xlat_plain_paths;
	a->xlat_fast_rets += b->xlat_fast_rets;
	a->xlat_ret_paths += b->xlat_ret_paths;
	a->xlat_tnt_direct += b->xlat_tnt_direct;
	a->mode = b->mode;
}

static void add_unit(struct pt_unit_counts *a, const struct pt_unit_counts *b)
{
	a->produced += b->produced;
	a->stored += b->stored;
	a->lost += b->lost;
	a->pmis += b->pmis;
}

/* The images for the decoder, then the session and the framing closed. */
static void close_session(const struct trace_engine_ops *engine)
{
	smp_set_job_wrapper(NULL);
	smp_set_stop_hook(NULL, NULL);
	/* the engine's page runs (code outside every known module; a page a
	 * module covers marks the module instead), then the modules, whole */
	if (engine)
		engine->write_sideband(pt_session_add_image);
	trace_modules_write(pt_session_add_image, !engine);
	pt_session_close();
	if (sink_kind == PT_SINK_SERIAL)
		trace_framer_end(&framer);
}

/* One traced CPU's counts: added to @sum, and its own lines. */
static void gather_cpu(unsigned int cpu, const struct trace_engine_ops *engine,
		       struct cpu_sums *sum)
{
	const struct pt_stream *stream = per_cpu_ptr(pt_streams, cpu);
	struct trace_engine_stats st = { 0 };
	struct pt_unit_counts uc;
	struct pt_cpu_stats ds;
	u64 bytes = stream->stream_off - stream->lost_bytes;

	sum->ncpus++;
	pt_get_cpu_stats((int)cpu, &ds);
	if (engine) {
		engine->stats(cpu, &st);
		add_engine(&sum->eng, &st);
	}
	if (pt_unit_counts(cpu, &uc)) {
		add_unit(&sum->unit, &uc);
		sum->unit_counts = true;
	}
	sum->bytes += bytes;
	sum->lost += stream->lost_bytes;
	sum->pmis += ds.pmis;
	sum->stale += ds.stale_pmis;
	sum->pad += ds.pad_bytes;
	sum->truncations += ds.truncations;
	sum->errors += ds.errors;
	pr_info("trace: CPU %u: %llu instructions, %llu bytes, %llu lost, %llu PMIs\n", cpu,
		st.insns, bytes,
		stream->lost_bytes, ds.pmis);
	if (stream->not_kept)
		pr_info("trace: CPU %u: %llu more bytes went to the coverage decoder only (a fuzz campaign's windows, pt.sink=memory)\n",
			cpu, stream->not_kept);
	if (st.missed)
		pr_warn("trace: CPU %u ran past %llu INT3s without stopping, the first at %pS: "
			"the trace lacks those branches and will not decode there\n", cpu,
			st.missed, (void *)(uintptr_t)st.missed_ip);
	if (engine)
		pr_info("result: trace.cpu cpu=%u delivered=%llu lost=%llu pmis=%llu insns=%llu\n", cpu,
			bytes, stream->lost_bytes,
			ds.pmis, st.insns);
	else
		pr_info("result: trace.cpu cpu=%u delivered=%llu lost=%llu pmis=%llu\n", cpu,
			bytes, stream->lost_bytes,
			ds.pmis);
}

/* The engine's totals over the traced CPUs. */
static void print_engine_report(const struct trace_engine_stats *st, unsigned int ncpus)
{
	pr_info("trace: %llu instructions, %llu branches, %llu stops (%s-step: %llu #DB, %llu #BP; "
		"%llu INT3s written, %llu run by handlers, %llu fallbacks), "
		"%llu interrupts/exceptions in traced code (%llu back to back: before the code ran to its next branch), "
		"%llu firmware pages%s\n",
		st->insns, st->branches,
		st->db_traps + st->bp_traps,
		st->mode == TRACE_STEP_TRANSLATE ? "translate" :
		st->mode == TRACE_STEP_BRANCH ? "branch" : "single",
		st->db_traps, st->bp_traps,
		st->sites, st->nested,
		st->fallbacks, st->async,
		st->async_chained, st->foreign_pages,
		ncpus > 1 ? ", all CPUs" : "");
	if (st->mode != TRACE_STEP_TRANSLATE)
		return;
	pr_info("trace: translate: %llu blocks in %llu bytes of code cache (%llu resets), "
		"%llu record batches, %llu indirect targets looked up out of line, "
		"%llu exits to branch-step; %llu TNT bits of conditional branches and RETs written inline "
		"(%llu full TNT packets stored by the code itself), %llu direct JMPs and CALLs with no record, "
		"%llu TIPs stored by the code itself\n",
		st->xlat_blocks, st->xlat_code,
		st->xlat_resets, st->xlat_flushes,
		st->xlat_misses, st->xlat_exits, st->xlat_inline_tnt, st->xlat_tnt_direct,
		st->xlat_inline_plain, st->xlat_inline_tip);
	/* a line of its own: printk's lines end at 512 bytes */
	pr_info("trace: translate: stubs that write flags (dead where they go) for %llu of %llu "
		"Jcc outcomes (the others push them) and %llu of %llu direct JMPs and CALLs "
		"translated; %llu of %llu RETs compressed inline with their flags pushed\n",
		st->xlat_fast_paths, st->xlat_cond_paths, st->xlat_fast_plain, st->xlat_plain_paths,
		st->xlat_fast_rets, st->xlat_ret_paths);
}

/* The session's totals, for people and (the "result:" lines) for scripts. */
static void print_report(const struct trace_engine_ops *engine, const struct cpu_sums *sum)
{
	const struct trace_engine_stats *st = &sum->eng;

	if (engine)
		print_engine_report(st, sum->ncpus);
	pr_info("trace: %llu bytes (%llu of them padding), %llu lost, %llu PMIs (%llu stale), "
		"%llu truncations, %llu errors\n",
		sum->bytes, sum->pad,
		sum->lost, sum->pmis,
		sum->stale, sum->truncations,
		sum->errors);
	/* the same, for scripts: one "result:" line per subsystem, key=value */
	if (engine)
		pr_info("result: trace.engine insns=%llu branches=%llu async=%llu async_chained=%llu "
			"async_chained_ran=%llu fallbacks=%llu missed=%llu\n",
			st->insns, st->branches,
			st->async, st->async_chained,
			st->async_chained_ran, st->fallbacks,
			st->missed);
	pr_info("result: trace.session delivered=%llu lost=%llu padding=%llu pmis=%llu truncations=%llu\n",
		sum->bytes, sum->lost,
		sum->pad, sum->pmis,
		sum->truncations);
	if (sum->unit_counts) {
		/* what the driver cannot know: the trace unit's own count */
		pr_info("trace unit: %llu bytes produced, %llu stored, %llu lost; %llu PMIs signalled\n",
			sum->unit.produced, sum->unit.stored,
			sum->unit.lost, sum->unit.pmis);
		pr_info("result: trace.unit produced=%llu stored=%llu lost=%llu pmis=%llu\n",
			sum->unit.produced, sum->unit.stored,
			sum->unit.lost, sum->unit.pmis);
	}
	if (sink_kind == PT_SINK_MEMORY)
		pr_info("trace: container in memory at %#lx, %llu bytes\n", (unsigned long)mem_sink.buf,
			mem_sink.len);
}

void pt_boot_finish(void)
{
	const struct trace_engine_ops *engine;
	struct cpu_sums sum = { 0 };
	unsigned int cpu;
	u64 cpus;

	if (!active)
		return;
	active = false;
	cpus = pt_session.cpus;
	engine = pt_session_engine();
	close_session(engine);
	for_each_possible_cpu(cpu)
		if ((cpus >> cpu) & 1)
			gather_cpu(cpu, engine, &sum);
	print_report(engine, &sum);
}
