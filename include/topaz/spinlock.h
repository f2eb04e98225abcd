/* SPDX-License-Identifier: MIT */
/*
 * Spinlocks that know their holder. The lock word is the holder's CPU number
 * plus one (0: free), so a CPU that comes back to a lock it already holds (an
 * NMI that interrupted the holder, a panic inside a locked section) can tell
 * instead of spinning for ever: spin_lock_or_owned() returns false then.
 * Portable: the hosted build's threads use the same code.
 */
#ifndef TOPAZ_SPINLOCK_H
#define TOPAZ_SPINLOCK_H

#include <topaz/types.h>
#include <topaz/percpu.h>
#include <topaz/arch.h>

typedef struct {
	u32 owner;	/* holder's CPU + 1; 0 when free */
} spinlock_t;

#define __SPIN_LOCK_UNLOCKED	{ 0 }
#define DEFINE_SPINLOCK(name)	spinlock_t name = __SPIN_LOCK_UNLOCKED

static inline void spin_lock_init(spinlock_t *l)
{
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
}

/** spin_trylock() - take @l if it is free; true when taken */
static inline bool spin_trylock(spinlock_t *l)
{
	u32 free = 0;

	return __atomic_compare_exchange_n(&l->owner, &free, smp_processor_id() + 1, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/**
 * spin_lock_or_owned() - take @l, waiting while another CPU holds it
 *
 * Returns false, without taking it, when this CPU holds it already: the
 * caller interrupted the holder (an NMI) and must not wait for it.
 */
static inline bool spin_lock_or_owned(spinlock_t *l)
{
	u32 me = smp_processor_id() + 1;

	for (;;) {
		u32 cur = 0;

		if (__atomic_compare_exchange_n(&l->owner, &cur, me, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		if (cur == me)
			return false;
		while (__atomic_load_n(&l->owner, __ATOMIC_RELAXED))
			cpu_relax();
	}
}

/** spin_lock() - take @l; the holder must not be this CPU */
static inline void spin_lock(spinlock_t *l)
{
	while (!spin_trylock(l))
		while (__atomic_load_n(&l->owner, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline void spin_unlock(spinlock_t *l)
{
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELEASE);
}

/** spin_is_locked_by_me() - does this CPU hold @l? */
static inline bool spin_is_locked_by_me(const spinlock_t *l)
{
	return __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == smp_processor_id() + 1;
}

/** spin_lock_owner() - the CPU holding @l, or -1 */
static inline int spin_lock_owner(const spinlock_t *l)
{
	return (int)__atomic_load_n(&l->owner, __ATOMIC_RELAXED) - 1;
}

/**
 * spin_lock_unless_stuck() - take @l, unless this CPU holds it already or,
 * once *@giving_up is set (a panic: oops_in_progress), its holder keeps it
 * for 20 million spins: a CPU the panic stopped never lets go
 *
 * Return: true when taken; false (not taken) otherwise, and the caller goes
 * on without it, as a panic's last words must.
 */
static inline bool spin_lock_unless_stuck(spinlock_t *l, const bool *giving_up)
{
	if (spin_is_locked_by_me(l))
		return false;
	for (u64 spins = 0; !spin_trylock(l); spins++) {
		if (__atomic_load_n(giving_up, __ATOMIC_RELAXED) && spins > 20000000)
			return false;
		cpu_relax();
	}
	return true;
}

#define spin_lock_irqsave(l, flags)	do { (flags) = local_irq_save(); spin_lock(l); } while (0)
#define spin_unlock_irqrestore(l, flags) do { spin_unlock(l); local_irq_restore(flags); } while (0)

#endif
