/*
 * test_hang.c: hangs and lost nodes from progress markers: a rank that
 * never enters op k, a connection that stops moving, a lost host, and a
 * missing rank that is explained by being blocked elsewhere.
 */
#include <check.h>
#include <stdlib.h>

#include "matrix.h"
#include "fixture.h"

#define NR    8
#define HANG  5 /* first stalled interval */
#define STEPS 10

/*
 * ENQUEUED: as NONCOMM, but the others report op k done as soon as they
 * enter it (completion read at enqueue, as for the NCCL plugin's
 * unsampled collectives); QUIET: the same reporting, everyone at op k.
 */
/*
 * STALE: as ENQUEUED, but rank 3's markers are the agent's repeat of what
 * it last said (the rank itself is silent): no hang is named from them.
 */
/*
 * ENQ_COMM: as QUIET, but connection 1->2 has chunks posted and moves
 * nothing: stuck on the network behind ops that read as done.  ENQ_PEER:
 * the same, but no connection summary comes (nothing finished to report);
 * rank 1's progress says it has ops open to a peer with nothing moving.
 */
enum scenario {
	NONCOMM,
	COMM,
	LOST,
	EXPLAINED,
	ENQUEUED,
	QUIET,
	STALE,
	ENQ_COMM,
	ENQ_PEER
};

struct result {
	unsigned opened[MATRIX_EV_COUNT];
	struct matrix_event first[MATRIX_EV_COUNT];
	uint64_t open_iv[MATRIX_EV_COUNT];
};

static void
progress(struct matrix_coll *c, uint64_t comm, uint32_t rank, uint64_t done,
	 uint64_t enter, uint32_t nops)
{
	memset(c, 0, sizeof(*c));
	c->comm = comm;
	c->rank = rank;
	c->nops = nops;
	c->seq_done = done;
	c->seq_enter = enter;
	if (nops > 0) {
		c->gap.count = c->kernel.count = nops;
		c->gap.sum = 1000.0 * nops;
		c->kernel.sum = 500.0 * nops;
	}
}

/*
 * Comm A: 8 ranks on hosts 0..7. Comm B (EXPLAINED only): ranks 0..3 on
 * the same hosts 0..3 (think tensor parallel next to data parallel).
 */
static void
run(enum scenario sc, struct result *res)
{
	static struct matrix_coll coll[2 * NR];
	struct matrix *m = matrix_new(NULL);
	struct fx f;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k, n;
	uint64_t iv, done;
	uint32_t r;

	memset(res, 0, sizeof(*res));
	fx_init(&f, NR, 0xaaaa);
	fx_ring(&f);
	ck_assert_int_eq(matrix_comm_add(m, f.comm, NR, f.loc), 0);
	ck_assert_int_eq(matrix_comm_add(m, 0xbbbb, 4, f.loc), 0);
	for (iv = 0; iv < 10; iv++) {
		int hung = iv >= HANG;

		done = (hung ? HANG : iv + 1) * STEPS;
		fx_fill(&f, &in, iv);
		n = 0;
		for (r = 0; r < NR; r++) {
			uint64_t enter = done + (hung ? 1 : 0), rdone = done;

			if (sc == LOST && hung && r == 2)
				continue;
			if (hung && (sc == NONCOMM || sc == EXPLAINED) &&
			    r == 3)
				enter = done; /* never entered op k */
			if (hung &&
			    (sc == ENQUEUED || sc == QUIET || sc == STALE ||
			     sc == ENQ_COMM || sc == ENQ_PEER))
				rdone = enter; /* done when enqueued */
			if (hung && (sc == ENQUEUED || sc == STALE) && r == 3)
				enter = rdone = done;
			progress(&coll[n++], f.comm, r, rdone, enter,
				 hung ? 0 : STEPS);
			coll[n - 1].done_at_enqueue =
				hung &&
				(sc == ENQUEUED || sc == QUIET || sc == STALE ||
				 sc == ENQ_COMM || sc == ENQ_PEER) &&
				rdone > done;
			coll[n - 1].stuck = hung && sc == ENQ_PEER && r == 1;
			coll[n - 1].carried = sc == STALE && r == 3;
		}
		for (r = 0; r < 4; r++) {
			/* B: rank 3 is inside op k of B, the rest idle */
			uint64_t enter =
				done + (sc == EXPLAINED && hung && r == 3);

			if (sc == LOST && hung && r == 2)
				continue;
			progress(&coll[n++], 0xbbbb, r, done, enter,
				 hung ? 0 : STEPS);
		}
		in.coll = coll;
		in.ncoll = n;
		if (hung) {
			/* nothing moves; COMM: 1->2 has chunks posted */
			for (k = 0; k < f.nconn; k++) {
				f.conn[k].bytes = f.conn[k].chunks = 0;
				f.conn[k].xfer.count = 0;
				if ((sc == COMM || sc == ENQ_COMM) &&
				    f.conn[k].src == 1)
					f.conn[k].pending = 4;
			}
			if (sc == LOST) {
				/* host 2's agent is silent: drop its rows */
				for (k = n = 0; k < f.nconn; k++)
					if (f.conn[k].src != 2)
						f.conn[n++] = f.conn[k];
				in.nconn = n;
			}
		}
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++) {
			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			if (res->opened[ev[k].kind]++ == 0) {
				res->first[ev[k].kind] = ev[k];
				res->open_iv[ev[k].kind] = iv;
			}
		}
		if (sc == LOST)
			fx_init(&f, NR, 0xaaaa), fx_ring(&f);
	}
	matrix_free(m);
}

