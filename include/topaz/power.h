/* SPDX-License-Identifier: MIT */
#ifndef TOPAZ_POWER_H
#define TOPAZ_POWER_H

#include <topaz/types.h>

/**
 * power_off() - run the shutdown hooks and switch the machine off
 * @success: the exit status says pass (QEMU exit 33) or fail (QEMU exit 35)
 *
 * isa-debug-exit under QEMU, else EFI ResetSystem(EfiResetShutdown).
 */
__noreturn void power_off(bool success);
/**
 * running_on_qemu() - whether QEMU's fw_cfg device answers its signature
 * Return: true under QEMU (cached after the first call).
 */
bool running_on_qemu(void);

#endif
