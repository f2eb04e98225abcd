// SPDX-License-Identifier: MIT
/* The trace session: one container; per CPU, a stream (event, AUX ring, offsets). */
#define pr_fmt(fmt) "pt: " fmt
#include "session.h"
#include <topaz/msr-index.h>
#include <topaz/arch.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>
#include <topaz/smp.h>

struct pt_session pt_session;
DEFINE_PER_CPU(struct pt_stream, pt_streams);

u64 pt_session_buffer_size(void)
{
	return pt_session.open ? pt_session.buffer_size : 0;
}

static void session_wakeup(struct perf_event *event)
{
	pt_session_drain();
}

/* Every stream's event and buffer back (those set up so far). */
static void streams_free(struct pt_session *s)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct pt_stream *st = per_cpu_ptr(pt_streams, cpu);

		if (!((s->cpus >> cpu) & 1))
			continue;
		if (st->event.buf)
			pt_event_destroy(&st->event);
		if (st->aux)
			pt_aux_free(st->aux);
		st->aux = NULL;
		pt_set_wakeup((int)cpu, NULL);
	}
	s->cpus = 0;
}

/* CPU @cpu's stream: its buffer (on its node) and its PT event. */
static int stream_open(const struct pt_options *o, bool snapshot, const struct pt_event_attr *attr,
		       unsigned int max_order, unsigned int cpu)
{
	struct pt_stream *st = per_cpu_ptr(pt_streams, cpu);
	struct page_alloc_stats mem;
	int err;

	memset(st, 0, sizeof(*st));
	st->aux = pt_aux_alloc((int)cpu, o->buf_size, max_order, snapshot, GFP_KERNEL);
	if (!st->aux) {
		page_alloc_get_stats(&mem);
		pr_err("pt.buf=%lluK: cannot allocate CPU %u's trace buffer in blocks of at most %lluK (%lluK free of %lluK)\n",
		       o->buf_size >> 10, cpu,
		       (unsigned long long)(PAGE_SIZE << max_order >> 10),
		       mem.free_pages << (PAGE_SHIFT - 10),
		       mem.total_pages << (PAGE_SHIFT - 10));
		return -ENOMEM;
	}
	st->aux->watermark = max(o->buf_size / 4, (u64)PAGE_SIZE);
	st->aux->wakeup = st->aux->watermark;
	err = pt_event_init(&st->event, attr, st->aux, (int)cpu);
	if (err) {
		pr_err("pt=on: cannot set up CPU %u's PT event (error %d)\n", cpu, err);
		pt_aux_free(st->aux);
		st->aux = NULL;
		return err;
	}
	pt_set_wakeup((int)cpu, session_wakeup);
	return 0;
}

int pt_session_open(const struct pt_options *o, bool snapshot, const struct trace_sink *sink,
		    const struct pt_session_unit *unit, u64 load_address, u64 image_size,
		    const void *build_id_note)
{
	struct pt_session *s = &pt_session;
	struct pt_event_attr attr;
	unsigned int max_order = get_order(o->region_size), cpu, n = num_online_cpus(), top = 0;
	struct page_alloc_stats mem;
	int err;

	if (s->open)
		return -EBUSY;
	memset(s, 0, sizeof(*s));
	if (!pt_pmu.present && pt_pmu_hw_init()) {
		pr_err("pt=on: this CPU has no Intel PT and the trace unit model is off (pt.model=off?)\n");
		return -ENODEV;
	}
	if (pt_options_to_attr(o, &attr))
		return -EINVAL;
	if (snapshot == false && !intel_pt_validate_hw_cap(PT_CAP_topa_multiple_entries))
		max_order = get_order(o->buf_size);	/* single-entry ToPA: one block per table */
	else if (!snapshot && o->buf_size >= 4 * PAGE_SIZE &&
		 max_order > get_order(o->buf_size / 4))
		/* at least four regions: the PMI of a full one is serviced
		 * while the next fills (one region would stop at its end and
		 * drop what comes before the PMI is taken) */
		max_order = get_order(o->buf_size / 4);
	page_alloc_get_stats(&mem);
	if (o->buf_size * n > mem.free_pages << PAGE_SHIFT) {
		/* refused before trying: allocating and freeing most of memory takes seconds */
		pr_err("pt.buf=%lluK is more than the free memory for %u CPU%s (%lluK free of %lluK): choose a smaller pt.buf\n",
		       o->buf_size >> 10, n, n == 1 ? "" : "s",
		       mem.free_pages << (PAGE_SHIFT - 10),
		       mem.total_pages << (PAGE_SHIFT - 10));
		return -ENOMEM;
	}
	/* One stream per online CPU: a CPU that cannot have one fails the session
	 * (a trace of some CPUs only would look complete). */
	for_each_online_cpu(cpu) {
		err = stream_open(o, snapshot, &attr, max_order, cpu);
		if (err) {
			streams_free(s);
			return err;
		}
		s->cpus |= 1ull << cpu;
		/* the CPU numbers that may have records, 0 to ncpus - 1: a CPU
		 * left out of the online ones (smp.silent) leaves a hole below
		 * the last, so the count of them is not it */
		top = cpu + 1;
	}
	s->sink = *sink;
	trace_writer_init(&s->writer, &s->sink);
	if (unit)
		s->unit = *unit;
	this_cpu_ptr(pt_streams)->unit_lost_seen = s->unit.bytes_lost ? s->unit.bytes_lost() : 0;
	trace_header_init(&s->header, s->unit.model ? TPZ_HDR_PT_MODEL : 0);
	trace_header_set_image(&s->header, load_address, image_size, build_id_note);
	s->header.ncpus = (u8)top;
	s->header.output = pt_event_single_range(&this_cpu_ptr(pt_streams)->event) ? TPZ_OUT_SINGLE : TPZ_OUT_TOPA;
	s->header.buffer_size = (u32)min(o->buf_size, (u64)0xffffffffu);
	s->buffer_size = o->buf_size;
	for (unsigned int i = 0; i < attr.nr_filters; i++) {
		s->header.addr[i][0] = attr.filters[i].msr_a;
		s->header.addr[i][1] = attr.filters[i].msr_b;
	}
	s->open = true;
	pt_coverage_open();
	return 0;
}

