// SPDX-License-Identifier: MIT
/*
 * In-kernel tests of the CPUs (test=smp): every CPU the boot brought up
 * answers calls and jobs as itself, locks exclude across CPUs, and the page
 * and slab allocators stay whole with several CPUs at once, remote frees and
 * the debugging checks included. On one CPU they test the same calls there.
 */
#include <topaz/ktest.h>
#include <topaz/kernel.h>
#include <topaz/smp.h>
#include <topaz/spinlock.h>
#include <topaz/apic.h>
#include <topaz/arch.h>
#include <topaz/mm.h>
#include <topaz/slab.h>
#include <topaz/time.h>

static char out[4096];

struct whoami {
	u32 cpu[NR_CPUS];	/* smp_processor_id() + 1, as each CPU answered */
	u32 apic[NR_CPUS];
	u64 gs_self[NR_CPUS];
	u32 irqs_off[NR_CPUS];
};

static void who(void *arg)
{
	struct whoami *w = arg;
	unsigned int cpu = smp_processor_id();
	struct percpu_hdr *h = per_cpu_ptr(percpu_hdrs, cpu);

	w->cpu[cpu] = cpu + 1;
	w->apic[cpu] = apic_id();
	w->gs_self[cpu] = (u64)(uintptr_t)h->self;
	w->irqs_off[cpu] = irqs_disabled();
}

KTEST(smp, every_cpu_online)
{
	unsigned int cpu;

	KT_EXPECT_EQ(num_online_cpus(), nr_cpu_ids);
	KT_EXPECT(cpu_online(0));
	for_each_online_cpu(cpu)
		KT_EXPECT(cpu < nr_cpu_ids);
}

KTEST(smp, call_single_runs_there)
{
	static struct whoami w;
	unsigned int cpu;

	memset(&w, 0, sizeof(w));
	for_each_online_cpu(cpu)
		KT_EXPECT_EQ(smp_call_function_single(cpu, who, &w, true), 0);
	for_each_online_cpu(cpu) {
		KT_EXPECT_EQ(w.cpu[cpu], cpu + 1);
		KT_EXPECT_EQ(w.apic[cpu], cpu_apic_id(cpu));
		KT_EXPECT_EQ(w.gs_self[cpu], (u64)(uintptr_t)per_cpu_ptr(percpu_hdrs, cpu));
		KT_EXPECT_EQ(w.irqs_off[cpu], 1);	/* calls run with interrupts disabled */
	}
}

KTEST(smp, jobs_run_with_interrupts_on)
{
	static struct whoami w;
	unsigned int cpu;

	memset(&w, 0, sizeof(w));
	KT_EXPECT_EQ(run_on_each_cpu(who, &w), num_online_cpus());
	for_each_online_cpu(cpu) {
		KT_EXPECT_EQ(w.cpu[cpu], cpu + 1);
		KT_EXPECT_EQ(w.irqs_off[cpu], 0);
	}
}

/*
 * A wait for a job another CPU runs for 50 ms: smp_wait_relax() (as
 * run_on_cpu_wait() and call_wait() wait) PAUSEs a few times, then HLTs,
 * woken by the timer and the job's end: a bounded number of turns, where a
 * PAUSE loop turns as long as the job runs (a wait in traced code, a trace
 * as long as the host keeps the other CPU from running).
 */
#define SLOW_JOB_MS 50
static u32 slow_done;

static void slow_job(void *arg)
{
	u64 end = rdtsc() + SLOW_JOB_MS * tsc_khz;

	while (rdtsc() < end)
		cpu_relax();
	__atomic_store_n(&slow_done, 1, __ATOMIC_RELEASE);
}

KTEST(smp, a_wait_for_another_cpu_sleeps)
{
	unsigned int me = smp_processor_id(), cpu, other = NR_CPUS, spins = 0;
	u64 turns = 0;

	for_each_online_cpu(cpu) {
		if (cpu != me && other == NR_CPUS)
			other = cpu;
	}
	if (other == NR_CPUS)
		return;	/* one CPU: nothing to wait for */
	slow_done = 0;
	KT_ASSERT(run_on_cpu(other, slow_job, NULL) == 0);
	while (!__atomic_load_n(&slow_done, __ATOMIC_ACQUIRE)) {
		smp_wait_relax(&spins);
		turns++;
	}
	run_on_cpu_wait(other);
	/* the PAUSEs, then a turn a tick (HZ) and a few other interrupts */
	if (turns > SMP_WAIT_SPINS + SLOW_JOB_MS * HZ / 1000 + 40)
		printk("smp: waiting %d ms for CPU %u took %llu turns\n", SLOW_JOB_MS, other, turns);
	KT_EXPECT(turns <= SMP_WAIT_SPINS + SLOW_JOB_MS * HZ / 1000 + 40);
}

