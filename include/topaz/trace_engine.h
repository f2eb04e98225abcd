/* SPDX-License-Identifier: MIT */
/*
 * The trace engine (kernel/trace_engine/): real control flow for the software
 * trace unit. On a CPU without PT the traced code runs from a per-CPU code
 * cache whose blocks record their branches (translate mode, the default: the
 * records go to the model in batches), with RFLAGS.TF set (single-step mode),
 * or stops only at its branches (branch-step mode: an INT3 on the next
 * branch, the branch run by the emulator, one stop per branch; translate
 * mode's fallback). The engine tells the model what a PT-capable CPU would
 * have seen. The session drives it through struct trace_engine_ops (tracing.h).
 */
#ifndef TOPAZ_TRACE_ENGINE_H
#define TOPAZ_TRACE_ENGINE_H

#include <topaz/types.h>

/**
 * trace_engine_init() - take #DB, #UD (and #BP in branch mode, after its
 * self-check) and register with the session, when the software trace unit
 * answers and tracing is on; nothing on silicon
 */
void trace_engine_init(void);
/**
 * trace_engine_exit() - give back what translate mode took: the code caches'
 * pages, their flags as before (the firmware phase's end, where the page
 * tables are the firmware's); later windows branch-step. Not inside a window.
 * Return: 0, or -EIO when a cache's pages did not get their flags back (it
 * is kept, not freed).
 */
int trace_engine_exit(void);
/**
 * trace_engine_code_loaded() - code was just written at [@start, @start+@size)
 * (an image loaded): a code cache that translated something there forgets
 * it before it runs the new code
 */
void trace_engine_code_loaded(u64 start, u64 size);

#endif
