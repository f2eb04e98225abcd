// SPDX-License-Identifier: MIT
/*
 * Branch sites (see kernel/trace_engine/branch_sites.h): two open-addressing hash
 * tables keyed by address, sites and blocks, filled as traced code runs and
 * emptied, every byte restored, when tracing ends. One CPU, called from trap
 * handlers only: no locking.
 */
#include "branch_sites.h"
#include <topaz/spinlock.h>
#include <topaz/x86_insn.h>
#include <topaz/pt_model.h>
#include <topaz/paging.h>
#include <topaz/arch.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>
#include <topaz/printk.h>

struct branch_sites_table branch_sites;
static struct branch_sites_table *const bs = &branch_sites;

/*
 * Every CPU's engine shares the tables and the INT3s: a site one CPU made
 * stops every CPU that runs that branch, and each looks it up without a
 * lock (a site is complete in the table before its INT3 is written).
 * Making blocks and sites, and restoring them, is under sites_lock; the
 * INT3s stay until the last CPU that traces has stopped (@tracers).
 */
static unsigned int branch_sites_restore_locked(void);
static DEFINE_SPINLOCK(sites_lock);
static unsigned int tracers;

void branch_sites_get(void)
{
	unsigned long f = local_irq_save();

	spin_lock(&sites_lock);
	tracers++;
	spin_unlock_irqrestore(&sites_lock, f);
}

unsigned int branch_sites_put(void)
{
	unsigned long f = local_irq_save();
	unsigned int n = 0;

	spin_lock(&sites_lock);
	if (tracers && --tracers == 0)
		n = branch_sites_restore_locked();
	spin_unlock_irqrestore(&sites_lock, f);
	return n;
}

