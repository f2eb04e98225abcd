// SPDX-License-Identifier: MIT
/*
 * The Intel PT driver: capabilities, configuration checks, the RTIT MSR
 * sequences (nothing written while TraceEn=1, TraceEn set last) and the ToPA
 * PMI, after Linux's arch/x86/events/intel/pt.c.
 */
#define pr_fmt(fmt) "pt: " fmt
#include "internal.h"
#include <topaz/msr-index.h>
#include <topaz/arch.h>
#include <topaz/cpu.h>
#include <topaz/apic.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/cmdline.h>


struct pt_pmu pt_pmu;
/* Each CPU's driver state: the driver's own (struct pt says what guards it). */
static DEFINE_PER_CPU(struct pt, pt_ctx);

struct pt *pt_cpu_ctx(int cpu)
{
	return per_cpu_ptr(pt_ctx, cpu);
}

void pt_set_wakeup(int cpu, void (*wakeup)(struct perf_event *event))
{
	WRITE_ONCE(per_cpu_ptr(pt_ctx, cpu)->wakeup, wakeup);
}

void pt_get_cpu_stats(int cpu, struct pt_cpu_stats *st)
{
	const struct pt *pt = per_cpu_ptr(pt_ctx, cpu);

	st->pmis = pt->pmis;
	st->stale_pmis = pt->stale_pmis;
	st->bytes = pt->bytes;
	st->pad_bytes = pt->pad_bytes;
	st->truncations = pt->truncations;
	st->errors = pt->errors;
}

enum { CPUID_EAX, CPUID_EBX, CPUID_ECX, CPUID_EDX };

/* A field of CPUID leaf 0x14; @what: what it allows, for pt.caps */
struct pt_cap_desc {
	const char *name;
	u32 leaf;	/* sub-leaf */
	u8 reg;
	u32 mask;
	const char *what;
};

/*
 * Named as perf's /sys/bus/event_source/devices/intel_pt/caps/ files; every
 * field the SDM defines in sub-leaves 0 and 1 (Vol. 2A, CPUID; Vol. 3C,
 * "CPUID Leaf 14H Enumeration") but EBX[6], which perf has no file for
 * (psb_pmi_preserve below), in register and bit order.
 */
static const struct pt_cap_desc pt_caps[PT_CAP_NR] = {
	[PT_CAP_max_subleaf]		= { "max_subleaf", 0, CPUID_EAX, 0xffffffff,
					    "the highest sub-leaf of leaf 0x14" },
	[PT_CAP_cr3_filtering]		= { "cr3_filtering", 0, CPUID_EBX, BIT(0),
					    "CR3 filtering (CR3Filter, IA32_RTIT_CR3_MATCH)" },
	[PT_CAP_psb_cyc]		= { "psb_cyc", 0, CPUID_EBX, BIT(1),
					    "configurable PSB frequency, cycle-accurate mode (pt.psb_period, pt.cyc)" },
	[PT_CAP_ip_filtering]		= { "ip_filtering", 0, CPUID_EBX, BIT(2),
					    "IP filtering and TraceStop (pt.filter), PT MSRs kept across warm reset" },
	[PT_CAP_mtc]			= { "mtc", 0, CPUID_EBX, BIT(3),
					    "MTC timing packets (pt.mtc), COFI packet suppression" },
	[PT_CAP_ptwrite]		= { "ptwrite", 0, CPUID_EBX, BIT(4),
					    "PTWRITE (pt.ptw, pt.fup_on_ptw)" },
	[PT_CAP_power_event_trace]	= { "power_event_trace", 0, CPUID_EBX, BIT(5),
					    "power event trace (pt.pwr_evt)" },
	[PT_CAP_event_trace]		= { "event_trace", 0, CPUID_EBX, BIT(7),
					    "event trace (EventEn)" },
	[PT_CAP_tnt_disable]		= { "tnt_disable", 0, CPUID_EBX, BIT(8),
					    "TNT disable (DisTNT)" },
	[PT_CAP_topa_output]		= { "topa_output", 0, CPUID_ECX, BIT(0),
					    "ToPA output (the driver needs it)" },
	[PT_CAP_topa_multiple_entries]	= { "topa_multiple_entries", 0, CPUID_ECX, BIT(1),
					    "ToPA tables of many entries (else one region, a PMI before it fills)" },
	[PT_CAP_single_range_output]	= { "single_range_output", 0, CPUID_ECX, BIT(2),
					    "single-range output" },
	[PT_CAP_output_subsys]		= { "output_subsys", 0, CPUID_ECX, BIT(3),
					    "output to the trace transport subsystem (FabricEn)" },
	[PT_CAP_payloads_lip]		= { "payloads_lip", 0, CPUID_ECX, BIT(31),
					    "IP payloads are linear addresses (LIP), not offsets in CS" },
	[PT_CAP_num_address_ranges]	= { "num_address_ranges", 1, CPUID_EAX, 0x7,
					    "address ranges for pt.filter" },
	[PT_CAP_mtc_periods]		= { "mtc_periods", 1, CPUID_EAX, 0xffff0000,
					    "MTC period encodings (pt.mtc_period)" },
	[PT_CAP_cycle_thresholds]	= { "cycle_thresholds", 1, CPUID_EBX, 0xffff,
					    "cycle threshold encodings (pt.cyc_thresh)" },
	[PT_CAP_psb_periods]		= { "psb_periods", 1, CPUID_EBX, 0xffff0000,
					    "PSB period encodings (pt.psb_period)" },
};

