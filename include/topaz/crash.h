/* SPDX-License-Identifier: MIT */
/* crash=: fault injection, so the QEMU tests can check the panic path (kernel/crash.c). */
#ifndef TOPAZ_CRASH_H
#define TOPAZ_CRASH_H

/** crash_if_requested() - carry out crash= (does not return when set) */
void crash_if_requested(void);

#endif
