// SPDX-License-Identifier: MIT
/*
 * fw.fuzz=: the firmware phase's fuzzer (docs/fuzzing.md). A persistent
 * loop, as libFuzzer's: pick an input from the corpus, mutate it
 * (kernel/fuzz), run the target on it in a traced window, take that
 * window's edge bitmap from the trace's packets (pt.coverage's decoder,
 * include/topaz/ptcov.h) and keep the input when it reached a new edge or a
 * new hit-count class (AFL's). The same code on PT silicon and on the
 * software trace unit. Targets: the built-in ones (FUZZ_TARGET()), or a
 * user's harness image (fw.fuzz=image with fw.image=), which calls the
 * protocol of include/topaz/fuzz_harness.h from its entry point.
 */
#include "internal.h"
#include <topaz/fuzz.h>
#include <topaz/fuzz_harness.h>
#include <topaz/tracing.h>
#include <topaz/cmdline.h>
#include <topaz/kernel.h>
#include <topaz/slab.h>
#include <topaz/time.h>
#include <topaz/arch.h>
#include <topaz/errno.h>

static const char *fuzz_spec;
KPARAM_STR("fw.fuzz", fw_fuzz, &fuzz_spec,
	   "firmware phase: fuzz TARGET with trace coverage as feedback (list: the targets; image: the harness fw.image= runs, include/topaz/fuzz_harness.h)");
static u64 fuzz_runs = 10000;
KPARAM_UINT("fw.fuzz.runs", fw_fuzz_runs, &fuzz_runs, 0, 1ull << 40,
	    "fw.fuzz: executions of mutated inputs (after the seeds; 0: no limit, fw.fuzz.time= ends it)");
static u64 fuzz_seed = 1;
KPARAM_UINT("fw.fuzz.seed", fw_fuzz_seed, &fuzz_seed, 0, ~0ull,
	    "fw.fuzz: the PRNG's seed: the same seed, the same campaign");
static u64 fuzz_max_len = 4096;
KPARAM_UINT("fw.fuzz.max_len", fw_fuzz_max_len, &fuzz_max_len, 1, 1u << 20,
	    "fw.fuzz: the longest input, in bytes");
static bool fuzz_feedback = true;
KPARAM_BOOL("fw.fuzz.feedback", fw_fuzz_feedback, &fuzz_feedback,
	    "fw.fuzz: keep inputs that reach new edges (off: mutate the seeds only, the baseline)");

#define CORPUS_MAX	4096	/* inputs kept */
#define STATUS_EVERY_S	3	/* a status line every so many seconds */

/* The campaign's state. */
static struct {
	const struct fuzz_target *t;
	u8 *virgin;		/* the hit-count classes not yet seen (AFL's virgin map) */
	u8 *first;		/* calibration: the first run's entries (at @first_at only) */
	u32 *first_at;		/* the first run's non-zero entries */
	u32 map_size;
	struct fuzz_corpus corpus;
	struct fuzz_rng rng;
	u64 execs, rejected, kept, crashes;
	u64 t0, last_new, last_status;
	u32 seed_edges, edges;
	const char *bug;	/* the harness's ReportBug() in this execution */
	u64 bug_rip;		/* where it called it */
	bool coverage;
	bool untraced;		/* fw.fuzz.bench's first pass: no trace window */
} fz;

bool fw_fuzz_wanted(void)
{
	return fuzz_spec && *fuzz_spec;
}

bool fw_fuzz_image(void)
{
	return fw_fuzz_wanted() && !strcmp(fuzz_spec, "image");
}

/* One execution in its own traced window (untraced without a session). */
static __noinline int exec_traced(const u8 *data, size_t size)
{
	int r;

	if (!pt_boot_active() || fz.untraced) {
		r = fz.t->run(data, size);
		fw_fuzz_stamp(FW_FUZZ_T_RAN);
		return r;
	}
	pt_trace_begin();
	r = fz.t->run(data, size);
	fw_fuzz_stamp(FW_FUZZ_T_RAN);
	pt_trace_end();
	return r;
}

