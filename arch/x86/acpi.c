// SPDX-License-Identifier: MIT
/*
 * The MADT's CPUs (ACPI 6.5: RSDP 5.2.5, XSDT 5.2.8, RSDT 5.2.7, MADT 5.2.12).
 * Firmware tables are input like any other: lengths and checksums are
 * checked before use, and a bad one is named rather than followed.
 */
#include <topaz/acpi.h>
#include <topaz/mm.h>
#include <topaz/kernel.h>
#include <topaz/errno.h>

#define SDT_HEADER	36	/* signature, length, revision, checksum, OEM fields */
#define MADT_MAX_LEN	(1u << 20)	/* far above any machine's; a larger length is damage */

static u8 sum(const u8 *p, size_t n)
{
	u8 s = 0;

	while (n--)
		s += *p++;
	return s;
}

static u32 get32(const u8 *p)
{
	u32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static u64 get64(const u8 *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A system description table at @phys with signature @sig: its length, or 0 after @why. */
static u32 sdt_check(u64 phys, const char *sig, u32 max_len, char *why, size_t whylen)
{
	const u8 *t = phys_to_virt(phys);
	u32 len;

	if (!phys) {
		ksnprintf(why, whylen, "%s: a null table address", sig);
		return 0;
	}
	if (memcmp(t, sig, 4))
		return 0;	/* not this table: the caller looks on */
	len = get32(t + 4);
	if (len < SDT_HEADER || len > max_len) {
		ksnprintf(why, whylen, "%s at %#llx: length %u (%s)", sig, phys, len,
			  len < SDT_HEADER ? "shorter than its header" : "implausibly long");
		return 0;
	}
	if (sum(t, len)) {
		ksnprintf(why, whylen, "%s at %#llx: checksum does not add up to 0", sig,
			  phys);
		return 0;
	}
	return len;
}

static int parse_madt(const u8 *t, u32 len, struct acpi_cpu *cpus, unsigned int max,
		      struct acpi_madt_info *info, char *why, size_t whylen)
{
	u32 off = SDT_HEADER + 8;	/* local APIC address, flags */

	if (len < off) {
		ksnprintf(why, whylen, "MADT: length %u leaves no room for its fixed fields", len);
		return -EINVAL;
	}
	info->lapic_address = get32(t + SDT_HEADER);
	while (off + 2 <= len) {
		u8 type = t[off], elen = t[off + 1];
		u32 id, uid, flags;
		bool x2;

		if (elen < 2 || off + elen > len) {
			ksnprintf(why, whylen, "MADT: entry type %u at offset %u has length %u, past the table's %u bytes",
				  type, off, elen, len);
			return -EINVAL;
		}
		switch (type) {
		case 0:		/* Processor Local APIC */
			if (elen < 8)
				goto short_entry;
			uid = t[off + 2];
			id = t[off + 3];
			flags = get32(t + off + 4);
			x2 = false;
			break;
		case 9:		/* Processor Local x2APIC */
			if (elen < 16)
				goto short_entry;
			id = get32(t + off + 4);
			flags = get32(t + off + 8);
			uid = get32(t + off + 12);
			x2 = true;
			break;
		case 5:		/* Local APIC Address Override */
			if (elen < 12)
				goto short_entry;
			info->lapic_address = get64(t + off + 4);
			off += elen;
			continue;
		default:
			off += elen;
			continue;
		}
		info->nlisted++;
		if (flags & (ACPI_MADT_ENABLED | ACPI_MADT_ONLINE_CAPABLE)) {
			if (info->ncpus < max)
				cpus[info->ncpus++] = (struct acpi_cpu){ id, uid, x2 };
			else
				info->dropped++;
		}
		off += elen;
		continue;
short_entry:
		ksnprintf(why, whylen, "MADT: entry type %u at offset %u is %u bytes, shorter than its fields",
			  type, off, elen);
		return -EINVAL;
	}
	return 0;
}

int acpi_madt_cpus(u64 rsdp, struct acpi_cpu *cpus, unsigned int max, struct acpi_madt_info *info,
		   char *why, size_t whylen)
{
	const u8 *r = phys_to_virt(rsdp);
	u64 root;
	u32 len, entry;
	const char *sig;

	*info = (struct acpi_madt_info){ 0 };
	why[0] = '\0';
	if (!rsdp) {
		ksnprintf(why, whylen, "no RSDP in the EFI configuration table");
		return -ENOENT;
	}
	if (memcmp(r, "RSD PTR ", 8) || sum(r, 20)) {
		ksnprintf(why, whylen, "RSDP at %#llx: bad signature or checksum", rsdp);
		return -EINVAL;
	}
	/* ACPI 2.0+: the XSDT (64-bit entries), checked over its own 36 bytes */
	if (r[15] >= 2 && get32(r + 20) >= 36 && !sum(r, 36) && get64(r + 24)) {
		root = get64(r + 24);
		sig = "XSDT";
		entry = 8;
	} else {
		root = get32(r + 16);
		sig = "RSDT";
		entry = 4;
	}
	len = sdt_check(root, sig, MADT_MAX_LEN, why, whylen);
	if (!len) {
		if (!why[0])
			ksnprintf(why, whylen, "%s at %#llx: bad signature", sig, root);
		return -EINVAL;
	}
	for (u32 off = SDT_HEADER; off + entry <= len; off += entry) {
		const u8 *t = phys_to_virt(root);
		u64 p = entry == 8 ? get64(t + off) : get32(t + off);
		u32 mlen;

		if (!p || memcmp(phys_to_virt(p), "APIC", 4))
			continue;
		mlen = sdt_check(p, "APIC", MADT_MAX_LEN, why, whylen);
		if (!mlen)
			return -EINVAL;
		return parse_madt(phys_to_virt(p), mlen, cpus, max, info, why, whylen);
	}
	ksnprintf(why, whylen, "no MADT (\"APIC\") in the %s", sig);
	return -ENOENT;
}
