/*
 * test_family.c: every phenomenon family produces what it claims, read
 * from the summaries alone: heavy tails spike the maximum while medians
 * stay put, a partial hang leaves its markers split and one connection
 * pending, a job stall stops every rank at an operation boundary, late
 * reports go missing and come back bunched, and the slow families slow
 * what their truth names and little else.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "scen.h"

#define MAXC 65536

/* The index of comm hash among s's communicators, or -1. */
static int
comm_index(const struct scen *s, uint64_t hash)
{
	uint32_t i, n;
	uint64_t h;

	for (i = 0; i < scen_ncomms(s); i++)
		if (scen_comm(s, i, &h, &n) == 0 && h == hash)
			return (int)i;
	return -1;
}

/* The host rank of comm hash runs on. */
static uint32_t
rank_host(const struct scen *s, uint64_t hash, uint32_t rank)
{
	struct matrix_rank_loc loc;

	ck_assert_int_eq(
		scen_rank_loc(s, (uint32_t)comm_index(s, hash), rank, &loc), 0);
	return loc.host;
}

static int
is_conn(const struct matrix_conn *c, uint64_t comm, uint32_t src, uint32_t dst)
{
	return c->comm == comm && c->src == src && c->dst == dst;
}

/* p50 of every connection in interval iv (index = position). */
static void
p50s(struct scen *s, uint32_t from, uint32_t to, double *out, size_t *n)
{
	struct matrix_input in;
	uint32_t iv;
	size_t i;

	for (iv = from; iv <= to; iv++) {
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		ck_assert_uint_le(in.nconn, MAXC);
		for (i = 0; i < in.nconn; i++)
			out[i] = in.conn[i].xfer.p50;
		*n = in.nconn;
	}
}

START_TEST(test_heavy_tail)
{
	static double first[MAXC];
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_HEAVY_TAIL, 3, 128, &t);
	struct matrix_input in;
	unsigned spikes = 0, moved = 0, total = 0, gap_spikes = 0;
	uint32_t iv;
	size_t i;

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(t.nfaults, 0);
	for (iv = 0; iv < t.intervals; iv++) {
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		for (i = 0; i < in.nconn; i++) {
			const struct matrix_stats *x = &in.conn[i].xfer;

			if (iv == 0)
				first[i] = x->p50;
			total++;
			spikes += x->max > 40 * x->p50;
			moved += x->p50 > 1.5 * first[i];
		}
		for (i = 0; i < in.ncoll; i++)
			gap_spikes +=
				in.coll[i].gap.max > 3 * in.coll[i].gap.p50;
	}
	/* the maximum spikes far beyond the base model's 30x ... */
	ck_assert_uint_gt(spikes, 0);
	/* ... and gaps too, while medians move in well under 1 % */
	ck_assert_uint_gt(gap_spikes, 0);
	ck_assert_uint_gt(moved, 0);
	ck_assert_uint_lt(moved * 100, total);
	scen_free(s);
}
END_TEST

START_TEST(test_drift)
{
	static double a[MAXC], b[MAXC];
	struct scen_params sp;
	struct scen *s;
	double sum = 0;
	size_t n = 0, i, k = 0;
	struct matrix_input in;

	scen_params_default(&sp);
	sp.noise.drift_sigma = 0;
	sp.noise.nic_drift_share = 1.0;
	sp.noise.nic_drift_min = sp.noise.nic_drift_max = 0.03;
	sp.noise.nic_drift_span = 10;
	s = scen_new(&sp);
	ck_assert_ptr_nonnull(s);
	p50s(s, 0, 0, a, &n);
	p50s(s, 1, 12, b, &n);
	ck_assert_int_eq(scen_interval(s, 13, &in), 0);
	for (i = 0; i < n; i++)
		if (in.conn[i].transport == MATRIX_TR_NET) {
			sum += log(b[i] / a[i]);
			k++;
		}
	/* every NIC 3 % slower after the span, on average */
	ck_assert_uint_gt(k, 0);
	ck_assert_double_gt(sum / k, 0.02);
	ck_assert_double_lt(sum / k, 0.04);
	scen_free(s);
}
END_TEST

