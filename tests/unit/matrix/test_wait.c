/*
 * test_wait.c: non-communication slow detection (wait chain) on hand-built
 * per-rank summaries.
 */
#include <check.h>
#include <stdlib.h>

#include "matrix.h"
#include "fixture.h"

#define NR	16
#define GAP_US	80000.0
#define KERN_US 30000.0
#define WAIT_US 10000.0
#define NOPS	8

static uint32_t nr = NR;	      /* ranks of the job under test */
static double gap_us = GAP_US;	      /* each rank's usual gap */
static double kern_us = KERN_US;      /* and kernel time */
static uint64_t gap_n = NOPS;	      /* gaps per summary: quantiles from 20 */
static int pause_rank = -1;	      /* this rank's gaps hold one long pause */
static double q_lo = 0.5, q_hi = 2.0; /* p50, p90 over the mean gap */
static int few_rank = -1;	      /* this rank reports 19 gaps */
static uint64_t slow_until = 16;      /* the fault lasts intervals 8.. */
static uint64_t open_iv;	      /* interval of run()'s first open */
static const struct matrix_params *run_params; /* NULL: defaults */

/* Before each test: the fixture's defaults (tests change them). */
static void
defaults(void)
{
	nr = NR;
	gap_us = GAP_US;
	kern_us = KERN_US;
	gap_n = NOPS;
	pause_rank = -1;
	q_lo = 0.5;
	q_hi = 2.0;
	few_rank = -1;
	slow_until = 16;
}

/*
 * One interval of a 16-rank job: every rank computes GAP_US (jittered)
 * between collectives; rank slow (if >= 0) computes gap_factor longer, so
 * the others wait for it: their kernels and waits grow by the difference
 * and its own shrink. kern_factor/wait_factor override the culprit's own
 * kernel and wait (to build the case where it does not wait least).
 */
static void
fill(struct fx *f, struct matrix_input *in, uint64_t iv, int slow,
     double gap_factor, double kern_factor, double wait_factor)
{
	uint32_t r;
	double extra = slow >= 0 ? gap_us * (gap_factor - 1.0) : 0;

	for (r = 0; r < nr; r++) {
		struct matrix_coll *c = &f->coll[r];
		struct matrix_wait *w = &f->wait[r];
		double g = gap_us * fx_jitter(f), k = kern_us * fx_jitter(f);
		double wt = WAIT_US * fx_jitter(f);

		if ((int)r == slow) {
			g *= gap_factor;
			k *= kern_factor;
			wt *= wait_factor;
		} else {
			k += extra;
			wt += extra;
		}
		memset(c, 0, sizeof(*c));
		c->comm = f->comm;
		c->rank = r;
		c->nops = NOPS;
		c->gap.count = (int)r == few_rank ? 19 : gap_n;
		c->kernel.count = NOPS;
		c->gap.sum = g * (double)c->gap.count;
		c->kernel.sum = k * NOPS;
		/* two crowds: back to back inside a step, and between steps */
		c->gap.p50 = g * q_lo;
		c->gap.p90 = g * q_hi;
		if ((int)r == pause_rank)
			c->gap.sum += g * (double)gap_n; /* twice the mean */
		c->kernel.p50 = k;
		c->seq_done = c->seq_enter = (iv + 1) * NOPS;
		memset(w, 0, sizeof(*w));
		w->comm = f->comm;
		w->rank = r;
		w->nsteps = NOPS;
		w->recv_wait_us = wt * NOPS;
	}
	memset(in, 0, sizeof(*in));
	in->interval = iv;
	in->coll = f->coll;
	in->ncoll = nr;
	in->wait = f->wait;
	in->nwait = nr;
}

static unsigned
run(int slow, double gap_factor, double kern_factor, double wait_factor,
    struct matrix_event *first)
{
	struct matrix *m = matrix_new(run_params);
	struct fx f;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k;
	unsigned opened = 0;
	uint64_t iv;

	fx_init(&f, nr, 0x5151);
	ck_assert_int_eq(matrix_comm_add(m, f.comm, nr, f.loc), 0);
	for (iv = 0; iv < 16; iv++) {
		fill(&f, &in, iv, iv >= 8 && iv < slow_until ? slow : -1,
		     gap_factor, kern_factor, wait_factor);
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++)
			if (ev[k].state == MATRIX_ST_OPEN && opened++ == 0) {
				*first = ev[k];
				open_iv = iv;
			}
	}
	matrix_free(m);
	return opened;
}

