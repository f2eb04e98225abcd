// SPDX-License-Identifier: MIT
/*
 * Workloads that run on every online CPU at once (run_on_each_cpu()): a
 * parallel sort, a slab stress whose objects are freed on another CPU than
 * the one that allocated them, and IPIs between every pair of CPUs. Each
 * checks its own result and says what each CPU did; on one CPU they still
 * run (the parallel part is the boot CPU's alone).
 */
#include <topaz/workload.h>
#include <topaz/smp.h>
#include <topaz/slab.h>
#include <topaz/mm.h>
#include <topaz/spinlock.h>
#include <topaz/kernel.h>
#include <topaz/time.h>
#include <topaz/arch.h>

#define PSORT_KEYS	4096

static u32 *keys, *merged;	/* page-allocated: a static array would grow the image */
#define PSORT_ORDER	2	/* 16 KiB: PSORT_KEYS keys */

struct psort {
	unsigned int ncpus;
	u32 begin[NR_CPUS], end[NR_CPUS];
	u32 ran_on[NR_CPUS];	/* which CPU sorted part i, + 1 */
	u32 next;		/* parts handed out */
};

static void sift_down(u32 *a, u32 root, u32 n)
{
	for (u32 child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && a[child + 1] > a[child])
			child++;
		if (a[root] >= a[child])
			return;
		u32 t = a[root];
		a[root] = a[child];
		a[child] = t;
	}
}

static void heap_sort(u32 *a, u32 n)
{
	for (u32 i = n / 2; i-- > 0;)
		sift_down(a, i, n);
	for (u32 i = n; i-- > 1;) {
		u32 t = a[0];
		a[0] = a[i];
		a[i] = t;
		sift_down(a, 0, i);
	}
}

static void psort_part(void *arg)
{
	struct psort *p = arg;
	u32 part = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);

	if (part >= p->ncpus)
		return;
	heap_sort(keys + p->begin[part], p->end[part] - p->begin[part]);
	p->ran_on[part] = smp_processor_id() + 1;
}

/* Sort 4 Ki keys in one part per CPU, merge on this CPU, check the result. */
static u64 work_psort(void)
{
	static struct psort p;
	u64 sum_in = 0, sum_out = 0, x_in = 0, x_out = 0, check = 0;
	u32 seed = 12345, pos[NR_CPUS];
	unsigned int n = num_online_cpus(), ran;
	bool sorted = true;

	keys = (u32 *)__get_free_pages(GFP_KERNEL, PSORT_ORDER);
	merged = (u32 *)__get_free_pages(GFP_KERNEL, PSORT_ORDER);
	if (!keys || !merged) {
		printk(KERN_ERR "psort: no memory for the keys\n");
		free_pages((uintptr_t)keys, PSORT_ORDER);	/* free_pages(0) does nothing */
		free_pages((uintptr_t)merged, PSORT_ORDER);
		return 0;
	}
	memset(&p, 0, sizeof(p));
	p.ncpus = n;
	for (u32 i = 0; i < PSORT_KEYS; i++) {
		seed = seed * 1103515245u + 12345u;
		keys[i] = seed >> 3;
		sum_in += keys[i];
		x_in ^= (u64)keys[i] * 0x9e3779b97f4a7c15ull;
	}
	for (unsigned int i = 0; i < n; i++) {
		p.begin[i] = (u32)((u64)PSORT_KEYS * i / n);
		p.end[i] = (u32)((u64)PSORT_KEYS * (i + 1) / n);
		pos[i] = p.begin[i];
	}
	ran = run_on_each_cpu(psort_part, &p);
	/* k-way merge of the sorted parts */
	for (u32 o = 0; o < PSORT_KEYS; o++) {
		unsigned int best = n;

		for (unsigned int i = 0; i < n; i++)
			if (pos[i] < p.end[i] && (best == n || keys[pos[i]] < keys[pos[best]]))
				best = i;
		merged[o] = keys[pos[best]++];
	}
	for (u32 i = 0; i < PSORT_KEYS; i++) {
		sum_out += merged[i];
		x_out ^= (u64)merged[i] * 0x9e3779b97f4a7c15ull;
		if (i && merged[i - 1] > merged[i])
			sorted = false;
		check = check * 31 + merged[i];
	}
	printk("psort: %u keys in %u parts on %u CPUs:", PSORT_KEYS, n, ran);
	for (unsigned int i = 0; i < n; i++)
		pr_cont(" part %u on CPU %d", i, (int)p.ran_on[i] - 1);
	pr_cont("; %s\n", sorted && sum_in == sum_out && x_in == x_out ? "sorted, a permutation of the input" :
		"NOT SORTED or not a permutation: FAILED");
	free_pages((uintptr_t)keys, PSORT_ORDER);
	free_pages((uintptr_t)merged, PSORT_ORDER);
	return sorted && sum_in == sum_out && x_in == x_out ? check : 0;
}
WORKLOAD_ALL_CPUS(psort, work_psort, "parallel sort: one part per online CPU, merged on the boot CPU");

