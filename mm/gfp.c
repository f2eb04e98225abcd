// SPDX-License-Identifier: MIT
/* gfp_t names, printed the way Linux's show_gfp_flags prints them. */
#include <topaz/gfp.h>
#include <topaz/kernel.h>

struct gfp_name {
	gfp_t mask;
	const char *name;
};

/* Composites first, in Linux's order, then single bits in bit order. */
static const struct gfp_name gfp_names[] = {
	{ GFP_USER, "GFP_USER" },
	{ GFP_KERNEL_ACCOUNT, "GFP_KERNEL_ACCOUNT" },
	{ GFP_KERNEL, "GFP_KERNEL" },
	{ GFP_NOFS, "GFP_NOFS" },
	{ GFP_ATOMIC, "GFP_ATOMIC" },
	{ GFP_NOIO, "GFP_NOIO" },
	{ GFP_NOWAIT, "GFP_NOWAIT" },
	{ GFP_DMA, "GFP_DMA" },
	{ GFP_DMA32, "GFP_DMA32" },
	{ __GFP_RECLAIM, "__GFP_RECLAIM" },
	{ __GFP_DMA, "__GFP_DMA" },
	{ __GFP_HIGHMEM, "__GFP_HIGHMEM" },
	{ __GFP_DMA32, "__GFP_DMA32" },
	{ __GFP_MOVABLE, "__GFP_MOVABLE" },
	{ __GFP_RECLAIMABLE, "__GFP_RECLAIMABLE" },
	{ __GFP_HIGH, "__GFP_HIGH" },
	{ __GFP_IO, "__GFP_IO" },
	{ __GFP_FS, "__GFP_FS" },
	{ __GFP_ZERO, "__GFP_ZERO" },
	{ __GFP_DIRECT_RECLAIM, "__GFP_DIRECT_RECLAIM" },
	{ __GFP_KSWAPD_RECLAIM, "__GFP_KSWAPD_RECLAIM" },
	{ __GFP_WRITE, "__GFP_WRITE" },
	{ __GFP_NOWARN, "__GFP_NOWARN" },
	{ __GFP_RETRY_MAYFAIL, "__GFP_RETRY_MAYFAIL" },
	{ __GFP_NOFAIL, "__GFP_NOFAIL" },
	{ __GFP_NORETRY, "__GFP_NORETRY" },
	{ __GFP_MEMALLOC, "__GFP_MEMALLOC" },
	{ __GFP_COMP, "__GFP_COMP" },
	{ __GFP_NOMEMALLOC, "__GFP_NOMEMALLOC" },
	{ __GFP_HARDWALL, "__GFP_HARDWALL" },
	{ __GFP_THISNODE, "__GFP_THISNODE" },
	{ __GFP_ACCOUNT, "__GFP_ACCOUNT" },
};

const char *gfp_flags_name(gfp_t gfp, char *buf, size_t size)
{
	size_t len = 0;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (!gfp) {
		strscpy(buf, "none", size);
		return buf;
	}
	for (size_t i = 0; i < ARRAY_SIZE(gfp_names) && gfp; i++) {
		if ((gfp & gfp_names[i].mask) != gfp_names[i].mask)
			continue;
		gfp &= ~gfp_names[i].mask;
		len += (size_t)ksnprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
					 "%s%s", len ? "|" : "", gfp_names[i].name);
	}
	if (gfp)
		ksnprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
			  "%s%#x", len ? "|" : "", gfp);
	return buf;
}

const char *gfp_probe_show(u64 v, char *buf, size_t size)
{
	return gfp_flags_name((gfp_t)v, buf, size);
}
