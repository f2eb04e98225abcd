// SPDX-License-Identifier: MIT
/*
 * The traced window: pt_trace_begin() and pt_trace_end(), and the trace
 * engine's seam (struct trace_engine_ops, registered by the engine when the
 * software trace unit answers; none on silicon).
 */
#include "session.h"
#include <topaz/kernel.h>

/* The engine that feeds the software trace unit; NULL on silicon. */
static const struct trace_engine_ops *engine;

void pt_session_set_engine(const struct trace_engine_ops *ops)
{
	engine = ops;
}

__noinline void pt_trace_begin(void)
{
	const struct trace_engine_ops *e = engine;

	if (e)
		e->arm();
	if (pt_session_start()) {
		if (e)
			e->disarm();
		return;
	}
	if (e)
		e->follow();	/* the engine takes over from the caller's next instruction */
}

__noinline void pt_trace_end(void)
{
	if (engine)
		engine->end();
	pt_session_stop();
}

const struct trace_engine_ops *pt_session_engine(void)
{
	return engine;
}

void pt_trace_abort(void)
{
	if (engine)
		engine->abort();
}