/* The writer, for this CPU; false when this CPU holds it (an NMI inside a write). */
static bool writer_lock(struct pt_session *s, unsigned long *flags)
{
	*flags = local_irq_save();
	if (spin_lock_or_owned(&s->lock))
		return true;
	local_irq_restore(*flags);
	return false;
}

static void writer_unlock(struct pt_session *s, unsigned long flags)
{
	spin_unlock(&s->lock);
	smp_stop_pending();	/* a panic elsewhere waited for this write to end */
	local_irq_restore(flags);
}

bool pt_session_writing_here(void)
{
	return spin_is_locked_by_me(&pt_session.lock);
}

/* The header goes first, once, with the configuration as the first CPU programmed it. */
static void header_once(struct pt_session *s, u64 rtit_ctl)
{
	if (s->header.rtit_ctl)
		return;
	s->header.rtit_ctl = rtit_ctl;
	s->header.start_tsc = rdtsc();
	trace_write_header(&s->writer, &s->header);
}

int pt_session_start(void)
{
	struct pt_stream *st = this_cpu_ptr(pt_streams);
	struct pt_session *s = &pt_session;
	unsigned long f;
	int err;

	if (!s->open || st->running)
		return -EINVAL;
	if (!pt_session_has_cpu(smp_processor_id()))
		return -ENODEV;
	err = pt_event_start(&st->event);
	if (err)
		return err;
	st->running = true;
	st->window_head = st->aux->head;	/* the window's bytes start here (pt_window_trace()) */
	/* the header carries the configuration as the first CPU programmed it
	 * (drains wait for it: until then the data stays in the rings) */
	if (writer_lock(s, &f)) {
		header_once(s, st->event.hw_config);
		writer_unlock(s, f);
	}
	return 0;
}

void pt_session_stop(void)
{
	struct pt_stream *st = this_cpu_ptr(pt_streams);

	if (!st->running)
		return;
	pt_event_stop(&st->event, PERF_EF_UPDATE);
	st->running = false;
	/*
	 * In a large ring (256 KiB and up) small windows' bytes stay (published,
	 * as perf's AUX data waits for its reader) until they fill an eighth of
	 * it, a PMI drains it, or the session closes: such a stop costs no sink
	 * I/O (debugcon writes a byte at a time), and the next window still has
	 * 7/8 of the ring. A smaller ring drains at every stop, as before: there
	 * the bytes left would move where the trace unit stops (trace-smp-4's
	 * 64 KiB single-range rings stopped full).
	 */
	if (!st->aux->snapshot &&
	    (st->aux->nr_pages < (256u << 10) / PAGE_SIZE ||
	     st->aux->head - st->aux->tail >= ((u64)st->aux->nr_pages << PAGE_SHIFT) / 8))
		pt_session_drain();
}