START_TEST(test_slow_rank)
{
	struct matrix_event e;

	ck_assert_uint_eq(run(5, 1.2, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.kind, MATRIX_EV_NONCOMM_SLOW);
	ck_assert_uint_eq(e.suspects[0].role, MATRIX_ROLE_RANK);
	ck_assert_uint_eq(e.suspects[0].rank, 5);
	ck_assert_uint_eq(e.suspects[0].host, 5);
	ck_assert_uint_eq(e.isolate_host, 5);
	ck_assert(e.slowdown > 1.15 && e.slowdown < 1.25);
}
END_TEST

/* A long gap by a rank that also waits most is not the chain's origin. */
START_TEST(test_long_gap_but_waits)
{
	struct matrix_event e;

	ck_assert_uint_eq(run(5, 1.2, 3.0, 3.0, &e), 0);
}
END_TEST

START_TEST(test_no_fault)
{
	struct matrix_event e;

	ck_assert_uint_eq(run(-1, 1.0, 1.0, 1.0, &e), 0);
}
END_TEST

/*
 * Back-to-back collectives leave a gap of microseconds: a quarter more of
 * it is host jitter that costs the job under 1 %, not a slow rank; a gap
 * three times as long costs 6.5 %, more than min_slowdown.
 */
START_TEST(test_short_gap_jitter_costs_nothing)
{
	struct matrix_event e;

	gap_us = 5000.0;
	kern_us = 150000.0;
	ck_assert_uint_eq(run(5, 1.25, 1.0, 1.0, &e), 0);
	ck_assert_uint_eq(run(5, 3.0, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.kind, MATRIX_EV_NONCOMM_SLOW);
	ck_assert_uint_eq(e.suspects[0].rank, 5);
}
END_TEST

/*
 * Two- and three-rank communicators have no spread over members: their
 * members are judged on their own history (warm by interval 8).
 */
START_TEST(test_small_comm_slow_rank)
{
	struct matrix_event e;

	nr = (uint32_t)_i;
	ck_assert_uint_eq(run(1, 1.3, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.kind, MATRIX_EV_NONCOMM_SLOW);
	ck_assert_uint_eq(e.suspects[0].rank, 1);
	ck_assert_uint_eq(e.isolate_host, 1);
	ck_assert_uint_eq(run(-1, 1.0, 1.0, 1.0, &e), 0);
	/* the one that waits is not the origin */
	ck_assert_uint_eq(run(1, 1.3, 3.0, 3.0, &e), 0);
}
END_TEST

/*
 * With a few hundred sampled gaps a summary, one pause of milliseconds
 * doubles a healthy member's mean gap; where the gaps lie (their median
 * and 90th percentile) does not move, and no rank is named.  A rank late
 * by a fifth still is, in a communicator of four.
 */
START_TEST(test_pause_is_not_lateness)
{
	struct matrix_event e;

	nr = 4;
	gap_n = 300;
	pause_rank = 2;
	ck_assert_uint_eq(run(-1, 1.0, 1.0, 1.0, &e), 0);
	ck_assert_uint_eq(run(1, 1.2, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.kind, MATRIX_EV_NONCOMM_SLOW);
	ck_assert_uint_eq(e.suspects[0].rank, 1);
	/* below 20 gaps the quantiles are not trusted: the mean decides */
	gap_n = 8;
	pause_rank = -1;
	ck_assert_uint_eq(run(1, 1.2, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.suspects[0].rank, 1);
}
END_TEST

/*
 * A mean is not on the scale of the quantiles (here twice their
 * geometric mean): a member with too few gaps for quantiles must not
 * look late next to members placed by theirs.  The communicator is then
 * placed by means, and the slow rank is still found.
 */
START_TEST(test_few_gaps_not_late)
{
	struct matrix_event e;

	nr = 4;
	gap_n = 300;
	q_lo = 0.25;
	q_hi = 1.0;
	few_rank = 2;
	ck_assert_uint_eq(run(-1, 1.0, 1.0, 1.0, &e), 0);
	ck_assert_uint_eq(run(1, 1.3, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.suspects[0].rank, 1);
	/* the event's slowdown is the mean gap over the members' median */
	ck_assert(e.slowdown > 1.2 && e.slowdown < 1.4);
}
END_TEST

/*
 * However far a late rank stands out among a few members, lateness that
 * costs the collectives under twice min_slowdown is weak evidence: two
 * intervals of it (a healthy job's dip) open nothing, three of four do.
 * A rank late by a fifth is named in its second interval while stalls
 * of one step are rare in the job (two alike in a row), in its third
 * where they are not: one late interval alone is a stall of one step as
 * often as a slow GPU, so it counts only from the second (the spike
 * filter, wait.c).
 */
START_TEST(test_marginal_lateness_waits)
{
	struct matrix_params p;
	struct matrix_event e;

	/* a member needs another to be compared with */
	matrix_params_default(&p);
	p.min_group = 1;
	ck_assert_ptr_null(matrix_new(&p));

	nr = 4;
	slow_until = 10;
	ck_assert_uint_eq(run(1, 1.08, 1.0, 1.0, &e), 0);
	ck_assert_uint_eq(run(1, 1.2, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(open_iv, 9);
	p.min_group = MATRIX_DEF_MIN_GROUP;
	p.pair_max = 0;
	run_params = &p;
	ck_assert_uint_eq(run(1, 1.2, 1.0, 1.0, &e), 0);
	slow_until = 11;
	ck_assert_uint_eq(run(1, 1.2, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(open_iv, 10);
	run_params = NULL;
	/* weak evidence: its third late interval (8, 9, 10: three of four) */
	slow_until = 16;
	ck_assert_uint_eq(run(1, 1.08, 1.0, 1.0, &e), 1);
	ck_assert_uint_eq(e.suspects[0].rank, 1);
	ck_assert_uint_eq(open_iv, 10);
}
END_TEST

/*
 * A tensor-parallel job: TP_HOSTS hosts of 8 GPUs, one communicator per
 * host (tensor parallel, NVLink) and one per GPU index across the hosts
 * (data parallel).  A step computes gap_us, then the TP collective, then
 * at once the DP one.  On slow_host every GPU computes factor longer (or
 * only slow_gpu when >= 0): inside the host everyone waits for the
 * slowest, so its TP members are equally late when the host is slow as
 * a whole; the other hosts' ranks wait for it in every DP collective.
 */
#define TP_HOSTS 8
#define TP_GPUS	 8

struct tp {
	struct fx f;
	struct matrix_coll coll[2 * TP_HOSTS * TP_GPUS];
	struct matrix_wait wait[2 * TP_HOSTS * TP_GPUS];
	size_t n;
};

/* One (comm, rank) summary: mean gap g, kernel k and wait w per op. */
static void
tp_put(struct tp *t, uint64_t comm, uint32_t rank, uint64_t iv, double g,
       double k, double w)
{
	struct matrix_coll *c = &t->coll[t->n];
	struct matrix_wait *wt = &t->wait[t->n];

	memset(c, 0, sizeof(*c));
	c->comm = comm;
	c->rank = rank;
	c->nops = NOPS;
	c->gap.count = NOPS;
	c->kernel.count = NOPS;
	c->gap.sum = g * NOPS;
	c->gap.p50 = g * 0.5;
	c->gap.p90 = g * 2.0;
	c->kernel.sum = k * NOPS;
	c->kernel.p50 = k;
	c->seq_done = c->seq_enter = (iv + 1) * NOPS;
	memset(wt, 0, sizeof(*wt));
	wt->comm = comm;
	wt->rank = rank;
	wt->nsteps = NOPS;
	wt->recv_wait_us = w * NOPS;
	t->n++;
}

static void
tp_fill(struct tp *t, struct matrix_input *in, uint64_t iv, int slow_host,
	int slow_gpu, double factor)
{
	uint32_t h, g;
	double late = gap_us * (factor - 1.0);

	t->n = 0;
	for (h = 0; h < TP_HOSTS; h++)
		for (g = 0; g < TP_GPUS; g++) {
			int on = (int)h == slow_host;
			int me = on && (slow_gpu < 0 || (int)g == slow_gpu);
			double j = fx_jitter(&t->f);
			double gap = gap_us * j * (me ? factor : 1.0);
			/* TP: the host's others wait for its slowest */
			double tk = kern_us * fx_jitter(&t->f) +
				    (on && !me ? late : 0);

			tp_put(t, 0x7000 + h, g, iv, gap, tk, WAIT_US + tk);
		}
	for (g = 0; g < TP_GPUS; g++)
		for (h = 0; h < TP_HOSTS; h++) {
			int on = (int)h == slow_host;
			double dk = kern_us * fx_jitter(&t->f) +
				    (on || slow_host < 0 ? 0 : late);

			tp_put(t, 0x8000 + g, h, iv, 500.0 * fx_jitter(&t->f),
			       dk, WAIT_US * fx_jitter(&t->f) + dk);
		}
	memset(in, 0, sizeof(*in));
	in->interval = iv;
	in->coll = t->coll;
	in->ncoll = t->n;
	in->wait = t->wait;
	in->nwait = t->n;
}

/* Runs the TP job 20 intervals, the fault from 8; counts opens by kind. */
static void
tp_run(int slow_host, int slow_gpu, double factor, unsigned *opened,
       struct matrix_event *first)
{
	struct matrix *m = matrix_new(NULL);
	struct matrix_rank_loc loc[TP_GPUS];
	struct matrix_input in;
	const struct matrix_event *ev;
	static struct tp t;
	size_t nev, k;
	uint32_t h, g;
	uint64_t iv;

	memset(&t, 0, sizeof(t));
	fx_init(&t.f, 1, 0x7777);
	for (h = 0; h < TP_HOSTS; h++) {
		for (g = 0; g < TP_GPUS; g++) {
			memset(&loc[g], 0, sizeof(loc[g]));
			loc[g].host = h;
			loc[g].gpu = (uint16_t)g;
			loc[g].nic = (uint16_t)g;
		}
		ck_assert_int_eq(matrix_comm_add(m, 0x7000 + h, TP_GPUS, loc),
				 0);
	}
	for (g = 0; g < TP_GPUS; g++) {
		for (h = 0; h < TP_HOSTS; h++) {
			memset(&loc[h], 0, sizeof(loc[h]));
			loc[h].host = h;
			loc[h].gpu = (uint16_t)g;
			loc[h].nic = (uint16_t)g;
		}
		ck_assert_int_eq(matrix_comm_add(m, 0x8000 + g, TP_HOSTS, loc),
				 0);
	}
	memset(opened, 0, MATRIX_EV_COUNT * sizeof(*opened));
	for (iv = 0; iv < 20; iv++) {
		tp_fill(&t, &in, iv, iv >= 8 ? slow_host : -1, slow_gpu,
			factor);
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++)
			if (ev[k].state == MATRIX_ST_OPEN &&
			    opened[ev[k].kind]++ == 0 &&
			    ev[k].kind != MATRIX_EV_NONCOMM_SLOW)
				*first = ev[k];
	}
	matrix_free(m);
}

/* A host slowed as a whole inside a TP layout is named, as the host. */
START_TEST(test_tp_host_slow)
{
	unsigned opened[MATRIX_EV_COUNT], k, n = 0;
	struct matrix_event e;

	tp_run(3, -1, _i ? 3.0 : 1.5, opened, &e);
	for (k = 0; k < MATRIX_EV_COUNT; k++)
		n += opened[k];
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(opened[MATRIX_EV_HOST_SLOW], 1);
	ck_assert_uint_eq(e.suspects[0].host, 3);
	ck_assert_uint_eq(e.evidence.gpus, 0xff);
	ck_assert_uint_eq(e.evidence.basis, MATRIX_BASIS_KERNEL);
	ck_assert_uint_eq(e.isolate_host, 3);
}
END_TEST

/* One slow GPU of that host is that GPU, not its host. */
START_TEST(test_tp_one_gpu_not_host)
{
	unsigned opened[MATRIX_EV_COUNT];
	struct matrix_event e;

	tp_run(3, 5, 1.5, opened, &e);
	ck_assert_uint_eq(opened[MATRIX_EV_HOST_SLOW], 0);
	ck_assert_uint_eq(opened[MATRIX_EV_NONCOMM_SLOW], 1);
}
END_TEST

/* No fault: nothing. */
START_TEST(test_tp_quiet)
{
	unsigned opened[MATRIX_EV_COUNT], k;
	struct matrix_event e;

	tp_run(-1, -1, 1.0, opened, &e);
	for (k = 0; k < MATRIX_EV_COUNT; k++)
		ck_assert_uint_eq(opened[k], 0);
}
END_TEST

static Suite *
wait_suite(void)
{
	Suite *s = suite_create("matrix-wait");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, defaults, NULL);
	tcase_add_test(tc, test_slow_rank);
	tcase_add_test(tc, test_long_gap_but_waits);
	tcase_add_test(tc, test_no_fault);
	tcase_add_test(tc, test_short_gap_jitter_costs_nothing);
	tcase_add_loop_test(tc, test_small_comm_slow_rank, 2, 4);
	tcase_add_test(tc, test_pause_is_not_lateness);
	tcase_add_test(tc, test_few_gaps_not_late);
	tcase_add_test(tc, test_marginal_lateness_waits);
	tcase_add_loop_test(tc, test_tp_host_slow, 0, 2);
	tcase_add_test(tc, test_tp_one_gpu_not_host);
	tcase_add_test(tc, test_tp_quiet);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wait_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
