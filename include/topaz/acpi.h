/* SPDX-License-Identifier: MIT */
/*
 * ACPI, as much as topaz needs: the CPUs the MADT lists (ACPI 6.5, 5.2.12),
 * found from the RSDP through the XSDT (or the RSDT of ACPI 1.0).
 */
#ifndef TOPAZ_ACPI_H
#define TOPAZ_ACPI_H

#include <topaz/types.h>

/* MADT Local APIC / Local x2APIC flags */
#define ACPI_MADT_ENABLED		0x1
#define ACPI_MADT_ONLINE_CAPABLE	0x2

struct acpi_cpu {
	u32 apic_id;		/* local APIC ID (x2APIC ID from a type 9 entry) */
	u32 uid;		/* ACPI processor UID */
	bool x2apic;		/* from a Local x2APIC entry */
};

struct acpi_madt_info {
	u64 lapic_address;	/* the local APIC's MMIO base (an override entry wins) */
	unsigned int ncpus;	/* usable CPUs (enabled or online-capable), in MADT order */
	unsigned int nlisted;	/* CPU entries, usable or not */
	unsigned int dropped;	/* usable CPUs past @max: not in @cpus */
};

/**
 * acpi_madt_cpus() - the usable CPUs the MADT lists
 * @rsdp: the RSDP's physical address (the EFI configuration table's)
 * @cpus: up to @max of them, in MADT order
 * @info: counts and the local APIC address
 * @why: @whylen: on failure, which table or field is wrong and where
 *
 * Every table's length and checksum is checked before a byte of it is used;
 * an entry that runs past its table ends the walk. Return: 0, -ENOENT (no
 * RSDP, no MADT) or -EINVAL (a damaged table, said in @why).
 */
int acpi_madt_cpus(u64 rsdp, struct acpi_cpu *cpus, unsigned int max, struct acpi_madt_info *info,
		   char *why, size_t whylen);

#endif
