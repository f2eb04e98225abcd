/* SPDX-License-Identifier: MIT */
/*
 * The Intel PT driver, with Linux's vocabulary (arch/x86/events/intel/pt.c):
 * ToPA tables built from page-allocator blocks, the PMI service, and an AUX
 * ring that stands in for perf's (producer head, consumer tail, wake-up
 * watermark, records of published data). It programs the IA32_RTIT_* MSRs
 * through rdmsr/wrmsr, so it runs unchanged on silicon and on the model.
 */
#ifndef TOPAZ_PT_H
#define TOPAZ_PT_H

#include <topaz/types.h>
#include <topaz/list.h>
#include <topaz/gfp.h>
#include <topaz/errno.h>
#include <topaz/msr-index.h>
#include <topaz/percpu.h>

/* ------------------------------------------------------------ capabilities */

enum pt_capabilities {
	PT_CAP_max_subleaf = 0,
	PT_CAP_cr3_filtering,
	PT_CAP_psb_cyc,
	PT_CAP_ip_filtering,
	PT_CAP_mtc,
	PT_CAP_ptwrite,
	PT_CAP_power_event_trace,
	PT_CAP_event_trace,
	PT_CAP_tnt_disable,
	PT_CAP_topa_output,
	PT_CAP_topa_multiple_entries,
	PT_CAP_single_range_output,
	PT_CAP_output_subsys,
	PT_CAP_payloads_lip,
	PT_CAP_num_address_ranges,
	PT_CAP_mtc_periods,
	PT_CAP_cycle_thresholds,
	PT_CAP_psb_periods,
	PT_CAP_NR
};

struct pt_pmu {
	bool present;
	u32 caps[8];		/* CPUID 0x14 sub-leaf 0 and 1: eax, ebx, ecx, edx */
	bool branch_en_always_on;	/* BDM106 */
	u32 max_nonturbo_ratio;
	u32 tsc_art_num, tsc_art_den;
	u32 family, model, stepping;
};
extern struct pt_pmu pt_pmu;

u32 intel_pt_validate_cap(const u32 *caps, enum pt_capabilities cap);
u32 intel_pt_validate_hw_cap(enum pt_capabilities cap);
const char *pt_cap_name(enum pt_capabilities cap);
/** pt_pmu_hw_init() - read CPUID 0x14 and friends; -ENODEV without PT or ToPA */
int pt_pmu_hw_init(void);

struct pt_buffer;	/* the driver's (drivers/pt/internal.h) */

/* ------------------------------------------------------------ AUX ring */

#define PERF_AUX_FLAG_TRUNCATED	BIT(0)	/* the trace unit stopped: data lost */
#define PERF_AUX_FLAG_OVERWRITE	BIT(1)	/* snapshot: the ring was overwritten */
#define PERF_AUX_FLAG_PARTIAL	BIT(2)

/* What perf's AUX ring buffer is in Linux: pages, head, tail, watermark. */
struct pt_aux {
	void **data_pages;
	s8 *chunk_order;	/* order of the chunk starting at each page, or -1 */
	unsigned long nr_pages;
	u64 head;		/* bytes published, ever growing */
	u64 tail;		/* bytes consumed, ever growing */
	u64 watermark;		/* wake the consumer every this many bytes */
	u64 wakeup;		/* next wake-up position */
	bool snapshot;
	u64 lost;		/* bytes reported lost (TRUNCATED) */
	u64 records, truncated_records;
};

/* One transaction, as perf_output_handle. */
struct pt_aux_handle {
	struct pt_aux *aux;
	u64 head;		/* aux->head at begin */
	u64 size;		/* free space: the trace unit may write this much */
	u64 wakeup;
	u32 flags;
};

/**
 * pt_aux_alloc() - a ring of @size bytes (a power of two, at least a page)
 * for CPU @cpu, from that CPU's node (cpu_to_node()), in chunks of
 * non-increasing order (naturally aligned buddy blocks), the largest
 * @max_order (MAX_ORDER when larger)
 */
struct pt_aux *pt_aux_alloc(int cpu, u64 size, unsigned int max_order, bool snapshot, gfp_t gfp);
void pt_aux_free(struct pt_aux *aux);
/* perf_aux_output_begin/end/flag: on the PMI path, so inline */
/**
 * pt_aux_output_begin() - start a transaction: the trace unit may fill the
 * free space. Returns -ENOSPC when the consumer has not made room.
 */
