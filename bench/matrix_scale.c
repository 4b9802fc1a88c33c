/*
 * bench-matrix-scale: analysis time per interval and memory of the C4D
 * engine at 1,024, 16,384 and 131,072 ranks.
 *
 * Layout tp8-ep8-dp: tensor parallel over NVLink inside each host (ring
 * plus all-pairs), expert-parallel all-to-all over 8 hosts per rail and
 * data-parallel rails with ring and double binary tree, i.e. about 18
 * directed connections per rank, plus a slow transmit NIC from interval 4
 * so the detection path runs too (events_opened and false_events count
 * what the engine opened and how much of it names no injected fault). The
 * generator's work is not timed; the engine's is, on one thread (thread
 * CPU time), per matrix_analyze() call over the last SCALE_TIMED of
 * SCALE_INTERVALS intervals: median, min and max. Memory is the
 * engine's own allocations (counted by the library: live peak) and the
 * process' peak RSS. Only 'metric' lines go to stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "matrix.h"
#include "scen.h"

#define SCALE_INTERVALS 10
#define SCALE_TIMED	6 /* the last intervals are timed */

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int
run(uint32_t nranks)
{
	struct scen_params sp;
	struct scen *s;
	struct matrix *m;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, peak, nconn = 0, nopen = 0, nfalse = 0, k;
	double t[SCALE_INTERVALS], t0, med, mx, mn;
	struct scen_fault f;
	struct rusage ru;
	uint32_t iv, ntimed = 0;
	char name[64];

	scen_params_default(&sp);
	sp.nranks = nranks;
	sp.layout = SCEN_L_TP_EP_DP;
	sp.seed = 42;
	s = scen_new(&sp);
	m = matrix_new(NULL);
	if (s == NULL || m == NULL || scen_register(s, m) < 0 ||
	    scen_add_fault(s, SCEN_F_SLOW_TX, 1.5, 4, &f) < 0)
		return -1;
	for (iv = 0; iv < SCALE_INTERVALS; iv++) {
		fprintf(stderr, "matrix-scale: %u ranks interval %u\n", nranks,
			iv);
		if (scen_interval(s, iv, &in) < 0)
			return -1;
		nconn = in.nconn;
		t0 = now_ms();
		if (matrix_analyze(m, &in, &ev, &nev) < 0)
			return -1;
		if (iv >= SCALE_INTERVALS - SCALE_TIMED)
			t[ntimed++] = now_ms() - t0;
		for (k = 0; k < nev; k++) {
			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			nopen++;
			nfalse += !score_matches(&ev[k], iv, &f);
		}
	}
	qsort(t, ntimed, sizeof(*t), dcmp);
	med = t[ntimed / 2];
	mx = t[ntimed - 1];
	mn = t[0];
	matrix_mem_usage(NULL, &peak);
	getrusage(RUSAGE_SELF, &ru);
	snprintf(name, sizeof(name), "%u", nranks);
	printf("metric conns_per_rank_%s %.2f count\n", name,
	       (double)nconn / nranks);
	printf("metric cells_%s %zu count\n", name, matrix_ncells(m));
	printf("metric analyze_ms_median_%s %.3f ms\n", name, med);
	printf("metric analyze_ms_min_%s %.3f ms\n", name, mn);
	printf("metric analyze_ms_max_%s %.3f ms\n", name, mx);
	printf("metric analyze_ns_per_conn_%s %.1f ns\n", name,
	       med * 1e6 / (double)nconn);
	printf("metric engine_peak_mib_%s %.2f MiB\n", name,
	       (double)peak / (1 << 20));
	printf("metric engine_bytes_per_conn_%s %.1f bytes\n", name,
	       (double)peak / (double)nconn);
	printf("metric process_maxrss_mib_%s %.1f MiB\n", name,
	       (double)ru.ru_maxrss / 1024.0);
	printf("metric events_opened_%s %zu count\n", name, nopen);
	printf("metric false_events_%s %zu count\n", name, nfalse);
	fflush(stdout);
	matrix_free(m);
	scen_free(s);
	return 0;
}

int
main(int argc, char **argv)
{
	static const uint32_t sizes[] = {1024, 16384, 131072};
	unsigned i, n = 3;

	/* 'bench-matrix-scale quick' stops at 16,384 ranks */
	if (argc > 1 && strcmp(argv[1], "quick") == 0)
		n = 2;
	for (i = 0; i < n; i++)
		if (run(sizes[i]) < 0) {
			fprintf(stderr, "matrix-scale: failed at %u ranks\n",
				sizes[i]);
			return 1;
		}
	return 0;
}
