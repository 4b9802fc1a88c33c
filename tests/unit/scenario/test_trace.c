/*
 * test_trace.c: the plugin's per-interval traces of real runs (4 H200,
 * NCCL 2.28.9, kernel-channel sampling at its default; scripts/gpu-e2e
 * with C4_PROFILER_STATS=2, each rank's trace lines kept) replayed
 * through the engine, and the trace reader on bad lines.
 *
 *   trace-h200x4-slow.txt     rank 1 runs matmuls worth a fifth of the
 *                             step before each all-reduce from 8.5 s
 *                             after init (the step grew 1.26x)
 *   trace-h200x4-healthy.txt  no fault
 *   trace-h200x4-hang.txt     rank 1 stops issuing for 10 s from 6.1 s
 *                             (no rank prints during the hang: the
 *                             replay sees the intervals before and after)
 *   trace-h200x2-slow.txt     2 GPUs, rank 1's matmuls from 8.3 s after
 *                             init, in interval 8 (the step grew 1.30x);
 *                             with the capped gap mean of newer plugins
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "trace.h"

struct seen {
	unsigned open[MATRIX_EV_COUNT];
	uint64_t first_iv;
	uint32_t first_rank;
};

static void
collect(void *arg, uint64_t interval, const struct matrix_event *e)
{
	struct seen *s = arg;

	if (e->state != MATRIX_ST_OPEN || e->kind >= MATRIX_EV_COUNT)
		return;
	if (s->open[e->kind]++ == 0 && e->kind == MATRIX_EV_NONCOMM_SLOW) {
		s->first_iv = interval;
		s->first_rank = e->suspects[0].rank;
	}
}

static void
replay(const char *name, struct seen *s)
{
	const char *dir = getenv("C4_TEST_DATA");
	struct trace t = {0};
	char path[512];
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/nccl/%s", dir, name);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(trace_read(&t, f, path, stderr), 0);
	fclose(f);
	ck_assert_uint_gt(t.nrows, 40);
	ck_assert_uint_eq(t.malformed, 0);
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(trace_replay(&t, NULL, collect, s), 0);
	trace_free(&t);
}

/* Trace name: rank 1, and only it, named in intervals lo..hi. */
static void
slow_named(const char *name, uint64_t lo, uint64_t hi)
{
	struct seen s;

	replay(name, &s);
	ck_assert_uint_eq(s.open[MATRIX_EV_NONCOMM_SLOW], 1);
	ck_assert_uint_eq(s.first_rank, 1);
	ck_assert_uint_ge(s.first_iv, lo);
	ck_assert_uint_le(s.first_iv, hi);
}

/* Named within three intervals of the fault, which starts in interval 9. */
START_TEST(test_slow_rank_named)
{
	slow_named("trace-h200x4-slow.txt", 9, 11);
}
END_TEST

/*
 * A pair: the late rank is measured against the other member, not the
 * midpoint of both, so its cost is strong evidence and it is named in
 * the interval after the fault's (8).
 */
START_TEST(test_pair_slow_rank_named)
{
	slow_named("trace-h200x2-slow.txt", 8, 9);
}
END_TEST

START_TEST(test_healthy_quiet)
{
	struct seen s;
	unsigned k;

	replay("trace-h200x4-healthy.txt", &s);
	for (k = 0; k < MATRIX_EV_COUNT; k++)
		ck_assert_uint_eq(s.open[k], 0);
}
END_TEST

/* Before the hang, gaps of healthy ranks name nobody late. */
START_TEST(test_hang_run_no_slow_rank)
{
	struct seen s;

	replay("trace-h200x4-hang.txt", &s);
	ck_assert_uint_eq(s.open[MATRIX_EV_NONCOMM_SLOW], 0);
}
END_TEST

/*
 * line with the first "from" replaced by "to" (as long) does not parse,
 * and names field why (NULL: whatever it names).
 */
static void
parse_bad(const char *line, const char *from, const char *to, const char *why)
{
	char bad[512];
	struct trace_row r;
	const char *w;

	ck_assert_uint_lt(strlen(line), sizeof(bad));
	ck_assert_uint_eq(strlen(from), strlen(to));
	strcpy(bad, line);
	ck_assert_ptr_nonnull(strstr(bad, from));
	memcpy(strstr(bad, from), to, strlen(to));
	ck_assert_int_eq(trace_parse_line(bad, &r, &w), -1);
	if (why != NULL)
		ck_assert_str_eq(w, why);
}

START_TEST(test_parse)
{
	static const char good[] =
		"c4-nccl-profiler: pid 7 comm 00000000000000ab rank 3 "
		"interval 5 func 1 ops 10 kernel_n 9 kernel_mean_ns 1000 "
		"gap_n 8 gap_mean_ns 500 gap_p50_ns 400 gap_p90_ns 900 "
		"gap_p99_ns 990 gap_max_ns 1200 shift 2\n";
	struct trace_row r;
	const char *why;

	ck_assert_int_eq(trace_parse_line(good, &r, &why), 1);
	ck_assert_uint_eq(r.comm, 0xab);
	ck_assert_uint_eq(r.rank, 3);
	ck_assert_uint_eq(r.interval, 5);
	ck_assert_uint_eq(r.gap_n, 8);
	ck_assert(r.gap_p90_ns == 900.0);
	/* NCCL's log and the plugin's counters are not trace lines */
	ck_assert_int_eq(trace_parse_line("vm:1:1 [0] NCCL INFO x\n", &r, &why),
			 0);
	ck_assert_int_eq(trace_parse_line("c4-nccl-profiler: pid 7 events 5 "
					  "ignored 0\n",
					  &r, &why),
			 0);
	/* a field missing, a value not a number, quantiles out of order */
	parse_bad(good, "gap_n", "gap_x", "gap_n");
	parse_bad(good, "ops 10", "ops -1", "ops");
	parse_bad(good, "gap_p50_ns 400", "gap_p50_ns 999", NULL);
	parse_bad(good, "comm 0", "comm z", NULL);
	parse_bad(good, "comm 0", "comm -", NULL);
	/* numbers are whole and at most 2^53, as the plugin prints them */
	parse_bad(good, "func 1 ops 10", "func 1e30s 10", "func");
	parse_bad(good, "ops 10", "ops .5", NULL);
	ck_assert_int_eq(trace_parse_line(good, &r, &why), 1);
	ck_assert_uint_eq(r.pid, 7);
	ck_assert_int_eq(r.has_capped, 0);
}
END_TEST

