/*
 * test_stall.c: hangs told by what each rank says of itself, and stalls
 * that are no fault.  Ranks that finished the op while others stay inside
 * it (stopped, or gone on to the next ops), every rank stuck behind one
 * connection, no connection evidence at all, a stall of the whole job,
 * reports that come late and bunched, and a real non-communication hang.
 * Where a second communicator waits for a rank held by the first one's
 * hang, the hang is still one event.
 */
#include <check.h>
#include <stdlib.h>

#include "matrix.h"
#include "fixture.h"

#define NR    8
#define HANG  5 /* first stalled interval */
#define STEPS 10
#define IVS   20

/* What the ranks do from interval HANG on. */
enum mode {
	PARTIAL_STOP,  /* 0-1 complete op k and stop; 2-3 stay inside k */
	PARTIAL_NEXT,  /* 0-1 complete k and enter k + 1 */
	PARTIAL_NEXT2, /* 0-1 complete k and k + 1 and enter k + 2 */
	ALL_INSIDE,    /* every rank inside op k */
	JOB_STALL,     /* every rank stops after op k - 1: nothing open */
	NONCOMM,       /* rank 3 never enters op k */
	HEALTHY,       /* no fault */
};

struct opt {
	enum mode mode;
	int pending; /* connection 1 -> 2 has chunks posted, none moved */
	int late; /* host g % NR's report of interval g comes with the next */
	int all_late; /* the job's reports of HANG, HANG + 1 come at HANG + 2 */
	int skew;     /* half the hosts report one interval late, 4 to 7 */
	int carried;  /* host iv % NR's ranks: the agent's repeat */
	int resume;   /* the job moves again from interval HANG + 6 */
	int hb;	      /* in.hosts: hosts whose report of iv came in iv */
	int late2;    /* host 3's reports of 6 and 7 each come one late */
	int lost;     /* host 5 sends nothing from interval HANG on */
	int tp;	      /* comm B (see run) waits for rank 0 from interval tp */
	int linked;   /* in.linked: every host's agent session stays open */
};

#define COMM_B 0xbbbbull

struct res {
	unsigned opened[MATRIX_EV_COUNT];
	unsigned resolved[MATRIX_EV_COUNT];
	struct matrix_event first[MATRIX_EV_COUNT];
	uint64_t open_iv[MATRIX_EV_COUNT];
};

static void
marker(struct matrix_coll *c, uint64_t comm, uint32_t rank, uint64_t enter,
       uint64_t done, uint32_t nops)
{
	memset(c, 0, sizeof(*c));
	c->comm = comm;
	c->rank = rank;
	c->nops = nops;
	c->seq_enter = enter;
	c->seq_done = done;
	if (nops > 0) {
		c->gap.count = c->kernel.count = nops;
		c->gap.sum = 1000.0 * nops;
		c->kernel.sum = 500.0 * nops;
	}
}

/* Is the job stopped (by the fault of o) in interval iv? */
static int
hung(const struct opt *o, uint64_t iv)
{
	return o->mode != HEALTHY && iv >= HANG &&
	       !(o->resume && iv >= HANG + 6);
}

/*
 * Rank r's markers in interval iv under o (op k = HANG * STEPS + 1).  A
 * healthy odd rank is caught inside its next op, as snapshots are.
 */
static void
rank_at(const struct opt *o, uint64_t iv, uint32_t r, uint64_t *enter,
	uint64_t *done)
{
	uint64_t k = HANG * STEPS + 1;

	if (!hung(o, iv)) {
		*done = (iv + 1) * STEPS;
		*enter = *done + (r & 1);
		return;
	}
	*done = k - 1;
	*enter = k;
	switch (o->mode) {
	case PARTIAL_STOP:
		if (r < 2)
			*done = k;
		break;
	case PARTIAL_NEXT:
		if (r < 2)
			*done = k, *enter = k + 1;
		break;
	case PARTIAL_NEXT2:
		if (r < 2)
			*done = k + 1, *enter = k + 2;
		break;
	case JOB_STALL:
		*enter = k - 1;
		break;
	case NONCOMM:
		if (r == 3)
			*enter = k - 1;
		break;
	default:
		break;
	}
}