static u64 secs_since(u64 tsc)
{
	return tsc_to_ns(rdtsc() - tsc) / 1000000000ull;
}

static void status_line(const char *what)
{
	u64 now_ns = tsc_to_ns(rdtsc() - fz.t0);
	u64 rate = now_ns ? fz.execs * 1000000000ull / now_ns : 0;

	printk("fuzz: %s #%llu execs, %llu exec/s, corpus %u (%llu bytes), edges %u, crashes %llu, "
	       "last new edge %llu s ago\n", what, fz.execs, rate, fz.corpus.n,
	       (unsigned long long)fz.corpus.bytes,
	       fz.coverage ? fuzz_count_edges(fz.virgin, fz.map_size) : 0, fz.crashes,
	       secs_since(fz.last_new));
}

static void print_input(const u8 *data, size_t size)
{
	char hex[3 * 32 + 1];
	size_t n = size < 32 ? size : 32, i;

	for (i = 0; i < n; i++)
		ksnprintf(hex + 3 * i, 4, "%02x ", data[i]);
	hex[n ? 3 * n - 1 : 0] = 0;
	printk("fuzz: the input, %zu bytes: %s%s\n", size, hex, size > n ? " ..." : "");
}

/*
 * A crash of any kind (an exception, a guard page, a bad free, a timeout,
 * the harness's ReportBug): said with its kind, where, what it hit and the
 * input. The campaign stops (libFuzzer's default: the firmware's state is
 * unknown). Return: 1, one_input()'s "a crash".
 */
static int fuzz_crash(const struct fw_fuzz_fault *f, const u8 *data, size_t size)
{
	char site[160], line[160 + 96];
	const char *kind = fw_fuzz_fault_kind(f);
	size_t n;

	fz.crashes++;
	pr_err("fuzz: crash: kind=%s on execution %llu\n", kind, fz.execs);
	fw_fuzz_fault_print(f);
	print_input(data, size);
	n = ksnprintf(line, sizeof(line), "kind=%s execs=%llu size=%zu site=%s", kind, fz.execs,
		      size, fw_fuzz_fault_site(f, site, sizeof(site)));
	if (f->addr && n < sizeof(line))
		n += ksnprintf(line + n, sizeof(line) - n, " addr=%#llx", f->addr);
	/* an exception or a timeout may have left the firmware broken */
	fw_fuzz_save_crash(data, size, strcmp(kind, "bug") != 0);
	printk("result: fuzz crash %s%s%s%s\n", line, f->what ? " what=\"" : "",
	       f->what ? f->what : "", f->what ? "\"" : "");
	return 1;
}

static int reset_target(const u8 *data, size_t size)
{
	return fz.t->reset();
}

/*
 * An execution's coverage: the decoder's bitmap of hit counts (NULL without
 * coverage) and its non-zero entries, all that the news test looks at (the
 * bitmap is 64 KiB; a window hits a few hundred entries).
 */
struct exec_cov {
	const u8 *map;
	const u32 *at;
	u32 n;
};

/*
 * One execution of @data with its coverage (*@cov) and the target's reset
 * after it, both guarded (fw_fuzz_guarded()).
 * Return: 0 with the target's result in *@ret, 1 it crashed (said), or
 * -errno having said why.
 */
