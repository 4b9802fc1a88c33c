/*
 * c4trace: replay the NCCL profiler plugin's per-interval trace
 * (C4_PROFILER_STATS=2, every rank's output) through the C4D engine and
 * print the events it opens, updates and resolves.
 *
 *   c4trace [-a] FILE...
 *
 * Files may hold anything else (NCCL's log, a worker's output): only the
 * plugin's trace lines are read.  -a prints updates too, not only opens
 * and resolves.  Exit status: 0, 1 when a trace line did not parse, 2 on
 * a usage error or when no trace line was found.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matrix.h"
#include "trace.h"

struct out {
	int all;
	unsigned events;
};

static void
usage(void)
{
	fprintf(stderr, "usage: c4trace [-a] FILE...\n");
	exit(2);
}

static void
print_event(void *arg, uint64_t interval, const struct matrix_event *e)
{
	struct out *o = arg;
	char why[256];
	unsigned i;

	if (e->state == MATRIX_ST_UPDATED && !o->all)
		return;
	o->events++;
	printf("interval %" PRIu64 " %s %s comm %016" PRIx64 " ranks", interval,
	       matrix_state_name(e->state), matrix_kind_name(e->kind), e->comm);
	for (i = 0; i < e->nsuspects; i++)
		printf("%s%u", i ? "," : " ", e->suspects[i].rank);
	printf(" slowdown %.2f score %.1f", e->slowdown, e->score);
	if (matrix_event_describe(e, why, sizeof(why)) >= 0)
		printf(": %s", why);
	printf("\n");
}

int
main(int argc, char **argv)
{
	struct trace t = {0};
	struct out o = {0};
	int c, i;

	while ((c = getopt(argc, argv, "ah")) != -1) {
		switch (c) {
		case 'a':
			o.all = 1;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	for (i = optind; i < argc; i++) {
		FILE *f = fopen(argv[i], "r");

		if (f == NULL) {
			fprintf(stderr, "c4trace: %s: %s\n", argv[i],
				strerror(errno));
			trace_free(&t);
			return 2;
		}
		if (trace_read(&t, f, argv[i], stderr) < 0) {
			fprintf(stderr, "c4trace: %s: read failed\n", argv[i]);
			fclose(f);
			trace_free(&t);
			return 2;
		}
		fclose(f);
	}
	if (t.nrows == 0) {
		fprintf(stderr,
			"c4trace: no trace lines in %zu lines (run with "
			"C4_PROFILER_STATS=2)\n",
			t.lines);
		trace_free(&t);
		return 2;
	}
	if (trace_replay(&t, NULL, print_event, &o) < 0) {
		fprintf(stderr, "c4trace: the engine failed\n");
		trace_free(&t);
		return 2;
	}
	printf("c4trace: %zu trace lines, %zu malformed, %u events\n", t.nrows,
	       t.malformed, o.events);
	c = t.malformed ? 1 : 0;
	trace_free(&t);
	return c;
}