bool pt_session_ptwrite_on(void)
{
	const struct pt_stream *st = this_cpu_ptr(pt_streams);
	u64 ctl = st->event.hw_config;

	return st->running && (ctl & RTIT_CTL_PTW_EN) && (ctl & RTIT_CTL_TRACEEN);
}

/*
 * Bytes the trace unit dropped since the last look. Drains run with the
 * trace unit stopped (in the PMI, or after TraceEn=0), and it drops bytes
 * only while its output is stopped, which it leaves only when the driver
 * restarts it after such a drain: so what it dropped lies after every byte
 * published so far, and before every byte published later.
 */
static u64 unit_new_loss(struct pt_session *s, struct pt_stream *st)
{
	u64 now, n;

	if (!s->unit.bytes_lost)
		return 0;
	now = s->unit.bytes_lost();
	n = now > st->unit_lost_seen ? now - st->unit_lost_seen : 0;
	st->unit_lost_seen = now;
	return n;
}

/*
 * @st's published bytes into the container. @parked: a CPU the panic stopped
 * (pt_session_park_this_cpu()), drained from the panicking CPU: its trace
 * unit's loss was read there, on its own CPU.
 */
static void drain_stream(struct pt_stream *st, bool parked)
{
	struct pt_session *s = &pt_session;
	struct pt_aux *aux = st->aux;
	u64 ring, lost;
	bool stopped = false;
	unsigned long f;
	u32 feed_flags;

	if (!s->open || !aux || aux->snapshot || !s->header.rtit_ctl)
		return;
	if (!writer_lock(s, &f))
		return;	/* an NMI PMI inside this CPU's own drain: that drain goes on */
	ring = (u64)aux->nr_pages << PAGE_SHIFT;
	st->drains++;
	lost = parked ? st->parked_lost : unit_new_loss(s, st);
	st->parked_lost = 0;
	while (aux->tail < aux->head) {
		u64 pos = aux->tail & (ring - 1);
		u64 n = min(aux->head - aux->tail, ring - pos);
		struct trace_chunk c = { .cpu = (u32)st->event.cpu, .offset = st->stream_off, .tsc = rdtsc() };
		const u8 *p;

		/* One record per contiguous piece of the ring; pages of a chunk
		 * are contiguous, so walk chunk by chunk. */
		unsigned long pg = (unsigned long)(pos >> PAGE_SHIFT);
		while (aux->chunk_order[pg] < 0)
			pg--;
		u64 chunk_end = ((u64)pg << PAGE_SHIFT) + (PAGE_SIZE << aux->chunk_order[pg]);
		n = min(n, chunk_end - pos);
		p = (const u8 *)aux->data_pages[pg] + (pos - ((u64)pg << PAGE_SHIFT));
		if (st->gap_pending) {
			/* the gap goes before the first byte after it */
			c.flags |= TPZ_TRACE_LOST;
			c.lost = st->lost_pending;
			c.offset += c.lost;
			st->stream_off += c.lost;
			st->lost_pending = 0;
			st->gap_pending = false;
		}
		if (aux->truncated_records > st->truncations_seen && aux->tail + n == aux->head) {
			/* Output stopped here: the code that ran until the
			 * driver restarted it is not in the trace, whatever
			 * the count of bytes dropped (the cut packet's rest). */
			c.flags |= TPZ_TRACE_TRUNCATED;
			st->truncations_seen = aux->truncated_records;
			stopped = true;
		}
		/* the decoder's flags: what the trace unit did, not the container's cut */
		feed_flags = c.flags;
		if (likely(!s->drop_trace)) {
			if (unlikely(st->cut_pending)) {
				/* bytes were not kept before this piece: a cut, with
				 * any loss they carried */
				c.flags |= TPZ_TRACE_LOST;
				c.lost += st->cut_lost;
				c.offset += st->cut_lost;
				st->stream_off += st->cut_lost;
				st->cut_lost = 0;
				st->cut_pending = false;
			}
			trace_write_trace(&s->writer, &c, p, (size_t)n);
			st->stream_off += n;
		} else {
			st->stream_off -= c.lost;
			st->cut_lost += c.lost;
			st->cut_pending = true;
			st->not_kept += n;
		}
		pt_coverage_feed(c.cpu, feed_flags, p, (size_t)n);
		aux->tail += n;
	}
	/* A trace unit that counts says how many, 0 included; silicon cannot. */
	if (lost || (stopped && s->unit.bytes_lost))
		st->gap_pending = true;
	if (lost || stopped)
		st->gap_head = aux->head;	/* the ring's bytes before this are another run's */
	st->lost_pending += lost;
	st->lost_bytes += lost;
	writer_unlock(s, f);
}

