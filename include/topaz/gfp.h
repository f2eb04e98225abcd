/* SPDX-License-Identifier: MIT */
/* gfp_t: allocation flags at Linux's bit values, so traces compare with Linux tools. */
#ifndef TOPAZ_GFP_H
#define TOPAZ_GFP_H

#include <topaz/types.h>

typedef unsigned int gfp_t;

#define __GFP_DMA		0x01u
#define __GFP_HIGHMEM		0x02u
#define __GFP_DMA32		0x04u
#define __GFP_MOVABLE		0x08u
#define __GFP_RECLAIMABLE	0x10u
#define __GFP_HIGH		0x20u
#define __GFP_IO		0x40u
#define __GFP_FS		0x80u
#define __GFP_ZERO		0x100u
#define __GFP_DIRECT_RECLAIM	0x400u
#define __GFP_KSWAPD_RECLAIM	0x800u
#define __GFP_WRITE		0x1000u
#define __GFP_NOWARN		0x2000u
#define __GFP_RETRY_MAYFAIL	0x4000u
#define __GFP_NOFAIL		0x8000u
#define __GFP_NORETRY		0x10000u
#define __GFP_MEMALLOC		0x20000u
#define __GFP_COMP		0x40000u
#define __GFP_NOMEMALLOC	0x80000u
#define __GFP_HARDWALL		0x100000u
#define __GFP_THISNODE		0x200000u
#define __GFP_ACCOUNT		0x400000u

#define __GFP_RECLAIM	(__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)

#define GFP_ATOMIC	(__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#define GFP_KERNEL	(__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_KERNEL_ACCOUNT (GFP_KERNEL | __GFP_ACCOUNT)
#define GFP_NOWAIT	(__GFP_KSWAPD_RECLAIM | __GFP_NOWARN)
#define GFP_NOIO	(__GFP_RECLAIM)
#define GFP_NOFS	(__GFP_RECLAIM | __GFP_IO)
#define GFP_USER	(__GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL)
#define GFP_DMA		__GFP_DMA
#define GFP_DMA32	__GFP_DMA32

/* May the allocation wait (reclaim)? Atomic callers never do. */
static inline bool gfpflags_allow_blocking(gfp_t gfp)
{
	return (gfp & __GFP_DIRECT_RECLAIM) != 0;
}

/**
 * gfp_flags_name() - format @gfp as Linux's show_gfp_flags does
 * @gfp: the flags
 * @buf: output buffer
 * @size: its size
 *
 * Composite names first (GFP_KERNEL, GFP_ATOMIC, ...), then single bits, joined
 * with '|'; "none" for 0; unknown bits as hex. Returns @buf.
 */
const char *gfp_flags_name(gfp_t gfp, char *buf, size_t size);
/**
 * gfp_probe_show() - gfp_flags_name() as a probe value's formatter (a
 * probe_fmt_fn): mm's probe points show their gfp values with it
 * @v: the gfp_t value, as the probe stored it
 * @buf: output buffer
 * @size: its size
 *
 * Return: @buf
 */
const char *gfp_probe_show(u64 v, char *buf, size_t size);

#endif
