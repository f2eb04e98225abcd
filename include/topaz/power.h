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

struct shutdown_hook;
/**
 * panic_notifier_register() - run @h->fn on the panic path, after the report
 * and before power-off (the PT flight recorder dumps its trace there)
 */
void panic_notifier_register(struct shutdown_hook *h);

#endif
