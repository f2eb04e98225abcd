// SPDX-License-Identifier: MIT
/*
 * The guarded heap's bookkeeping (fw.fuzz.guard=pool, docs/fuzzing.md), as
 * EDK2's HeapGuard lays allocations out: each one's last byte (less the
 * padding to its alignment) ends a page, and a not-present guard page
 * follows. Freed allocations are not present while they are among the last
 * FUZZ_GUARD_QUARANTINE frees (a read after free faults until then), and
 * stay so until reused. Pages never used keep the mapping the arena came
 * with: a firmware (EDK2's CpuDxe) cannot map 4 KiB of a 2 MiB page it
 * unmapped whole. The arena is taken next-fit from where the last allocation
 * ended, which also puts off reusing freed pages. No firmware here: the
 * caller's @protect changes the page tables.
 */
#include <topaz/fuzz.h>
#include <topaz/errno.h>
#include <topaz/slab.h>
#include <topaz/string.h>

#define NO_SLOT	(~0u)

int fuzz_guard_init(struct fuzz_guard_heap *h, u64 base, u32 npages,
		    int (*protect)(void *ctx, u64 addr, u64 len, bool present), void *ctx)
{
	memset(h, 0, sizeof(*h));
	if ((base & (FUZZ_GUARD_PAGE - 1)) || npages < 2 || !protect)
		return -EINVAL;
	h->base = base;
	h->npages = npages;
	h->nslots = npages / 2;	/* each allocation holds at least 2 pages */
	h->owner = kmalloc((size_t)npages * sizeof(*h->owner), GFP_KERNEL);
	h->slot = kzalloc((size_t)h->nslots * sizeof(*h->slot), GFP_KERNEL);
	if (!h->owner || !h->slot) {
		fuzz_guard_destroy(h);
		return -ENOMEM;
	}
	for (u32 i = 0; i < npages; i++)
		h->owner[i] = NO_SLOT;
	h->protect = protect;
	h->ctx = ctx;
	return 0;
}

void fuzz_guard_destroy(struct fuzz_guard_heap *h)
{
	kfree(h->owner);
	kfree(h->slot);
	h->owner = NULL;
	h->slot = NULL;
	h->npages = h->nslots = 0;
}

/* @need free pages in a row, next-fit from the cursor: the first page, or NO_SLOT. */
static u32 find_run(const struct fuzz_guard_heap *h, u32 need)
{
	for (u32 pass = 0; pass < 2; pass++) {
		u32 run = 0, from = pass ? 0 : h->cursor, to = pass ? h->cursor + need : h->npages;

		if (to > h->npages)
			to = h->npages;
		for (u32 i = from; i < to; i++) {
			run = h->owner[i] == NO_SLOT ? run + 1 : 0;
			if (run == need)
				return i + 1 - need;
		}
	}
	return NO_SLOT;
}

u64 fuzz_guard_alloc(struct fuzz_guard_heap *h, u64 size, u32 align, bool pages_api)
{
	u64 pages, page, rounded;
	u32 first, s;

	if (!h->owner || !align || (align & (align - 1)) || align > FUZZ_GUARD_PAGE)
		return 0;
	if (pages_api && (!size || (size & (FUZZ_GUARD_PAGE - 1))))
		return 0;
	rounded = (size + align - 1) & ~(u64)(align - 1);
	if (rounded < size)
		return 0;	/* wrapped */
	pages = rounded ? (rounded + FUZZ_GUARD_PAGE - 1) / FUZZ_GUARD_PAGE : 1;
	if (pages >= h->npages)
		return 0;
	for (s = 0; s < h->nslots && h->slot[s].state != FUZZ_GA_UNUSED; s++)
		;
	first = find_run(h, (u32)pages + 1);
	if (s == h->nslots || first == NO_SLOT)
		return 0;
	page = h->base + (u64)first * FUZZ_GUARD_PAGE;
	if (h->protect(h->ctx, page, pages * FUZZ_GUARD_PAGE, true) ||
	    h->protect(h->ctx, page + pages * FUZZ_GUARD_PAGE, FUZZ_GUARD_PAGE, false))
		return 0;
	for (u32 i = first; i <= first + pages; i++)
		h->owner[i] = s;	/* the guard page too: an overflow names its allocation */
	h->slot[s] = (struct fuzz_guard_alloc){
		.addr = page + pages * FUZZ_GUARD_PAGE - rounded, .size = size, .page = page,
		.pages = (u32)pages, .state = FUZZ_GA_LIVE, .pages_api = pages_api,
	};
	h->cursor = first + (u32)pages + 1;
	if (h->cursor >= h->npages)
		h->cursor = 0;
	h->live++;
	return h->slot[s].addr;
}

/* The oldest quarantined allocation's pages are free again (still not present). */
static void release_oldest(struct fuzz_guard_heap *h)
{
	struct fuzz_guard_alloc *a = &h->slot[h->quarantine[h->q_head]];
	u32 first = (u32)((a->page - h->base) / FUZZ_GUARD_PAGE);

	for (u32 i = first; i <= first + a->pages; i++)
		h->owner[i] = NO_SLOT;
	a->state = FUZZ_GA_UNUSED;
	h->q_head = (h->q_head + 1) % FUZZ_GUARD_QUARANTINE;
	h->q_n--;
}

static bool in_arena(const struct fuzz_guard_heap *h, u64 addr)
{
	return h->owner && addr >= h->base && addr - h->base < (u64)h->npages * FUZZ_GUARD_PAGE;
}

int fuzz_guard_free(struct fuzz_guard_heap *h, u64 addr, bool pages_api,
		    const struct fuzz_guard_alloc **what)
{
	struct fuzz_guard_alloc *a;
	u32 s;

	*what = NULL;
	if (!in_arena(h, addr))
		return -ENOENT;
	s = h->owner[(addr - h->base) / FUZZ_GUARD_PAGE];
	if (s == NO_SLOT)
		return -EINVAL;
	a = &h->slot[s];
	*what = a;
	if (a->addr != addr)
		return -EINVAL;
	if (a->state == FUZZ_GA_FREED)
		return -EALREADY;
	if (a->pages_api != pages_api)
		return -EINVAL;
	if (h->protect(h->ctx, a->page, (u64)a->pages * FUZZ_GUARD_PAGE, false))
		return -EIO;
	a->state = FUZZ_GA_FREED;
	a->freed_at = ++h->frees;
	h->live--;
	if (h->q_n == FUZZ_GUARD_QUARANTINE)
		release_oldest(h);
	h->quarantine[(h->q_head + h->q_n++) % FUZZ_GUARD_QUARANTINE] = s;
	return 0;
}

enum fuzz_guard_hit fuzz_guard_lookup(const struct fuzz_guard_heap *h, u64 addr,
				      const struct fuzz_guard_alloc **what)
{
	const struct fuzz_guard_alloc *a;
	u32 s;

	*what = NULL;
	if (!in_arena(h, addr))
		return FUZZ_GUARD_OUTSIDE;
	s = h->owner[(addr - h->base) / FUZZ_GUARD_PAGE];
	if (s == NO_SLOT)
		return FUZZ_GUARD_WILD;
	a = *what = &h->slot[s];
	if (a->state == FUZZ_GA_FREED)
		return FUZZ_GUARD_UAF;
	if (addr >= a->addr + a->size)
		return FUZZ_GUARD_OVERFLOW;
	return addr >= a->addr ? FUZZ_GUARD_INSIDE : FUZZ_GUARD_UNDERFLOW;
}
