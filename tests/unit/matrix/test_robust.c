/*
 * test_robust.c: the comm-slow detector against what a real fabric does
 * without a fault (heavy-tailed per-chunk noise, slow drift) and against
 * faults the medians do not show (a delay on a minority of chunks) or
 * show twice (back-pressure along a ring). Every opened event must claim
 * no less than the floors (min_slowdown, z_min) and name in its summary
 * the host of its first suspect.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "matrix.h"
#include "fixture.h"

struct res {
	unsigned opened;
	unsigned opened_kind[MATRIX_EV_COUNT];
	struct matrix_event first;
	uint64_t first_iv;
};

/* per-interval hook: factors in f->slow[], and edits of the summaries */
typedef void (*hook_fn)(struct fx *f, uint64_t iv);

static uint64_t rng_state;

static double
unif(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return ((double)(rng_state >> 11) + 0.5) / (double)(1ull << 53);
}

/* Pareto with scale 1 and shape a: rare, large. */
static double
pareto(double a)
{
	return pow(unif(), -1.0 / a);
}

static void
check_event(const struct matrix_event *e)
{
	double floor = e->evidence.basis == MATRIX_BASIS_TAIL
			       ? MATRIX_DEF_TAIL_MIN
			       : MATRIX_DEF_MIN_SLOWDOWN;

	ck_assert_uint_ge(e->nsuspects, 1);
	ck_assert_uint_eq(e->isolate_host, e->suspects[0].host);
	ck_assert(e->slowdown >= floor * 0.999);
	ck_assert(e->score >= MATRIX_DEF_Z_MIN);
	if (e->ambiguous)
		ck_assert_uint_eq(e->action, MATRIX_ACT_OBSERVE);
}

/*
 * Run nranks ranks (ring and tree) for nint intervals; hook (or NULL)
 * shapes each interval; post (or NULL) edits the filled summaries.
 */
static void
run(struct res *r, uint32_t nranks, uint64_t nint, hook_fn hook, hook_fn post)
{
	struct matrix *m = matrix_new(NULL);
	struct fx f;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k;
	uint64_t iv;

	memset(r, 0, sizeof(*r));
	ck_assert_ptr_nonnull(m);
	fx_init(&f, nranks, 0x5eed);
	fx_ring(&f);
	fx_tree(&f);
	ck_assert_int_eq(matrix_comm_add(m, f.comm, nranks, f.loc), 0);
	rng_state = 42;
	for (iv = 0; iv < nint; iv++) {
		if (hook)
			hook(&f, iv);
		fx_fill(&f, &in, iv);
		if (post)
			post(&f, iv);
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++) {
			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			check_event(&ev[k]);
			if (r->opened++ == 0) {
				r->first = ev[k];
				r->first_iv = iv;
			}
			r->opened_kind[ev[k].kind]++;
		}
	}
	matrix_free(m);
}

/*
 * Fault-free heavy tails: every interval p99 and max carry Pareto spikes,
 * p90 now and then, and the median of 2 % of the connections is hit by a
 * spike (more than half of the chunks of an interval).
 */
static void
heavy(struct fx *f, uint64_t iv)
{
	size_t i;

	(void)iv;
	for (i = 0; i < f->nconn; i++) {
		struct matrix_stats *x = &f->conn[i].xfer;

		x->p99 *= pareto(1.1);
		x->max = x->p99 * pareto(1.1);
		if (unif() < 0.08)
			x->p90 *= pareto(1.2);
		if (unif() < 0.02)
			x->p50 *= pareto(1.2);
		if (x->p90 < x->p50)
			x->p90 = x->p50;
		x->sum = x->p50 * (double)x->count * 1.3;
	}
}

START_TEST(test_heavy_tails_quiet)
{
	struct res r;

	run(&r, 16, 400, NULL, heavy);
	ck_assert_uint_eq(r.opened, 0);
}
END_TEST

/*
 * Drift: the NIC of host 3 slows by 2 % over 50 intervals, then stays;
 * at interval 60 its transmit side steps to 1.3x.
 */
static double drift_total = 0.02;

