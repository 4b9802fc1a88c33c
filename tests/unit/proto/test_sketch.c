/*
 * test_sketch.c - the duration sketch: quantiles within the promised
 * relative error on several distributions, zeros, merging equals adding,
 * the bucket cap, and the round trip through the wire message.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "sketch.h"

#define N_SAMPLES 20000

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A deterministic generator, so failures reproduce. */
static uint64_t
xorshift(uint64_t *st)
{
	uint64_t x = *st;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*st = x;
	return x;
}

/* Checks every percentile of s against the exact sorted samples v. */
static void
check_quantiles(const struct sketch *s, uint64_t *v, size_t n)
{
	double alpha = s->accuracy_ppm / 1e6;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (int p = 0; p <= 100; p++) {
		double q = p / 100.0;
		double exact = (double)v[(size_t)(q * (double)(n - 1))];
		double got = sketch_quantile(s, q);

		if (exact == 0)
			ck_assert_msg(got == 0, "q%d: %f for 0", p, got);
		else
			ck_assert_msg(fabs(got - exact) <= alpha * exact + 1e-9,
				      "q%d: %f vs exact %f", p, got, exact);
	}
	ck_assert_uint_eq(s->total, n);
	ck_assert_uint_eq(s->min, v[0]);
	ck_assert_uint_eq(s->max, v[n - 1]);
}

START_TEST(test_accuracy_distributions)
{
	static const uint32_t accs[] = {10000, 1000, 50000};
	uint64_t *v = malloc(N_SAMPLES * sizeof(*v));
	uint64_t st = 88172645463325252ull;

	ck_assert_ptr_nonnull(v);
	for (size_t a = 0; a < 3; a++) {
		for (int dist = 0; dist < 4; dist++) {
			struct sketch s;

			/* 9 decades at 0.1% need more than the bucket cap. */
			if (dist == 1 && accs[a] < 10000)
				continue;
			ck_assert_int_eq(sketch_init(&s, accs[a]), 0);
			for (size_t i = 0; i < N_SAMPLES; i++) {
				uint64_t r = xorshift(&st);

				switch (dist) {
				case 0: /* uniform 1 us .. 1 ms */
					v[i] = 1000 + r % 999000;
					break;
				case 1: /* log-uniform 1 ns .. 1 s */
					v[i] = (uint64_t)exp(
						(double)(r % 1000000) / 1e6 *
						log(1e9));
					break;
				case 2: /* bimodal with an outlier tail */
					v[i] = (r % 100 < 95)
						       ? 50000 + r % 1000
						       : 5000000 + r % 100000;
					break;
				default: /* constant */
					v[i] = 123456;
					break;
				}
				ck_assert_int_eq(sketch_add(&s, v[i]), 0);
			}
			check_quantiles(&s, v, N_SAMPLES);
			sketch_free(&s);
		}
	}
	free(v);
}
END_TEST

