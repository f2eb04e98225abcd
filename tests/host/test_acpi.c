// SPDX-License-Identifier: MIT
/* Host tests of the MADT walk: tables built here, good and damaged. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>
#include "hosted.h"
#include <topaz/acpi.h>
#include <topaz/errno.h>

/*
 * The tables, below 4 GiB (the RSDT holds 32-bit addresses); phys_to_virt is
 * the identity in the hosted build.
 */
#define XSDT_LEN	(36 + 2 * 8)
#define RSDT_LEN	(36 + 4)
static u8 *rsdp, *xsdt, *rsdt, *facp, *madt;
static size_t madt_len;

static int map_tables(void **state)
{
	u8 *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	if (m == MAP_FAILED)
		return -1;
	rsdp = m;
	xsdt = m + 64;
	rsdt = m + 128;
	facp = m + 192;
	madt = m + 256;
	return 0;
}

static void fix(u8 *t, size_t len, size_t csum_at)
{
	u8 s = 0;

	t[csum_at] = 0;
	for (size_t i = 0; i < len; i++)
		s += t[i];
	t[csum_at] = (u8)-s;
}

static void header(u8 *t, const char *sig, u32 len)
{
	memset(t, 0, 36);
	memcpy(t, sig, 4);
	memcpy(t + 4, &len, 4);
	t[8] = 1;
}

static void madt_add(const u8 *e, size_t n)
{
	memcpy(madt + madt_len, e, n);
	madt_len += n;
}

/* Two enabled local APICs, one disabled, an online-capable x2APIC, an override. */
static void build(void)
{
	static const u8 lapic0[8] = { 0, 8, 0, 0, 1, 0, 0, 0 };
	static const u8 lapic1[8] = { 0, 8, 1, 1, 1, 0, 0, 0 };
	static const u8 lapic2[8] = { 0, 8, 2, 2, 0, 0, 0, 0 };
	static const u8 ioapic[12] = { 1, 12, 0, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0 };
	static const u8 x2[16] = { 9, 16, 0, 0, 0x2c, 1, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0 };
	static const u8 ovr[12] = { 5, 12, 0, 0, 0, 0, 0xe0, 0xfe, 0, 0, 0, 0 };
	u64 a;
	u32 b, lapic = 0xfee00000;

	memset(madt, 0, 256);
	madt_len = 44;
	madt_add(lapic0, 8);
	madt_add(ioapic, 12);
	madt_add(lapic1, 8);
	madt_add(lapic2, 8);
	madt_add(x2, 16);
	madt_add(ovr, 12);
	header(madt, "APIC", (u32)madt_len);
	memcpy(madt + 36, &lapic, 4);
	fix(madt, madt_len, 9);
	header(facp, "FACP", 36);
	fix(facp, 36, 9);
	header(xsdt, "XSDT", XSDT_LEN);
	a = (uintptr_t)facp;
	memcpy(xsdt + 36, &a, 8);
	a = (uintptr_t)madt;
	memcpy(xsdt + 44, &a, 8);
	fix(xsdt, XSDT_LEN, 9);
	header(rsdt, "RSDT", RSDT_LEN);
	b = (u32)(uintptr_t)madt;
	memcpy(rsdt + 36, &b, 4);
	fix(rsdt, RSDT_LEN, 9);
	memset(rsdp, 0, 36);
	memcpy(rsdp, "RSD PTR ", 8);
	rsdp[15] = 2;
	b = (u32)(uintptr_t)rsdt;
	memcpy(rsdp + 16, &b, 4);
	b = 36;
	memcpy(rsdp + 20, &b, 4);
	a = (uintptr_t)xsdt;
	memcpy(rsdp + 24, &a, 8);
	fix(rsdp, 20, 8);
	fix(rsdp, 36, 32);
}

static struct acpi_cpu cpus[8];
static struct acpi_madt_info info;
static char why[160];

static int walk(unsigned int max)
{
	memset(cpus, 0xa5, sizeof(cpus));
	return acpi_madt_cpus((uintptr_t)rsdp, cpus, max, &info, why, sizeof(why));
}

static void test_usable_cpus_in_order(void **state)
{
	build();
	assert_int_equal(walk(8), 0);
	assert_int_equal(info.nlisted, 4);
	assert_int_equal(info.ncpus, 3);	/* the disabled one left out */
	assert_int_equal(info.dropped, 0);
	assert_int_equal(cpus[0].apic_id, 0);
	assert_int_equal(cpus[1].apic_id, 1);
	assert_int_equal(cpus[2].apic_id, 300);	/* online-capable x2APIC */
	assert_true(cpus[2].x2apic);
	assert_int_equal(cpus[2].uid, 7);
	assert_int_equal(info.lapic_address, 0xfee00000);	/* the override */
}

static void test_more_cpus_than_room(void **state)
{
	build();
	assert_int_equal(walk(2), 0);
	assert_int_equal(info.ncpus, 2);
	assert_int_equal(info.dropped, 1);
}

/* ACPI 1.0: no XSDT, the RSDT's 32-bit entries. */
static void test_rsdt_only(void **state)
{
	build();
	rsdp[15] = 0;
	fix(rsdp, 20, 8);
	assert_int_equal(walk(8), 0);
	assert_int_equal(info.ncpus, 3);
}

static void test_damaged_tables_named(void **state)
{
	build();
	madt[50] ^= 1;		/* a byte of an entry: the checksum fails */
	assert_int_equal(walk(8), -EINVAL);
	assert_non_null(strstr(why, "checksum"));

	build();
	madt[44 + 8 + 12 + 1] = 200;	/* an entry longer than the table */
	fix(madt, madt_len, 9);
	assert_int_equal(walk(8), -EINVAL);
	assert_non_null(strstr(why, "past the table"));

	build();
	madt[44 + 8 + 1] = 6;	/* an IO APIC entry cut short: its successors misparse, still bounded */
	fix(madt, madt_len, 9);
	assert_true(walk(8) == -EINVAL || info.ncpus <= 4);

	build();
	{
		u32 huge = 1u << 30;

		memcpy(madt + 4, &huge, 4);	/* a length that would read a GiB */
	}
	assert_int_equal(walk(8), -EINVAL);
	assert_non_null(strstr(why, "implausibly long"));

	build();
	rsdp[0] = 'X';
	assert_int_equal(walk(8), -EINVAL);
	assert_non_null(strstr(why, "RSDP"));
}

static void test_no_madt(void **state)
{
	build();
	memset(xsdt + 44, 0, 8);	/* the MADT's entry gone */
	fix(xsdt, XSDT_LEN, 9);
	assert_int_equal(walk(8), -ENOENT);
	assert_non_null(strstr(why, "no MADT"));
	assert_int_equal(acpi_madt_cpus(0, cpus, 8, &info, why, sizeof(why)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usable_cpus_in_order),
		cmocka_unit_test(test_more_cpus_than_room),
		cmocka_unit_test(test_rsdt_only),
		cmocka_unit_test(test_damaged_tables_named),
		cmocka_unit_test(test_no_madt),
	};
	return cmocka_run_group_tests_name("acpi", tests, map_tables, NULL);
}