START_TEST(test_noncomm_hang)
{
	struct result r;
	const struct matrix_event *e;

	run(NONCOMM, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 1);
	ck_assert_uint_eq(r.opened[MATRIX_EV_COMM_HANG], 0);
	e = &r.first[MATRIX_EV_NONCOMM_HANG];
	ck_assert_uint_eq(e->suspects[0].rank, 3);
	ck_assert_uint_eq(e->suspects[0].host, 3);
	ck_assert_uint_eq(e->hang_seq, HANG * STEPS + 1);
	/*
	 * named once the others sat inside op k, entered at HANG, for
	 * hang_timeout intervals
	 */
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NONCOMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
}
END_TEST

/*
 * Ops read as done when enqueued: the member that never entered op k is
 * still named, a little later (the others' op k counts as progress once);
 * a job where everyone stopped at the same op is one job stall, no hang,
 * and one whose laggard is only the agent's repeat of a silent rank names
 * no hang.
 */
START_TEST(test_enqueued_completion_hang_and_quiet)
{
	struct result r;

	run(ENQUEUED, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 1);
	ck_assert_uint_eq(r.opened[MATRIX_EV_COMM_HANG], 0);
	ck_assert_uint_eq(r.first[MATRIX_EV_NONCOMM_HANG].suspects[0].rank, 3);
	ck_assert_uint_eq(r.first[MATRIX_EV_NONCOMM_HANG].hang_seq,
			  HANG * STEPS + 1);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NONCOMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
	/* everyone stopped at op k, nothing pending: the job stalls */
	run(QUIET, &r);
	for (unsigned k = 0; k < MATRIX_EV_COUNT; k++)
		ck_assert_uint_eq(r.opened[k], k == MATRIX_EV_JOB_STALL);
	ck_assert_uint_eq(r.first[MATRIX_EV_JOB_STALL].action,
			  MATRIX_ACT_CHECK_JOB);
	run(STALE, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 0);
	/* everyone at op k, read done, but 1->2 stuck: a comm hang */
	run(ENQ_COMM, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_COMM_HANG], 1);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 0);
	ck_assert_uint_eq(r.first[MATRIX_EV_COMM_HANG].suspects[0].role,
			  MATRIX_ROLE_LINK);
	ck_assert_uint_eq(r.first[MATRIX_EV_COMM_HANG].suspects[0].host, 1);
	ck_assert_uint_eq(r.first[MATRIX_EV_COMM_HANG].suspects[0].peer_host,
			  2);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_COMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
	/* no connection summary, rank 1 reports a stuck peer: named */
	run(ENQ_PEER, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_COMM_HANG], 1);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 0);
	ck_assert_uint_eq(r.first[MATRIX_EV_COMM_HANG].suspects[0].rank, 1);
	ck_assert_uint_eq(r.first[MATRIX_EV_COMM_HANG].suspects[0].host, 1);
}
END_TEST

