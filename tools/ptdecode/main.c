// SPDX-License-Identifier: MIT
/*
 * ptdecode: check and decode a topaz trace container (docs/trace-format.md).
 * The command line only; the work is in the library (ptdecode.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <topaz/panic.h>
#include "ptdecode.h"

static const char usage[] =
"usage: ptdecode [options] TRACE\n"
"       ptdecode --coverage DIR [--elf ELF] [--symbols DIR] TRACE...\n"
"       ptdecode --coverage-diff [--elf ELF] [--symbols DIR] A B\n"
"       ptdecode --extract-serial LOG -o FILE\n"
"\n"
"Input:\n"
"  --elf FILE            the kernel ELF (build/topaz.so): its segments are mapped at\n"
"                        the load address the trace header reports, its .symtab names\n"
"                        functions; sideband images and symbols come from the trace\n"
"  --load-address ADDR   map the ELF here instead\n"
"  --symbols DIR         symbols for the trace's firmware modules: DIR/NAME.debug (as\n"
"                        EDK2's GCC builds leave them), NAME.so or NAME.elf, linked\n"
"                        at 0; functions then show as Module!function+0xoff\n"
"  --serial              TRACE is a serial log: extract the framed container first\n"
"CPUs (a trace of several CPUs has a stream per CPU, each decoded on its own):\n"
"  --cpu LIST            only these CPUs, in every output: numbers (0 to 4294967295)\n"
"                        and ranges, \"1\", \"0,2\", \"1-3\"; repeatable. A CPU without\n"
"                        trace records is an error that names the CPUs there are\n"
"  --merge-cpus          --folded and --svg: one profile of all CPUs (the same stack\n"
"                        on several CPUs counted once, added); by default each CPU's\n"
"                        stacks start with it, \"cpu1;main;foo 12\"\n"
"Outputs (in this order; --stats when none is given):\n"
"  --check               check the container and the decode, print only problems\n"
"  --packets             every packet with its stream offset (like ptdump)\n"
"  --insn                every instruction with its symbol (like ptxed); each CPU's\n"
"                        segments in turn, each under a \"[cpu N, segment M ...]\" line\n"
"  --no-disasm           --insn with raw bytes only (no capstone disassembly)\n"
"  --calls               the call/return tree with function names\n"
"  --stats               instructions, branches, packets, bytes, losses, top functions;\n"
"                        with several CPUs also per CPU (\"result: decode.cpu\" lines)\n"
"  --folded              stack counts in the folded format (\"a;b;c count\")\n"
"  --svg FILE            a flame graph of the same stacks\n"
"  --summary             a few lines: instructions, branches, PMIs, bytes, top functions\n"
"                        (and a line per CPU with several)\n"
"  --perf-data FILE      a perf.data for Linux perf's own decoder (perf script,\n"
"                        perf report: docs/trace-format.md); sideband images are\n"
"                        written beside it, into FILE.images/\n"
"  --out-dir DIR         the outputs asked for (--packets --insn --calls --stats\n"
"                        --folded), all of them when none is, into DIR as packets.txt\n"
"                        insn.txt calls.txt stats.txt folded.txt, with flame.svg and\n"
"                        problems.txt; the summary and each file's size on stdout\n"
"  --coverage-check      the coverage decoder (kernel/coverage/, ptcov.h) against a\n"
"                        reference from libipt's instruction flow: the same blocks\n"
"                        (start, end, instructions, entries) and edges (and their\n"
"                        counts), else the first differences with symbols and trace\n"
"                        offsets; then a \"result: coverage-check ... match=yes|no\"\n"
"                        line. Exit status 1 when they differ\n"
"Coverage (the blocks and edges the trace reached, every CPU's, instead of the above):\n"
"  --coverage DIR        the traces' coverage added up, into DIR (made if missing):\n"
"                        MODULE.drcov for each module reached and all.drcov (drcov\n"
"                        for Lighthouse, Cartographer, Dragondance), MODULE.info (lcov,\n"
"                        for genhtml) for the kernel ELF and each module --symbols has\n"
"                        a debug file for, summary.txt (every function reached, those\n"
"                        never entered); the totals and \"result: coverage\" lines on stdout\n"
"  --coverage-diff       two traces A B: the blocks and edges A reached and B did\n"
"                        not, and the reverse, with their functions\n"
"  --extract-serial LOG  write the container framed in a serial log to -o FILE\n"
"  -o FILE               where --extract-serial writes\n"
"  -q                    do not print problems (the exit status still counts them)\n"
"  --max-problems N      print at most N problems (--out-dir keeps all in problems.txt)\n"
"A decode that runs over 2 s shows its progress on stderr when that is a terminal.\n"
"Problems go to stderr as \"ptdecode: FILE: record N at offset 0xOFF: reason\".\n"
"Exit status: 0 intact, 1 decoded but something was wrong, 2 unusable input or usage.\n";

enum {
	OPT_ELF = 256, OPT_LOAD, OPT_SERIAL, OPT_CHECK, OPT_PACKETS, OPT_INSN, OPT_NO_DISASM,
	OPT_CALLS, OPT_STATS, OPT_FOLDED, OPT_SVG, OPT_SUMMARY, OPT_OUT_DIR, OPT_EXTRACT, OPT_HELP,
	OPT_MAX_PROBLEMS, OPT_PERF_DATA, OPT_CPU, OPT_MERGE_CPUS, OPT_SYMBOLS, OPT_COV_CHECK,
	OPT_COVERAGE, OPT_COVERAGE_DIFF,
};

static const struct option longopts[] = {
	{ "elf", required_argument, NULL, OPT_ELF },
	{ "load-address", required_argument, NULL, OPT_LOAD },
	{ "serial", no_argument, NULL, OPT_SERIAL },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "packets", no_argument, NULL, OPT_PACKETS },
	{ "insn", no_argument, NULL, OPT_INSN },
	{ "no-disasm", no_argument, NULL, OPT_NO_DISASM },
	{ "calls", no_argument, NULL, OPT_CALLS },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "folded", no_argument, NULL, OPT_FOLDED },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "summary", no_argument, NULL, OPT_SUMMARY },
	{ "out-dir", required_argument, NULL, OPT_OUT_DIR },
	{ "extract-serial", required_argument, NULL, OPT_EXTRACT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "max-problems", required_argument, NULL, OPT_MAX_PROBLEMS },
	{ "perf-data", required_argument, NULL, OPT_PERF_DATA },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "merge-cpus", no_argument, NULL, OPT_MERGE_CPUS },
	{ "symbols", required_argument, NULL, OPT_SYMBOLS },
	{ "coverage-check", no_argument, NULL, OPT_COV_CHECK },
	{ "coverage", required_argument, NULL, OPT_COVERAGE },
	{ "coverage-diff", no_argument, NULL, OPT_COVERAGE_DIFF },
	{ NULL, 0, NULL, 0 },
};

enum { O_PACKETS, O_INSN, O_CALLS, O_STATS, O_FOLDED, O_NR };
static const char *const out_names[O_NR] = { "packets.txt", "insn.txt", "calls.txt", "stats.txt",
					     "folded.txt" };

/* Problems to stderr, at most @max of them. */
static void print_problems(const struct ptd_diags *d, const char *file, size_t max)
{
	struct ptd_diags head = *d;

	if (head.n > max) {
		head.n = max;
		head.more = 0;
	}
	ptd_diags_print(&head, 0, file, stderr);
	if (ptd_diags_count(d) > ptd_diags_count(&head))
		fprintf(stderr, "ptdecode: %s: ... and %zu more problems\n", file,
			ptd_diags_count(d) - ptd_diags_count(&head));
}