static int exec_one(const u8 *data, size_t size, int *ret, struct exec_cov *cov)
{
	struct fw_fuzz_fault fault;
	/* the input as given: the target may write over its guarded copy (a crash's file is this) */
	const u8 *given = data;
	int r;
	u32 n;

	fz.bug = NULL;
	cov->map = NULL;
	if (fz.coverage && pt_coverage_window_begin()) {
		pr_err("fw.fuzz: this CPU's coverage decoder is gone: the campaign stops\n");
		return -ENODEV;
	}
	data = fw_fuzz_guard_place(data, size);
	fz.execs++;
	fw_fuzz_stamp(FW_FUZZ_T_START);
	if (fw_fuzz_guarded(exec_traced, data, size, ret, &fault))
		return fuzz_crash(&fault, given, size);
	fw_fuzz_stamp(FW_FUZZ_T_STOPPED);
	if (fz.coverage) {
		cov->map = pt_coverage_window_end(&n);
		cov->at = pt_coverage_window_touched(&cov->n);
		if (!cov->map || !cov->at || n != fz.map_size) {
			pr_err("fw.fuzz: no coverage for execution %llu: the campaign stops\n", fz.execs);
			return -ENODEV;
		}
	}
	fw_fuzz_stamp(FW_FUZZ_T_DECODED);
	fw_fuzz_bench_sample();
	if (fz.t->reset && fw_fuzz_guarded(reset_target, data, size, &r, &fault))
		return fuzz_crash(&fault, given, size);
	if (fz.t->reset && r) {
		pr_err("fw.fuzz=%s: the target could not undo execution %llu: the campaign stops\n",
		       fz.t->name, fz.execs);
		return -EIO;
	}
	return 0;
}

/*
 * What @cov has that fz.virgin has not seen, and that a second execution of
 * the same input shows too (AFL's calibration, in short): an interrupt in
 * the window cuts the flow, and the block after it is reached with no edge
 * into it, a bitmap entry no input can bring back. Only entries in the same
 * hit-count class both times count; they are marked seen. Only the first
 * run's non-zero entries are looked at: the others cannot be news.
 */
static int calibrated_news(const u8 *data, size_t size, const struct exec_cov *cov,
			   enum fuzz_news *news)
{
	struct exec_cov again;
	u32 n = cov->n;
	int err, r;

	if (fuzz_news_at(fz.virgin, cov->map, cov->at, n) == FUZZ_NEW_NONE) {
		*news = FUZZ_NEW_NONE;
		return 0;
	}
	/* the decoder's bitmap and list are the next window's */
	memcpy(fz.first_at, cov->at, n * sizeof(u32));
	for (u32 k = 0; k < n; k++)
		fz.first[fz.first_at[k]] = cov->map[fz.first_at[k]];
	err = exec_one(data, size, &r, &again);
	if (err)
		return err;
	for (u32 k = 0; k < n; k++) {
		u32 i = fz.first_at[k];

		if (fuzz_bucket(fz.first[i]) != fuzz_bucket(again.map[i]))
			fz.first[i] = 0;
	}
	*news = fuzz_has_new_bits_at(fz.virgin, fz.first, fz.first_at, n);
	return 0;
}

/*
 * Run @data, take its coverage, keep it when @keep and it is new.
 * Return: 0 to go on, 1 a crash (the campaign stops), -errno an error said.
 */
static int one_input(const u8 *data, size_t size, bool keep)
{
	enum fuzz_news news = FUZZ_NEW_NONE;
	struct exec_cov cov;
	int r, err;

	err = exec_one(data, size, &r, &cov);
	if (err)
		return err;
	if (fz.bug) {
		struct fw_fuzz_fault bug = { .kind = "bug", .vector = ~0u, .rip = fz.bug_rip,
					     .what = fz.bug };

		pr_err("fuzz: crash: the harness reported a bug: \"%s\" (execution %llu)\n", fz.bug,
		       fz.execs);
		return fuzz_crash(&bug, data, size);
	}
	if (r < 0) {
		pr_err("fw.fuzz=%s: the target failed (%d) on execution %llu: the campaign stops\n",
		       fz.t->name, r, fz.execs);
		return r;
	}
	if (r > 0) {
		fz.rejected++;
		return 0;
	}
	if (cov.map) {
		err = calibrated_news(data, size, &cov, &news);
		if (err)
			return err;
	}
	if (news == FUZZ_NEW_EDGE)
		fz.last_new = rdtsc();
	if (news != FUZZ_NEW_NONE && keep) {
		err = fuzz_corpus_add(&fz.corpus, data, (u32)size);
		if (!err) {
			fz.kept++;
			pr_info("fuzz: #%llu: %s, kept (corpus %u)\n", fz.execs,
				news == FUZZ_NEW_EDGE ? "new edge" : "new hit count", fz.corpus.n);
			print_input(data, size);
			fw_fuzz_save(FW_FUZZ_CORPUS, data, size);
		}
		else if (err != -ENOSPC)
			return err;	/* -ENOMEM: nothing more can be kept */
	}
	return 0;
}