/* Intervals late that host h's report of interval g arrives. */
static uint64_t
delay(const struct opt *o, uint32_t h, uint64_t g)
{
	if (o->all_late && (g == HANG || g == HANG + 1))
		return HANG + 2 - g;
	if (o->skew && h < NR / 2 && g >= 4 && g < 8)
		return 1;
	if (o->late2 && h == 3 && (g == 6 || g == 7))
		return 1;
	if (o->lost && h == 5 && g >= HANG)
		return IVS; /* never */
	return o->late && g >= 2 && g % NR == h;
}

/*
 * Host r's reports arriving in interval iv, oldest first, into coll[*n];
 * returns how many.
 */
static unsigned
deliver(const struct opt *o, uint64_t iv, uint32_t r, uint64_t comm,
	struct matrix_coll *coll, size_t *n)
{
	uint64_t g, enter, done;
	unsigned got = 0;

	for (g = iv >= 3 ? iv - 3 : 0; g <= iv; g++) {
		if (g + delay(o, r, g) != iv)
			continue;
		rank_at(o, g, r, &enter, &done);
		marker(&coll[*n], comm, r, enter, done, hung(o, g) ? 0 : STEPS);
		if (o->carried && g == iv && iv >= 2 && iv % NR == r) {
			/* the rank is silent: the agent repeats its markers */
			rank_at(o, iv - 1, r, &enter, &done);
			marker(&coll[*n], comm, r, enter, done, 0);
			coll[*n].carried = 1;
		}
		(*n)++;
		got++;
	}
	return got;
}

/*
 * Comm B (o->tp): rank 0 on rank 0's device, rank 1 on a GPU of its own
 * on host 0.  From interval o->tp on, rank 1 is inside B's next op,
 * waiting for rank 0, which never enters it (it is held by comm A).
 */
static void
comm_b(const struct opt *o, uint64_t iv, struct matrix_coll *coll, size_t *n)
{
	uint64_t b = 100;

	marker(&coll[(*n)++], COMM_B, 0, b, b, 0);
	marker(&coll[(*n)++], COMM_B, 1, b + (iv >= (uint64_t)o->tp), b, 0);
}

static void
run(const struct opt *o, struct res *res)
{
	static struct matrix_coll coll[4 * NR + 2];
	struct matrix_rank_loc bloc[2];
	uint32_t hosts[NR], all[NR];
	struct matrix *m = matrix_new(NULL);
	const struct matrix_event *ev;
	struct matrix_input in;
	uint64_t iv;
	size_t nev, k, n;
	struct fx f;
	uint32_t r;

	memset(res, 0, sizeof(*res));
	for (r = 0; r < NR; r++)
		all[r] = r;
	fx_init(&f, NR, 0xdddd);
	fx_ring(&f);
	ck_assert_int_eq(matrix_comm_add(m, f.comm, NR, f.loc), 0);
	bloc[0] = bloc[1] = f.loc[0];
	bloc[1].gpu = bloc[1].nic = 1;
	if (o->tp)
		ck_assert_int_eq(matrix_comm_add(m, COMM_B, 2, bloc), 0);
	for (iv = 0; iv < IVS; iv++) {
		uint8_t heard[NR];
		size_t nh = 0;

		fx_fill(&f, &in, iv);
		n = 0;
		for (r = 0; r < NR; r++) {
			heard[r] = deliver(o, iv, r, f.comm, coll, &n) > 0;
			if (delay(o, r, iv) == 0)
				hosts[nh++] = r;
		}
		if (o->tp)
			comm_b(o, iv, coll, &n);
		if (o->hb) {
			in.hosts = hosts;
			in.nhosts = nh;
		}
		in.linked = o->linked ? all : NULL;
		in.nlinked = o->linked ? NR : 0;
		in.coll = coll;
		in.ncoll = n;
		for (k = n = 0; k < f.nconn; k++) {
			struct matrix_conn *c = &f.conn[k];

			if (!heard[c->src])
				continue;
			if (hung(o, iv)) {
				c->bytes = c->chunks = c->xfer.count = 0;
				if (o->pending && c->src == 1 && c->dst == 2)
					c->pending = 4;
			}
			f.conn[n++] = *c;
		}
		in.nconn = n;
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++) {
			if (ev[k].state == MATRIX_ST_RESOLVED)
				res->resolved[ev[k].kind]++;
			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			if (res->opened[ev[k].kind]++ == 0) {
				res->first[ev[k].kind] = ev[k];
				res->open_iv[ev[k].kind] = iv;
			}
		}
		fx_init(&f, NR, 0xdddd);
		fx_ring(&f);
	}
	matrix_free(m);
}

