/*
 * trace.h: replay the NCCL profiler plugin's per-interval trace through
 * the C4D engine.
 *
 * With C4_PROFILER_STATS=2 every rank's plugin prints, per communicator,
 * interval and collective function, one line of what it summarized:
 *
 *   c4-nccl-profiler: pid P comm H rank R interval I func F ops N
 *     kernel_n N kernel_mean_ns T gap_n N gap_mean_ns T gap_p50_ns T
 *     gap_p90_ns T gap_p99_ns T gap_max_ns T gap_capped_mean_ns T
 *     shift S
 *
 * (one line; gap_capped_mean_ns, the mean with each gap above p99
 * counted as p99, is absent from older traces).  A trace holds the collective
 * and gap side of the telemetry, not the connection side, so a replay judges
 * the wait chain (noncomm_slow), not the delay matrix.  Nor does it judge
 * hangs: a blocked rank prints nothing, an interval in which no rank printed is
 * not fed to the engine at all, and there is no agent to repeat a silent
 * rank's progress.  Each process (pid) is a device of its own.
 */
#ifndef C4_SCENARIO_TRACE_H
#define C4_SCENARIO_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "matrix.h"

/* One trace line. */
struct trace_row {
	uint64_t pid;
	uint64_t comm;
	uint32_t rank;
	uint32_t interval;
	uint32_t func;
	uint64_t ops;
	uint64_t kernel_n, kernel_mean_ns;
	uint64_t gap_n, gap_mean_ns, gap_max_ns;
	double gap_p50_ns, gap_p90_ns, gap_p99_ns;
	double gap_capped_ns; /* gap_capped_mean_ns, when has_capped */
	int has_capped;
};

struct trace {
	struct trace_row *rows;
	size_t nrows, cap;
	size_t lines;	  /* lines read */
	size_t malformed; /* trace lines that did not parse */
};

/*
 * Parse one line. Returns 1 for a trace row (in *r), 0 for a line that is
 * not a trace line (NCCL's log, the plugin's other lines), -1 for a trace
 * line that does not parse (why names the problem).
 */
int trace_parse_line(const char *line, struct trace_row *r, const char **why);

/*
 * Add every trace line of f (name for messages). Malformed lines are
 * reported on err as "name:line: why" and counted. Returns 0, or -1 on
 * memory exhaustion or a read error.
 */
int trace_read(struct trace *t, FILE *f, const char *name, FILE *err);

/*
 * Feed the rows, interval by interval, to a fresh engine with params p
 * (NULL: defaults); each communicator has as many ranks as its highest
 * rank + 1, and each process is a host of its own (host index: order of
 * first appearance).  cb gets every event the engine reports, with the
 * interval. Returns 0, -1 on failure.
 */
int trace_replay(const struct trace *t, const struct matrix_params *p,
		 void (*cb)(void *arg, uint64_t interval,
			    const struct matrix_event *e),
		 void *arg);

/* Frees the rows and zeroes *t (which itself is the caller's). */
void trace_free(struct trace *t);

#endif