static void
drift(struct fx *f, uint64_t iv)
{
	double d = 1.0 + drift_total * (double)(iv < 50 ? iv : 50) / 50.0;
	size_t i;

	for (i = 0; i < f->nconn; i++)
		if (f->conn[i].src == 3 || f->conn[i].dst == 3)
			f->slow[i] =
				d *
				(iv >= 60 && f->conn[i].src == 3 ? 1.3 : 1.0);
}

START_TEST(test_drift_then_step)
{
	struct res r;

	run(&r, 8, 75, drift, NULL);
	ck_assert_uint_ge(r.opened, 1);
	ck_assert_uint_ge(r.first_iv, 60);
	ck_assert_uint_le(r.first_iv, 64);
	ck_assert_uint_eq(r.first.kind, MATRIX_EV_COMM_SLOW_TX);
	ck_assert_uint_eq(r.first.suspects[0].host, 3);
	/* a faster creep, 10 % over 50 intervals, is followed too */
	drift_total = 0.10;
	run(&r, 8, 59, drift, NULL);
	drift_total = 0.02;
	ck_assert_uint_eq(r.opened, 0);
}
END_TEST

/* The whole class (every connection) drifting by 8 % moves its level. */
static void
class_drift(struct fx *f, uint64_t iv)
{
	size_t i;

	for (i = 0; i < f->nconn; i++)
		f->slow[i] = 1.0 + 0.08 * (double)(iv % 40) / 40.0;
}

START_TEST(test_class_drift_quiet)
{
	struct res r;

	run(&r, 8, 80, class_drift, NULL);
	ck_assert_uint_eq(r.opened, 0);
}
END_TEST

/*
 * A delay on 40 % of the chunks of connection 2 -> 3 from interval 10:
 * its p90 grows five-fold, its median does not move.
 */
static void
tail_delay(struct fx *f, uint64_t iv)
{
	size_t i;

	if (iv < 10)
		return;
	for (i = 0; i < f->nconn; i++) {
		struct matrix_stats *x = &f->conn[i].xfer;

		if (f->conn[i].src != 2 || f->conn[i].dst != 3)
			continue;
		x->p90 *= 5.0;
		x->p99 *= 5.0;
		x->max *= 5.0;
		x->sum *= 2.6;
	}
}

START_TEST(test_tail_delay)
{
	struct res r;

	run(&r, 8, 24, NULL, tail_delay);
	ck_assert_uint_eq(r.opened, 1);
	ck_assert_uint_eq(r.first.evidence.basis, MATRIX_BASIS_TAIL);
	ck_assert_uint_eq(r.first.kind, MATRIX_EV_COMM_SLOW_LINK);
	ck_assert_uint_eq(r.first.suspects[0].role, MATRIX_ROLE_LINK);
	ck_assert_uint_eq(r.first.suspects[0].host, 2);
	ck_assert_uint_eq(r.first.suspects[0].peer_host, 3);
	ck_assert_uint_eq(r.first.cells[0].src, 2);
	ck_assert_uint_eq(r.first.cells[0].dst, 3);
	ck_assert(r.first.slowdown > 4.0 && r.first.slowdown < 6.0);
	ck_assert_uint_le(r.first_iv, 10 + MATRIX_DEF_TAIL_RUN + 2);
}
END_TEST

/* The same delay on top of fault-free heavy tails is still found. */
static void
heavy_tail_delay(struct fx *f, uint64_t iv)
{
	heavy(f, iv);
	if (iv >= 40)
		tail_delay(f, iv);
}

START_TEST(test_tail_delay_heavy)
{
	struct res r;

	run(&r, 16, 60, NULL, heavy_tail_delay);
	ck_assert_uint_eq(r.opened, 1);
	ck_assert_uint_eq(r.first.evidence.basis, MATRIX_BASIS_TAIL);
	ck_assert_uint_eq(r.first.suspects[0].host, 2);
}
END_TEST

/*
 * Back-pressure: link 2 -> 3 slows three-fold from interval 10; from
 * interval 13 its ring neighbours upstream (1 -> 2) and downstream
 * (3 -> 4) slow by 1.4x, later ones (0 -> 1, 4 -> 5) by 1.2x.
 */
