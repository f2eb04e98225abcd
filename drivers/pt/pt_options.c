// SPDX-License-Identifier: MIT
/*
 * pt.* command-line options of the driver (perf intel_pt terms: what the
 * event traces, the ring's sizes) and address filters. The session's own
 * options are in kernel/tracing/pt_session_options.c.
 */
#define pr_fmt(fmt) "pt: " fmt
#include <topaz/pt_options.h>
#include <topaz/cmdline.h>
#include <topaz/symbols.h>
#include <topaz/msr-index.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

struct pt_options pt_opts = {
	.buf_size = 64 * 1024,
	.region_size = 4 * 1024 * 1024,
};

KPARAM_BOOL("pt.tsc", pt_tsc, &pt_opts.tsc, "TSC packets");
KPARAM_BOOL("pt.mtc", pt_mtc, &pt_opts.mtc, "MTC timing packets");
KPARAM_BOOL("pt.cyc", pt_cyc, &pt_opts.cyc, "cycle-accurate mode (CYC packets)");
KPARAM_BOOL("pt.noretcomp", pt_noretcomp, &pt_opts.noretcomp, "disable RET compression");
KPARAM_BOOL("pt.ptw", pt_ptw, &pt_opts.ptw, "PTWRITE packets");
KPARAM_BOOL("pt.fup_on_ptw", pt_fup_on_ptw, &pt_opts.fup_on_ptw, "FUP with every PTWRITE");
KPARAM_BOOL("pt.pwr_evt", pt_pwr_evt, &pt_opts.pwr_evt, "power event packets");
KPARAM_STR("pt.filter", pt_filter, &pt_opts.filter,
	   "address filters: \"filter SYM[/SIZE]|START/SIZE, stop SYM, ...\" (firmware phase: also Module!SYM[/SIZE], Module+OFF/SIZE)");

static int set_flag_value(const char *val, bool *set, bool *out, const char *name,
			  char *why, size_t n)
{
	if (!val) {
		*set = *out = true;
		return 0;
	}
	if (!cmdline_parse_bool(val, out)) {
		*set = true;
		return 0;
	}
	ksnprintf(why, n, "%s takes 0 or 1", name);
	return -EINVAL;
}

static int set_branch(const char *val, char *why, size_t n)
{
	return set_flag_value(val, &pt_opts.branch_set, &pt_opts.branch, "pt.branch", why, n);
}
KPARAM_CUSTOM("pt.branch", pt_branch, set_branch, "BranchEn (pt.branch=0 traces no branches)");

static int set_period(const char *val, u64 *out, bool *set, char *why, size_t n)
{
	u64 v;

	if (!val || kstrtou64(val, 0, &v) || v > 15) {
		ksnprintf(why, n, "expected an encoding from 0 to 15");
		return -EINVAL;
	}
	*out = v;
	*set = true;
	return 0;
}

static int set_mtc_period(const char *v, char *w, size_t n)
{
	return set_period(v, &pt_opts.mtc_period, &pt_opts.mtc_period_set, w, n);
}
static int set_cyc_thresh(const char *v, char *w, size_t n)
{
	return set_period(v, &pt_opts.cyc_thresh, &pt_opts.cyc_thresh_set, w, n);
}
static int set_psb_period(const char *v, char *w, size_t n)
{
	return set_period(v, &pt_opts.psb_period, &pt_opts.psb_period_set, w, n);
}
KPARAM_CUSTOM("pt.mtc_period", pt_mtc_period, set_mtc_period, "MTC frequency encoding (0-15)");
KPARAM_CUSTOM("pt.cyc_thresh", pt_cyc_thresh, set_cyc_thresh, "CYC threshold encoding (0-15)");
KPARAM_CUSTOM("pt.psb_period", pt_psb_period, set_psb_period, "PSB frequency encoding (0-15)");