static inline int pt_aux_output_begin(struct pt_aux_handle *h, struct pt_aux *aux)
{
	u64 ring = (u64)aux->nr_pages << 12;

	h->aux = aux;
	h->head = aux->head;
	h->flags = 0;
	if (aux->snapshot) {
		h->size = ring;
	} else {
		/* one byte less than the free space, as perf's CIRC_SPACE */
		u64 used = aux->head - aux->tail;

		h->size = used >= ring ? 0 : ring - used - 1;
		if (!h->size)
			return -ENOSPC;
	}
	while (aux->wakeup <= aux->head)
		aux->wakeup += aux->watermark;
	h->wakeup = aux->wakeup;
	return 0;
}

static inline void pt_aux_output_flag(struct pt_aux_handle *h, u32 flags)
{
	h->flags |= flags;
}

static inline void pt_aux_output_end(struct pt_aux_handle *h, u64 size)
{
	struct pt_aux *aux = h->aux;

	if (aux->snapshot)
		aux->head = h->head;	/* the driver passes the current position */
	else
		aux->head += size;
	aux->records++;
	if (h->flags & PERF_AUX_FLAG_TRUNCATED)
		aux->truncated_records++;
	h->flags = 0;
}


/** pt_aux_copy() - read @len bytes at absolute position @pos of the ring into @dst */
void pt_aux_copy(const struct pt_aux *aux, u64 pos, void *dst, u64 len);

/* ------------------------------------------------------------ the driver */

struct pt_filter {
	u64 msr_a, msr_b;
	u32 config;		/* RTIT_ADDR_CFG_* */
};

#define PT_FILTERS_NUM 4

/**
 * struct pt_event_attr - what the user asked for (perf's attr.config and
 * address filters for intel_pt)
 */
struct pt_event_attr {
	u64 config;		/* RTIT_CTL bits from the pt.* options */
	bool exclude_kernel, exclude_user;
	bool branch_passthrough;	/* pt.branch= given: take BranchEn from config */
	struct pt_filter filters[PT_FILTERS_NUM];
	unsigned int nr_filters;
};

struct perf_event {
	struct pt_event_attr attr;
	u64 hw_config;		/* RTIT_CTL image when running */
	bool started_once;
	bool stopped;		/* perf's PERF_HES_STOPPED */
	struct pt_aux *aux;
	struct pt_buffer *buf;
	struct pt_aux_handle handle;
	int cpu;
};

/* Per-CPU driver state (struct pt in Linux). */
struct pt {
	struct perf_event *event;
	bool handle_nmi;
	struct pt_filter filters[PT_FILTERS_NUM];	/* what the MSRs hold */
	u64 output_base, output_mask;			/* what the MSRs hold */
	bool output_valid, filters_valid;
	u64 pmis, stale_pmis, bytes, lost_bytes, truncations, errors;
	u64 pad_bytes;		/* zeroes (PAD packets) written past an early single-entry PMI */
	/* called at the end of a PMI with new data published (the consumer) */
	void (*wakeup)(struct perf_event *event);
};

DECLARE_PER_CPU(struct pt, pt_ctx);

/** pt_event_valid() - check @attr against the capabilities; messages name each refused option */
int pt_event_valid(const struct pt_event_attr *attr);
int pt_event_init(struct perf_event *event, const struct pt_event_attr *attr, struct pt_aux *aux,
		  int cpu);
void pt_event_destroy(struct perf_event *event);
int pt_event_start(struct perf_event *event);
#define PERF_EF_UPDATE BIT(2)
void pt_event_stop(struct perf_event *event, unsigned int mode);
/** pt_pmi_handler() - the PMI entry: checks and acks GLOBAL_STATUS bit 55, unmasks LVTPC */
bool pt_pmi_handle(void);
/** pt_snapshot_copy() - stop, copy the last @len bytes of a snapshot ring to @dst, restart */
u64 pt_snapshot_copy(struct perf_event *event, void *dst, u64 len);
/**
 * pt_snapshot_stop() - stop a snapshot event for good (the panic path) and
 * return where the trace unit would write next: the ring's oldest byte
 */
u64 pt_snapshot_stop(struct perf_event *event);
/** pt_event_single_range() - the event writes one contiguous region (no ToPA) */
bool pt_event_single_range(const struct perf_event *event);

/**
 * pt_irq_set_vector() - the vector the PMI arrives on (before pt_irq_init();
 * PT_PMI_VECTOR unless the firmware phase chose one the firmware gave it)
 */
void pt_irq_set_vector(u8 vector);
/** pt_irq_init() - route the PMI through LVTPC as a vector or (@nmi) an NMI, on every CPU */
void pt_irq_init(bool nmi);

#endif