/* ------------------------------------------------------------------ slab across CPUs */

#define XFREE_OBJS	512
#define XFREE_ROUNDS	8

struct xobj {
	u32 cpu, round, index, magic;
	u64 pad[4];
};
#define XOBJ_MAGIC 0x58637075u

struct xfree {
	struct kmem_cache *cache;
	unsigned int ncpus, round;
	struct xobj *(*objs)[XFREE_OBJS];	/* [online index of the allocating CPU] */
	u64 allocated[NR_CPUS], freed[NR_CPUS], bad[NR_CPUS], failed[NR_CPUS];
};

static unsigned int online_index(unsigned int cpu)
{
	unsigned int i = 0;

	for (unsigned int c = 0; c < cpu; c++)
		i += cpu_online(c);
	return i;
}

static void xfree_alloc(void *arg)
{
	struct xfree *x = arg;
	unsigned int cpu = smp_processor_id(), me = online_index(cpu);

	for (u32 i = 0; i < XFREE_OBJS; i++) {
		struct xobj *o = kmem_cache_alloc(x->cache, GFP_KERNEL);

		x->objs[me][i] = o;
		if (!o) {
			x->failed[cpu]++;
			continue;
		}
		*o = (struct xobj){ .cpu = cpu, .round = x->round, .index = i, .magic = XOBJ_MAGIC };
		x->allocated[cpu]++;
	}
}

/* Free what the next CPU allocated: every object goes back on another CPU. */
static void xfree_free(void *arg)
{
	struct xfree *x = arg;
	unsigned int cpu = smp_processor_id(), me = online_index(cpu);
	unsigned int from = (me + 1) % x->ncpus;

	for (u32 i = 0; i < XFREE_OBJS; i++) {
		struct xobj *o = x->objs[from][i];

		if (!o)
			continue;
		/* handed out twice, or written by someone else: the stamp says so */
		if (o->magic != XOBJ_MAGIC || o->round != x->round || o->index != i)
			x->bad[cpu]++;
		o->magic = 0;
		kmem_cache_free(x->cache, o);
		x->freed[cpu]++;
	}
}

static u64 work_slab_xcpu(void)
{
	static struct xfree x;
	struct page_alloc_stats before, after;
	u64 alloc = 0, freed = 0, bad = 0, failed = 0;
	unsigned int cpu, objs_order;
	bool ok;

	memset(&x, 0, sizeof(x));
	x.ncpus = num_online_cpus();
	page_alloc_get_stats(&before);
	objs_order = get_order(x.ncpus * sizeof(*x.objs));
	x.objs = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, objs_order);
	x.cache = kmem_cache_create("wl-xcpu", sizeof(struct xobj), 0, 0, NULL);
	if (!x.cache || !x.objs) {
		free_pages((uintptr_t)x.objs, objs_order);
		kmem_cache_destroy(x.cache);
		return 0;
	}
	for (x.round = 0; x.round < XFREE_ROUNDS; x.round++) {
		run_on_each_cpu(xfree_alloc, &x);
		run_on_each_cpu(xfree_free, &x);
	}
	kmem_cache_destroy(x.cache);	/* shrinks every CPU's array first */
	free_pages((uintptr_t)x.objs, objs_order);
	page_alloc_get_stats(&after);
	for_each_online_cpu(cpu) {
		alloc += x.allocated[cpu];
		freed += x.freed[cpu];
		bad += x.bad[cpu];
		failed += x.failed[cpu];
	}
	ok = alloc == freed && !bad && !failed && after.free_pages == before.free_pages;
	printk("slab_xcpu: %u CPUs, %u rounds: %llu objects allocated, %llu freed on the next CPU, "
	       "%llu bad stamps, %llu failures; free pages %llu before, %llu after: %s\n",
	       x.ncpus, XFREE_ROUNDS, alloc, freed,
	       bad, failed,
	       before.free_pages, after.free_pages,
	       ok ? "ok" : "FAILED");
	return ok ? alloc : 0;
}
WORKLOAD_ALL_CPUS(slab_xcpu, work_slab_xcpu, "slab stress: objects allocated on one CPU, freed on another");

