// SPDX-License-Identifier: MIT
/* Power-off with a pass/fail exit status. */
#include <efi.h>
#include <topaz/power.h>
#include <topaz/shutdown.h>
#include <topaz/bootinfo.h>
#include <topaz/arch.h>
#include <topaz/kernel.h>

#define FW_CFG_PORT_SEL	0x510
#define FW_CFG_PORT_DATA 0x511
#define DEBUG_EXIT_PORT	0xf4
#define DEBUG_EXIT_PASS	0x10	/* QEMU exits (0x10 << 1) | 1 = 33 */
#define DEBUG_EXIT_FAIL	0x11	/* 35 */

/* QEMU's fw_cfg device answers its signature "QEMU" on selector 0. */
bool running_on_qemu(void)
{
	static int cached = -1;
	char sig[4];

	if (cached < 0) {
		outw(FW_CFG_PORT_SEL, 0);
		for (int i = 0; i < 4; i++)
			sig[i] = (char)inb(FW_CFG_PORT_DATA);
		cached = !memcmp(sig, "QEMU", 4);
	}
	return cached;
}

void power_off(bool success)
{
	static bool hooks_done;
	EFI_RUNTIME_SERVICES *rt = boot_info ? boot_info->runtime_services : NULL;

	if (!hooks_done) {
		hooks_done = true;
		run_shutdown_hooks();
	}
	printk(KERN_NOTICE "topaz: power off (%s)\n", success ? "success" : "failure");
	local_irq_disable();
	if (running_on_qemu())
		outl(DEBUG_EXIT_PORT, success ? DEBUG_EXIT_PASS : DEBUG_EXIT_FAIL);
	/* Without isa-debug-exit, the firmware's runtime service switches off. */
	if (rt)
		rt->ResetSystem(EfiResetShutdown, success ? EFI_SUCCESS : EFI_ABORTED, 0, NULL);
	for (;;)
		__asm__ volatile("cli; hlt");
}