/* An input of fw.fuzz.corpus= (@ctx: keep it): kept as a seed is, or when new with feedback. */
static int import_one(const u8 *data, size_t size, void *keep)
{
	u32 n = fz.corpus.n;
	int err = one_input(data, size, *(bool *)keep);

	if (!err && !*(bool *)keep && fz.corpus.n == n && fuzz_corpus_add(&fz.corpus, data, (u32)size))
		err = -ENOMEM;
	return err;
}

/* fw.fuzz.replay=: each input once, traced; a crash said as in a campaign. */
static int replay_one(const u8 *data, size_t size, void *unused)
{
	int err = one_input(data, size, false);

	if (!err)
		printk("fuzz: replayed %zu bytes: no crash\n", size);
	return err;
}

/* @runs mutants of the corpus, each kept when new and @keep. 0, 1 a crash, or -errno. */
static int mutants(u64 runs, u8 *buf, size_t max_len, bool keep)
{
	u64 tsc_status = (u64)STATUS_EVERY_S * 1000 * tsc_khz;
	int err = 0;

	for (u64 i = 0; (!runs || i < runs) && !err && !fw_fuzz_time_up(fz.t0); i++) {
		const struct fuzz_input *in = fuzz_corpus_pick(&fz.corpus, &fz.rng);
		const struct fuzz_input *other = fuzz_corpus_pick(&fz.corpus, &fz.rng);
		size_t n = in->size < max_len ? in->size : max_len;

		memcpy(buf, in->data, n);
		n = fuzz_mutate_dict(&fz.rng, buf, n, max_len, other->data, other->size, fw_fuzz_dict(),
				     NULL);
		err = one_input(buf, n, keep);
		if (rdtsc() - fz.last_status >= tsc_status) {
			fz.last_status = rdtsc();
			status_line("");
		}
	}
	return err;
}

/*
 * fw.fuzz.bench=N: the first N mutants untraced, then the same N (the same
 * PRNG state, nothing kept) traced with coverage, each pass timed.
 */
static int bench(u8 *buf, size_t max_len)
{
	struct fuzz_rng start = fz.rng;
	bool coverage = fz.coverage;
	u64 n = fw_fuzz_bench_runs();
	int err;

	fz.untraced = true;
	fz.coverage = false;
	err = fw_fuzz_bench_begin(false, fz.execs);
	if (!err)
		err = mutants(n, buf, max_len, false);
	fw_fuzz_bench_end(fz.execs);
	fz.untraced = false;
	fz.coverage = coverage;
	fz.rng = start;
	if (!err)
		err = fw_fuzz_bench_begin(true, fz.execs);
	if (!err)
		err = mutants(n, buf, max_len, false);
	fw_fuzz_bench_end(fz.execs);
	if (!err)
		fw_fuzz_bench_report(fz.t->name);
	return err;
}