u32 intel_pt_validate_cap(const u32 *caps, enum pt_capabilities cap)
{
	u32 v = caps[pt_caps[cap].leaf * 4 + pt_caps[cap].reg] & pt_caps[cap].mask;

	return v >> __builtin_ctz(pt_caps[cap].mask);
}

u32 intel_pt_validate_hw_cap(enum pt_capabilities cap)
{
	return intel_pt_validate_cap(pt_pmu.caps, cap);
}

const char *pt_cap_name(enum pt_capabilities cap)
{
	return pt_caps[cap].name;
}

/* EBX[6]: no caps file in perf, so the SDM's name */
static const struct pt_cap_desc psb_pmi_preserve = {
	"psb_pmi_preserve", 0, CPUID_EBX, BIT(6),
	"PSB and PMI preservation (InjectPsbPmiOnEnable; no perf caps file)"
};

static const char cpuid_reg_names[4][4] = { "EAX", "EBX", "ECX", "EDX" };

/* CPUID leaf 0x14's sub-leaves 0 and 1 into @caps, as struct pt_pmu holds them */
static void read_leaf14(u32 *caps)
{
	struct cpuid_regs r;

	for (u32 sub = 0; sub < 2; sub++) {
		cpuid_regs(0x14, sub, &r);
		caps[sub * 4 + CPUID_EAX] = r.eax;
		caps[sub * 4 + CPUID_EBX] = r.ebx;
		caps[sub * 4 + CPUID_ECX] = r.ecx;
		caps[sub * 4 + CPUID_EDX] = r.edx;
	}
}

/* One field of @caps as a "pt caps:" line; its bits are added to @defined */
static void print_cap(const struct pt_cap_desc *d, const u32 *caps, u32 *defined)
{
	u32 v = (caps[d->leaf * 4 + d->reg] & d->mask) >> __builtin_ctz(d->mask);
	int lo = __builtin_ctz(d->mask), hi = 31 - __builtin_clz(d->mask);
	char bits[16], list[64] = "";

	defined[d->leaf * 4 + d->reg] |= d->mask;
	if (lo == hi)
		ksnprintf(bits, sizeof(bits), "%u:%s[%d]", d->leaf, cpuid_reg_names[d->reg], lo);
	else
		ksnprintf(bits, sizeof(bits), "%u:%s[%d:%d]", d->leaf, cpuid_reg_names[d->reg], hi, lo);
	if (hi - lo == 15) {	/* a bitmap of encodings: which ones */
		size_t n = ksnprintf(list, sizeof(list), " (encodings");

		for (int b = 0; b < 16 && n < sizeof(list); b++)
			if (v & BIT(b))
				n += ksnprintf(list + n, sizeof(list) - n, " %d", b);
		if (n < sizeof(list))
			ksnprintf(list + n, sizeof(list) - n, "%s)", v ? "" : " none");
	}
	/* the value as perf's caps file shows it: hex, no 0x */
	printk("pt caps: %-22s %-8x %-12s %s%s\n", d->name, v, bits, d->what, list);
}