static int extract(const char *log, const char *out, bool quiet)
{
	struct ptd_diags d = { 0 };
	size_t size;
	u8 *bytes;
	FILE *f;
	int ret;

	ret = ptd_extract_serial_file(log, PTD_INPUT_WINDOW, &bytes, &size, &d);
	if (!quiet)
		ptd_diags_print(&d, 0, log, stderr);
	ptd_diags_free(&d);
	if (ret == 2)
		return 2;
	f = fopen(out, "wb");
	if (!f || fwrite(bytes, 1, size, f) != size || fclose(f)) {
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", out, strerror(errno));
		free(bytes);
		return 2;
	}
	free(bytes);
	return ret;
}

/*
 * The kernel's code the tool links for --coverage and --coverage-check (the x86 decoder
 * under the coverage decoder) reports an impossible case with WARN_ON(): to
 * stderr here, and the decode goes on as the kernel's would.
 */
void warn_slowpath(const char *file, int line, uintptr_t caller, const char *cond)
{
	fprintf(stderr, "ptdecode: warning: %s at %s:%d\n", cond, file, line);
}

static void count_packet(void *ctx, const struct ptd_packet *p, int err)
{
	ptd_cpu_stats_packet(ctx, p, err);
}

static FILE *open_out(const char *dir, const char *name, bool direct)
{
	char path[4096];
	FILE *f;

	if (!dir)
		return direct ? stdout : tmpfile();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

static void copy_out(FILE *f)
{
	char buf[65536];
	size_t n;

	rewind(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) && fwrite(buf, 1, n, stdout) == n)
		;
}