/* The campaign on fz.t: the seeds, then fw.fuzz.runs mutants. Returns failures (0 or 1). */
static int campaign(void)
{
	struct fw_mem_usage mem;
	int began;
	const struct fuzz_target *t = fz.t;
	size_t max_len = (size_t)fuzz_max_len;
	u8 *buf = NULL;
	int err = 0;

	fz.coverage = pt_boot_active() && !pt_coverage_window_begin();
	if (fuzz_feedback && !fz.coverage && !fw_fuzz_replaying()) {
		pr_err("fw.fuzz.feedback=on needs the trace's coverage: boot with pt=on pt.coverage=on (or fw.fuzz.feedback=off)\n");
		return 1;
	}
	if (fz.coverage) {
		(void)pt_coverage_window_end(&fz.map_size);
		fz.virgin = kmalloc(fz.map_size, GFP_KERNEL);
		fz.first = kmalloc(fz.map_size, GFP_KERNEL);
		fz.first_at = kmalloc(fz.map_size * sizeof(u32), GFP_KERNEL);
	}
	buf = kmalloc(max_len + 1, GFP_KERNEL);	/* + 1: a file longer than max_len is seen so */
	if ((fz.coverage && (!fz.virgin || !fz.first || !fz.first_at)) || !buf ||
	    fuzz_corpus_init(&fz.corpus, CORPUS_MAX)) {
		pr_err("fw.fuzz: no memory for the campaign (fw.mem=)\n");
		err = -ENOMEM;
		goto out;
	}
	if (fz.virgin)
		memset(fz.virgin, 0xff, fz.map_size);
	/* the guards' and the files' firmware memory is the fuzzer's, not the target's */
	began = fw_mem_own_begin(&mem);
	err = fw_fuzz_io_begin(t->name);
	if (err)
		goto out;
	if (!err && fw_fuzz_guard_start(max_len))
		err = -ENODEV;
	fw_mem_own_end(&mem, began);
	if (err)
		goto out;
	fuzz_rng_seed(&fz.rng, fuzz_seed);
	fz.t0 = fz.last_new = fz.last_status = rdtsc();
	if (fw_fuzz_replaying()) {
		err = fw_fuzz_replay_each(buf, max_len, replay_one, NULL);
		goto out;
	}
	/* a memory sink would keep every window until memory ran out, and no
	 * one reads them: a crash's window is written from the ring */
	if (fz.coverage && pt_boot_sink_is_memory())
		pt_session_keep_trace(false);
	printk("fuzz: %s: %u seeds, %llu runs, seed %llu, max_len %zu, feedback %s, coverage %s\n",
	       t->name, t->nseeds, fuzz_runs, fuzz_seed, max_len, fuzz_feedback ? "on" : "off",
	       fz.coverage ? "from the trace" : "none (untraced)");

	/* the seeds: run each, keep them all (the base of every mutant) */
	for (u32 i = 0; i < t->nseeds && !err; i++) {
		size_t n = t->seed_sizes[i] < max_len ? t->seed_sizes[i] : max_len;

		memcpy(buf, t->seeds[i], n);
		err = one_input(buf, n, false);
		if (!err && fuzz_corpus_add(&fz.corpus, buf, (u32)n))
			err = -ENOMEM;
	}
	if (!err && !fz.corpus.n) {
		buf[0] = 0;	/* no seed: one zero byte, as libFuzzer's empty start */
		err = one_input(buf, 1, false);
		if (!err && fuzz_corpus_add(&fz.corpus, buf, 1))
			err = -ENOMEM;
	}
	if (!err)
		err = fw_fuzz_import(buf, max_len, import_one, &fuzz_feedback);
	fz.seed_edges = fz.coverage ? fuzz_count_edges(fz.virgin, fz.map_size) : 0;
	status_line("seeds:");

	if (!err)
		err = fw_fuzz_bench_runs() ? bench(buf, max_len) :
					     mutants(fuzz_runs, buf, max_len, fuzz_feedback);
	status_line("done:");
out:
	pt_session_keep_trace(true);
	fz.edges = fz.coverage && fz.virgin ? fuzz_count_edges(fz.virgin, fz.map_size) : 0;
	printk("result: fuzz target=%s execs=%llu corpus=%u kept=%llu edges=%u seed_edges=%u rejected=%llu "
	       "crashes=%llu feedback=%s seed=%llu\n", t->name, fz.execs, fz.corpus.n, fz.kept,
	       fz.edges, fz.seed_edges, fz.rejected, fz.crashes, fuzz_feedback ? "on" : "off", fuzz_seed);
	began = fw_mem_own_begin(&mem);
	fw_fuzz_guard_stop();
	fw_fuzz_io_end();
	fw_mem_own_end(&mem, began);
	fuzz_corpus_free(&fz.corpus);
	kfree(buf);
	kfree(fz.virgin);
	kfree(fz.first);
	kfree(fz.first_at);
	fz.virgin = fz.first = NULL;
	fz.first_at = NULL;
	return err < 0 || fz.crashes ? 1 : 0;
}