/* Ratio of p50 after/before the fault for each connection of s. */
static size_t
ratios(struct scen *s, const struct scen_truth *t, double *r)
{
	static double before[MAXC];
	size_t n = 0, i;

	p50s(s, 0, t->fault.start - 1, before, &n);
	p50s(s, t->fault.start, t->fault.start + 2, r, &n);
	for (i = 0; i < n; i++)
		r[i] /= before[i];
	return n;
}

START_TEST(test_backpressure)
{
	static double r[MAXC];
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_BACKPRESSURE, 5, 0, &t);
	struct matrix_input in;
	double culprit = 0, nb = 0, other = 0;
	size_t n, i;

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(t.domain, MATRIX_DOM_LINK);
	n = ratios(s, &t, r);
	ck_assert_int_eq(scen_interval(s, t.fault.start + 3, &in), 0);
	for (i = 0; i < n; i++) {
		const struct matrix_conn *c = &in.conn[i];

		if (is_conn(c, t.fault.comm, t.fault.src, t.fault.dst))
			culprit = r[i];
		else if (c->comm == t.fault.comm &&
			 c->algo == MATRIX_ALGO_RING &&
			 (c->dst == t.fault.src || c->src == t.fault.dst))
			nb = fmax(nb, r[i]);
		else
			other = fmax(other, r[i]);
	}
	ck_assert_double_gt(culprit, t.fault.slowdown * 0.85);
	ck_assert_double_gt(nb, 1.0 + (t.fault.slowdown - 1) * t.fault.spread *
						0.6);
	ck_assert_double_lt(nb, culprit);
	ck_assert_double_lt(other, nb);
	scen_free(s);
}
END_TEST

START_TEST(test_host_nics)
{
	static double r[MAXC];
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_HOST_NICS, 2, 0, &t);
	struct matrix_input in;
	size_t n, i;
	unsigned on = 0;

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(t.domain, MATRIX_DOM_HOST);
	n = ratios(s, &t, r);
	ck_assert_int_eq(scen_interval(s, t.fault.start + 3, &in), 0);
	for (i = 0; i < n; i++) {
		const struct matrix_conn *c = &in.conn[i];
		int mine = rank_host(s, c->comm, c->src) == t.fault.host ||
			   rank_host(s, c->comm, c->dst) == t.fault.host;

		if (c->transport != MATRIX_TR_NET)
			continue;
		if (mine) {
			on++;
			ck_assert_double_gt(r[i], t.fault.slowdown * 0.8);
		} else {
			ck_assert_double_lt(r[i], 1.15);
		}
	}
	ck_assert_uint_gt(on, 8);
	scen_free(s);
}
END_TEST

START_TEST(test_host_wide)
{
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_HOST_WIDE, 4, 0, &t);
	struct matrix_input in;
	static double before[MAXC];
	uint32_t iv;
	size_t i;
	unsigned slow = 0;

	ck_assert_ptr_nonnull(s);
	for (iv = 0; iv <= t.fault.start + 1; iv++) {
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		for (i = 0; i < in.ncoll && iv < t.fault.start; i++)
			before[i] = in.coll[i].gap.p50;
	}
	for (i = 0; i < in.ncoll; i++) {
		double r = in.coll[i].gap.p50 / before[i];

		if (rank_host(s, in.coll[i].comm, in.coll[i].rank) ==
		    t.fault.host) {
			ck_assert_double_gt(r, t.fault.slowdown * 0.9);
			slow++;
		} else {
			ck_assert_double_lt(r, 1.2);
		}
	}
	/* all 8 GPUs in each of their communicators */
	ck_assert_uint_ge(slow, 8);
	scen_free(s);
}
END_TEST

