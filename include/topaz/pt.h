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

/**
 * intel_pt_validate_cap() - one capability's field out of CPUID leaf 0x14
 * @caps: sub-leaves 0 and 1 as struct pt_pmu's @caps holds them
 * @cap: which capability
 * Return: the field, shifted down (0: the CPU does not have it).
 */
u32 intel_pt_validate_cap(const u32 *caps, enum pt_capabilities cap);
/**
 * intel_pt_validate_hw_cap() - intel_pt_validate_cap() on this machine's
 * leaf (pt_pmu_hw_init() read it)
 * @cap: which capability
 * Return: the field, shifted down (0: the CPU does not have it).
 */
u32 intel_pt_validate_hw_cap(enum pt_capabilities cap);
/**
 * pt_cap_name() - a capability's name, as Linux's sysfs caps/ directory has it
 * @cap: which capability
 * Return: a static string.
 */
const char *pt_cap_name(enum pt_capabilities cap);
/**
 * pt_caps_print() - CPUID leaf 0x14 decoded (pt.caps): each field the SDM
 * defines in sub-leaves 0 and 1, one "pt caps: NAME VALUE ..." line each,
 * NAME as perf's intel_pt caps/ files, VALUE in hex as they show it; reserved
 * bits that are set are named. Reads CPUID now: silicon, or the software
 * trace unit when it is installed.
 */
void pt_caps_print(void);
/**
 * pt_pmu_hw_init() - read CPUID 0x14 and friends into pt_pmu (silicon or the
 * model, whichever answers CPUID)
 * Return: 0, or -ENODEV without PT or without ToPA output.
 */
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
 * @cpu: the CPU whose trace unit writes it
 * @size: bytes
 * @max_order: the largest chunk (the largest ToPA region)
 * @snapshot: a flight recorder: the trace unit overwrites it
 * @gfp: allocation flags
 * Return: the ring (watermark half of it), or NULL (bad size, no memory).
 */
struct pt_aux *pt_aux_alloc(int cpu, u64 size, unsigned int max_order, bool snapshot, gfp_t gfp);
/**
 * pt_aux_free() - give back a ring and its pages (no event may use it)
 * @aux: the ring, or NULL
 */
void pt_aux_free(struct pt_aux *aux);
/* perf_aux_output_begin/end/flag: on the PMI path, so inline */
/**
 * pt_aux_output_begin() - start a transaction: the trace unit may fill the
 * free space
 * @h: the transaction
 * @aux: the ring
 * Return: 0, or -ENOSPC when the consumer has not made room.
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

/**
 * pt_aux_output_flag() - mark the transaction (PERF_AUX_FLAG_*)
 * @h: the transaction
 * @flags: what to add
 */
static inline void pt_aux_output_flag(struct pt_aux_handle *h, u32 flags)
{
	h->flags |= flags;
}

/**
 * pt_aux_output_end() - publish a transaction: the producer position moves
 * on by @size (a snapshot ring's goes to the transaction's @head), and one
 * record is counted (a truncated one too, with PERF_AUX_FLAG_TRUNCATED)
 * @h: the transaction
 * @size: bytes the trace unit wrote in it
 */
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


/**
 * pt_aux_copy() - read @len bytes at absolute position @pos of the ring into @dst
 * @aux: the ring
 * @pos: a byte position, ever growing (taken modulo the ring's size)
 * @dst: where to
 * @len: bytes, at most the ring's size
 */
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


/**
 * pt_event_valid() - check @attr against the capabilities
 * @attr: what is asked
 * Return: 0, or -EINVAL after a message naming each refused option.
 */
int pt_event_valid(const struct pt_event_attr *attr);
/**
 * pt_event_init() - set up an event on CPU @cpu (perf's event_init and
 * setup_aux): its ToPA tables (or single-range output) over @aux's pages.
 * Not started; at most one event per CPU.
 * @event: the event, filled in here
 * @attr: what it traces (checked with pt_event_valid())
 * @aux: its ring, which it keeps using until pt_event_destroy()
 * @cpu: the CPU whose trace unit writes it
 * Return: 0, -EINVAL (@attr refused), -EBUSY (the CPU has an event), -ENOMEM.
 */
int pt_event_init(struct perf_event *event, const struct pt_event_attr *attr, struct pt_aux *aux,
		  int cpu);
