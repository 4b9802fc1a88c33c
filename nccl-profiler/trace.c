/*
 * trace.c - the plugin's text lines on stderr (trace.h).
 */
#include "trace.h"

#include <math.h>
#include <stdio.h>

#include "consumer.h"
#include "core.h"
#include "sample.h"

void
trace_op(const struct prof_comm *c, uint32_t f, const struct consumer_func *o)
{
	uint64_t kn = o->kernel.total, gn = o->gap.total;
	double p99 = gn ? sketch_quantile(&o->gap, 0.99) : 0.0, capped = 0;

	/* what the master makes of the gaps' sum: above p99 counts as p99 */
	if (gn)
		capped = fmax((double)o->gap.sum - sketch_excess(&o->gap, p99),
			      0) /
			 (double)gn;
	fprintf(stderr,
		"c4-nccl-profiler: pid %ld comm %016llx rank %d interval %llu "
		"func %u ops %llu kernel_n %llu kernel_mean_ns %llu gap_n %llu "
		"gap_mean_ns %llu gap_p50_ns %.0f gap_p90_ns %.0f gap_p99_ns "
		"%.0f gap_max_ns %llu gap_capped_mean_ns %.0f shift %u\n",
		(long)prof_core.pid, (unsigned long long)c->hash, c->rank,
		(unsigned long long)prof_core.interval_id, f,
		(unsigned long long)o->count, (unsigned long long)kn,
		(unsigned long long)(kn ? o->kernel.sum / kn : 0),
		(unsigned long long)gn,
		(unsigned long long)(gn ? o->gap.sum / gn : 0),
		gn ? sketch_quantile(&o->gap, 0.5) : 0.0,
		gn ? sketch_quantile(&o->gap, 0.9) : 0.0, p99,
		(unsigned long long)o->gap.max, capped,
		(unsigned)sample_shift());
}

void
trace_counters(char *line, size_t len, long pid, const struct prof_counters *k)
{
	snprintf(line, len,
		 "c4-nccl-profiler: pid %ld events %llu ignored %llu "
		 "stale %llu pool_drops %llu ring_drops %llu no_ring "
		 "%llu orphans %llu timed_lost %llu reports %llu "
		 "reports_failed %llu calls %llu calls_sampled %llu "
		 "graph_full %llu\n",
		 pid, (unsigned long long)k->events,
		 (unsigned long long)k->ignored, (unsigned long long)k->stale,
		 (unsigned long long)k->pool_drops,
		 (unsigned long long)k->ring_drops,
		 (unsigned long long)k->no_ring, (unsigned long long)k->orphans,
		 (unsigned long long)k->timed_lost,
		 (unsigned long long)k->reports,
		 (unsigned long long)k->reports_failed,
		 (unsigned long long)k->calls,
		 (unsigned long long)k->calls_sampled,
		 (unsigned long long)k->graph_full);
}
