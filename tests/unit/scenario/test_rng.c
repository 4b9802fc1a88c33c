/*
 * test_rng.c - the scenarios' random numbers: one seed gives one
 * sequence (the labeled suite must replay), seeds differ, and each draw
 * stays in its range with the mean its distribution has (over a fixed
 * seed's sample, so the bounds are exact properties of that sample).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "scen_int.h"
#include "tmain.h"

#define N 20000

START_TEST(test_replay)
{
	struct rng a, b, c;

	rng_seed(&a, 42);
	rng_seed(&b, 42);
	rng_seed(&c, 43);
	for (int i = 0; i < 100; i++) {
		uint64_t x = rng_next(&a);

		ck_assert_uint_eq(x, rng_next(&b));
		ck_assert_uint_ne(x, rng_next(&c));
	}
}
END_TEST

START_TEST(test_ranges_and_means)
{
	unsigned seen[7] = {0};
	double su = 0, sn = 0, sp = 0, sl = 0;
	struct rng r;

	rng_seed(&r, 7);
	for (int i = 0; i < N; i++) {
		double u = rng_unif(&r), l = rng_lognorm(&r, 0.1);
		uint32_t k = rng_below(&r, 7);

		ck_assert(u >= 0 && u < 1);
		ck_assert_uint_lt(k, 7);
		ck_assert(l > 0);
		seen[k]++;
		su += u;
		sl += log(l);
		sn += rng_norm(&r);
		sp += rng_poisson(&r, 3.0);
	}
	for (int k = 0; k < 7; k++)
		ck_assert_uint_gt(seen[k], N / 7 / 2);
	ck_assert(fabs(su / N - 0.5) < 0.02);
	ck_assert(fabs(sn / N) < 0.05);
	ck_assert(fabs(sl / N) < 0.01);
	ck_assert(fabs(sp / N - 3.0) < 0.1);
	ck_assert_uint_eq(rng_poisson(&r, 0), 0);
}
END_TEST

TMAIN("scenario-rng", test_replay, test_ranges_and_means)