void pt_session_keep_trace(bool keep)
{
	WRITE_ONCE(pt_session.drop_trace, !keep);
}

void pt_session_drain(void)
{
	drain_stream(this_cpu_ptr(pt_streams), false);
}

/* The last @len bytes of @st's ring (a flight recorder) into the container;
 * @parked: its CPU stopped it in the panic's NMI (its MSRs are not ours). */
static void snapshot_stream(struct pt_stream *st, u64 len, bool parked)
{
	struct pt_session *s = &pt_session;
	u64 ring = (u64)st->aux->nr_pages << PAGE_SHIFT;
	u8 *tmp;
	unsigned int order;
	unsigned long f;

	if (!s->open || !st->aux || !st->aux->snapshot)
		return;
	len = min(len, ring);
	order = get_order((size_t)len);
	tmp = parked ? NULL : (u8 *)__get_free_pages(GFP_ATOMIC | __GFP_NOWARN, order);
	if (!writer_lock(s, &f)) {
		free_pages((uintptr_t)tmp, order);
		return;
	}
	header_once(s, st->event.hw_config | RTIT_CTL_TRACEEN);
	if (tmp) {
		struct trace_chunk c = { .cpu = (u32)st->event.cpu, .flags = TPZ_TRACE_WRAPPED,
					 .offset = st->stream_off, .tsc = rdtsc() };

		len = pt_snapshot_copy(&st->event, tmp, len);
		trace_write_trace(&s->writer, &c, tmp, (size_t)len);
		st->stream_off += len;
		free_pages((uintptr_t)tmp, order);
	} else {
		/* no memory in a panic: write the ring in place, oldest first */
		struct trace_chunk c = { .cpu = (u32)st->event.cpu, .flags = TPZ_TRACE_WRAPPED, .offset = st->stream_off };
		u64 pos;

		pos = parked ? st->parked_pos : pt_snapshot_stop(&st->event);
		for (u64 done = 0; done < ring;) {
			u64 off = (pos + done) & (ring - 1);
			u64 n = min(ring - done, PAGE_SIZE - (off & (PAGE_SIZE - 1)));

			trace_write_trace(&s->writer, &c, (const u8 *)st->aux->data_pages[off >> PAGE_SHIFT] +
					  (off & (PAGE_SIZE - 1)), (size_t)n);
			c.flags = 0;
			c.offset += n;
			done += n;
		}
		st->stream_off = c.offset;
	}
	writer_unlock(s, f);
}

void pt_session_snapshot(u64 len)
{
	snapshot_stream(this_cpu_ptr(pt_streams), len, false);
}

/*
 * The panic's stop NMI, on each CPU it stops: this CPU's trace unit stops
 * and publishes what it wrote, and its loss count is read here (it is this
 * CPU's), so that the panicking CPU can write this CPU's trace too. No lock,
 * no write: the panicking CPU may hold the writer.
 */
void pt_session_park_this_cpu(void)
{
	struct pt_stream *st = this_cpu_ptr(pt_streams);
	struct pt_session *s = &pt_session;

	if (!s->open || !pt_session_has_cpu(smp_processor_id()) || !st->running)
		return;
	if (st->aux->snapshot) {
		st->parked_pos = pt_snapshot_stop(&st->event);
		pt_event_stop(&st->event, 0);
	} else {
		pt_event_stop(&st->event, PERF_EF_UPDATE);
		st->parked_lost = unit_new_loss(s, st);
	}
	st->running = false;
	__atomic_store_n(&st->parked, true, __ATOMIC_RELEASE);
}

int trace_write_live_image(struct trace_writer *w, const char *name, u64 vaddr, const void *data,
			   size_t size)
{
	unsigned int order = get_order(size ? size : 1);
	void *copy = (void *)__get_free_pages(GFP_ATOMIC | __GFP_NOWARN, order);
	int err;

	if (!copy)
		return trace_write_image(w, name, vaddr, data, size);
	memcpy(copy, data, size);
	err = trace_write_image(w, name, vaddr, copy, size);
	free_pages((uintptr_t)copy, order);
	return err;
}

void pt_session_add_image(const char *name, u64 vaddr, const void *data, u64 size)
{
	struct pt_stream *st = this_cpu_ptr(pt_streams);
	struct pt_session *s = &pt_session;

	unsigned long f;

	if (!s->open || !writer_lock(s, &f))
		return;
	header_once(s, st->event.hw_config | RTIT_CTL_TRACEEN);
	trace_write_live_image(&s->writer, name, vaddr, data, (size_t)size);
	writer_unlock(s, f);
}