/**
 * pt_event_destroy() - stop the event (publishing what it wrote) and free
 * its tables; the ring stays the caller's. On the event's CPU, or with the
 * event already stopped there.
 * @event: an event pt_event_init() set up
 */
void pt_event_destroy(struct perf_event *event);
/**
 * pt_event_start() - begin a transaction on the ring and enable tracing
 * (TraceEn set last); on the event's CPU
 * @event: a stopped event
 * Return: 0, or -ENOSPC when the ring has no room (the event stays stopped).
 */
int pt_event_start(struct perf_event *event);
#define PERF_EF_UPDATE BIT(2)
/**
 * pt_event_stop() - disable tracing; on the event's CPU. A PMI before or
 * after this is safe (struct pt, drivers/pt/internal.h, says why).
 * @event: the event
 * @mode: PERF_EF_UPDATE: read where the trace unit stopped and publish it
 *	(the consumer is not woken: the caller drains); 0: just stop
 */
void pt_event_stop(struct perf_event *event, unsigned int mode);
/**
 * pt_pmi_handle() - the PMI entry: checks and acknowledges
 * IA32_PERF_GLOBAL_STATUS bit 55 (the ToPA PMI), services it, unmasks LVTPC
 * Return: true when it was a ToPA PMI (handled), false when not (not ours).
 */
bool pt_pmi_handle(void);
/**
 * pt_snapshot_copy() - stop, copy the last @len bytes of a snapshot ring to
 * @dst, restart when it was running; on the event's CPU
 * @event: a snapshot event
 * @dst: where to
 * @len: bytes wanted (at most the ring)
 * Return: bytes copied.
 */
u64 pt_snapshot_copy(struct perf_event *event, void *dst, u64 len);
/**
 * pt_snapshot_stop() - stop a snapshot event for good (the panic path); on
 * the event's CPU
 * @event: a snapshot event
 * Return: where the trace unit would write next: the ring's oldest byte.
 */
u64 pt_snapshot_stop(struct perf_event *event);
/**
 * pt_event_single_range() - the event writes one contiguous region (no ToPA)
 * @event: an event pt_event_init() set up
 * Return: true for single-range output.
 */
bool pt_event_single_range(const struct perf_event *event);

/**
 * pt_set_wakeup() - the consumer of CPU @cpu's ring (perf's AUX wake-up):
 * called on that CPU at the end of each PMI that published data, in the
 * PMI's context (an interrupt, or an NMI with pt.pmi=nmi), with the trace
 * unit stopped; the driver restarts it after, if the ring has room
 * @cpu: the CPU
 * @wakeup: the consumer, or NULL (published data waits in the ring)
 *
 * Set it while the CPU's event is stopped.
 */
void pt_set_wakeup(int cpu, void (*wakeup)(struct perf_event *event));

/**
 * struct pt_cpu_stats - what the driver counted on one CPU since boot
 * @pmis: ToPA PMIs serviced
 * @stale_pmis: PMIs with no running event there (late ones, after a stop)
 * @bytes: bytes published (normal mode; snapshot rings publish no count)
 * @pad_bytes: zeroes (PAD packets) written past an early single-entry PMI
 * @truncations: STOP regions filled: the trace unit dropped data
 * @errors: ToPA errors (IA32_RTIT_STATUS.Error)
 */
struct pt_cpu_stats {
	u64 pmis, stale_pmis, bytes, pad_bytes, truncations, errors;
};
/**
 * pt_get_cpu_stats() - CPU @cpu's counts
 * @cpu: the CPU
 * @st: filled in
 */
void pt_get_cpu_stats(int cpu, struct pt_cpu_stats *st);

/**
 * pt_irq_set_vector() - the vector the PMI arrives on (before pt_irq_init();
 * PT_PMI_VECTOR unless the firmware phase chose one the firmware gave it)
 * @vector: an IDT vector
 */
void pt_irq_set_vector(u8 vector);
/**
 * pt_irq_init() - route the ToPA PMI through LVTPC on every online CPU (each
 * CPU's PMI is its own ring's), and take it: pt_pmi_handle()
 * @nmi: as an NMI (pt.pmi=nmi), else as the vector pt_irq_set_vector() chose
 */
void pt_irq_init(bool nmi);

#endif
