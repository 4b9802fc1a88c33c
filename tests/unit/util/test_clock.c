/*
 * test_clock.c - interval ticks on the wall clock (clock.h): ticks land on
 * multiples of the interval plus the offset, a timer that fires early or
 * late moves on by one interval, one that fires intervals late skips the
 * missed ticks, and the stages' offsets order reporter, agent, master.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"

#define MS 1000000ull
#define IV (1000 * MS)

/*
 * One case: first (clock_tick_first) or not (clock_tick_next), a time and
 * an offset (ms), and the tick wanted (ms).
 */
static const struct tick_case {
	int first;
	uint64_t now, offset, want;
	const char *why;
} cases[] = {
	{1, 12300, 50, 13050, "first: this second's offset is past"},
	{1, 12060, 50, 13050, "first: just past this second's offset"},
	{1, 12040, 50, 12050, "first: before this second's offset"},
	{1, 12050, 50, 13050, "first: on a tick, strictly after it"},
	{1, 12000, 0, 13000, "first: on a boundary, no offset"},
	{0, 12100, 100, 13100, "next: fired on time"},
	{0, 12097, 100, 13100, "next: fired 3 ms early"},
	{0, 12140, 100, 13100, "next: fired 40 ms late"},
	{0, 14400, 100, 15100, "next: 2.3 s late, missed ticks skipped"},
};

START_TEST(test_ticks)
{
	const struct tick_case *c = &cases[_i];
	uint64_t got =
		c->first ? clock_tick_first(c->now * MS, IV, c->offset * MS)
			 : clock_tick_next(c->now * MS, IV, c->offset * MS);

	ck_assert_msg(got == c->want * MS, "%s: %llu ms", c->why,
		      (unsigned long long)(got / MS));
}
END_TEST

START_TEST(test_edges)
{
	/* offsets of an interval or more wrap; a zero interval is now */
	ck_assert_uint_eq(clock_tick_first(12300 * MS, IV, 1050 * MS),
			  13050 * MS);
	ck_assert_uint_eq(clock_tick_next(7 * MS, 0, 0), 7 * MS);
	ck_assert_uint_eq(clock_tick_first(7 * MS, 0, 0), 7 * MS);
	/* before the first offset of the epoch */
	ck_assert_uint_eq(clock_tick_first(10 * MS, IV, 50 * MS), 1050 * MS);
	ck_assert_uint_eq(clock_tick_next(10 * MS, IV, 50 * MS), 1050 * MS);
}
END_TEST

START_TEST(test_stage_order)
{
	uint64_t iv;

	/* for every interval the configuration allows (100 ms and up) */
	for (iv = 100; iv <= 3600000; iv = iv * 3 + 7) {
		uint64_t now = 1795257529834 * MS, rep, agent, master;

		rep = clock_tick_first(now, iv * MS, 0);
		agent = clock_tick_first(rep, iv * MS,
					 iv * MS / CLOCK_TICK_AGENT_DIV);
		master = clock_tick_first(rep, iv * MS,
					  iv * MS / CLOCK_TICK_MASTER_DIV);
		ck_assert_uint_gt(agent, rep);
		ck_assert_uint_gt(master, agent);
		ck_assert_uint_lt(master - rep, iv * MS / 2);
	}
}
END_TEST

static Suite *
clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("ticks");

	tcase_add_loop_test(tc, test_ticks, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_edges);
	tcase_add_test(tc, test_stage_order);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(clock_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