static int set_pow2_size(const char *val, u64 *out, u64 lo, u64 hi, char *why, size_t n)
{
	u64 v;

	if (!val || kstrtosize(val, &v) || v < lo || v > hi || (v & (v - 1))) {
		ksnprintf(why, n, "expected a power of two from %lluK to %lluM (e.g. 64K, 4M)",
			  lo >> 10, hi >> 20);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int set_buf(const char *v, char *w, size_t n)
{
	return set_pow2_size(v, &pt_opts.buf_size, 4096, 1ull << 30, w, n);
}
static int set_region(const char *v, char *w, size_t n)
{
	return set_pow2_size(v, &pt_opts.region_size, 4096, 4ull << 20, w, n);
}
KPARAM_CUSTOM("pt.buf", pt_buf, set_buf, "trace buffer size (power of two, 4K to 1G)");
KPARAM_CUSTOM("pt.region", pt_region, set_region, "largest ToPA region (power of two, 4K to 4M)");

static int filter_error(const char *f, size_t len, const char *why)
{
	pr_err("pt.filter: '%.*s': %s\n", (int)len, f, why);
	return -EINVAL;
}

/* The non-canonical addresses with 48-bit linear addresses. */
#define NONCANON_FIRST	0x0000800000000000ull
#define NONCANON_LAST	0xffff7fffffffffffull

/* One "ACTION SPEC" item of @len bytes at @f. */
static int parse_one(const char *f, size_t len, struct pt_filter *out)
{
	char item[160], *spec, *slash;
	u64 start, end, size = 0, sym_size = 0;

	while (len && (*f == ' ' || *f == '\t')) {
		f++;
		len--;
	}
	while (len && (f[len - 1] == ' ' || f[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(item))
		return filter_error(f, len, len ? "too long" : "empty filter");
	memcpy(item, f, len);
	item[len] = '\0';
	spec = strchr(item, ' ');
	if (!spec)
		return filter_error(f, len, "expected ACTION SPEC, e.g. 'filter main'");
	*spec++ = '\0';
	while (*spec == ' ')
		spec++;
	if (!strcmp(item, "filter"))
		out->config = RTIT_ADDR_CFG_FILTER;
	else if (!strcmp(item, "stop") || !strcmp(item, "tracestop"))
		out->config = RTIT_ADDR_CFG_STOP;
	else if (!strcmp(item, "start"))
		return filter_error(f, len, "Intel PT has no start filters (use filter or stop)");
	else
		return filter_error(f, len, "unknown action (expected filter or stop)");
	slash = strchr(spec, '/');
	if (slash) {
		*slash++ = '\0';
		if (kstrtosize(slash, &size) || !size)
			return filter_error(f, len, "bad size after '/'");
	}
	if (kstrtou64(spec, 0, &start)) {
		char why[160];

		/* the kernel's symbol, or a module's (Module!symbol, Module+off) */
		if (ksym_resolve(spec, &start, &sym_size, why, sizeof(why)))
			return filter_error(f, len, why);
		if (!size && strchr(spec, '+') && !strchr(spec, '!'))
			return filter_error(f, len, "an offset in a module needs a size: MODULE+OFFSET/SIZE");
		if (!size)
			size = sym_size ? sym_size : 1;
	} else if (!size) {
		return filter_error(f, len, "an address needs a size: START/SIZE");
	}
	if (start + size - 1 < start)
		return filter_error(f, len, "range wraps around the address space");
	end = start + size - 1;
	/*
	 * IA32_RTIT_ADDRn_A/B #GP on a non-canonical address (the model too:
	 * PT_GP_ADDR_NONCANONICAL), so a range reaching into the hole crashed
	 * the boot at the first wrmsr. No code runs in the hole (topaz pages
	 * with 4 levels: 48-bit linear addresses), so, as Linux's
	 * pt_event_addr_filters_sync(), an end in it moves to the nearest
	 * canonical address without changing what the filter selects.
	 */
	if (start >= NONCANON_FIRST && start <= NONCANON_LAST)
		start = NONCANON_LAST + 1;
	if (end >= NONCANON_FIRST && end <= NONCANON_LAST)
		end = NONCANON_FIRST - 1;
	if (end < start)
		return filter_error(f, len, "range lies in the non-canonical address hole");
	out->msr_a = start;
	out->msr_b = end;
	return 0;
}

int pt_parse_filters(const char *spec, struct pt_event_attr *attr)
{
	const char *s = spec;
	int err = 0;

	attr->nr_filters = 0;
	if (!spec || !*spec)
		return 0;
	for (;;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (attr->nr_filters == PT_FILTERS_NUM) {
			pr_err("pt.filter: more than %d filters\n", PT_FILTERS_NUM);
			return -EINVAL;
		}
		if (parse_one(s, len, &attr->filters[attr->nr_filters]))
			err = -EINVAL;
		else
			attr->nr_filters++;
		if (!e)
			break;
		s = e + 1;
	}
	return err;
}

/* the key pt_options_to_attr() last refused, for the boot's failure to name it */
static const char *refused;

int pt_options_to_attr(const struct pt_options *o, struct pt_event_attr *attr)
{
	u64 c = 0;
	int err;

	memset(attr, 0, sizeof(*attr));
	if (o->tsc) c |= RTIT_CTL_TSC_EN;
	if (o->mtc) c |= RTIT_CTL_MTC_EN;
	if (o->cyc) c |= RTIT_CTL_CYCLEACC;
	if (o->noretcomp) c |= RTIT_CTL_DISRETC;
	if (o->ptw) c |= RTIT_CTL_PTW_EN;
	if (o->fup_on_ptw) c |= RTIT_CTL_FUP_ON_PTW;
	if (o->pwr_evt) c |= RTIT_CTL_PWR_EVT_EN;
	if (o->mtc_period_set) c |= o->mtc_period << RTIT_CTL_MTC_RANGE_OFFSET;
	if (o->cyc_thresh_set) c |= o->cyc_thresh << RTIT_CTL_CYC_THRESH_OFFSET;
	if (o->psb_period_set) c |= o->psb_period << RTIT_CTL_PSB_FREQ_OFFSET;
	if (o->branch_set) {
		attr->branch_passthrough = true;
		if (o->branch)
			c |= RTIT_CTL_BRANCH_EN;
	}
	attr->config = c;
	refused = NULL;
	err = pt_parse_filters(o->filter, attr);
	if (attr->nr_filters && !intel_pt_validate_hw_cap(PT_CAP_ip_filtering)) {
		pr_err("pt.filter: this CPU has no IP filtering (CPUID.14H.0:EBX[2])\n");
		err = -EINVAL;
	}
	if (err)
		refused = "pt.filter";
	if (pt_event_valid(attr))
		err = -EINVAL;
	return err;
}

const char *pt_options_refused(void)
{
	return refused;
}
