/*
 * bench-prof-events: what the plugin's callbacks cost the NCCL thread that
 * calls them, on the CPU, without NCCL.  One communicator of 4 ranks; per
 * collective one Coll (start, stop) and, like NCCL with kernel-channel
 * events on, one KernelCh per channel (start, the GPU stop timer, stop),
 * while the plugin's own aggregation thread drains and reports as in a
 * job.  NCCL's proxy thread makes the KernelCh calls for every channel of
 * every collective, so their sum is what it spends in the plugin per op.
 *
 *   metric prof_coll_only_ns_per_op     a Coll alone (start + stop)
 *   metric prof_kernel_ns_per_op        a Coll and --channels KernelCh
 *   metric prof_ns_per_callback         the same per callback
 *
 * Usage: bench-prof-events [--ops N] [--channels N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "prof.h"

static double
bp_now(void)
{
	return (double)clock_ns(CLOCK_MONOTONIC) * 1e-9;
}

/* One collective's callbacks; returns how many it made. */
static unsigned
bp_op(void *ctx, uint64_t seq, unsigned nch, uint64_t gpu)
{
	struct prof_descr d;
	void *coll, *kch;
	unsigned n = 2;

	memset(&d, 0, sizeof(d));
	d.type = NCCL_EV_COLL;
	d.seq = seq;
	d.func = 4; /* all-reduce */
	d.bytes = 1u << 20;
	d.count = d.bytes / 4;
	d.nchannels = nch;
	prof_start(ctx, &coll, &d);
	for (unsigned c = 0; c < nch; c++) {
		memset(&d, 0, sizeof(d));
		d.type = NCCL_EV_KERNEL_CH;
		d.parent = coll;
		d.channel = (int)c;
		d.ptimer = gpu;
		prof_start(ctx, &kch, &d);
		prof_state(kch, NCCL_ST_KERNEL_CH_STOP, 0, gpu + 20000);
		prof_stop(kch);
		n += 3;
	}
	prof_stop(coll);
	return n;
}

int
main(int argc, char **argv)
{
	struct prof_config cfg;
	struct prof_counters pc;
	unsigned ops = 200000, nch = 21, calls = 0;
	int mask = 0;
	void *ctx = NULL;
	double t0, coll_only, kernel;

	for (int i = 1; i + 1 < argc; i += 2) {
		long v = strtol(argv[i + 1], NULL, 10);

		if (strcmp(argv[i], "--ops") == 0 && v >= 1000)
			ops = (unsigned)v;
		else if (strcmp(argv[i], "--channels") == 0 && v >= 1 &&
			 v <= 64)
			nch = (unsigned)v;
		else {
			fprintf(stderr, "usage: bench-prof-events [--ops N] "
					"[--channels N]\n");
			return 2;
		}
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.interval_ms = 100;
	cfg.thread = 1; /* the aggregation thread drains, as in a job */
	if (prof_open(&cfg) < 0 ||
	    prof_init(&ctx, 0xbe7c4, &mask, "bench", 1, 4, 0) < 0 ||
	    ctx == NULL) {
		fprintf(stderr, "bench-prof-events: cannot open the plugin\n");
		return 1;
	}
	t0 = bp_now();
	for (unsigned i = 0; i < ops; i++)
		bp_op(ctx, i + 1, 0, 0);
	coll_only = (bp_now() - t0) / ops * 1e9;
	t0 = bp_now();
	for (unsigned i = 0; i < ops; i++)
		calls += bp_op(ctx, ops + i + 1, nch, 1000000ull * i);
	kernel = (bp_now() - t0) / ops * 1e9;
	prof_counters(&pc);
	prof_finalize(ctx);
	prof_close();
	fprintf(stderr, "events %llu pool_drops %llu ring_drops %llu\n",
		(unsigned long long)pc.events,
		(unsigned long long)pc.pool_drops,
		(unsigned long long)pc.ring_drops);
	printf("metric prof_coll_only_ns_per_op %.0f ns\n", coll_only);
	printf("metric prof_kernel_ns_per_op %.0f ns\n", kernel);
	printf("metric prof_ns_per_callback %.1f ns\n",
	       kernel * ops / (double)calls);
	printf("metric prof_kernel_channels %u channels\n", nch);
	return 0;
}