/* The capped mean of newer plugins is read; a bad one named. */
START_TEST(test_parse_capped_mean)
{
	static const char line[] =
		"c4-nccl-profiler: pid 7 comm 00000000000000ab rank 3 "
		"interval 5 func 1 ops 10 kernel_n 9 kernel_mean_ns 1000 "
		"gap_n 8 gap_mean_ns 500 gap_p50_ns 400 gap_p90_ns 900 "
		"gap_p99_ns 990 gap_max_ns 1200 gap_capped_mean_ns 480 "
		"shift 2\n";
	struct trace_row r;
	const char *why;

	ck_assert_int_eq(trace_parse_line(line, &r, &why), 1);
	ck_assert_int_eq(r.has_capped, 1);
	ck_assert(r.gap_capped_ns == 480.0);
	ck_assert_uint_eq(r.gap_max_ns, 1200);
	parse_bad(line, "mean_ns 480", "mean_ns -48", "gap_capped_mean_ns");
	/* the name without its value is a bad field, not an older line */
	ck_assert_int_eq(
		trace_parse_line(
			"c4-nccl-profiler: pid 7 comm 00000000000000ab "
			"rank 3 interval 5 func 1 ops 10 kernel_n 9 "
			"kernel_mean_ns 1000 gap_n 8 gap_mean_ns 500 "
			"gap_p50_ns 400 gap_p90_ns 900 gap_p99_ns 990 "
			"gap_max_ns 1200 gap_capped_mean_ns\n",
			&r, &why),
		-1);
	ck_assert_str_eq(why, "gap_capped_mean_ns");
}
END_TEST

/* A bad line is counted and skipped; the good ones around it are kept. */
START_TEST(test_read_counts_bad_lines)
{
	static const char text[] =
		"NCCL INFO something\n"
		"c4-nccl-profiler: pid 7 comm 00000000000000ab rank 0 "
		"interval 1 func 1 ops 10 kernel_n 9 kernel_mean_ns 1000 "
		"gap_n 8 gap_mean_ns 500 gap_p50_ns 400 gap_p90_ns 900 "
		"gap_p99_ns 990 gap_max_ns 1200 shift 2\n"
		"c4-nccl-profiler: pid 7 comm 00000000000000ab rank 0 "
		"interval 2 func 1 ops\n"
		"c4-nccl-profiler: pid 7 comm 00000000000000ab rank 1 "
		"interval 1 func 1 ops 10 kernel_n 9 kernel_mean_ns 1000 "
		"gap_n 8 gap_mean_ns 500 gap_p50_ns 400 gap_p90_ns 900 "
		"gap_p99_ns 990 gap_max_ns 1200 shift 2\n";
	struct trace t = {0};
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	FILE *err = tmpfile();
	char msg[256] = "";

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(trace_read(&t, f, "mem", err), 0);
	ck_assert_uint_eq(t.lines, 4);
	ck_assert_uint_eq(t.nrows, 2);
	ck_assert_uint_eq(t.malformed, 1);
	rewind(err);
	ck_assert_ptr_nonnull(fgets(msg, sizeof(msg), err));
	ck_assert_str_eq(msg, "mem:3: trace line: bad ops\n");
	ck_assert_int_eq(trace_replay(&t, NULL, NULL, NULL), 0);
	fclose(f);
	fclose(err);
	trace_free(&t);
}
END_TEST

/* A line longer than any buffer is one line, named by its number. */
START_TEST(test_read_long_line)
{
	size_t n = 10000, k;
	char *text = malloc(n + 256);
	struct trace t = {0};
	FILE *f, *err = tmpfile();
	char msg[256] = "";

	ck_assert_ptr_nonnull(text);
	k = (size_t)sprintf(text, "c4-nccl-profiler: pid 1 comm "
				  "00000000000000ab rank 0 interval 1 func ");
	memset(text + k, '1', n);
	strcpy(text + k + n, "\nlast\n");
	f = fmemopen(text, strlen(text), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(trace_read(&t, f, "mem", err), 0);
	ck_assert_uint_eq(t.lines, 2);
	ck_assert_uint_eq(t.malformed, 1);
	rewind(err);
	ck_assert_ptr_nonnull(fgets(msg, sizeof(msg), err));
	ck_assert_str_eq(msg, "mem:1: trace line: bad func\n");
	fclose(f);
	fclose(err);
	free(text);
	trace_free(&t);
}
END_TEST

static Suite *
trace_suite(void)
{
	Suite *s = suite_create("scenario-trace");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_slow_rank_named);
	tcase_add_test(tc, test_pair_slow_rank_named);
	tcase_add_test(tc, test_healthy_quiet);
	tcase_add_test(tc, test_hang_run_no_slow_rank);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_capped_mean);
	tcase_add_test(tc, test_read_counts_bad_lines);
	tcase_add_test(tc, test_read_long_line);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(trace_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