/* An output that could not be written (a full disk, stdout on /dev/full) is
 * an error: status 2, with the name. */
static bool closed_ok(FILE *f, const char *name)
{
	bool bad = ferror(f);

	bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
	if (bad)
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", name, errno ? strerror(errno) : "I/O error");
	return !bad;
}

/* What the command line asks for. */
struct opts {
	const char *elf, *svg, *out_dir, *extract_log, *out, *trace, *perf_data, *symbols;
	const char *coverage;	/* --coverage DIR */
	bool serial, check, summary, quiet, disasm, have_load, merge_cpus, coverage_diff,
	     cov_check;
	char **traces;		/* --coverage, --coverage-diff: every TRACE */
	int ntraces;
	bool want[O_NR];
	size_t nwant, max_problems;
	u64 load;
	/* --cpu: the ranges asked for (NULL: all CPUs), then the CPUs they
	 * name, those of the container (check_cpus()) */
	struct cpu_range { u32 lo, hi; } *ranges;
	size_t nranges;
	u32 *cpus;
	size_t ncpus;
};

/*
 * A CPU number is what the container's cpu field holds (a u32): any of them
 * can be named. A range is kept as one (not a CPU each: "0-4294967295"
 * would be four billion); the CPUs it names are found among the container's.
 */
static bool cpu_number(const char *s, const char **end, u32 *cpu)
{
	unsigned long long v;
	char *e;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || v > 0xffffffffull)
		return false;
	*cpu = (u32)v;
	*end = e;
	return true;
}

/* --cpu "0", "0,2", "1-3", "0,2-3": false when it is none of these. */
static bool parse_cpus(struct opts *o, const char *arg)
{
	const char *p = arg;

	for (;;) {
		u32 a, b;

		if (!cpu_number(p, &p, &a))
			return false;
		b = a;
		if (*p == '-' && (!cpu_number(p + 1, &p, &b) || b < a))
			return false;
		o->ranges = realloc(o->ranges, (o->nranges + 1) * sizeof(*o->ranges));
		if (!o->ranges)
			abort();
		o->ranges[o->nranges++] = (struct cpu_range){ a, b };
		if (!*p)
			return true;
		if (*p++ != ',')
			return false;
	}
}