START_TEST(test_flapping_gradual)
{
	struct scen_truth t;
	struct scen *s;
	uint64_t seed;

	for (seed = 1; seed < 8; seed++) {
		s = scen_family_new(SCEN_FAM_FLAPPING, seed, 0, &t);
		ck_assert_ptr_nonnull(s);
		ck_assert_uint_eq(t.fault.on_mask & 1, 1);
		ck_assert_uint_ne(t.fault.on_mask, UINT32_MAX);
		scen_free(s);
		s = scen_family_new(SCEN_FAM_GRADUAL, seed, 0, &t);
		ck_assert_ptr_nonnull(s);
		ck_assert_uint_ge(t.fault.ramp, 4);
		scen_free(s);
	}
}
END_TEST

START_TEST(test_fraction_delay)
{
	static double b50[MAXC], b90[MAXC];
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_FRACTION_DELAY, 6, 0, &t);
	struct matrix_input in;
	uint32_t iv;
	size_t i;
	int found = 0;

	ck_assert_ptr_nonnull(s);
	ck_assert_double_ge(t.fault.share, 0.3);
	ck_assert_double_le(t.fault.share, 0.5);
	for (iv = 0; iv <= t.fault.start + 1; iv++) {
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		for (i = 0; i < in.nconn && iv < t.fault.start; i++) {
			b50[i] = in.conn[i].xfer.p50;
			b90[i] = in.conn[i].xfer.p90;
		}
	}
	for (i = 0; i < in.nconn; i++) {
		const struct matrix_conn *c = &in.conn[i];

		if (!is_conn(c, t.fault.comm, t.fault.src, t.fault.dst))
			continue;
		found = 1;
		/* the median moves far less than the delay; p90 by most */
		ck_assert_double_lt(c->xfer.p50 / b50[i],
				    1.0 + (t.fault.slowdown - 1) / 3);
		ck_assert_double_gt(c->xfer.p90 / b90[i],
				    t.fault.slowdown * 0.5);
	}
	ck_assert(found);
	scen_free(s);
}
END_TEST

START_TEST(test_partial_hang)
{
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_PARTIAL_HANG, 7, 0, &t);
	struct matrix_input in;
	uint64_t k = 0;
	uint32_t iv;
	size_t i;
	unsigned pending = 0;

	ck_assert_ptr_nonnull(s);
	ck_assert(t.hang);
	ck_assert_uint_gt(t.fault.partial, 0);
	ck_assert_uint_lt(t.fault.partial, t.fault.src + 1);
	ck_assert_uint_lt(t.fault.partial, t.fault.dst + 1);
	for (iv = 0; iv <= t.fault.start + 1; iv++)
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
	/* op k: the one rank partial (not done) entered */
	for (i = 0; i < in.ncoll; i++)
		if (in.coll[i].comm == t.fault.comm &&
		    in.coll[i].rank == t.fault.partial)
			k = in.coll[i].seq_enter;
	ck_assert_uint_gt(k, 0);
	for (i = 0; i < in.ncoll; i++) {
		const struct matrix_coll *c = &in.coll[i];

		if (c->comm != t.fault.comm)
			continue;
		if (c->rank < t.fault.partial) {
			ck_assert_uint_eq(c->seq_done, k);
			ck_assert_uint_eq(c->seq_enter, k + t.fault.moved_on);
		} else {
			ck_assert_uint_eq(c->seq_done, k - 1);
			ck_assert_uint_eq(c->seq_enter, k);
		}
	}
	for (i = 0; i < in.nconn; i++) {
		ck_assert_uint_eq(in.conn[i].bytes, 0);
		if (in.conn[i].pending) {
			ck_assert(is_conn(&in.conn[i], t.fault.comm,
					  t.fault.src, t.fault.dst));
			pending++;
		}
	}
	ck_assert_uint_eq(pending, 1);
	scen_free(s);
}
END_TEST

