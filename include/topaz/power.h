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
/* The last step of panic() and of an unhandled exception report. */
__noreturn void panic_finish(const char *why);
bool running_on_qemu(void);

#endif