static const struct trace_modules *modules;

void trace_set_modules(const struct trace_modules *m)
{
	WRITE_ONCE(modules, m);
}

bool trace_module_find(u64 ip)
{
	const struct trace_modules *m = READ_ONCE(modules);

	return m && m->find(ip);
}

void trace_modules_write(trace_image_fn add, bool all)
{
	const struct trace_modules *m = READ_ONCE(modules);

	if (m)
		m->write_sideband(add, all);
}

/* Another CPU's stream at close: stopped and drained (or snapshot) there. */
static void close_remote(void *arg)
{
	struct pt_stream *st = this_cpu_ptr(pt_streams);

	if (st->aux->snapshot) {
		pt_session_snapshot((u64)st->aux->nr_pages << PAGE_SHIFT);
		pt_event_stop(&st->event, 0);
	} else {
		pt_session_stop();
		pt_session_drain();	/* what the last windows left in the ring */
	}
}

void pt_session_close(void)
{
	struct pt_session *s = &pt_session;
	struct trace_totals t = { 0 };
	unsigned int me = smp_processor_id(), cpu;
	u64 stored, unwritten;
	unsigned long f;
	int err;

	if (!s->open)
		return;
	for_each_possible_cpu(cpu) {
		struct pt_stream *st = per_cpu_ptr(pt_streams, cpu);

		if (!pt_session_has_cpu(cpu) || cpu == me)
			continue;
		if (__atomic_load_n(&st->parked, __ATOMIC_ACQUIRE)) {
			/* stopped by a panic, its trace published: written from here */
			if (st->aux->snapshot)
				snapshot_stream(st, (u64)st->aux->nr_pages << PAGE_SHIFT, true);
			else
				drain_stream(st, true);
			st->parked = false;
			continue;
		}
		if (!st->running && !st->aux->snapshot && st->aux->head == st->aux->tail)
			continue;	/* stopped and drained */
		/* its MSRs and its trace unit are that CPU's: ask it */
		if (!cpu_online(cpu) || irqs_disabled() ||
		    smp_call_function_single(cpu, close_remote, NULL, true))
			pr_err("CPU %u was tracing and cannot be asked to stop (%s): what its trace unit did not publish yet is not in the container\n",
			       cpu, cpu_online(cpu) ? "interrupts are disabled here" : "it is stopped");
	}
	if (pt_session_has_cpu(me))
		close_remote(NULL);
	if (!writer_lock(s, &f)) {
		pr_err("the container is being written on this CPU already (a panic inside a write): no trailer\n");
		return;
	}
	header_once(s, this_cpu_ptr(pt_streams)->event.hw_config | RTIT_CTL_TRACEEN);
	for_each_possible_cpu(cpu) {
		struct pt_stream *st = per_cpu_ptr(pt_streams, cpu);
		struct pt_cpu_stats ds;

		if (!pt_session_has_cpu(cpu))
			continue;
		pt_get_cpu_stats((int)cpu, &ds);
		t.pmis += ds.pmis;
		if (st->cut_pending) {
			/* the stream ended in bytes not kept: a cut at its end */
			st->lost_pending += st->cut_lost;
			st->gap_pending = true;
			st->cut_lost = 0;
			st->cut_pending = false;
		}
		if (s->cpus == 1) {
			/* dropped after the last chunk: the container's end says so */
			t.lost_at_end = st->lost_pending;
		} else if (st->lost_pending || st->gap_pending) {
			/* each CPU's own: an empty chunk that says LOST ends its stream */
			struct trace_chunk c = { .cpu = cpu, .flags = TPZ_TRACE_LOST,
						 .offset = st->stream_off + st->lost_pending,
						 .lost = st->lost_pending, .tsc = rdtsc() };

			trace_write_trace(&s->writer, &c, NULL, 0);
		}
		st->stream_off += st->lost_pending;
		st->lost_pending = 0;
		st->gap_pending = false;
	}
	t.end_tsc = rdtsc();
	trace_write_trailer(&s->writer, &t);
	err = trace_writer_sink_error(&s->writer, &stored, &unwritten);
	writer_unlock(s, f);
	if (err)
		pr_err("the sink failed (error %d) after %llu bytes of the container: the %llu bytes after them are not written, the container ends there\n",
		       err, stored, unwritten);
	for_each_possible_cpu(cpu)
		if (pt_session_has_cpu(cpu))
			per_cpu_ptr(pt_streams, cpu)->running = false;
	pt_coverage_close();
	streams_free(s);
	s->open = false;
}