/* How many of @have[0..@n) (ascending) are below @cpu. */
static size_t cpus_below(const u32 *have, size_t n, u32 cpu)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (have[mid] < cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* "it has CPUs 0, 1, 2": at most 32 of them named. */
static void print_have(const u32 *have, size_t n)
{
	if (!n)
		fprintf(stderr, "it has none of any CPU\n");
	for (size_t j = 0; j < n && j < 32; j++)
		fprintf(stderr, "%s%u", j ? ", " : n == 1 ? "it has CPU " : "it has CPUs ", have[j]);
	if (n > 32)
		fprintf(stderr, ", ... (%zu CPUs)", n);
	if (n)
		fputc('\n', stderr);
}

/*
 * --cpu: every CPU asked for has trace records in @c, else the error naming
 * the first that has none, and the CPUs there are. The CPUs asked for into
 * @o->cpus (ascending, each once).
 */
static bool check_cpus(struct opts *o, const struct ptd_container *c)
{
	u32 *have;
	size_t n = ptd_container_cpus(c, &have);
	bool ok = true, *want = calloc(n + 1, sizeof(*want));

	if (!want)
		abort();
	for (size_t i = 0; i < o->nranges && ok; i++) {
		const struct cpu_range *r = &o->ranges[i];
		size_t k = cpus_below(have, n, r->lo);
		u64 cpu = r->lo;

		/* the container's CPUs from the range's first on, while they follow each other */
		for (; k < n && cpu <= r->hi && have[k] == cpu; k++, cpu++)
			want[k] = true;
		if (cpu > r->hi)
			continue;
		ok = false;
		fprintf(stderr, "ptdecode: %s: --cpu %llu: the container has no trace records of CPU %llu; ",
			c->name, cpu, cpu);
		print_have(have, n);
	}
	o->ncpus = 0;
	o->cpus = ok && o->ranges ? malloc((n + 1) * sizeof(*o->cpus)) : NULL;
	for (size_t k = 0; o->cpus && k < n; k++)
		if (want[k])
			o->cpus[o->ncpus++] = have[k];
	free(want);
	free(have);
	return ok;
}

/* The ELF given is the one traced: its build id is the header's. */
static void check_build_id(const char *elf, struct ptd_container *c, const struct ptd_image *img)
{
	char want_id[80] = "", got_id[80] = "";

	if (img->elf_build_id_len == c->header.build_id_len &&
	    !memcmp(img->elf_build_id, c->header.build_id, c->header.build_id_len))
		return;
	for (size_t i = 0; i < c->header.build_id_len && i < 32; i++)
		sprintf(want_id + 2 * i, "%02x", c->header.build_id[i]);
	for (size_t i = 0; i < img->elf_build_id_len; i++)
		sprintf(got_id + 2 * i, "%02x", img->elf_build_id[i]);
	ptd_diag_add(&c->diags, -1, 0, "%s has build id %s, the traced kernel %s: the decode may be wrong",
		     elf, got_id[0] ? got_id : "(none)", want_id);
}

/* --out-dir: every problem into DIR/problems.txt (stderr gets at most --max-problems). */
static void write_problems(const struct opts *o, const struct ptd_container *c)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/problems.txt", o->out_dir);
	f = fopen(path, "w");
	if (f) {
		ptd_diags_print(&c->diags, 0, c->name, f);
		fclose(f);
	}
}