void pt_caps_print(void)
{
	u32 caps[8], defined[8] = { 0 };
	struct cpuid_regs r;

	cpuid_regs(0, 0, &r);
	u32 max_leaf = r.eax;

	cpuid_regs(7, 0, &r);
	if (max_leaf < 0x14 || !(r.ebx & CPUID_7_0_EBX_INTEL_PT)) {
		printk("pt caps: this CPU has no Intel PT (CPUID.7.0:EBX[25] clear%s) and no software trace unit answers\n",
		       max_leaf < 0x14 ? ", no leaf 0x14" : "");
		return;
	}
	read_leaf14(caps);
	for (u32 sub = 0; sub < 2; sub++)
		printk("pt caps: CPUID.(EAX=14H,ECX=%u): eax=0x%08x ebx=0x%08x ecx=0x%08x edx=0x%08x\n",
		       sub, caps[sub * 4 + CPUID_EAX], caps[sub * 4 + CPUID_EBX],
		       caps[sub * 4 + CPUID_ECX], caps[sub * 4 + CPUID_EDX]);
	for (int cap = 0; cap < PT_CAP_NR; cap++) {
		print_cap(&pt_caps[cap], caps, defined);
		if (cap == PT_CAP_power_event_trace)	/* in bit order */
			print_cap(&psb_pmi_preserve, caps, defined);
	}
	for (u32 i = 0; i < 8; i++) {
		u32 extra = caps[i] & ~defined[i];

		if (extra)
			printk("pt caps: sub-leaf %u %s: bits 0x%08x set that the SDM reserves\n", i / 4,
			       cpuid_reg_names[i % 4], extra);
	}
}

int pt_pmu_hw_init(void)
{
	struct cpuid_regs r;
	u64 v;

	memset(&pt_pmu, 0, sizeof(pt_pmu));
	cpuid_regs(0, 0, &r);
	u32 max_leaf = r.eax;
	cpuid_regs(1, 0, &r);
	pt_pmu.stepping = x86_stepping(r.eax);
	pt_pmu.model = x86_model(r.eax);
	pt_pmu.family = x86_family(r.eax);
	if (max_leaf < 0x14)
		return -ENODEV;
	cpuid_regs(7, 0, &r);
	if (!(r.ebx & CPUID_7_0_EBX_INTEL_PT))
		return -ENODEV;
	if (!rdmsr_safe(0xce, &v))	/* MSR_PLATFORM_INFO */
		pt_pmu.max_nonturbo_ratio = (u32)(v >> 8) & 0xff;
	if (max_leaf >= 0x15) {
		cpuid_regs(0x15, 0, &r);
		pt_pmu.tsc_art_num = r.ebx;
		pt_pmu.tsc_art_den = r.eax;
	}
	/* Broadwell (BDM106): clearing BranchEn while tracing #GPs. */
	if (pt_pmu.family == 6 && (pt_pmu.model == 0x3d || pt_pmu.model == 0x47 ||
				   pt_pmu.model == 0x4f || pt_pmu.model == 0x56))
		pt_pmu.branch_en_always_on = true;
	read_leaf14(pt_pmu.caps);
	if (!intel_pt_validate_hw_cap(PT_CAP_topa_output)) {
		pr_err("ToPA output is not supported on this CPU\n");
		return -ENODEV;
	}
	pt_pmu.present = true;
	return 0;
}

#define PT_CONFIG_MASK (RTIT_CTL_TRACEEN | RTIT_CTL_TSC_EN | RTIT_CTL_DISRETC | \
			RTIT_CTL_BRANCH_EN | RTIT_CTL_CYCLEACC | RTIT_CTL_CYC_THRESH | \
			RTIT_CTL_PSB_FREQ | RTIT_CTL_MTC_EN | RTIT_CTL_MTC_RANGE | \
			RTIT_CTL_PWR_EVT_EN | RTIT_CTL_EVENT_EN | RTIT_CTL_NOTNT | \
			RTIT_CTL_FUP_ON_PTW | RTIT_CTL_PTW_EN)

static int refuse(const char *opt, const char *why)
{
	pr_err("%s: %s\n", opt, why);
	return -EINVAL;
}

