// SPDX-License-Identifier: MIT
/* CPU identification and the boot report. */
#include <topaz/cpu.h>
#include <topaz/arch.h>
#include <topaz/kernel.h>

struct cpu_info boot_cpu;

void cpu_identify(void)
{
	struct cpuid_regs r;
	struct cpu_info *c = &boot_cpu;

	cpuid_regs(0, 0, &r);
	c->max_leaf = r.eax;
	memcpy(c->vendor, &r.ebx, 4);
	memcpy(c->vendor + 4, &r.edx, 4);
	memcpy(c->vendor + 8, &r.ecx, 4);
	c->vendor[12] = '\0';
	cpuid_regs(1, 0, &r);
	c->stepping = x86_stepping(r.eax);
	c->model = x86_model(r.eax);
	c->family = x86_family(r.eax);
	c->has_x2apic = r.ecx & BIT(21);
	c->hypervisor = r.ecx & BIT(31);
	if (c->max_leaf >= 7) {
		cpuid_regs(7, 0, &r);
		c->has_pt = r.ebx & BIT(25);
	}
	cpuid_regs(0x80000000, 0, &r);
	c->max_ext_leaf = r.eax;
	if (c->max_ext_leaf >= 0x80000004) {
		for (u32 i = 0; i < 3; i++) {
			cpuid_regs(0x80000002 + i, 0, &r);
			memcpy(c->brand + 16 * i, &r, 16);
		}
		c->brand[48] = '\0';
	}
}

void cpu_report(void)
{
	struct cpu_info *c = &boot_cpu;
	struct cpuid_regs r;
	const char *brand = c->brand;

	while (*brand == ' ')
		brand++;
	printk("cpu: %s family %#x model %#x stepping %u \"%s\"%s\n", c->vendor, c->family,
	       c->model, c->stepping, brand, c->hypervisor ? " (hypervisor)" : "");
	printk("cpu: max leaf %#x, max extended leaf %#x, x2APIC %s\n", c->max_leaf,
	       c->max_ext_leaf, c->has_x2apic ? "yes" : "no");
	if (c->max_leaf >= 7) {
		cpuid_regs(7, 0, &r);
		printk("cpu: leaf 7.0: eax=%#010x ebx=%#010x ecx=%#010x edx=%#010x\n", r.eax, r.ebx,
		       r.ecx, r.edx);
	}
	printk("cpu: Intel PT (CPUID.7.0:EBX[25]): %s\n", c->has_pt ? "yes" : "no");
	if (c->has_pt && c->max_leaf >= 0x14) {
		for (u32 sub = 0; sub < 2; sub++) {
			cpuid_regs(0x14, sub, &r);
			printk("cpu: leaf 0x14.%u: eax=%#010x ebx=%#010x ecx=%#010x edx=%#010x\n", sub,
			       r.eax, r.ebx, r.ecx, r.edx);
		}
	}
}