START_TEST(test_comm_hang)
{
	struct result r;
	const struct matrix_event *e;

	run(COMM, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_COMM_HANG], 1);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 0);
	e = &r.first[MATRIX_EV_COMM_HANG];
	ck_assert_uint_eq(e->suspects[0].role, MATRIX_ROLE_LINK);
	ck_assert_uint_eq(e->suspects[0].host, 1);
	ck_assert_uint_eq(e->suspects[0].peer_host, 2);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_COMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
	ck_assert_uint_eq(e->domain, MATRIX_DOM_LINK);
	ck_assert_uint_eq(e->action, MATRIX_ACT_CHECK_LINK);
}
END_TEST

/*
 * A job that ends destroys its communicators and goes quiet.  Retired,
 * that silence is no event; not retired (the control), the whole job
 * silent is one job stall.  Opens counted over 8 silent intervals after 5
 * healthy ones.
 */
static unsigned
run_job_end(int retire)
{
	static struct matrix_coll coll[NR];
	struct matrix *m = matrix_new(NULL);
	const struct matrix_event *ev;
	struct matrix_input in;
	unsigned opened = 0;
	size_t nev;
	struct fx f;

	fx_init(&f, NR, 0xcccc);
	fx_ring(&f);
	ck_assert_int_eq(matrix_comm_add(m, f.comm, NR, f.loc), 0);
	for (uint64_t iv = 0; iv < 13; iv++) {
		if (iv < 5) {
			fx_fill(&f, &in, iv);
			for (uint32_t r = 0; r < NR; r++)
				progress(&coll[r], f.comm, r, (iv + 1) * STEPS,
					 (iv + 1) * STEPS, STEPS);
			in.coll = coll;
			in.ncoll = NR;
		} else {
			if (iv == 5 && retire)
				ck_assert_int_eq(matrix_comm_retire(m, f.comm),
						 0);
			memset(&in, 0, sizeof(in));
			in.interval = iv;
		}
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (size_t k = 0; k < nev; k++)
			opened += ev[k].state == MATRIX_ST_OPEN;
	}
	ck_assert_int_eq(matrix_comm_retire(m, 0x1234), -1);
	matrix_free(m);
	return opened;
}

START_TEST(test_retired_job_end_is_quiet)
{
	ck_assert_uint_eq(run_job_end(1), 0);
	ck_assert_uint_gt(run_job_end(0), 0);
}
END_TEST

START_TEST(test_node_lost)
{
	struct result r;

	run(LOST, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NODE_LOST], 1);
	ck_assert_uint_eq(r.first[MATRIX_EV_NODE_LOST].isolate_host, 2);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NODE_LOST],
			  HANG + MATRIX_DEF_NODE_TIMEOUT - 1);
	/* the stall of comm A is the lost node's doing, not a new hang */
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 0);
}
END_TEST

START_TEST(test_missing_but_blocked_elsewhere)
{
	struct result r;
	unsigned i;

	run(EXPLAINED, &r);
	/* rank 3 is missing from A because it is stuck inside B */
	for (i = 0; i < r.opened[MATRIX_EV_NONCOMM_HANG]; i++)
		ck_assert_uint_ne(
			r.first[MATRIX_EV_NONCOMM_HANG].suspects[0].host, 3);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 0);
}
END_TEST

static Suite *
hang_suite(void)
{
	Suite *s = suite_create("matrix-hang");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_noncomm_hang);
	tcase_add_test(tc, test_comm_hang);
	tcase_add_test(tc, test_enqueued_completion_hang_and_quiet);
	tcase_add_test(tc, test_node_lost);
	tcase_add_test(tc, test_retired_job_end_is_quiet);
	tcase_add_test(tc, test_missing_but_blocked_elsewhere);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(hang_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