/*
 * A wake-up IPI taken between a waiter's check and its HLT (here one this
 * CPU sends itself with interrupts off, taken as they come back on): the
 * next smp_wait_relax() turn must not sleep through it until the timer's
 * tick. Counted in ticks (jiffies), not timed: a tick may fall inside a turn
 * now and then, where sleeping through the wake-up meets one every time.
 */
KTEST(smp, a_wakeup_before_the_hlt_is_not_slept_through)
{
	unsigned int me = smp_processor_id(), slept = 0;

	for (int i = 0; i < 8; i++) {
		unsigned int spins = 0;
		unsigned long f;
		u64 j;

		while (spins < SMP_WAIT_SPINS)
			smp_wait_relax(&spins);	/* the PAUSE turns: the next one may HLT */
		f = local_irq_save();
		apic_send_ipi(cpu_apic_id(me), APIC_DM_FIXED | APIC_INT_ASSERT | CALL_FUNCTION_VECTOR);
		local_irq_restore(f);	/* taken here, after the caller's check */
		j = jiffies;
		smp_wait_relax(&spins);
		slept += jiffies != j;
	}
	if (slept >= 4)
		printk("smp: %u of 8 waits slept through a wake-up until the tick\n", slept);
	KT_EXPECT(slept < 4);
}

KTEST(smp, calls_refused_with_interrupts_off_or_offline)
{
	static struct whoami w;
	unsigned long f;
	int r = 0;

	memset(&w, 0, sizeof(w));
	KT_EXPECT_EQ(smp_call_function_single(NR_CPUS - 1, who, &w, true), -22);	/* offline */
	KT_EXPECT_EQ(run_on_cpu(NR_CPUS - 1, who, &w), -22);
	if (num_online_cpus() > 1) {
		printk_capture_start(out, sizeof(out));
		f = local_irq_save();
		r = smp_call_function_single(1, who, &w, true);
		local_irq_restore(f);
		printk_capture_stop();
		KT_EXPECT_EQ(r, -22);
		KT_EXPECT_STR(out, "with interrupts disabled");
		KT_EXPECT_EQ(w.cpu[1], 0);
	}
}

static DEFINE_SPINLOCK(count_lock);
static u64 counter, counter_per_cpu[NR_CPUS];
#define SPINS 20000

static void count_locked(void *arg)
{
	for (int i = 0; i < SPINS; i++) {
		unsigned long f;

		spin_lock_irqsave(&count_lock, f);
		counter = counter + 1;	/* a plain read-modify-write: only the lock keeps it exact */
		spin_unlock_irqrestore(&count_lock, f);
	}
	counter_per_cpu[smp_processor_id()] += SPINS;
}

KTEST(smp, spinlock_excludes_across_cpus)
{
	unsigned int ran;

	counter = 0;
	ran = run_on_each_cpu(count_locked, NULL);
	KT_EXPECT_EQ(ran, num_online_cpus());
	KT_EXPECT_EQ(counter, (u64)SPINS * ran);
	KT_EXPECT(!spin_is_locked_by_me(&count_lock));
	KT_EXPECT_EQ(spin_lock_owner(&count_lock), -1);
	/* the NMI rule: this CPU taking a lock it holds is told, not stuck */
	spin_lock(&count_lock);
	KT_EXPECT(!spin_lock_or_owned(&count_lock));
	KT_EXPECT_EQ(spin_lock_owner(&count_lock), smp_processor_id());
	spin_unlock(&count_lock);
}

struct page_churn {
	u64 errors[NR_CPUS], ops[NR_CPUS];
};

