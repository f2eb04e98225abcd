// SPDX-License-Identifier: MIT
/*
 * CPU profiles for the PT trace unit model: CPUID leaf 0x14 sub-leaves 0 and 1
 * of real processors, copied from public CPUID dumps (named beside each).
 * Only leaf 7 EBX[25] and leaf 0x14 are answered from a profile; the other
 * fields parameterise the model (address widths, CBR, crystal ratio, errata).
 */
#include <topaz/pt_model.h>
#include <topaz/kernel.h>

const struct pt_profile pt_profiles[] = {
	{
		/* First PT generation: ToPA with a single output entry only,
		 * no single-range output, no PSB/CYC/MTC/IP filtering; CR3
		 * filtering only. BDM106 erratum. */
		.name = "broadwell",
		.cpu = "Intel Core i7-5600U (Broadwell-U), CPUID 000306D4",
		.source = "VirtualBox CPU database, src/VBox/VMM/VMMR3/cpus/Intel_Core_i7_5600U.h "
			  "(VBoxCpuReport 5.0.51, 2015-11-04): leaf 14h = 0/00000001/00000001/0, "
			  "sub-leaf 1 = 0; 80000008h EAX = 00003027; PLATFORM_INFO[15:8] = 1Ah",
		.family = 6, .model = 0x3d, .stepping = 4,
		.leaf14 = { { 0x00000000, 0x00000001, 0x00000001, 0x00000000 },
			    { 0x00000000, 0x00000000, 0x00000000, 0x00000000 } },
		.maxphyaddr = 39, .linear_bits = 48,
		.cbr = 0x1a,
		.ctc_den = 0, .ctc_num = 0,	/* no leaf 15h on this part */
		.errata = PT_ERRATUM_BDM106,
	},
	{
		/* Multi-entry ToPA and single-range output, 2 address ranges,
		 * MTC, CYC and configurable PSB frequency, no PTWRITE. */
		.name = "skylake",
		.cpu = "Intel Core i7-6700K (Skylake-S), CPUID 000506E3",
		.source = "VirtualBox CPU database, src/VBox/VMM/VMMR3/cpus/Intel_Core_i7_6700K.h "
			  "(VBoxCpuReport 5.0.51, 2015-11-04): leaf 14h = 00000001/0000000F/00000007/0, "
			  "sub-leaf 1 = 02490002/003F3FFF/0/0; leaf 15h = 2/14Eh; "
			  "PLATFORM_INFO[15:8] = 28h",
		.family = 6, .model = 0x5e, .stepping = 3,
		.leaf14 = { { 0x00000001, 0x0000000f, 0x00000007, 0x00000000 },
			    { 0x02490002, 0x003f3fff, 0x00000000, 0x00000000 } },
		.maxphyaddr = 39, .linear_bits = 48,
		.cbr = 0x28,
		.ctc_den = 2, .ctc_num = 0x14e,
	},
	{
		/* Adds PSB/PMI preservation (InjectPsbPmiOnEnable); still no
		 * PTWRITE on this client part. */
		.name = "tigerlake",
		.cpu = "Intel Core i5-1135G7 (Tiger Lake-UP3), CPUID 000806C1",
		.source = "Bochs, bochs/cpu/cpudb/intel/tigerlake.txt (AIDA64 v6.25 dump): "
			  "CPUID 00000014 = 00000001-0000004F-00000007-00000000 [SL 00], "
			  "02490002-003F1FFF-00000000-00000000 [SL 01]; 15h = 2/7Eh; base 2400 MHz",
		.family = 6, .model = 0x8c, .stepping = 1,
		.leaf14 = { { 0x00000001, 0x0000004f, 0x00000007, 0x00000000 },
			    { 0x02490002, 0x003f1fff, 0x00000000, 0x00000000 } },
		.maxphyaddr = 39, .linear_bits = 48,
		.cbr = 0x18,
		.ctc_den = 2, .ctc_num = 0x7e,
	},
	{
		/* PTWRITE (PTWEn, FUPonPTW), PSB/PMI preservation and TNT
		 * disable; power event trace (EBX[5]) is clear on this part. */
		.name = "arrowlake",
		.cpu = "Intel Core Ultra 5 245K (Arrow Lake-S, Lion Cove P-core), CPUID 000C0662",
		.source = "Bochs, bochs/cpu/cpudb/intel/arrow_lake.txt (AIDA64 v7.35 dump, logical "
			  "CPU #0): CPUID 00000014 = 00000001-0000015F-00000007-00000000 [SL 00], "
			  "02490002-003F003F-00000000-00000000 [SL 01]; 80000008h EAX = 0000302E; "
			  "15h = 2/DAh; base 4200 MHz",
		.family = 6, .model = 0xc6, .stepping = 2,
		.leaf14 = { { 0x00000001, 0x0000015f, 0x00000007, 0x00000000 },
			    { 0x02490002, 0x003f003f, 0x00000000, 0x00000000 } },
		.maxphyaddr = 46, .linear_bits = 48,
		.cbr = 0x2a,
		.ctc_den = 2, .ctc_num = 0xda,
	},
};
const unsigned int pt_nr_profiles = ARRAY_SIZE(pt_profiles);

const struct pt_profile *pt_profile_find(const char *name)
{
	if (!name || !*name)
		name = PT_PROFILE_DEFAULT;
	for (unsigned int i = 0; i < pt_nr_profiles; i++)
		if (!strcmp(pt_profiles[i].name, name))
			return &pt_profiles[i];
	return NULL;
}

void pt_profile_list(char *buf, size_t size)
{
	size_t n = 0;

	if (!size)
		return;
	buf[0] = '\0';
	for (unsigned int i = 0; i < pt_nr_profiles && n < size; i++)
		n += (size_t)ksnprintf(buf + n, size - n, "%s%s", i ? ", " : "", pt_profiles[i].name);
}