START_TEST(test_job_stall)
{
	struct scen_truth t;
	struct scen *s = scen_family_new(SCEN_FAM_JOB_STALL, 8, 0, &t);
	struct matrix_input in;
	uint32_t iv;
	size_t i;

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(t.nfaults, 0);
	ck_assert(t.job_event);
	for (iv = 0; iv < t.intervals; iv++) {
		int in_stall =
			iv >= t.event_start && iv < t.event_start + t.event_len;

		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		for (i = 0; i < in.ncoll && in_stall; i++) {
			/* stopped between two ops, nothing in flight */
			ck_assert_uint_eq(in.coll[i].seq_enter,
					  in.coll[i].seq_done);
			if (iv > t.event_start)
				ck_assert_uint_eq(in.coll[i].nops, 0);
		}
		for (i = 0; i < in.nconn && iv > t.event_start && in_stall;
		     i++) {
			ck_assert_uint_eq(in.conn[i].bytes, 0);
			ck_assert_uint_eq(in.conn[i].pending, 0);
		}
		if (iv == t.event_start + t.event_len) {
			ck_assert_uint_gt(in.coll[0].nops, 0);
			/* the pause shows in the first gap after it */
			ck_assert_double_gt(in.coll[0].gap.max, 1e6);
		}
	}
	scen_free(s);
}
END_TEST

START_TEST(test_late_reports)
{
	struct scen_params sp;
	struct scen *s;
	struct matrix_input in;
	size_t nc[8], nx[8], nh[8], i;
	uint32_t iv;
	int seen;

	scen_params_default(&sp);
	s = scen_new(&sp);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(scen_late(s, 3, 5), 0);
	ck_assert_int_eq(scen_late(s, 99, 5), -1);
	for (iv = 0; iv < 8; iv++) {
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		nc[iv] = in.ncoll;
		nx[iv] = in.nconn;
		nh[iv] = in.nhosts;
		seen = 0;
		for (i = 0; i < in.nhosts; i++)
			seen |= in.hosts[i] == 3;
		ck_assert_int_eq(seen, iv != 5);
		for (i = 0; i < in.ncoll && iv == 5; i++)
			ck_assert_uint_ne(
				rank_host(s, in.coll[i].comm, in.coll[i].rank),
				3);
	}
	/* one interval missing, then two at once */
	ck_assert_uint_eq(nh[5], nh[4] - 1);
	ck_assert_uint_lt(nc[5], nc[4]);
	ck_assert_uint_eq(nc[6] - nc[4], nc[4] - nc[5]);
	ck_assert_uint_eq(nx[6] - nx[4], nx[4] - nx[5]);
	ck_assert_uint_eq(nc[7], nc[4]);
	scen_free(s);
}
END_TEST

START_TEST(test_every_family_builds)
{
	struct scen_truth t, t2;
	unsigned f;
	uint64_t seed;

	for (f = 0; f < SCEN_FAM_COUNT; f++) {
		ck_assert_int_eq(scen_family_parse(scen_family_name(f)),
				 (int)f);
		for (seed = 0; seed < 12; seed++) {
			struct scen *s = scen_family_new(f, seed, 0, &t);
			struct scen *s2 = scen_family_new(f, seed, 0, &t2);

			ck_assert_ptr_nonnull(s);
			ck_assert_uint_ge(t.nranks, 64);
			ck_assert_uint_le(t.nranks, 256);
			/* the seed alone fixes the episode */
			ck_assert_int_eq(
				memcmp(&t.fault, &t2.fault, sizeof(t.fault)),
				0);
			ck_assert_uint_eq(t.nranks, t2.nranks);
			scen_free(s);
			scen_free(s2);
		}
	}
	ck_assert_ptr_null(scen_family_new(SCEN_FAM_COUNT, 1, 0, &t));
}
END_TEST

static Suite *
family_suite(void)
{
	Suite *s = suite_create("scenario-family");
	TCase *tc = tcase_create("family");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_heavy_tail);
	tcase_add_test(tc, test_drift);
	tcase_add_test(tc, test_backpressure);
	tcase_add_test(tc, test_host_nics);
	tcase_add_test(tc, test_host_wide);
	tcase_add_test(tc, test_flapping_gradual);
	tcase_add_test(tc, test_fraction_delay);
	tcase_add_test(tc, test_partial_hang);
	tcase_add_test(tc, test_job_stall);
	tcase_add_test(tc, test_late_reports);
	tcase_add_test(tc, test_every_family_builds);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(family_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