static unsigned
total(const struct res *r)
{
	unsigned k, n = 0;

	for (k = 0; k < MATRIX_EV_COUNT; k++)
		n += r->opened[k];
	return n;
}

/* One comm-hang event naming link 1 -> 2 with both ends, in time. */
static void
assert_link(const struct res *r)
{
	const struct matrix_event *e = &r->first[MATRIX_EV_COMM_HANG];

	ck_assert_uint_eq(r->opened[MATRIX_EV_COMM_HANG], 1);
	ck_assert_uint_eq(total(r), 1);
	ck_assert_uint_eq(e->nsuspects, 1);
	ck_assert_uint_eq(e->suspects[0].role, MATRIX_ROLE_LINK);
	ck_assert_uint_eq(e->suspects[0].rank, 1);
	ck_assert_uint_eq(e->suspects[0].peer_rank, 2);
	ck_assert_uint_eq(e->suspects[0].host, 1);
	ck_assert_uint_eq(e->suspects[0].peer_host, 2);
	ck_assert_uint_eq(e->suspects[0].peer_gpu, 0);
	ck_assert_uint_eq(e->suspects[0].peer_nic, 0);
	ck_assert_uint_eq(e->hang_seq, HANG * STEPS + 1);
	ck_assert_uint_eq(e->domain, MATRIX_DOM_LINK);
	ck_assert_uint_eq(e->action, MATRIX_ACT_CHECK_LINK);
	ck_assert_uint_eq(e->evidence.basis, MATRIX_BASIS_PROGRESS);
	ck_assert_uint_ge(e->evidence.hot_intervals, MATRIX_DEF_HANG_TIMEOUT);
	ck_assert_uint_le(r->open_iv[MATRIX_EV_COMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
}

/*
 * Ranks 0-1 complete op k, ranks 2-3 stay inside it behind 1 -> 2: found
 * whether 0-1 stop, enter k + 1, or complete k + 1 and enter k + 2 (they
 * wait for 2-3; their being inside the same communicator's next op
 * explains nothing).
 */
START_TEST(test_partial_completion)
{
	static const enum mode modes[] = {PARTIAL_STOP, PARTIAL_NEXT,
					  PARTIAL_NEXT2};
	struct opt o = {.mode = modes[_i], .pending = 1};
	struct res r;

	run(&o, &r);
	assert_link(&r);
}
END_TEST

START_TEST(test_all_stuck_names_link)
{
	struct opt o = {.mode = ALL_INSIDE, .pending = 1};
	struct res r;

	run(&o, &r);
	assert_link(&r);
}
END_TEST

/*
 * A partial hang where ranks 0-1 completed op k and stopped, and comm B's
 * rank 1 waits for rank 0 in B's next op, from the interval the hang
 * starts or one before (communicators do not stop in the same interval):
 * rank 0 is held by the hang, no culprit of B's, and the hang is one
 * event naming the link.
 */
START_TEST(test_partial_hang_waiter_elsewhere)
{
	struct opt o = {.mode = PARTIAL_STOP, .pending = 1, .tp = HANG - _i};
	struct res r;

	run(&o, &r);
	assert_link(&r);
}
END_TEST

/*
 * No connection shows where: one ambiguous event, observed, naming only
 * the ranks whose own markers put them inside op k.
 */
START_TEST(test_no_connection_evidence)
{
	static const enum mode modes[] = {PARTIAL_STOP, PARTIAL_NEXT};
	struct opt o = {.mode = modes[_i]};
	const struct matrix_event *e;
	struct res r;
	unsigned i;

	run(&o, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_COMM_HANG], 1);
	ck_assert_uint_eq(total(&r), 1);
	e = &r.first[MATRIX_EV_COMM_HANG];
	ck_assert_uint_eq(e->ambiguous, 1);
	ck_assert_uint_eq(e->action, MATRIX_ACT_OBSERVE);
	ck_assert(e->confidence < 0.9);
	ck_assert_uint_eq(e->nsuspects, MATRIX_MAX_SUSPECTS);
	ck_assert_uint_eq(e->evidence.nmembers, NR - 2);
	for (i = 0; i < e->nsuspects; i++) {
		ck_assert_uint_eq(e->suspects[i].role, MATRIX_ROLE_RANK);
		ck_assert_uint_ge(e->suspects[i].rank, 2);
	}
	ck_assert_uint_le(r.open_iv[MATRIX_EV_COMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
}
END_TEST

/*
 * The whole job stops at the same point (checkpoint): one job-stall
 * event, check the job, no hang, no isolation; it resolves when the job
 * moves again.
 */
START_TEST(test_job_stall)
{
	struct opt o = {.mode = JOB_STALL, .resume = 1};
	const struct matrix_event *e;
	struct res r;

	run(&o, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_JOB_STALL], 1);
	ck_assert_uint_eq(total(&r), 1);
	e = &r.first[MATRIX_EV_JOB_STALL];
	ck_assert_uint_eq(e->domain, MATRIX_DOM_JOB);
	ck_assert_uint_eq(e->action, MATRIX_ACT_CHECK_JOB);
	ck_assert_uint_eq(e->evidence.basis, MATRIX_BASIS_PROGRESS);
	ck_assert_uint_eq(e->nsuspects, 0);
	ck_assert_uint_ge(e->evidence.hosts_blamed, NR / 2);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_JOB_STALL],
			  HANG + MATRIX_DEF_STALL_TIMEOUT);
	ck_assert_uint_eq(r.resolved[MATRIX_EV_JOB_STALL], 1);
}
END_TEST

