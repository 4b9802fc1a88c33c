/*
 * trace.h - the plugin's text lines on stderr (C4_PROFILER_STATS): one
 * line per op kind and interval (c4trace reads them back), and the
 * counters at close.  The formats are an interface: c4trace and the
 * scripts that read recordings parse them.
 */
#ifndef C4_TRACE_H
#define C4_TRACE_H

#include <stddef.h>
#include <stdint.h>

struct consumer_func;
struct prof_comm;
struct prof_counters;

/*
 * Prints one line on stderr for op kind f of communicator c in the
 * interval being reported, numbered by prof_core.interval_id as it stands
 * while the report is built (the reports sent before it): counts, kernel and
 * gap means, the gap's quantiles and capped mean, the sampling shift. Reads o
 * and c, changes neither.  On the aggregation thread, while the report is built
 * (C4_PROFILER_STATS=2).
 */
void trace_op(const struct prof_comm *c, uint32_t f,
	      const struct consumer_func *o);

/*
 * Formats the counters k of process pid as one line, newline included,
 * into line (len bytes, truncated as snprintf does).  Any thread; reads
 * only its arguments.
 */
void trace_counters(char *line, size_t len, long pid,
		    const struct prof_counters *k);

#endif