static unsigned int order_for(size_t bytes)
{
	unsigned int order = 0;

	while (((size_t)PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

/* Each table's pages also hold the list of the slots in use, so that the
 * restore at the end of a trace touches those only. */
int branch_sites_init(unsigned int max_sites)
{
	unsigned int bits = 0;
	size_t site_bytes, block_bytes;

	if (max_sites < 16 || max_sites > (1u << 20) || (max_sites & (max_sites - 1)))
		return -EINVAL;
	if (bs->sites)
		branch_sites_exit();
	while ((1u << bits) < max_sites * 2)
		bits++;
	bs->site_bits = bits;
	bs->block_bits = bits + 1;
	bs->max_sites = max_sites;
	bs->max_blocks = max_sites * 2;
	site_bytes = sizeof(struct branch_site) << bs->site_bits;
	block_bytes = sizeof(struct branch_block) << bs->block_bits;
	bs->site_order = order_for(site_bytes + sizeof(u32) * bs->max_sites);
	bs->block_order = order_for(block_bytes + sizeof(u32) * bs->max_blocks);
	bs->sites = (struct branch_site *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, bs->site_order);
	bs->blocks = (struct branch_block *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, bs->block_order);
	if (!bs->sites || !bs->blocks) {
		branch_sites_exit();
		return -ENOMEM;
	}
	bs->site_used = (u32 *)((u8 *)bs->sites + site_bytes);
	bs->block_used = (u32 *)((u8 *)bs->blocks + block_bytes);
	bs->nr_site_used = bs->nr_block_used = 0;
	memset(&bs->st, 0, sizeof(bs->st));
	return 0;
}

void branch_sites_exit(void)
{
	if (bs->sites)
		branch_sites_restore();
	if (bs->sites)
		free_pages((uintptr_t)bs->sites, bs->site_order);
	if (bs->blocks)
		free_pages((uintptr_t)bs->blocks, bs->block_order);
	bs->sites = NULL;
	bs->blocks = NULL;
}

/* Also a panic's (the trace written at the end): the lock's holder may be
 * a stopped CPU, or this one, interrupted in a block's making; the bytes go
 * back all the same (the other CPUs run no more). */
unsigned int branch_sites_restore(void)
{
	unsigned long f = local_irq_save();
	bool locked = spin_lock_unless_stuck(&sites_lock, &oops_in_progress);
	unsigned int n;

	n = branch_sites_restore_locked();
	tracers = 0;
	if (locked)
		spin_unlock(&sites_lock);
	local_irq_restore(f);
	return n;
}

static unsigned int branch_sites_restore_locked(void)
{
	unsigned int n = 0;

	if (!bs->sites)
		return 0;
	for (u32 i = 0; i < bs->nr_site_used; i++) {
		struct branch_site *s = &bs->sites[bs->site_used[i]];

		if (!s->disabled) {
			arch_text_poke(s->ip, s->orig);
			n++;
		}
		s->ip = 0;
	}
	for (u32 i = 0; i < bs->nr_block_used; i++)
		bs->blocks[bs->block_used[i]].start = 0;
	bs->nr_site_used = bs->nr_block_used = 0;
	bs->st.sites = bs->st.blocks = 0;
	return n;
}

/*
 * A block's start is its publication: written last, with release order, and
 * read with acquire order, so that another CPU that finds the start (the
 * lock-free lookup in branch_block_get()) also finds its site and count.
 * Written the other way, a CPU could see the start and a NULL site (a slot
 * still empty) while another made the block: a page fault in the #BP path.
 */
static inline u64 block_start(const struct branch_block *b)
{
	return __atomic_load_n(&b->start, __ATOMIC_ACQUIRE);
}

static struct branch_block *block_slot(u64 ip)
{
	u32 mask = (1u << bs->block_bits) - 1;

	for (u32 i = branch_sites_hash(ip, bs->block_bits);; i = (i + 1) & mask) {
		u64 start = block_start(&bs->blocks[i]);

		if (start == ip || !start)
			return &bs->blocks[i];
	}
}

void branch_site_disable(struct branch_site *s)
{
	if (s->disabled)
		return;
	arch_text_poke(s->ip, s->orig);
	s->disabled = true;
}

/*
 * Read no further than mapped bytes: the page may end the code. @followed:
 * @ip comes right after an instruction decoded here, so its page is known
 * mapped unless it begins there (a page walk per scanned instruction is
 * what made block scans costly).
 */
static int decode_bytes(u64 ip, struct x86_insn *in, bool followed, u8 *b)
{
	size_t avail = X86_INSN_MAX_LEN;
	u64 room = PAGE_SIZE - (ip & (PAGE_SIZE - 1));

	if ((!followed || room == PAGE_SIZE) && !addr_is_mapped(ip))
		return -EFAULT;
	if (room < avail && !addr_is_mapped(ip + room))
		avail = room;
	memcpy(b, (const void *)(uintptr_t)ip, avail);
	branch_sites_see_through(ip, b, 1);	/* sites are on an instruction's first byte */
	return x86_insn_decode(b, avail, in);
}

void branch_sites_see_through(u64 addr, u8 *buf, size_t n)
{
	if (!bs->sites)
		return;
	for (size_t i = 0; i < n; i++) {
		struct branch_site *s;

		if (buf[i] != BRANCH_SITE_INT3)
			continue;
		s = branch_site_slot(addr + i);
		if (s->ip == addr + i && !s->disabled)
			buf[i] = s->orig;
	}
}

static int decode(u64 ip, struct x86_insn *in, bool followed)
{
	u8 b[X86_INSN_MAX_LEN];

	return decode_bytes(ip, in, followed, b);
}

int branch_insn_decode(u64 ip, struct x86_insn *in)
{
	return decode(ip, in, false);
}

int branch_insn_read(u64 ip, u8 *bytes, struct x86_insn *in)
{
	return decode_bytes(ip, in, false, bytes);
}

enum ptm_class branch_ptm_class(const struct x86_insn *in)
{
	if (in->cls == X86_INSN_PTWRITE)
		return PTM_PTWRITE;
	switch (in->cofi) {
	case X86_COFI_NONE:
		return PTM_OTHER;
	case X86_COFI_COND:
		return PTM_COND;
	case X86_COFI_DIRECT:
		return in->cls == X86_INSN_CALL_DIRECT ? PTM_CALL : PTM_JUMP;
	case X86_COFI_INDIRECT:
		return in->cls == X86_INSN_CALL_INDIRECT ? PTM_CALL_IND : PTM_JUMP_IND;
	case X86_COFI_RET:
		return PTM_RET;
	default:
		return PTM_FAR;	/* far transfers, software interrupts, #UD forms */
	}
}

/* A site on the branch at @ip (@in decoded there), written now if new. */
static struct branch_site *site_get(u64 ip, const struct x86_insn *in, int *err)
{
	struct branch_site *s = branch_site_slot(ip), n = { .ip = ip };

	if (s->ip == ip) {
		if (s->disabled) {
			*err = -EOPNOTSUPP;	/* the CPU runs this one now */
			return NULL;
		}
		return s;
	}
	if (bs->st.sites >= bs->max_sites) {
		*err = -ENOSPC;
		return NULL;
	}
	if (branch_emul_prepare(in, ip, &n.emul)) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	n.cls = (u8)branch_ptm_class(in);
	n.orig = *(const u8 *)(uintptr_t)ip;
	/* in the table first: the poke itself may run this branch (when the
	 * traced code shares a function with the engine), and an INT3 there
	 * must be known */
	*s = n;
	if (arch_text_poke(ip, BRANCH_SITE_INT3)) {
		s->ip = 0;	/* the last slot taken: no probe runs past it */
		*err = -EPERM;
		return NULL;
	}
	bs->site_used[bs->nr_site_used++] = (u32)(s - bs->sites);
	bs->st.sites++;
	bs->st.patched++;
	return s;
}

static bool stops_here(const struct x86_insn *in)
{
	return in->cofi != X86_COFI_NONE || in->cls == X86_INSN_PTWRITE;
}

static const struct branch_block *block_get_locked(u64 ip, bool *created, int *err);

const struct branch_block *branch_block_get(u64 ip, bool *created, int *err)
{
	const struct branch_block *b;
	unsigned long f;

	*created = false;
	if (!bs->sites) {
		*err = -ENODEV;
		return NULL;
	}
	b = block_slot(ip);
	if (block_start(b) == ip && !READ_ONCE(b->site)->disabled)
		return b;	/* made already: no lock */
	f = local_irq_save();
	if (!spin_lock_or_owned(&sites_lock)) {
		/* this CPU is inside it already (a poke ran into an INT3): step it */
		local_irq_restore(f);
		*err = -EBUSY;
		return NULL;
	}
	b = block_get_locked(ip, created, err);
	spin_unlock_irqrestore(&sites_lock, f);
	return b;
}

static const struct branch_block *block_get_locked(u64 ip, bool *created, int *err)
{
	struct branch_block *b;
	struct x86_insn in;
	u64 at = ip;

	b = block_slot(ip);
	if (b->start == ip && !b->site->disabled)
		return b;
	for (unsigned int n = 0; n < BRANCH_BLOCK_MAX; n++) {
		int rc = decode(at, &in, n > 0);
		struct branch_site *s;

		if (rc) {
			*err = -EINVAL;
			return NULL;
		}
		if (!stops_here(&in)) {
			at += in.length;
			continue;
		}
		if (in.cls == X86_INSN_INT3) {
			*err = -EOPNOTSUPP;	/* an INT3 that is not ours */
			return NULL;
		}
		if (b->start != ip && bs->st.blocks >= bs->max_blocks) {
			*err = -ENOSPC;
			bs->st.full++;
			return NULL;
		}
		s = site_get(at, &in, err);
		if (!s) {
			if (*err == -ENOSPC)
				bs->st.full++;
			return NULL;
		}
		if (b->start != ip) {
			bs->block_used[bs->nr_block_used++] = (u32)(b - bs->blocks);
			bs->st.blocks++;
		}
		WRITE_ONCE(b->site, s);
		WRITE_ONCE(b->insns, n);
		__atomic_store_n(&b->start, ip, __ATOMIC_RELEASE);	/* last: see block_start() */
		*created = true;
		return b;
	}
	*err = -ENOENT;
	return NULL;
}

unsigned int branch_block_count(u64 start, u64 upto, unsigned int max)
{
	struct x86_insn in;
	unsigned int n = 0;

	for (u64 at = start; at != upto && n < max; at += in.length, n++)
		if (decode(at, &in, n > 0))
			return max;
	return n;
}

void branch_sites_get_stats(struct branch_sites_stats *st)
{
	*st = bs->st;
}