static void
backpressure(struct fx *f, uint64_t iv)
{
	size_t i;

	if (iv < 10)
		return;
	for (i = 0; i < f->nconn; i++) {
		const struct matrix_conn *c = &f->conn[i];

		if (c->algo != MATRIX_ALGO_RING)
			continue;
		if (c->src == 2)
			f->slow[i] = 3.0;
		else if (iv >= 13 && (c->src == 1 || c->src == 3))
			f->slow[i] = 1.4;
		else if (iv >= 15 && (c->src == 0 || c->src == 4))
			f->slow[i] = 1.2;
	}
}

START_TEST(test_backpressure)
{
	struct res r;

	run(&r, 8, 30, backpressure, NULL);
	ck_assert_uint_eq(r.opened, 1);
	ck_assert_uint_eq(r.first.suspects[0].host, 2);
	ck_assert(r.first.kind == MATRIX_EV_COMM_SLOW_LINK ||
		  r.first.kind == MATRIX_EV_COMM_SLOW_AMBIG);
}
END_TEST

/*
 * Stronger back-pressure: link 2 -> 3 slows two-fold from interval 10 and
 * its ring neighbours take on 55 % of its extra time at once (1.55x: in
 * log units more than half of the culprit's). With nvlink, the upstream
 * neighbour 1 -> 2 (and 5 -> 6) runs over NVLink: rank 2 receives on its
 * GPU and sends on over its NIC, and the neighbour is still its device's.
 */
static void
backpressure_share(struct fx *f, uint64_t iv, int nvlink)
{
	size_t i;

	for (i = 0; i < f->nconn; i++) {
		struct matrix_conn *c = &f->conn[i];

		if (c->algo != MATRIX_ALGO_RING)
			continue;
		if (nvlink && (c->src == 1 || c->src == 5))
			c->transport = MATRIX_TR_NVLINK;
		if (iv < 10)
			continue;
		if (c->src == 2)
			f->slow[i] = 2.0;
		else if (c->src == 1 || c->src == 3)
			f->slow[i] = 1.55;
	}
}

static void
backpressure_net(struct fx *f, uint64_t iv)
{
	backpressure_share(f, iv, 0);
}

static void
backpressure_nvlink(struct fx *f, uint64_t iv)
{
	backpressure_share(f, iv, 1);
}

START_TEST(test_backpressure_share)
{
	struct res r;

	run(&r, 8, 30, backpressure_net, NULL);
	ck_assert_uint_eq(r.opened, 1);
	ck_assert_uint_eq(r.first.suspects[0].host, 2);
	ck_assert_uint_eq(r.first.suspects[0].peer_host, 3);
	run(&r, 8, 30, backpressure_nvlink, NULL);
	ck_assert_uint_eq(r.opened, 1);
	ck_assert_uint_eq(r.first.suspects[0].host, 2);
	ck_assert_uint_eq(r.first.suspects[0].peer_host, 3);
}
END_TEST

/*
 * A ring-only job slowed on 5 -> 6 by a receive side that flaps: the
 * event is ambiguous and its summary names its first suspect's host.
 */
static void
flap_rx(struct fx *f, uint64_t iv)
{
	if (iv >= 8 && iv % 5 != 4)
		fx_slow(f, -1, 6, 1.6);
}

START_TEST(test_ambiguous_order)
{
	struct matrix *m = matrix_new(NULL);
	struct fx f;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k;
	uint64_t iv;
	unsigned n = 0;

	fx_init(&f, 8, 0x99);
	fx_ring(&f);
	ck_assert_int_eq(matrix_comm_add(m, f.comm, 8, f.loc), 0);
	for (iv = 0; iv < 30; iv++) {
		flap_rx(&f, iv);
		fx_fill(&f, &in, iv);
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++) {
			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			check_event(&ev[k]);
			ck_assert(ev[k].ambiguous);
			n++;
		}
	}
	ck_assert_uint_eq(n, 1);
	matrix_free(m);
}
END_TEST

static Suite *
robust_suite(void)
{
	Suite *s = suite_create("matrix-robust");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_heavy_tails_quiet);
	tcase_add_test(tc, test_drift_then_step);
	tcase_add_test(tc, test_class_drift_quiet);
	tcase_add_test(tc, test_tail_delay);
	tcase_add_test(tc, test_tail_delay_heavy);
	tcase_add_test(tc, test_backpressure);
	tcase_add_test(tc, test_backpressure_share);
	tcase_add_test(tc, test_ambiguous_order);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(robust_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
