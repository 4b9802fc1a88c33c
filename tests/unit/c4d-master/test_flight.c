/*
 * test_flight.c - one-way delivery times from both ends' op timings.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "flight.h"

/* Ops first..first+n-1 leave at t and arrive d later, on another clock. */
static void
feed(struct flight *f, uint64_t first, size_t n, uint64_t t, uint64_t d,
     int64_t offset, uint32_t rx_chunks)
{
	uint64_t seq[32], tx_t[32], rx_t[32];
	uint32_t ch[32], rch[32];
	size_t i;

	ck_assert_uint_le(n, 32);
	for (i = 0; i < n; i++) {
		seq[i] = first + i;
		ch[i] = 8;
		rch[i] = rx_chunks;
		tx_t[i] = t + i * 1000000;
		rx_t[i] = (uint64_t)((int64_t)(tx_t[i] + d) + offset);
	}
	/* the receiver's side first: order does not matter */
	ck_assert_int_eq(flight_add(f, 7, 1, 0, 1, seq, rch, rx_t, n), 0);
	ck_assert_int_eq(flight_add(f, 7, 1, 0, 0, seq, ch, tx_t, n), 0);
}

START_TEST(test_flight_excess)
{
	struct flight *f = flight_new();
	struct flight_stats st;
	double ex;
	int i;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(flight_take(f, 7, 1, 0, &ex), 0);
	/* 400 us on the path, the receiver's clock 3 s ahead: no excess */
	for (i = 0; i < 5; i++) {
		feed(f, 1 + (uint64_t)i * 10, 10, 1000000000ull, 400000,
		     3000000000ll, 8);
		ck_assert_int_eq(flight_take(f, 7, 1, 0, &ex), 1);
		ck_assert(ex >= 0 && ex < 1);
	}
	/* queueing: 45 ms more on the path */
	feed(f, 100, 10, 2000000000ull, 45400000, 3000000000ll, 8);
	ck_assert_int_eq(flight_take(f, 7, 1, 0, &ex), 1);
	ck_assert(fabs(ex - 45000000) < 1);
	/* nothing new: nothing to say */
	ck_assert_int_eq(flight_take(f, 7, 1, 0, &ex), 0);
	/* the other direction never matched anything */
	ck_assert_int_eq(flight_take(f, 7, 0, 1, &ex), 0);
	flight_get_stats(f, &st);
	ck_assert_uint_eq(st.matched, 60);
	ck_assert_uint_eq(st.mismatch, 0);
	ck_assert_uint_eq(st.conns, 1);
	flight_free(f);
}
END_TEST

START_TEST(test_flight_mismatch_and_unmatched)
{
	struct flight *f = flight_new();
	struct flight_stats st;
	uint64_t seq[2] = {5, 5 + FLIGHT_PENDING}, t[2] = {10, 20};
	uint32_t ch[2] = {4, 4};
	double ex;

	/* a chunk lost on one side: the op is not a sample */
	feed(f, 1, 4, 1000, 500, 0, 7);
	ck_assert_int_eq(flight_take(f, 7, 1, 0, &ex), 0);
	flight_get_stats(f, &st);
	ck_assert_uint_eq(st.mismatch, 4);
	/* a sender's op pushed out by a later one in the same slot */
	ck_assert_int_eq(flight_add(f, 7, 1, 0, 0, seq, ch, t, 2), 0);
	flight_get_stats(f, &st);
	ck_assert_uint_eq(st.unmatched, 1);
	/* zero ordinals and chunk counts are skipped */
	seq[0] = 0;
	ck_assert_int_eq(flight_add(f, 7, 2, 0, 0, seq, ch, t, 1), 0);
	flight_free(f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("flight");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_flight_excess);
	tcase_add_test(tc, test_flight_mismatch_and_unmatched);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