int pt_event_valid(const struct pt_event_attr *attr)
{
	u64 c = attr->config;
	int bad = 0;

	if (!pt_pmu.present)
		return refuse("pt", "this CPU has no Intel PT (CPUID.7.0:EBX[25]) and no model is installed");
	if (c & ~PT_CONFIG_MASK)
		bad |= refuse("pt", "reserved RTIT_CTL bits requested");
	if ((c & (RTIT_CTL_CYCLEACC | RTIT_CTL_CYC_THRESH | RTIT_CTL_PSB_FREQ)) &&
	    !intel_pt_validate_hw_cap(PT_CAP_psb_cyc)) {
		if (c & RTIT_CTL_CYCLEACC)
			bad |= refuse("pt.cyc", "this CPU has no cycle-accurate mode (CPUID.14H.0:EBX[1])");
		if (c & RTIT_CTL_CYC_THRESH)
			bad |= refuse("pt.cyc_thresh", "this CPU has no configurable CYC threshold");
		if (c & RTIT_CTL_PSB_FREQ)
			bad |= refuse("pt.psb_period", "this CPU has no configurable PSB frequency");
	} else {
		u32 psb = (u32)((c & RTIT_CTL_PSB_FREQ) >> RTIT_CTL_PSB_FREQ_OFFSET);
		u32 cyc = (u32)((c & RTIT_CTL_CYC_THRESH) >> RTIT_CTL_CYC_THRESH_OFFSET);

		if (psb && !(intel_pt_validate_hw_cap(PT_CAP_psb_periods) & BIT(psb)))
			bad |= refuse("pt.psb_period", "encoding not in CPUID.14H.1:EBX[31:16]");
		if (cyc && !(intel_pt_validate_hw_cap(PT_CAP_cycle_thresholds) & BIT(cyc)))
			bad |= refuse("pt.cyc_thresh", "encoding not in CPUID.14H.1:EBX[15:0]");
	}
	if (c & (RTIT_CTL_MTC_EN | RTIT_CTL_MTC_RANGE)) {
		u32 periods = intel_pt_validate_hw_cap(PT_CAP_mtc_periods);
		u32 freq = (u32)((c & RTIT_CTL_MTC_RANGE) >> RTIT_CTL_MTC_RANGE_OFFSET);

		if (!intel_pt_validate_hw_cap(PT_CAP_mtc) || !periods)
			bad |= refuse("pt.mtc", "this CPU has no MTC packets (CPUID.14H.0:EBX[3])");
		else if (!(periods & BIT(freq)))
			bad |= refuse("pt.mtc_period", "encoding not in CPUID.14H.1:EAX[31:16]");
	}
	if ((c & RTIT_CTL_PWR_EVT_EN) && !intel_pt_validate_hw_cap(PT_CAP_power_event_trace))
		bad |= refuse("pt.pwr_evt", "this CPU has no power event trace (CPUID.14H.0:EBX[5])");
	if ((c & RTIT_CTL_EVENT_EN) && !intel_pt_validate_hw_cap(PT_CAP_event_trace))
		bad |= refuse("pt.event", "this CPU has no event trace");
	if ((c & RTIT_CTL_NOTNT) && !intel_pt_validate_hw_cap(PT_CAP_tnt_disable))
		bad |= refuse("pt.notnt", "this CPU cannot disable TNT");
	if ((c & (RTIT_CTL_PTW_EN | RTIT_CTL_FUP_ON_PTW)) && !intel_pt_validate_hw_cap(PT_CAP_ptwrite))
		bad |= refuse((c & RTIT_CTL_PTW_EN) ? "pt.ptw" : "pt.fup_on_ptw",
			      "this CPU has no PTWRITE (CPUID.14H.0:EBX[4])");
	else if ((c & RTIT_CTL_FUP_ON_PTW) && !(c & RTIT_CTL_PTW_EN))
		bad |= refuse("pt.fup_on_ptw", "needs pt.ptw=1");
	if (attr->branch_passthrough && !(c & RTIT_CTL_BRANCH_EN) && pt_pmu.branch_en_always_on)
		bad |= refuse("pt.branch", "this CPU (Broadwell, erratum BDM106) cannot trace with branches off");
	if (!attr->branch_passthrough && (c & RTIT_CTL_BRANCH_EN))
		bad |= refuse("pt.branch", "internal: BranchEn without pass-through");
	if (attr->nr_filters > intel_pt_validate_hw_cap(PT_CAP_num_address_ranges)) {
		char why[96];

		ksnprintf(why, sizeof(why), "%u address ranges asked, this CPU has %u",
			  attr->nr_filters, intel_pt_validate_hw_cap(PT_CAP_num_address_ranges));
		bad |= refuse("pt.filter", why);
	}
	for (unsigned int i = 0; i < attr->nr_filters && i < PT_FILTERS_NUM; i++) {
		if (attr->filters[i].config > RTIT_ADDR_CFG_STOP || !attr->filters[i].config)
			bad |= refuse("pt.filter", "a range must be a filter or a stop range");
		if (attr->filters[i].msr_b < attr->filters[i].msr_a)
			bad |= refuse("pt.filter", "a range ends before it starts");
	}
	return bad ? -EINVAL : 0;
}

/* ------------------------------------------------------------ buffers */