/*
 * Reports that come late: every host in turn silent one interval, then
 * two intervals' reports at once; the agent repeating a silent rank's
 * markers; the whole job silent two intervals, then three intervals'
 * reports at once; half the hosts a steady interval behind.  None of it
 * is a hang, a lost node or a stall.
 */
START_TEST(test_late_reports_are_quiet)
{
	struct opt late = {.mode = HEALTHY, .late = 1};
	struct opt carried = {.mode = HEALTHY, .carried = 1};
	struct opt all = {.mode = HEALTHY, .all_late = 1};
	struct opt skew = {.mode = HEALTHY, .skew = 1};
	struct res r;

	run(&late, &r);
	ck_assert_uint_eq(total(&r), 0);
	run(&carried, &r);
	ck_assert_uint_eq(total(&r), 0);
	run(&all, &r);
	ck_assert_uint_eq(total(&r), 0);
	run(&skew, &r);
	ck_assert_uint_eq(total(&r), 0);
}
END_TEST

/*
 * With heartbeats (in.hosts) apart from the summaries: a host late twice
 * in a row misses node_timeout heartbeats, but its first late reports
 * arrive in the second: it is alive, and no event opens.  Late and
 * skewed reports stay quiet too.  A host that sends nothing is lost
 * within node_timeout intervals.
 */