/* One built-in target's campaign (fw_fuzz_each() ran its init), from a clean state. */
static int builtin_campaign(const struct fuzz_target *t, struct fw_fuzz_outcome *o)
{
	int failed;

	memset(&fz, 0, sizeof(fz));
	fz.t = t;
	failed = campaign();
	o->seed_edges = fz.seed_edges;
	o->edges = fz.edges;
	o->execs = fz.execs;
	o->crashes = fz.crashes;
	return failed;
}

int fw_fuzz_run_builtin(void)
{
	if (!strcmp(fuzz_spec, "list")) {
		fuzz_target_list();
		return 0;
	}
	return fw_fuzz_each(fuzz_spec, builtin_campaign) ? 1 : 0;
}

/* ---------------------------------------------------------------- fw.fuzz=image */

static TOPAZ_TEST_ONE_INPUT harness_fn;
static int harness_failed = -1;	/* -1: Run() never called */

static int harness_run(const u8 *data, size_t size)
{
	return harness_fn(data, size) == -1 ? 1 : 0;
}

static const struct fuzz_target harness_target = {
	.name = "image", .help = "the harness fw.image= registers", .run = harness_run,
};

static EFI_STATUS EFIAPI proto_run(TOPAZ_FUZZ_PROTOCOL *this, TOPAZ_TEST_ONE_INPUT fn)
{
	if (!fn || harness_failed >= 0) {
		pr_err("fw.fuzz=image: Run() %s\n", fn ? "called again: one campaign per boot" :
		       "without a TestOneInput");
		return EFI_INVALID_PARAMETER;
	}
	harness_fn = fn;
	fz.t = &harness_target;
	harness_failed = campaign();
	if (fz.crashes) {
		harness_failed = 0;	/* the image's EFI_ABORTED fails the phase */
		return EFI_ABORTED;
	}
	return harness_failed ? EFI_DEVICE_ERROR : EFI_SUCCESS;
}

static void EFIAPI proto_report_bug(TOPAZ_FUZZ_PROTOCOL *this, const CHAR8 *what)
{
	fz.bug = what ? (const char *)what : "(no description)";
	fz.bug_rip = (u64)(uintptr_t)__builtin_return_address(0);
}

static TOPAZ_FUZZ_PROTOCOL proto = {
	.Revision = TOPAZ_FUZZ_PROTOCOL_REVISION, .Run = proto_run, .ReportBug = proto_report_bug,
};
static EFI_GUID proto_guid = TOPAZ_FUZZ_PROTOCOL_GUID;
static EFI_HANDLE proto_handle;

int fw_fuzz_protocol(bool on)
{
	EFI_STATUS s;

	if (on) {
		s = fw.bs->InstallProtocolInterface(&proto_handle, &proto_guid, EFI_NATIVE_INTERFACE,
						    &proto);
		if (s != EFI_SUCCESS) {
			pr_err("fw.fuzz=image: the firmware refused the fuzz protocol (EFI status %#lx)\n",
			       (unsigned long)s);
			return 1;
		}
		return 0;
	}
	if (proto_handle)
		fw.bs->UninstallProtocolInterface(proto_handle, &proto_guid, &proto);
	proto_handle = NULL;
	if (harness_failed < 0) {
		pr_err("fw.fuzz=image: the image never called the fuzz protocol's Run() (include/topaz/fuzz_harness.h)\n");
		return 1;
	}
	return harness_failed;
}