static void *pt_buffer_setup_aux(struct perf_event *event, void **pages, unsigned long nr_pages,
				 bool snapshot)
{
	struct pt_buffer *buf;
	int cpu = event->cpu;

	if (!nr_pages)
		return NULL;
	buf = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, get_order(sizeof(*buf)));
	if (!buf)
		return NULL;
	INIT_LIST_HEAD(&buf->tables);
	buf->cpu = cpu;
	buf->snapshot = snapshot;
	buf->data_pages = pages;
	buf->chunk_order = event->aux->chunk_order;
	buf->stop_pos = buf->intr_pos = -1;
	buf->multi = intel_pt_validate_hw_cap(PT_CAP_topa_multiple_entries) != 0;
	/* single-range output: snapshot buffers that are one block (pt_buffer_try_single) */
	if (snapshot && intel_pt_validate_hw_cap(PT_CAP_single_range_output) &&
	    (1ul << buf->chunk_order[0]) == nr_pages) {
		buf->single = true;
		buf->nr_pages = nr_pages;
		return buf;
	}
	if (pt_buffer_init_topa(buf, cpu, nr_pages, GFP_KERNEL)) {
		free_pages((uintptr_t)buf, get_order(sizeof(*buf)));
		return NULL;
	}
	return buf;
}

static void pt_buffer_free_aux(void *data)
{
	struct pt_buffer *buf = data;

	pt_buffer_fini_topa(buf);
	free_pages((uintptr_t)buf, get_order(sizeof(*buf)));
}

/**
 * pt_buffer_reset_markers() - STOP on the entry before the consumer's data,
 * INT where the consumer wants to be woken (or one page before STOP)
 */
static int pt_buffer_reset_markers(struct pt_buffer *buf, struct pt_aux_handle *handle)
{
	unsigned long mask = buf->nr_pages - 1, stop_pg, intr_pg;
	u64 end;

	if (buf->single)
		return 0;
	if (buf->output_off + handle->size + 1 < pt_buffer_region_size(buf)) {
		pt_aux_output_flag(handle, PERF_AUX_FLAG_TRUNCATED);
		return -EINVAL;
	}
	if (!buf->multi)
		return 0;
	if (buf->stop_te)
		*buf->stop_te &= ~(TOPA_STOP | TOPA_INT);
	if (buf->intr_te)
		*buf->intr_te &= ~TOPA_INT;
	/*
	 * @end is the first byte the trace unit must not write: the consumer's
	 * tail, one ring later. STOP goes on the region before the one holding
	 * it. (Linux computes the page as head/4096 + size/4096, one region
	 * early when head is not page aligned: in a two-region ring that put
	 * STOP on the region being written and lost the PMI skid.)
	 */
	end = buf->head + handle->size + 1;
	stop_pg = (unsigned long)(end >> PAGE_SHIFT) & mask;
	intr_pg = (unsigned long)(end >> PAGE_SHIFT) - 1;
	if ((unsigned long)(handle->wakeup >> PAGE_SHIFT) < intr_pg)
		intr_pg = (unsigned long)(handle->wakeup >> PAGE_SHIFT);
	intr_pg &= mask;
	if (buf->region_shift) {
		/* uniform regions: the entry before page p's region, by index */
		unsigned int rs = buf->region_shift - PAGE_SHIFT;
		unsigned long rmask = buf->nr_regions - 1;

		buf->stop_pos = (long)stop_pg;
		buf->intr_pos = (long)intr_pg;
		buf->stop_te = buf->region_te[((stop_pg >> rs) - 1) & rmask];
		buf->intr_te = buf->region_te[((intr_pg >> rs) - 1) & rmask];
		*buf->stop_te |= TOPA_STOP | TOPA_INT;
		*buf->intr_te |= TOPA_INT;
		return 0;
	}
	if ((long)stop_pg != buf->stop_pos) {
		buf->stop_pos = (long)stop_pg;
		buf->stop_te = pt_topa_prev_entry(buf, pt_topa_entry_for_page(buf, stop_pg));
	}
	/* INT one page before that, or where the consumer wants waking */
	if ((long)intr_pg != buf->intr_pos) {
		buf->intr_pos = (long)intr_pg;
		buf->intr_te = pt_topa_prev_entry(buf, pt_topa_entry_for_page(buf, intr_pg));
	}
	*buf->stop_te |= TOPA_STOP | TOPA_INT;
	*buf->intr_te |= TOPA_INT;
	return 0;
}

/* ------------------------------------------------------------ MSRs */

static void pt_config_buffer(struct pt_buffer *buf)
{
	struct pt *pt = per_cpu_ptr(pt_ctx, buf->cpu);
	u64 base, mask, reg;

	if (buf->single) {
		base = virt_to_phys(buf->data_pages[0]);
		mask = (((u64)buf->nr_pages << PAGE_SHIFT) - 1) >> 7;
	} else {
		base = pt_topa_phys(buf->cur);
		mask = buf->cur_idx;
	}
	if (!pt->output_valid || pt->output_base != base) {
		wrmsr(MSR_IA32_RTIT_OUTPUT_BASE, base);
		pt->output_base = base;
	}
	reg = RTIT_OUTPUT_LOWER_MASK | (mask << RTIT_OUTPUT_MASK_OFFSET_SHIFT) |
	      (buf->output_off << RTIT_OUTPUT_OFFSET_SHIFT);
	if (!pt->output_valid || pt->output_mask != reg) {
		wrmsr(MSR_IA32_RTIT_OUTPUT_MASK, reg);
		pt->output_mask = reg;
	}
	pt->output_valid = true;
}

