// SPDX-License-Identifier: MIT
/*
 * Branch sites (see include/topaz/branch_sites.h): two open-addressing hash
 * tables keyed by address, sites and blocks, filled as traced code runs and
 * emptied, every byte restored, when tracing ends. One CPU, called from trap
 * handlers only: no locking.
 */
#include <topaz/branch_sites.h>
#include <topaz/x86_insn.h>
#include <topaz/pt_model.h>
#include <topaz/paging.h>
#include <topaz/arch.h>
#include <topaz/mm.h>
#include <topaz/errno.h>
#include <topaz/kernel.h>

#define INT3	0xcc

struct branch_sites_table branch_sites;

static unsigned int order_for(size_t bytes)
{
	unsigned int order = 0;

	while (((size_t)PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

int branch_sites_init(unsigned int max_sites)
{
	unsigned int bits = 0;

	if (max_sites < 16 || max_sites > (1u << 20) || (max_sites & (max_sites - 1)))
		return -EINVAL;
	if (branch_sites.sites)
		branch_sites_exit();
	while ((1u << bits) < max_sites * 2)
		bits++;
	branch_sites.site_bits = bits;
	branch_sites.block_bits = bits + 1;
	branch_sites.max_sites = max_sites;
	branch_sites.max_blocks = max_sites * 2;
	branch_sites.site_order = order_for(sizeof(struct branch_site) << branch_sites.site_bits);
	branch_sites.block_order = order_for(sizeof(struct branch_block) << branch_sites.block_bits);
	branch_sites.sites = (struct branch_site *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, branch_sites.site_order);
	branch_sites.blocks = (struct branch_block *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, branch_sites.block_order);
	if (!branch_sites.sites || !branch_sites.blocks) {
		branch_sites_exit();
		return -ENOMEM;
	}
	memset(&branch_sites.st, 0, sizeof(branch_sites.st));
	return 0;
}

void branch_sites_exit(void)
{
	if (branch_sites.sites)
		branch_sites_restore();
	if (branch_sites.sites)
		free_pages((uintptr_t)branch_sites.sites, branch_sites.site_order);
	if (branch_sites.blocks)
		free_pages((uintptr_t)branch_sites.blocks, branch_sites.block_order);
	branch_sites.sites = NULL;
	branch_sites.blocks = NULL;
}

unsigned int branch_sites_restore(void)
{
	unsigned int n = 0;

	if (!branch_sites.sites)
		return 0;
	for (u32 i = 0; i < (1u << branch_sites.site_bits); i++) {
		struct branch_site *s = &branch_sites.sites[i];

		if (!s->ip)
			continue;
		if (!s->disabled) {
			arch_text_poke(s->ip, s->orig);
			n++;
		}
		s->ip = 0;
	}
	memset(branch_sites.blocks, 0, sizeof(struct branch_block) << branch_sites.block_bits);
	branch_sites.st.sites = branch_sites.st.blocks = 0;
	return n;
}

static struct branch_block *block_slot(u64 ip)
{
	u32 mask = (1u << branch_sites.block_bits) - 1;

	for (u32 i = branch_sites_hash(ip, branch_sites.block_bits);; i = (i + 1) & mask)
		if (branch_sites.blocks[i].start == ip || !branch_sites.blocks[i].start)
			return &branch_sites.blocks[i];
}

void branch_site_disable(struct branch_site *s)
{
	if (s->disabled)
		return;
	arch_text_poke(s->ip, s->orig);
	s->disabled = true;
}

int branch_insn_decode(u64 ip, struct x86_insn *in)
{
	u8 b[X86_INSN_MAX_LEN];
	size_t avail = X86_INSN_MAX_LEN;
	u64 room = PAGE_SIZE - (ip & (PAGE_SIZE - 1));

	if (!addr_is_mapped(ip))
		return -EFAULT;
	/* read no further than mapped bytes: the page may end the code */
	if (room < avail && !addr_is_mapped(ip + room))
		avail = room;
	memcpy(b, (const void *)(uintptr_t)ip, avail);
	if (b[0] == INT3 && branch_sites.sites) {
		struct branch_site *s = branch_site_slot(ip);

		if (s->ip == ip && !s->disabled)
			b[0] = s->orig;
	}
	return x86_insn_decode(b, avail, in);
}

static u8 ptm_class_of(const struct x86_insn *in)
{
	switch (in->cls) {
	case X86_INSN_JCC:
	case X86_INSN_JCXZ:
	case X86_INSN_LOOP:
		return PTM_COND;
	case X86_INSN_JMP_DIRECT:
		return PTM_JUMP;
	case X86_INSN_CALL_DIRECT:
		return PTM_CALL;
	case X86_INSN_JMP_INDIRECT:
		return PTM_JUMP_IND;
	case X86_INSN_CALL_INDIRECT:
		return PTM_CALL_IND;
	case X86_INSN_RET_NEAR:
		return PTM_RET;
	case X86_INSN_PTWRITE:
		return PTM_PTWRITE;
	default:
		return PTM_OTHER;
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
	if (branch_sites.st.sites >= branch_sites.max_sites) {
		*err = -ENOSPC;
		return NULL;
	}
	if (branch_emul_prepare(in, ip, &n.emul)) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	n.cls = ptm_class_of(in);
	n.orig = *(const u8 *)(uintptr_t)ip;
	/* in the table first: the poke itself may run this branch (when the
	 * traced code shares a function with the engine), and an INT3 there
	 * must be known */
	*s = n;
	if (arch_text_poke(ip, INT3)) {
		s->ip = 0;	/* the last slot taken: no probe runs past it */
		*err = -EPERM;
		return NULL;
	}
	branch_sites.st.sites++;
	branch_sites.st.patched++;
	return s;
}

static bool stops_here(const struct x86_insn *in)
{
	return in->cofi != X86_COFI_NONE || in->cls == X86_INSN_PTWRITE;
}

const struct branch_block *branch_block_get(u64 ip, bool *created, int *err)
{
	struct branch_block *b;
	struct x86_insn in;
	u64 at = ip;

	*created = false;
	if (!branch_sites.sites) {
		*err = -ENODEV;
		return NULL;
	}
	b = block_slot(ip);
	if (b->start == ip && !b->site->disabled)
		return b;
	for (unsigned int n = 0; n < BRANCH_BLOCK_MAX; n++) {
		int rc = branch_insn_decode(at, &in);
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
		if (b->start != ip && branch_sites.st.blocks >= branch_sites.max_blocks) {
			*err = -ENOSPC;
			branch_sites.st.full++;
			return NULL;
		}
		s = site_get(at, &in, err);
		if (!s) {
			if (*err == -ENOSPC)
				branch_sites.st.full++;
			return NULL;
		}
		if (b->start != ip)
			branch_sites.st.blocks++;
		*b = (struct branch_block){ .start = ip, .site = s, .insns = n };
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
		if (branch_insn_decode(at, &in))
			return max;
	return n;
}

void branch_sites_get_stats(struct branch_sites_stats *st)
{
	*st = branch_sites.st;
}