START_TEST(test_zeros_and_empty)
{
	struct sketch s;
	uint64_t v[10] = {0, 0, 0, 0, 10, 20, 30, 40, 50, 60};

	ck_assert_int_eq(sketch_init(&s, 0), 0);
	ck_assert_uint_eq(s.accuracy_ppm, SKETCH_ACCURACY_DEFAULT);
	ck_assert(sketch_quantile(&s, 0.5) == 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(sketch_add(&s, v[i]), 0);
	ck_assert_uint_eq(s.zero_count, 4);
	check_quantiles(&s, v, 10);
	sketch_reset(&s);
	ck_assert_uint_eq(s.total, 0);
	ck_assert_uint_eq(s.n, 0);
	sketch_free(&s);
	ck_assert_int_eq(sketch_init(&s, 1), -1);
	ck_assert_int_eq(sketch_init(&s, 900000), -1);
}
END_TEST

START_TEST(test_bucket_formula)
{
	struct sketch s;
	double gamma = 1.02;

	ck_assert_int_eq(sketch_init(&s, 10000), 0);
	/* gamma = 1 + 2 * 0.01; bucket i = floor(log v / log gamma). */
	for (uint64_t v = 1; v < 10000000; v = v * 3 + 1)
		ck_assert_int_eq(sketch_bucket(&s, v),
				 (int32_t)floor(log((double)v) / log(gamma)));
	ck_assert_int_eq(sketch_bucket(&s, 1), 0);
	sketch_free(&s);
}
END_TEST

/* Every bucket a 64-bit value falls in is inside [0, sketch_index_max]. */
START_TEST(test_index_max)
{
	static const uint32_t ppm[] = {1, SKETCH_ACCURACY_MIN, 10000,
				       SKETCH_ACCURACY_MAX, 999999};
	C4__DurationStats d = C4__DURATION_STATS__INIT;
	C4__QuantileSketch q = C4__QUANTILE_SKETCH__INIT;
	int32_t idx = INT32_MAX;
	uint64_t cnt = 1;
	double qs = 0.5, out;

	for (size_t i = 0; i < sizeof(ppm) / sizeof(ppm[0]); i++) {
		struct sketch s;

		memset(&s, 0, sizeof(s));
		s.accuracy_ppm = ppm[i];
		s.log_gamma = log1p(2.0 * ppm[i] / 1e6);
		ck_assert_int_ge(sketch_index_max(ppm[i]),
				 sketch_bucket(&s, UINT64_MAX));
		ck_assert_int_gt(sketch_index_max(ppm[i]), 0);
	}
	ck_assert_int_eq(sketch_index_max(0), -1);
	ck_assert_int_eq(sketch_index_max(1000000), -1);
	/* The highest index once overflowed (index + 1) in int32_t. */
	q.n_index = q.n_count = 1;
	q.index = &idx;
	q.count = &cnt;
	q.has_relative_accuracy_ppm = 1;
	q.relative_accuracy_ppm = 10000;
	d.sketch = &q;
	ck_assert_int_eq(sketch_pb_quantiles(&d, &qs, 1, &out), 0);
	ck_assert(out > 0);
}
END_TEST

START_TEST(test_merge_equals_add)
{
	struct sketch a, b, all;
	uint64_t st = 42;

	ck_assert_int_eq(sketch_init(&a, 0), 0);
	ck_assert_int_eq(sketch_init(&b, 0), 0);
	ck_assert_int_eq(sketch_init(&all, 0), 0);
	for (int i = 0; i < 5000; i++) {
		uint64_t v = xorshift(&st) % 10000000;

		ck_assert_int_eq(sketch_add(i % 3 ? &a : &b, v), 0);
		ck_assert_int_eq(sketch_add(&all, v), 0);
	}
	ck_assert_int_eq(sketch_merge(&a, &b), 0);
	ck_assert_uint_eq(a.total, all.total);
	ck_assert_uint_eq(a.sum, all.sum);
	ck_assert_uint_eq(a.min, all.min);
	ck_assert_uint_eq(a.max, all.max);
	ck_assert_uint_eq(a.n, all.n);
	ck_assert_mem_eq(a.index, all.index, a.n * sizeof(*a.index));
	ck_assert_mem_eq(a.count, all.count, a.n * sizeof(*a.count));
	sketch_free(&b);
	ck_assert_int_eq(sketch_init(&b, 20000), 0);
	ck_assert_int_eq(sketch_add(&b, 5), 0);
	ck_assert_int_eq(sketch_merge(&a, &b), -1);
	sketch_free(&a);
	sketch_free(&b);
	sketch_free(&all);
}
END_TEST

START_TEST(test_bucket_cap)
{
	struct sketch s;
	double prev = 0;

	/* At 0.01% accuracy, 1 .. 2^63 needs far more than the cap. */
	ck_assert_int_eq(sketch_init(&s, SKETCH_ACCURACY_MIN), 0);
	for (uint64_t v = 1; v < (1ull << 62); v += v / 500 + 1)
		ck_assert_int_eq(sketch_add(&s, v), 0);
	ck_assert_uint_le(s.n, SKETCH_BUCKETS_MAX);
	/* High quantiles keep their accuracy; quantiles never go down. */
	for (int p = 0; p <= 100; p++) {
		double q = sketch_quantile(&s, p / 100.0);

		ck_assert(q >= prev);
		prev = q;
	}
	ck_assert(fabs(sketch_quantile(&s, 1.0) - (double)s.max) <=
		  1e-4 * (double)s.max);
	sketch_free(&s);
}
END_TEST

START_TEST(test_wire_round_trip)
{
	struct sketch s, t;
	C4__DurationStats d;
	C4__QuantileSketch q;
	C4__WaitSummary w = C4__WAIT_SUMMARY__INIT;
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	C4__WaitSummary *wp = &w;
	C4__Envelope env, *got;
	struct msg_err err;
	uint8_t *buf;
	size_t len;

	ck_assert_int_eq(sketch_init(&s, 0), 0);
	for (uint64_t v = 0; v < 1000; v++)
		ck_assert_int_eq(sketch_add(&s, v * 997), 0);
	ck_assert_int_eq(sketch_to_pb(&s, &d, &q), 0);
	w.has_comm_hash = w.has_rank = 1;
	w.recv_wait = &d;
	b.has_interval_id = 1;
	b.interval_id = 1;
	b.n_waits = 1;
	b.waits = &wp;
	msg_init(&env, C4__MSG_TYPE__MSG_TELEMETRY, &b);
	len = msg_frame_size(&env);
	buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	msg_pack_frame(&env, buf);
	sketch_pb_free(&q);
	got = msg_unpack(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &err);
	ck_assert_msg(got != NULL, "%s", err.text);
	ck_assert_int_eq(sketch_init(&t, 0), 0);
	ck_assert_int_eq(
		sketch_from_pb(&t, got->telemetry->waits[0]->recv_wait), 0);
	ck_assert_uint_eq(t.total, s.total);
	ck_assert_uint_eq(t.zero_count, 1);
	ck_assert_uint_eq(t.sum, s.sum);
	ck_assert_uint_eq(t.max, s.max);
	for (int p = 0; p <= 100; p += 10)
		ck_assert(sketch_quantile(&t, p / 100.0) ==
			  sketch_quantile(&s, p / 100.0));
	msg_free(got);
	free(buf);
	sketch_free(&s);
	sketch_free(&t);
}
END_TEST

/* Wire-side quantiles equal the sketch's own, in any bucket order. */
START_TEST(test_pb_quantiles)
{
	static const double qs[] = {0.0, 0.25, 0.5, 0.9, 0.99, 1.0};
	double out[6];
	struct sketch s;
	C4__DurationStats d;
	C4__QuantileSketch q;
	uint64_t st = 42;

	ck_assert_int_eq(sketch_init(&s, 0), 0);
	for (int i = 0; i < 5000; i++)
		ck_assert_int_eq(
			sketch_add(&s, i % 50 == 0 ? 0
						   : 1000 + xorshift(&st) %
								     1000000),
			0);
	ck_assert_int_eq(sketch_to_pb(&s, &d, &q), 0);
	ck_assert_int_eq(sketch_pb_quantiles(&d, qs, 6, out), 0);
	for (int i = 0; i < 6; i++)
		ck_assert_msg(out[i] == sketch_quantile(&s, qs[i]),
			      "q%.2f: %f vs %f", qs[i], out[i],
			      sketch_quantile(&s, qs[i]));
	/* Reverse the buckets: a sender may list them in any order. */
	for (size_t i = 0; i < q.n_index / 2; i++) {
		size_t j = q.n_index - 1 - i;
		int32_t ix = q.index[i];
		uint64_t c = q.count[i];

		q.index[i] = q.index[j];
		q.count[i] = q.count[j];
		q.index[j] = ix;
		q.count[j] = c;
	}
	ck_assert_int_eq(sketch_pb_quantiles(&d, qs, 6, out), 0);
	for (int i = 0; i < 6; i++)
		ck_assert(out[i] == sketch_quantile(&s, qs[i]));
	d.sketch = NULL;
	ck_assert_int_eq(sketch_pb_quantiles(&d, qs, 6, out), -1);
	ck_assert(out[0] == 0 && out[5] == 0);
	sketch_pb_free(&q);
	sketch_free(&s);
}
END_TEST

/*
 * The excess over a cap: a rare pause of milliseconds among gaps of
 * microseconds is what the samples above p99 add, within the accuracy.
 */
START_TEST(test_pb_excess)
{
	static const double q99[] = {0.99};
	double p99, ex;
	struct sketch s;
	C4__DurationStats d;
	C4__QuantileSketch q;

	ck_assert_int_eq(sketch_init(&s, 0), 0);
	for (int i = 0; i < 400; i++)
		ck_assert_int_eq(sketch_add(&s, i == 7 ? 4000000 : 10000), 0);
	ck_assert_int_eq(sketch_to_pb(&s, &d, &q), 0);
	ck_assert_int_eq(sketch_pb_quantiles(&d, q99, 1, &p99), 0);
	ck_assert(fabs(p99 - 10000) < 10000 * 0.011);
	ex = sketch_pb_excess(&d, p99);
	ck_assert_msg(fabs(ex - (4000000 - p99)) < 4000000 * 0.011, "%f", ex);
	ck_assert(sketch_pb_excess(&d, 5000000) == 0);
	/* the sender's own answer is the receiver's, to the bit */
	ck_assert(p99 == sketch_quantile(&s, 0.99));
	ck_assert(sketch_excess(&s, p99) == ex);
	ck_assert(sketch_excess(&s, 5000000) == 0);
	d.sketch = NULL;
	ck_assert(sketch_pb_excess(&d, 0) == 0);
	sketch_pb_free(&q);
	sketch_free(&s);
}
END_TEST

static Suite *
sketch_suite(void)
{
	Suite *s = suite_create("sketch");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_accuracy_distributions);
	tcase_add_test(tc, test_zeros_and_empty);
	tcase_add_test(tc, test_bucket_formula);
	tcase_add_test(tc, test_index_max);
	tcase_add_test(tc, test_merge_equals_add);
	tcase_add_test(tc, test_bucket_cap);
	tcase_add_test(tc, test_pb_excess);
	tcase_add_test(tc, test_wire_round_trip);
	tcase_add_test(tc, test_pb_quantiles);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sketch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