/** pt_read_offset() - where the trace unit stopped (TraceEn must be clear) */
static void pt_read_offset(struct pt_buffer *buf)
{
	struct pt *pt = per_cpu_ptr(pt_ctx, buf->cpu);

	if (!buf->single) {
		pt->output_base = rdmsr(MSR_IA32_RTIT_OUTPUT_BASE);
		buf->cur = &((struct topa_page *)phys_to_virt(pt->output_base))->topa;
	}
	pt->output_mask = rdmsr(MSR_IA32_RTIT_OUTPUT_MASK);
	pt->output_valid = true;
	buf->output_off = pt->output_mask >> RTIT_OUTPUT_OFFSET_SHIFT;
	if (!buf->single)
		buf->cur_idx = (unsigned int)((pt->output_mask & 0xffffff80ull) >> 7);
}

#define TOPA_PMI_MARGIN 512

static void pt_handle_status(struct pt *pt)
{
	struct perf_event *event = pt->event;
	struct pt_buffer *buf = event->buf;
	u64 status = rdmsr(MSR_IA32_RTIT_STATUS), orig = status;
	bool advance = false;

	/* the common case: multi-entry ToPA, nothing to clear */
	if (!(status & (RTIT_STATUS_ERROR | RTIT_STATUS_STOPPED)) && (buf->multi || buf->single ||
								      buf->snapshot))
		return;

	if (status & RTIT_STATUS_ERROR) {
		pr_err("ToPA ERROR encountered, trying to recover\n");
		pt_topa_dump(buf);
		status &= ~RTIT_STATUS_ERROR;
		pt->errors++;
	}
	if (status & RTIT_STATUS_STOPPED) {
		status &= ~RTIT_STATUS_STOPPED;
		/* A full STOP region: the trace unit dropped data. A TraceStop
		 * range with room left is not a loss. */
		if (!buf->single && (!buf->multi || buf->output_off == pt_buffer_region_size(buf))) {
			pt_aux_output_flag(&event->handle, PERF_AUX_FLAG_TRUNCATED);
			pt->truncations++;
			advance = true;
		}
	}
	if (!buf->multi && !buf->snapshot && !buf->single &&
	    pt_buffer_region_size(buf) - buf->output_off <= TOPA_PMI_MARGIN) {
		/* An early PMI on single-entry ToPA: pad the rest, move on. */
		memset((u8 *)pt_buffer_region(buf) + buf->output_off, 0,
		       pt_buffer_region_size(buf) - buf->output_off);
		pt->pad_bytes += pt_buffer_region_size(buf) - buf->output_off;
		advance = true;
	}
	if (advance)
		pt_buffer_advance(buf);
	if (status != orig)	/* only Error/Stopped need clearing */
		wrmsr(MSR_IA32_RTIT_STATUS, status);
}

static void pt_update_head(struct pt *pt)
{
	struct pt_buffer *buf = pt->event->buf;
	u64 size = (u64)buf->nr_pages << PAGE_SHIFT;
	u64 base, old;
	bool wrapped = buf->wrapped;

	buf->wrapped = false;
	if (buf->single) {
		buf->data_size = buf->output_off;
		return;
	}
	base = pt_topa_region_offset_of(buf) + buf->output_off;
	if (buf->snapshot) {
		buf->data_size = base;
		return;
	}
	old = buf->head & (size - 1);
	buf->head = base;
	if (base < old || (base == old && wrapped))
		base += size;
	buf->data_size += base - old;
}

static u64 pt_config_filters(struct perf_event *event)
{
	struct pt *pt = per_cpu_ptr(pt_ctx, event->cpu);
	u64 rtit_ctl = 0;

	for (unsigned int i = 0; i < event->attr.nr_filters; i++) {
		const struct pt_filter *f = &event->attr.filters[i];

		if (!pt->filters_valid || pt->filters[i].msr_a != f->msr_a) {
			wrmsr(MSR_IA32_RTIT_ADDRn_A(i), f->msr_a);
			pt->filters[i].msr_a = f->msr_a;
		}
		if (!pt->filters_valid || pt->filters[i].msr_b != f->msr_b) {
			wrmsr(MSR_IA32_RTIT_ADDRn_B(i), f->msr_b);
			pt->filters[i].msr_b = f->msr_b;
		}
		rtit_ctl |= (u64)f->config << RTIT_CTL_ADDRn_OFFSET(i);
	}
	if (event->attr.nr_filters)
		pt->filters_valid = true;
	return rtit_ctl;
}

