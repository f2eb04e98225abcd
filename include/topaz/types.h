/* SPDX-License-Identifier: MIT */
/* Basic types and helpers shared by the kernel and the hosted build. */
#ifndef TOPAZ_TYPES_H
#define TOPAZ_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdarg.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
/* as Linux has them: printk's %llu/%llx take u64 and s64 without a cast */
typedef unsigned long long u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef long long s64;
typedef u64 phys_addr_t;

#define BIT(n)		(1UL << (n))
#define BIT_ULL(n)	(1ULL << (n))
#define GENMASK_ULL(h, l) (((~0ULL) << (l)) & (~0ULL >> (63 - (h))))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)	(((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define IS_ALIGNED(x, a) (((x) & ((__typeof__(x))(a) - 1)) == 0)
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define __used		__attribute__((used))
#define __unused	__attribute__((unused))
#define __noreturn	__attribute__((noreturn))
#define __noinline	__attribute__((noinline))
#ifndef __always_inline	/* glibc's <sys/cdefs.h> has it too */
#define __always_inline	inline __attribute__((always_inline))
#endif
#define __aligned(x)	__attribute__((aligned(x)))
#define __packed	__attribute__((packed))
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#define __section(s)	__attribute__((section(s)))
#define __hidden	__attribute__((visibility("hidden")))

#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier()	__asm__ __volatile__("" ::: "memory")

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define min(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })

/* The caller of the current function, for reports that name who misused an API. */
#define _RET_IP_	((uintptr_t)__builtin_return_address(0))
#define _THIS_IP_	({ __label__ __here; __here: (uintptr_t)&&__here; })

#endif
