// SPDX-License-Identifier: MIT
/* A slab-allocator stress: kmalloc/kfree churn over the size classes and a
 * cache of its own, so allocator paths show up in the trace. */
#include <topaz/workload.h>
#include <topaz/slab.h>
#include <topaz/kernel.h>

struct item {
	u64 key;
	struct item *next;
};

static u64 work_slab(void)
{
	static void *live[64];
	struct kmem_cache *c = kmem_cache_create("wl-item", sizeof(struct item), 0, 0, NULL);
	struct item *head = NULL;
	u32 seed = 1;
	u64 sum = 0;

	if (!c)
		return 0;
	for (int i = 0; i < 256; i++) {
		unsigned int slot = i & 63;

		seed = seed * 1103515245u + 12345u;
		kfree(live[slot]);
		live[slot] = kmalloc(8u << ((seed >> 16) % 8), GFP_KERNEL);
		if (live[slot])
			sum += ksize(live[slot]);
		struct item *it = kmem_cache_alloc(c, GFP_KERNEL);
		if (it) {
			it->key = seed;
			it->next = head;
			head = it;
		}
	}
	while (head) {
		struct item *n = head->next;

		sum ^= head->key;
		kmem_cache_free(c, head);
		head = n;
	}
	for (int i = 0; i < 64; i++) {
		kfree(live[i]);
		live[i] = NULL;
	}
	kmem_cache_destroy(c);
	return sum;
}
WORKLOAD(slab, work_slab, "kmalloc/kfree churn over the size classes and a private cache");