static void pt_config_start(struct perf_event *event)
{
	event->hw_config |= RTIT_CTL_TRACEEN;
	wrmsr(MSR_IA32_RTIT_CTL, event->hw_config);
}

static void pt_config_stop(struct perf_event *event)
{
	if (!(event->hw_config & RTIT_CTL_TRACEEN))
		return;
	event->hw_config &= ~RTIT_CTL_TRACEEN;
	wrmsr(MSR_IA32_RTIT_CTL, event->hw_config);
	barrier();	/* the WRMSR flushed the packets; publish after it */
}

static void pt_config(struct perf_event *event)
{
	struct pt_event_attr *a = &event->attr;
	u64 reg;

	if (!event->started_once) {
		/* The first start: clear the PSB byte counter and stale flags. */
		wrmsr(MSR_IA32_RTIT_STATUS, 0);
		event->started_once = true;
	}
	reg = pt_config_filters(event);
	if (!event->buf->single)
		reg |= RTIT_CTL_TOPA;
	if (a->branch_passthrough)
		reg |= a->config & RTIT_CTL_BRANCH_EN;
	else
		reg |= RTIT_CTL_BRANCH_EN;
	if (!a->exclude_kernel)
		reg |= RTIT_CTL_OS;
	if (!a->exclude_user)
		reg |= RTIT_CTL_USR;
	reg |= a->config & PT_CONFIG_MASK & ~(RTIT_CTL_TRACEEN | RTIT_CTL_BRANCH_EN);
	event->hw_config = reg;
	pt_config_start(event);
}

/* ------------------------------------------------------------ events */

int pt_event_init(struct perf_event *event, const struct pt_event_attr *attr, struct pt_aux *aux,
		  int cpu)
{
	int err;

	memset(event, 0, sizeof(*event));
	err = pt_event_valid(attr);
	if (err)
		return err;
	if (per_cpu_ptr(pt_ctx, cpu)->event) {
		pr_err("CPU %d already has a PT event\n", cpu);
		return -EBUSY;
	}
	event->attr = *attr;
	event->cpu = cpu;
	event->aux = aux;
	event->stopped = true;
	event->buf = pt_buffer_setup_aux(event, aux->data_pages, aux->nr_pages, aux->snapshot);
	if (!event->buf)
		return -ENOMEM;
	WRITE_ONCE(per_cpu_ptr(pt_ctx, cpu)->event, event);
	per_cpu_ptr(pt_ctx, cpu)->output_valid = false;
	per_cpu_ptr(pt_ctx, cpu)->filters_valid = false;
	return 0;
}

void pt_event_destroy(struct perf_event *event)
{
	pt_event_stop(event, PERF_EF_UPDATE);
	if (event->buf)
		pt_buffer_free_aux(event->buf);
	event->buf = NULL;
	if (per_cpu_ptr(pt_ctx, event->cpu)->event == event)
		WRITE_ONCE(per_cpu_ptr(pt_ctx, event->cpu)->event, NULL);
}

int pt_event_start(struct perf_event *event)
{
	struct pt *pt = per_cpu_ptr(pt_ctx, event->cpu);
	struct pt_buffer *buf = event->buf;

	if (pt_aux_output_begin(&event->handle, event->aux)) {
		event->stopped = true;
		return -ENOSPC;
	}
	pt_buffer_reset_offsets(buf, event->handle.head);
	if (!buf->snapshot && pt_buffer_reset_markers(buf, &event->handle)) {
		pt_aux_output_end(&event->handle, 0);
		event->stopped = true;
		return -ENOSPC;
	}
	event->stopped = false;
	pt_config_buffer(buf);
	WRITE_ONCE(pt->handle_nmi, true);	/* before TraceEn: a PMI from here is ours */
	pt_config(event);
	return 0;
}

static void publish(struct pt *pt, struct perf_event *event)
{
	struct pt_buffer *buf = event->buf;
	u64 size = buf->data_size;

	if (buf->snapshot) {
		event->handle.head = buf->data_size;	/* the current position */
		size = (u64)buf->nr_pages << PAGE_SHIFT;
	}
	if (event->handle.flags & PERF_AUX_FLAG_TRUNCATED)
		event->aux->lost++;
	pt->bytes += buf->snapshot ? 0 : size;
	pt_aux_output_end(&event->handle, size);
	buf->data_size = 0;
}