START_TEST(test_late_heartbeats_not_lost)
{
	struct opt twice = {.mode = HEALTHY, .late2 = 1, .hb = 1};
	struct opt late = {.mode = HEALTHY, .late = 1, .hb = 1};
	struct opt skew = {.mode = HEALTHY, .skew = 1, .hb = 1};
	struct opt lost = {.mode = HEALTHY, .lost = 1, .hb = 1};
	struct res r;

	run(&twice, &r);
	ck_assert_uint_eq(total(&r), 0);
	run(&late, &r);
	ck_assert_uint_eq(total(&r), 0);
	run(&skew, &r);
	ck_assert_uint_eq(total(&r), 0);
	run(&lost, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NODE_LOST], 1);
	ck_assert_uint_eq(r.first[MATRIX_EV_NODE_LOST].isolate_host, 5);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NODE_LOST],
			  HANG + MATRIX_DEF_NODE_TIMEOUT - 1);
}
END_TEST

/*
 * A host silent while its agent's session stays open (a starved or
 * stopped agent) is late, not lost, for link_grace intervals more; then
 * it is lost all the same (a hung machine keeps its sessions open).
 */
START_TEST(test_linked_silence_waits)
{
	struct opt lost = {.mode = HEALTHY, .lost = 1, .hb = 1, .linked = 1};
	struct res r;

	run(&lost, &r);
	ck_assert_uint_eq(total(&r), 1);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NODE_LOST], 1);
	ck_assert_uint_eq(r.first[MATRIX_EV_NODE_LOST].isolate_host, 5);
	ck_assert_uint_gt(r.open_iv[MATRIX_EV_NODE_LOST],
			  HANG + MATRIX_DEF_NODE_TIMEOUT - 1);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NODE_LOST],
			  HANG + MATRIX_DEF_NODE_TIMEOUT +
				  MATRIX_DEF_LINK_GRACE - 1);
}
END_TEST

/*
 * A real non-communication hang is named within hang_timeout + 1
 * intervals, on time reports or late ones (then once the rank's own
 * markers confirm it did not move).
 */
START_TEST(test_noncomm_hang_found)
{
	struct opt o = {.mode = NONCOMM};
	struct opt ol = {.mode = NONCOMM, .late = 1};
	const struct matrix_event *e;
	struct res r;

	run(&o, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 1);
	ck_assert_uint_eq(total(&r), 1);
	e = &r.first[MATRIX_EV_NONCOMM_HANG];
	ck_assert_uint_eq(e->suspects[0].rank, 3);
	ck_assert_uint_eq(e->suspects[0].host, 3);
	ck_assert_uint_eq(e->domain, MATRIX_DOM_GPU);
	ck_assert_uint_eq(e->action, MATRIX_ACT_ISOLATE_HOST);
	ck_assert_uint_eq(e->evidence.basis, MATRIX_BASIS_PROGRESS);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NONCOMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT);
	run(&ol, &r);
	ck_assert_uint_eq(r.opened[MATRIX_EV_NONCOMM_HANG], 1);
	ck_assert_uint_eq(total(&r), 1);
	ck_assert_uint_eq(r.first[MATRIX_EV_NONCOMM_HANG].suspects[0].rank, 3);
	ck_assert_uint_le(r.open_iv[MATRIX_EV_NONCOMM_HANG],
			  HANG + MATRIX_DEF_HANG_TIMEOUT + 2);
}
END_TEST

static Suite *
stall_suite(void)
{
	Suite *s = suite_create("matrix-stall");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_partial_completion, 0, 3);
	tcase_add_test(tc, test_all_stuck_names_link);
	tcase_add_loop_test(tc, test_partial_hang_waiter_elsewhere, 0, 2);
	tcase_add_loop_test(tc, test_no_connection_evidence, 0, 2);
	tcase_add_test(tc, test_job_stall);
	tcase_add_test(tc, test_late_reports_are_quiet);
	tcase_add_test(tc, test_late_heartbeats_not_lost);
	tcase_add_test(tc, test_linked_silence_waits);
	tcase_add_test(tc, test_noncomm_hang_found);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(stall_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