/* ------------------------------------------------------------------ IPIs */

#define IPI_ROUNDS 64	/* each posted to every other CPU, waited for every other time */

static DEFINE_PER_CPU(u64, ipi_calls);	/* calls each CPU made for another */

static void ipi_count(void *arg)
{
	__atomic_fetch_add(this_cpu_ptr(ipi_calls), 1, __ATOMIC_RELAXED);
}

static void ipi_sender(void *arg)
{
	unsigned int me = smp_processor_id(), cpu;

	for (int r = 0; r < IPI_ROUNDS; r++)
		for_each_online_cpu(cpu) {
			if (cpu != me)
				smp_call_function_single(cpu, ipi_count, NULL, r & 1);
		}
}

static u64 work_ipi(void)
{
	unsigned int n = num_online_cpus(), cpu;
	u64 want = (u64)IPI_ROUNDS * (n - 1), total = 0;
	bool ok = true;

	for_each_online_cpu(cpu)
		*per_cpu_ptr(ipi_calls, cpu) = 0;
	run_on_each_cpu(ipi_sender, NULL);
	/* the last calls were posted without waiting: wait for each CPU to make them */
	for_each_online_cpu(cpu) {
		u64 end = rdtsc() + 1000 * tsc_khz;
		unsigned int spins = 0;

		while (__atomic_load_n(per_cpu_ptr(ipi_calls, cpu), __ATOMIC_ACQUIRE) < want && rdtsc() < end)
			smp_wait_relax(&spins);
	}
	printk("ipi: %u CPUs each sent %d calls to every other:", n, IPI_ROUNDS);
	for_each_online_cpu(cpu) {
		pr_cont(" CPU %u made %llu", cpu, *per_cpu_ptr(ipi_calls, cpu));
		ok &= *per_cpu_ptr(ipi_calls, cpu) == want;
		total += *per_cpu_ptr(ipi_calls, cpu);
	}
	pr_cont(" (want %llu each): %s\n", want, ok ? "ok" : "FAILED");
	return ok ? total : 0;
}
WORKLOAD_ALL_CPUS(ipi, work_ipi, "IPIs: every CPU calls a function on every other CPU");

/* ------------------------------------------------------------ a fault on one CPU */

static u32 xfault_started;

static __noinline u64 xfault_walk(const u64 *p, int n)
{
	u64 sum = 0;

	for (int i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

/* The last CPU faults once every CPU runs; the others keep running traced code. */
static void xfault_part(void *arg)
{
	static u64 table[16] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	unsigned int me = smp_processor_id(), last = 0, cpu, spins = 0;
	u64 *sum = arg;

	for_each_online_cpu(cpu)
		last = cpu;
	__atomic_fetch_add(&xfault_started, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&xfault_started, __ATOMIC_ACQUIRE) < num_online_cpus())
		smp_wait_relax(&spins);
	for (int i = 0; i < 2000; i++)	/* enough trace for PMIs first */
		sum[me] += xfault_walk(table, 16);
	if (me == last) {
		const u64 *volatile nowhere = NULL;

		sum[me] += xfault_walk(nowhere, 1);
		return;
	}
	/* until the panic's NMI stops this CPU: traced, but in HLT (as long
	 * as the host takes to run the last CPU's walks, not a loop as long) */
	spins = 0;
	for (;;)
		smp_wait_relax(&spins);
}

static u64 work_xfault(void)
{
	static u64 sums[NR_CPUS];

	xfault_started = 0;
	run_on_each_cpu(xfault_part, sums);
	return sums[0];	/* not reached: the last CPU panics */
}
WORKLOAD_ALL_CPUS(xfault, work_xfault,
		  "every CPU runs, the last one faults (a panic while all CPUs trace)");