/* @n bytes as a person reads them: "812 B", "31.0 KB", "6.7 GB" (powers of 1000). */
static const char *human_size(double n, char *buf, size_t size)
{
	static const char *const unit[] = { "B", "KB", "MB", "GB", "TB" };
	int u = 0;

	while (n >= 1000 && u < 4) {
		n /= 1000;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", n, unit[u]);
	return buf;
}

/*
 * The listings grow with the trace (6.7 GB of insn.txt for 76 million
 * instructions): about this many bytes per instruction and per byte of
 * trace, measured on the default job and fw.run=all (89 and 10 to 11).
 */
#define INSN_LINE_BYTES		90
#define PACKET_TEXT_PER_BYTE	11

/* --out-dir: each file written with its size; the listings not asked for,
 * with the size they would have. */
static void print_outputs(const struct opts *o, const struct ptd_container *c,
			  const struct ptd_stats *st, u64 trace_bytes)
{
	static const char *const more[] = { "flame.svg", "problems.txt" };
	char path[4096], size[32];
	const char *sep = "";
	struct stat sb;

	printf("outputs in %s/:", o->out_dir);
	for (int i = 0; i < O_NR + 2; i++) {
		const char *name = i < O_NR ? out_names[i] : more[i - O_NR];

		if ((i < O_NR && !o->want[i]) || (i == O_NR + 1 && !ptd_diags_count(&c->diags)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", o->out_dir, name);
		if (stat(path, &sb))
			continue;
		printf("%s %s %s", sep, name, human_size((double)sb.st_size, size, sizeof(size)));
		sep = ",";
	}
	putchar('\n');
	if (!o->want[O_INSN])
		printf("not written: insn.txt, every instruction (about %s here): --insn\n",
		       human_size((double)st->insns * INSN_LINE_BYTES, size, sizeof(size)));
	if (!o->want[O_PACKETS])
		printf("not written: packets.txt, every packet (about %s here): --packets\n",
		       human_size((double)trace_bytes * PACKET_TEXT_PER_BYTE, size, sizeof(size)));
}

/* --coverage DIR TRACE... or --coverage-diff A B; -1 to go on, else the exit status. */
static int coverage_args(struct opts *o, int n, char **traces)
{
	if (o->coverage && o->coverage_diff) {
		fprintf(stderr, "ptdecode: --coverage and --coverage-diff: one or the other\n");
		return 2;
	}
	if (o->coverage_diff && n != 2) {
		fprintf(stderr, "ptdecode: --coverage-diff needs two traces, A and B (%d given)\n", n);
		return 2;
	}
	if (n < 1) {
		fprintf(stderr, "ptdecode: --coverage %s: which traces? none given\n", o->coverage);
		return 2;
	}
	if (o->nranges) {
		fprintf(stderr, "ptdecode: --cpu: coverage is of every CPU's stream\n");
		return 2;
	}
	if (o->coverage && mkdir(o->coverage, 0777) && errno != EEXIST) {
		fprintf(stderr, "ptdecode: --coverage %s: cannot create the folder: %s\n", o->coverage,
			strerror(errno));
		return 2;
	}
	o->traces = traces;
	o->ntraces = n;
	return -1;
}

/* Returns -1 to go on, else the exit status (usage errors, --help). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	bool any;
	int opt;

	memset(o, 0, sizeof(*o));
	o->disasm = true;
	o->max_problems = SIZE_MAX;
	while ((opt = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		char *end;

		switch (opt) {
		case OPT_ELF: o->elf = optarg; break;
		case OPT_LOAD:
			errno = 0;
			o->load = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "ptdecode: --load-address: '%s' is not a number\n", optarg);
				return 2;
			}
			o->have_load = true;
			break;
		case OPT_SERIAL: o->serial = true; break;
		case OPT_CHECK: o->check = true; break;
		case OPT_PACKETS: o->want[O_PACKETS] = true; break;
		case OPT_INSN: o->want[O_INSN] = true; break;
		case OPT_NO_DISASM: o->disasm = false; break;
		case OPT_CALLS: o->want[O_CALLS] = true; break;
		case OPT_STATS: o->want[O_STATS] = true; break;
		case OPT_FOLDED: o->want[O_FOLDED] = true; break;
		case OPT_SVG: o->svg = optarg; break;
		case OPT_SUMMARY: o->summary = true; break;
		case OPT_OUT_DIR: o->out_dir = optarg; break;
		case OPT_PERF_DATA: o->perf_data = optarg; break;
		case OPT_EXTRACT: o->extract_log = optarg; break;
		case OPT_MAX_PROBLEMS:
			o->max_problems = strtoul(optarg, &end, 0);
			if (*end || !*optarg) {
				fprintf(stderr, "ptdecode: --max-problems: '%s' is not a number\n", optarg);
				return 2;
			}
			break;
		case OPT_CPU:
			if (!parse_cpus(o, optarg)) {
				fprintf(stderr, "ptdecode: --cpu: '%s' is not a CPU number or list (\"1\", \"0,2\", \"1-3\")\n",
					optarg);
				return 2;
			}
			break;
		case OPT_MERGE_CPUS: o->merge_cpus = true; break;
		case OPT_SYMBOLS: o->symbols = optarg; break;
		case OPT_COV_CHECK: o->cov_check = true; break;
		case OPT_COVERAGE: o->coverage = optarg; break;
		case OPT_COVERAGE_DIFF: o->coverage_diff = true; break;
		case 'o': o->out = optarg; break;
		case 'q': o->quiet = true; break;
		case 'h':
		case OPT_HELP: fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (o->extract_log) {
		if (!o->out || optind != argc) {
			fprintf(stderr, "ptdecode: --extract-serial needs -o FILE and no TRACE\n");
			return 2;
		}
		return -1;
	}
	if (o->coverage || o->coverage_diff)
		return coverage_args(o, argc - optind, argv + optind);
	if (optind + 1 != argc) {
		fputs(usage, stderr);
		return 2;
	}
	o->trace = argv[optind];
	if (o->out_dir) {
		bool some = false;

		if (mkdir(o->out_dir, 0777) && errno != EEXIST) {
			fprintf(stderr, "ptdecode: %s: cannot create: %s\n", o->out_dir, strerror(errno));
			return 2;
		}
		for (int i = 0; i < O_NR; i++)
			some |= o->want[i];
		for (int i = 0; i < O_NR && !some; i++)
			o->want[i] = true;
		o->summary = true;
	}
	any = o->summary || o->svg || o->check || o->perf_data || o->cov_check;
	for (int i = 0; i < O_NR; i++) {
		o->nwant += o->want[i];
		any |= o->want[i];
	}
	if (!any) {
		o->want[O_STATS] = true;
		o->nwant = 1;
	}
	return -1;
}

/* The container, from the file or framed in a serial log; false: unusable (status 2). */
static bool load_container(const struct opts *o, struct ptd_container *c)
{
	struct ptd_diags d = { 0 };
	size_t size;
	u8 *bytes;
	int ret;

	if (!o->serial) {
		ptd_container_load(c, o->trace);
	} else {
		ret = ptd_extract_serial_file(o->trace, PTD_INPUT_WINDOW, &bytes, &size, &d);
		if (!o->quiet)
			ptd_diags_print(&d, 0, o->trace, stderr);
		ptd_diags_free(&d);
		if (ret == 2)
			return false;
		ptd_container_parse(c, o->trace, bytes, size);
		free(bytes);
		if (ret == 1)
			ptd_diag_add(&c->diags, -1, 0, "the serial framing was damaged (see above)");
	}
	if (c->unusable) {
		if (!o->quiet)
			print_problems(&c->diags, c->name, o->max_problems);
		ptd_container_free(c);
		return false;
	}
	return true;
}

/* The traced memory: the kernel ELF at the load address, and the sideband.
 * @nsyms: how many modules --symbols had a file for, when the caller says
 * itself that there were none (NULL: said here). */
static u64 load_image(const struct opts *o, struct ptd_container *c, struct ptd_image *img,
		      size_t *nsyms)
{
	size_t found = 0;

	u64 load = o->load;

	ptd_image_init(img);
	if (o->elf) {
		if (!o->have_load) {
			if (c->have_header && (c->header.flags & TPZ_HDR_LOAD_ADDRESS))
				load = c->header.load_address;
			else
				ptd_diag_add(&c->diags, -1, 0,
					     "the load address is unknown (no header): %s is mapped at 0; use --load-address",
					     o->elf);
		}
		if (!ptd_image_add_elf(img, o->elf, load, &c->diags) && c->have_header &&
		    (c->header.flags & TPZ_HDR_BUILD_ID))
			check_build_id(o->elf, c, img);
	}
	ptd_image_add_sideband(img, c);
	if (o->symbols)
		found = ptd_image_add_module_symbols(img, o->symbols, &c->diags);
	if (nsyms)
		*nsyms += found;
	else if (o->symbols && !found)
		ptd_diag_add(&c->diags, -1, 0, "--symbols %s: no symbol file there for any module of the trace",
			     o->symbols);
	ptd_image_finish(img);
	return load;
}

/* The flame graph into --svg FILE or DIR/flame.svg; false: cannot write. */
static bool write_svg(const struct opts *o, const struct ptd_container *c,
		      const struct ptd_calls *calls, const struct ptd_stats *st)
{
	char path[4096], title[512];
	FILE *f;

	if (o->svg)
		snprintf(path, sizeof(path), "%s", o->svg);
	else
		snprintf(path, sizeof(path), "%s/flame.svg", o->out_dir);
	snprintf(title, sizeof(title), "%s: %llu instructions", c->name, st->insns);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", path, strerror(errno));
		return false;
	}
	ptd_write_svg(calls, f, title);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "ptdecode: %s: cannot write: %s\n", path, strerror(errno));
		return false;
	}
	return true;
}