void pt_event_stop(struct perf_event *event, unsigned int mode)
{
	struct pt *pt = per_cpu_ptr(pt_ctx, event->cpu);

	/* before TraceEn is cleared: a PMI from here on (the flush's) is stale */
	WRITE_ONCE(pt->handle_nmi, false);
	barrier();
	pt_config_stop(event);
	if (event->stopped)
		return;
	event->stopped = true;
	if (mode & PERF_EF_UPDATE) {
		pt_read_offset(event->buf);
		pt_handle_status(pt);
		pt_update_head(pt);
		publish(pt, event);
	}
}

/* flatten: the PMI path's helpers in this file inline into one function */
/*
 * Fault injection, as Linux's fail_* knobs: pt.fail_pmi=N panics inside the
 * Nth PMI, with the trace unit stopped and its data not yet published, so a
 * test sees the panic path write the trace from the worst place.
 */
static u64 fail_pmi;
KPARAM_UINT("pt.fail_pmi", pt_fail_pmi, &fail_pmi, 0, 1ull << 40,
	    "fault injection: panic inside the Nth PMI handler (0: never)");

/* the ToPA PMI, with bit 55 seen and acknowledged */
static __attribute__((flatten)) void intel_pt_interrupt(void)
{
	struct pt *pt = this_cpu_ptr(pt_ctx);
	struct perf_event *event = READ_ONCE(pt->event);
	void (*wakeup)(struct perf_event *event);
	struct pt_buffer *buf;

	/* after pt_event_stop() cleared it, a PMI must neither publish nor restart */
	if (!READ_ONCE(pt->handle_nmi) || !event) {
		pt->stale_pmis++;
		return;
	}
	pt->pmis++;
	pt_config_stop(event);
	buf = event->buf;
	pt_read_offset(buf);
	if (unlikely(fail_pmi) && pt->pmis == fail_pmi)
		panic("pt.fail_pmi=%llu: a panic inside that PMI's handler, as asked",
		      fail_pmi);
	pt_handle_status(pt);
	pt_update_head(pt);
	publish(pt, event);
	wakeup = READ_ONCE(pt->wakeup);
	if (wakeup)
		wakeup(event);
	if (event->stopped)
		return;
	if (pt_aux_output_begin(&event->handle, event->aux)) {
		event->stopped = true;	/* no room: tracing stays off until drained */
		return;
	}
	/*
	 * The trace unit's read-back position is where the new transaction
	 * starts (the published head is exactly it), so Linux's
	 * pt_buffer_reset_offsets() lookup is not needed here.
	 */
	buf->head = event->handle.head;
	buf->data_size = 0;
	if (pt_buffer_reset_markers(buf, &event->handle)) {
		pt_aux_output_end(&event->handle, 0);
		event->stopped = true;
		return;
	}
	pt_config_buffer(buf);
	pt_config_start(event);
}

__attribute__((flatten)) bool pt_pmi_handle(void)
{
	/* Every CPU with PT has architectural perfmon v2+, so GLOBAL_STATUS exists. */
	u64 status = rdmsr(MSR_CORE_PERF_GLOBAL_STATUS);

	if (!(status & GLOBAL_STATUS_TRACE_TOPAPMI))
		return false;
	/* Acknowledge first, so a PMI raised after the restart is not lost. */
	wrmsr(MSR_CORE_PERF_GLOBAL_OVF_CTRL, MSR_CORE_PERF_GLOBAL_OVF_CTRL_TRACE_TOPA_PMI);
	intel_pt_interrupt();
	/* The APIC masked LVTPC when it delivered the PMI. */
	apic_write_lvtpc(apic_read_lvtpc() & ~APIC_LVT_MASKED);
	return true;
}

u64 pt_snapshot_stop(struct perf_event *event)
{
	pt_config_stop(event);
	pt_read_offset(event->buf);
	pt_update_head(per_cpu_ptr(pt_ctx, event->cpu));
	return event->buf->data_size;	/* in-buffer position (snapshot) */
}

bool pt_event_single_range(const struct perf_event *event)
{
	return event->buf->single;
}

u64 pt_snapshot_copy(struct perf_event *event, void *dst, u64 len)
{
	struct pt *pt = per_cpu_ptr(pt_ctx, event->cpu);
	struct pt_buffer *buf = event->buf;
	u64 size = (u64)buf->nr_pages << PAGE_SHIFT, pos;
	bool was_on = event->hw_config & RTIT_CTL_TRACEEN;

	pt_config_stop(event);
	pt_read_offset(buf);
	pt_update_head(pt);
	pos = buf->data_size;		/* in-buffer position (snapshot) */
	if (len > size)
		len = size;
	pt_aux_copy(event->aux, pos + size - len, dst, len);
	if (was_on)
		pt_config_start(event);
	return len;
}