static void page_churn(void *arg)
{
	struct page_churn *c = arg;
	unsigned int cpu = smp_processor_id();
	uintptr_t held[16] = { 0 };
	u32 seed = 77 + cpu;

	for (int i = 0; i < 3000; i++) {
		unsigned int slot = i & 15, order = (seed >> 20) % 4;

		seed = seed * 1103515245u + 12345u;
		if (held[slot]) {
			/* the stamp: nobody else was given these pages meanwhile */
			if (*(u64 *)held[slot] != ((u64)cpu << 32 | slot))
				c->errors[cpu]++;
			free_pages(held[slot], *(u32 *)(held[slot] + 8));
			held[slot] = 0;
		} else {
			held[slot] = __get_free_pages(GFP_KERNEL, order);
			if (!held[slot]) {
				c->errors[cpu]++;
				continue;
			}
			*(u64 *)held[slot] = (u64)cpu << 32 | slot;
			*(u32 *)(held[slot] + 8) = order;
		}
		c->ops[cpu]++;
	}
	for (int s = 0; s < 16; s++)
		if (held[s])
			free_pages(held[s], *(u32 *)(held[s] + 8));
}

KTEST(smp, page_allocator_from_every_cpu)
{
	static struct page_churn c;
	struct page_alloc_stats before, after;
	unsigned int cpu;

	memset(&c, 0, sizeof(c));
	page_alloc_get_stats(&before);
	run_on_each_cpu(page_churn, &c);
	page_alloc_get_stats(&after);
	for_each_online_cpu(cpu) {
		KT_EXPECT_EQ(c.errors[cpu], 0);
		KT_EXPECT_EQ(c.ops[cpu], 3000);
	}
	KT_EXPECT_EQ(after.free_pages, before.free_pages);
	KT_EXPECT_EQ(after.bad_frees, before.bad_frees);
}

struct remote {
	struct kmem_cache *s;
	void *objs[256];
	unsigned int n;
};

static void remote_alloc(void *arg)
{
	struct remote *r = arg;

	for (unsigned int i = 0; i < r->n; i++)
		r->objs[i] = kmem_cache_alloc(r->s, GFP_KERNEL);
}

static void remote_free(void *arg)
{
	struct remote *r = arg;

	for (unsigned int i = 0; i < r->n; i++)
		kmem_cache_free(r->s, r->objs[i]);
}

static unsigned int other_cpu(void)
{
	unsigned int cpu;

	for_each_online_cpu(cpu)
		if (cpu != smp_processor_id())
			return cpu;
	return smp_processor_id();
}

KTEST(smp, slab_remote_free_and_shrink_every_array)
{
	static struct remote r;
	struct page_alloc_stats before, after;
	struct slabinfo si;
	unsigned int there = other_cpu();

	kmem_cache_init();
	page_alloc_get_stats(&before);
	r.s = kmem_cache_create("kt-remote", 96, 0, 0, NULL);
	r.n = 200;
	KT_ASSERT(r.s);
	remote_alloc(&r);	/* here */
	for (unsigned int i = 0; i < r.n; i++)
		KT_ASSERT(r.objs[i]);
	KT_EXPECT_EQ(run_on_cpu(there, remote_free, &r), 0);	/* freed on the other CPU */
	run_on_cpu_wait(there);
	kmem_cache_get_slabinfo(r.s, &si);
	KT_EXPECT_EQ(si.active_objs, 0);
	KT_EXPECT(si.cpu_cached > 0);	/* they wait in that CPU's array */
	KT_EXPECT(kmem_cache_shrink(r.s) > 0);
	kmem_cache_get_slabinfo(r.s, &si);
	KT_EXPECT_EQ(si.cpu_cached, 0);	/* every CPU's array emptied */
	KT_EXPECT_EQ(si.num_slabs, 0);
	kmem_cache_destroy(r.s);
	page_alloc_get_stats(&after);
	KT_EXPECT_EQ(after.free_pages, before.free_pages);
}

KTEST(smp, slab_debug_catches_double_free_across_cpus)
{
	static struct remote r;
	unsigned int there = other_cpu();
	u64 errs;

	kmem_cache_init();
	r.s = kmem_cache_create("kt-remote-dbg", 64, 0, SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER, NULL);
	r.n = 1;
	KT_ASSERT(r.s);
	remote_alloc(&r);
	KT_ASSERT(r.objs[0]);
	run_on_cpu(there, remote_free, &r);
	run_on_cpu_wait(there);
	errs = slab_debug_errors();
	printk_capture_start(out, sizeof(out));
	remote_free(&r);	/* again, here */
	printk_capture_stop();
	KT_EXPECT_EQ(slab_debug_errors(), errs + 1);
	KT_EXPECT_STR(out, "BUG kt-remote-dbg: Double free");
	KT_EXPECT_EQ(kmem_cache_validate(r.s), 0);
	kmem_cache_destroy(r.s);
}