/*
 * --coverage and --coverage-diff: each trace with its own image (its
 * sideband), all kept until the outputs, which name functions with them.
 */
static int run_coverage(struct opts *o)
{
	struct ptd_container *c = calloc((size_t)o->ntraces, sizeof(*c));
	struct ptd_image *img = calloc((size_t)o->ntraces, sizeof(*img));
	struct ptd_cov *cov[2] = { NULL, NULL };
	struct ptd_progress progress;
	int loaded = 0, ret = 0;
	size_t nsyms = 0;

	if (!c || !img)
		abort();
	cov[0] = ptd_cov_new(o->elf, o->symbols);
	if (o->coverage_diff)
		cov[1] = ptd_cov_new(o->elf, o->symbols);
	if (!cov[0] || (o->coverage_diff && !cov[1])) {
		fprintf(stderr, "ptdecode: the coverage decoder could not be made (memory)\n");
		ret = 2;
		goto out;
	}
	ptd_progress_init(&progress, stderr, 2.0);
	for (int i = 0; i < 2 && cov[i]; i++)
		ptd_cov_set_progress(cov[i], &progress);
	for (; loaded < o->ntraces; loaded++) {
		u64 load;

		o->trace = o->traces[loaded];
		if (!load_container(o, &c[loaded])) {
			ret = 2;
			goto out;
		}
		load = load_image(o, &c[loaded], &img[loaded], &nsyms);
		if (ptd_cov_add(cov[o->coverage_diff ? loaded : 0], &c[loaded], &img[loaded], load)) {
			ret = 2;
			loaded++;
			goto out;
		}
	}
	/* a module of one trace only may be the one --symbols is for */
	if (o->symbols && !nsyms)
		ptd_diag_add(&c[0].diags, -1, 0, "--symbols %s: no symbol file there for any module of the traces",
			     o->symbols);
	if (o->coverage_diff)
		ptd_cov_diff(cov[0], cov[1], stdout);
	else if (ptd_cov_write(cov[0], o->coverage, stdout))
		ret = 2;
	if (!closed_ok(stdout, "standard output"))
		ret = 2;
out:
	for (int i = 0; i < loaded; i++) {
		if (!o->quiet)
			print_problems(&c[i].diags, c[i].name, o->max_problems);
		if (!ret && ptd_diags_count(&c[i].diags))
			ret = 1;
	}
	ptd_cov_free(cov[0]);
	ptd_cov_free(cov[1]);
	for (int i = 0; i < loaded; i++) {
		ptd_image_free(&img[i]);
		ptd_container_free(&c[i]);
	}
	free(img);
	free(c);
	free(o->cpus);
	free(o->ranges);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o;
	FILE *files[O_NR] = { NULL };
	struct ptd_container c;
	struct ptd_image img;
	struct ptd_ctx x;
	struct ptd_stats st;
	struct ptd_cpu_stats cst;
	struct ptd_calls calls, merged;
	const struct ptd_calls *profile;
	struct ptd_insn_printer ip;
	struct ptd_consumer cons[4];
	struct ptd_covref ref;
	struct ptd_covcheck cov;
	struct ptd_progress progress;
	size_t ncons = 0;
	u64 trace_bytes = 0;
	bool flow, cov_differs = false;
	int ret;
	u64 load;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	ret = 0;
	if (o.extract_log)
		return extract(o.extract_log, o.out, o.quiet);
	if (o.traces)
		return run_coverage(&o);
	if (!load_container(&o, &c))
		return 2;
	if (!check_cpus(&o, &c)) {
		ptd_container_free(&c);
		free(o.cpus);
		free(o.ranges);
		return 2;
	}
	load = load_image(&o, &c, &img, NULL);
	flow = o.want[O_INSN] || o.want[O_CALLS] || o.want[O_STATS] || o.want[O_FOLDED] || o.svg ||
	       o.summary || o.check || o.cov_check;
	if (!img.nregions && flow)
		ptd_diag_add(&c.diags, -1, 0,
			     "no code to decode with: give --elf (and the trace has no sideband image)");
	/* only the CPUs asked for: the others' records are left out of everything */
	ptd_ctx_init_cpus(&x, &c, &img, o.cpus, o.ncpus);
	for (size_t i = 0; i < x.segs.n; i++)
		trace_bytes += x.segs.v[i].size;
	/* a long decode says how far it is, on a terminal */
	ptd_progress_init(&progress, stderr, 2.0);
	x.progress = &progress;
	for (int i = 0; i < O_NR; i++)
		if (o.want[i])
			files[i] = open_out(o.out_dir, out_names[i], o.nwant == 1);

	/* Pass 1: packets (the dump, and the counts for --stats). Packet errors
	 * become problems here only when no flow pass reports them. */
	ptd_cpu_stats_init(&cst, &img, &x.segs);
	if (o.want[O_PACKETS])
		ptd_dump_packets(&x, files[O_PACKETS], !flow);
	if (o.want[O_STATS] || o.summary)
		ptd_scan_packets(&x, count_packet, &cst, false);

	/* Pass 2: the instruction flow. Statistics per CPU (the total is their
	 * sum); the call stacks below a node per CPU when there are several. */
	ptd_calls_init(&calls, &img, files[O_CALLS]);
	ptd_calls_set_per_cpu(&calls, x.per_cpu);
	cons[ncons++] = (struct ptd_consumer){ ptd_cpu_stats_event, &cst };
	cons[ncons++] = (struct ptd_consumer){ ptd_calls_event, &calls };
	if (o.want[O_INSN]) {
		ptd_insn_printer_init(&ip, files[O_INSN], &img, o.disasm);
		cons[ncons++] = (struct ptd_consumer){ ptd_insn_event, &ip };
	}
	/* the reference for --coverage-check rides along: no second decode */
	ptd_covref_init(&ref, &img);
	if (o.cov_check)
		cons[ncons++] = (struct ptd_consumer){ ptd_covref_event, &ref };
	if (flow)
		ptd_decode_flow(&x, cons, ncons);
	else
		ptd_report_gaps(&c, &x.segs);
	ptd_calls_finish(&calls);
	ptd_cpu_stats_finish(&cst, &calls, &st);
	if (o.want[O_INSN])
		ptd_insn_printer_free(&ip);
	profile = &calls;
	if (x.per_cpu && o.merge_cpus) {
		ptd_calls_merge_cpus(&calls, &merged);
		profile = &merged;
	}

	/* The outputs. */
	if (o.want[O_STATS] && x.per_cpu)
		ptd_stats_print_cpus(&st, &cst, &c, files[O_STATS]);
	else if (o.want[O_STATS])
		ptd_stats_print(&st, &c, files[O_STATS]);
	if (o.want[O_FOLDED])
		ptd_write_folded(profile, files[O_FOLDED]);
	if ((o.svg || o.out_dir) && !write_svg(&o, &c, profile, &st))
		return 2;
	for (int i = 0; i < O_NR; i++) {
		if (!files[i] || files[i] == stdout)
			continue;
		if (!o.out_dir)
			copy_out(files[i]);
		if (!closed_ok(files[i], o.out_dir ? out_names[i] : "a temporary file"))
			ret = 2;
	}
	if (o.cov_check) {
		fflush(stdout);
		cov_differs = !ptd_coverage_check(&x, &ref, stdout, 20, &cov);
	}
	ptd_covref_free(&ref);
	if (o.perf_data && ptd_write_perf_data(&c, &x.segs, &img, o.elf, load, o.perf_data))
		ret = 2;
	if (o.out_dir)
		write_problems(&o, &c);
	if (o.summary) {
		ptd_summary_print(&st, &c, stdout, 5);
		if (x.per_cpu)
			ptd_cpu_summary_print(&cst, stdout, 3);
		if (o.out_dir)
			print_outputs(&o, &c, &st, trace_bytes);
	}
	if (!closed_ok(stdout, "standard output"))
		ret = 2;
	if (!o.quiet)
		print_problems(&c.diags, c.name, o.max_problems);
	if (ret != 2)
		ret = ptd_diags_count(&c.diags) || cov_differs ? 1 : 0;

	if (profile == &merged)
		ptd_calls_free(&merged);
	ptd_calls_free(&calls);
	ptd_cpu_stats_free(&cst);
	ptd_stats_free(&st);
	ptd_ctx_free(&x);
	free(o.cpus);
	free(o.ranges);
	ptd_image_free(&img);
	ptd_container_free(&c);
	return ret;
}
