/*
 * test_views.c - c4ctl's views of a known state: the job's summary, the
 * ranks of a communicator and where they run, the delay matrix of the last
 * interval scored against its transport's median, and which communicator
 * is shown when none is named.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "fixture.h"
#include "views.h"

struct views_fx {
	struct hosts hosts;
	struct ingest_stats st;
	struct matrix *m;
	struct telemetry t;
	struct fx_seen seen;
	struct events evs;
	struct matrix_conn last[5];
	struct views_src src;
	struct arena a;
};

/* Set to c with p50 us per chunk of 1 KiB (so p50 ns per byte). */
static void
conn(struct matrix_conn *c, uint64_t comm, uint32_t src, uint8_t transport,
     double p50)
{
	memset(c, 0, sizeof(*c));
	c->comm = comm;
	c->src = src;
	c->dst = src + 1;
	c->transport = transport;
	c->bytes = 8 * 1024;
	c->chunks = 8;
	c->xfer.p50 = p50 * 1.024;
}

/*
 * Communicator 0xb2 (ranks 0 and 1) registered first, 0xa1 (ranks 0 and 2
 * of 3) second; the last interval moved 0xa1's data over the network.
 */
static void
vfx_init(struct views_fx *f)
{
	struct matrix_params mp;
	struct msg_err err = {0};
	struct fx_comm c;

	memset(f, 0, sizeof(*f));
	matrix_params_default(&mp);
	f->m = matrix_new(&mp);
	ck_assert_int_eq(telemetry_init(&f->t, &f->hosts, f->m, &f->st), 0);
	events_init(&f->evs, "job-7", &f->hosts, &f->st, fx_record, &f->seen);
	ck_assert_int_eq(telemetry_register(&f->t, fx_comm(&c, 0xb2, 2, 0, 2),
					    NULL, &err),
			 0);
	ck_assert_int_eq(telemetry_register(&f->t, fx_comm(&c, 0xa1, 3, 0, 1),
					    NULL, &err),
			 0);
	ck_assert_int_eq(telemetry_register(&f->t, fx_comm(&c, 0xa1, 3, 2, 1),
					    NULL, &err),
			 0);
	conn(&f->last[0], 0xa1, 0, MATRIX_TR_NET, 1);
	conn(&f->last[1], 0xa1, 1, MATRIX_TR_NET, 2);
	conn(&f->last[2], 0xa1, 2, MATRIX_TR_NET, 4);
	conn(&f->last[3], 0xa1, 3, MATRIX_TR_NET, 9);
	f->last[3].bytes = 0; /* moved nothing: no value */
	conn(&f->last[4], 0xb2, 0, MATRIX_TR_NVLINK, 1);
	f->src.hosts = &f->hosts;
	f->src.tele = &f->t;
	f->src.events = &f->evs;
	f->src.last = f->last;
	f->src.nlast = 5;
	arena_init(&f->a);
}

static void
vfx_done(struct views_fx *f)
{
	arena_free(&f->a);
	events_free(&f->evs);
	telemetry_free(&f->t);
	hosts_free(&f->hosts);
	matrix_free(f->m);
}

START_TEST(test_views_ranks)
{
	struct views_fx f;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;

	vfx_init(&f);
	/* none named: the communicator with the network traffic */
	ck_assert_int_eq(views_ranks(&f.src, 0, &f.a, &r), 0);
	ck_assert_uint_eq(r.n_ranks, 2);
	ck_assert_uint_eq(r.ranks[0]->rank, 0);
	ck_assert_str_eq(r.ranks[0]->host, "node-0");
	ck_assert_str_eq(r.ranks[0]->nic, "mlx5_0");
	ck_assert_uint_eq(r.ranks[1]->rank, 2);
	ck_assert_str_eq(r.ranks[1]->host, "node-2");
	ck_assert_uint_eq(r.ranks[1]->gpu, 2);
	ck_assert_str_eq(r.ranks[1]->nic, "mlx5_2");
	ck_assert_uint_eq(r.ranks[1]->nic_port, 1);

	/* unknown communicator: nothing */
	c4__admin_reply__init(&r);
	ck_assert_int_eq(views_ranks(&f.src, 0xdead, &f.a, &r), 0);
	ck_assert_uint_eq(r.n_ranks, 0);
	vfx_done(&f);
}
END_TEST

START_TEST(test_views_job)
{
	struct views_fx f;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;

	vfx_init(&f);
	f.src.interval = 12;
	ck_assert_int_eq(views_job(&f.src, "job-7", 3, 1, &f.a, &r), 0);
	ck_assert_uint_eq(r.n_jobs, 1);
	ck_assert_str_eq(r.jobs[0]->job_id, "job-7");
	ck_assert_uint_eq(r.jobs[0]->agents, 3);
	ck_assert_uint_eq(r.jobs[0]->open_events, 1);
	ck_assert_uint_eq(r.jobs[0]->ranks, 3); /* node-0 GPU 0 counts once */
	ck_assert_uint_eq(r.jobs[0]->comms, 2);
	ck_assert_uint_eq(r.jobs[0]->last_interval, 12);
	vfx_done(&f);
}
END_TEST

START_TEST(test_views_matrix)
{
	struct views_fx f;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;

	vfx_init(&f);
	ck_assert_int_eq(views_matrix(&f.src, 0xa1, &f.a, &r), 0);
	ck_assert_uint_eq(r.n_cells, 4);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_uint_eq(r.cells[i]->src_rank, i);
		ck_assert_int_eq(r.cells[i]->transport,
				 C4__TRANSPORT_CLASS__TRANSPORT_NET);
		ck_assert_double_eq_tol(r.cells[i]->baseline, 2.0, 1e-9);
	}
	ck_assert_double_eq_tol(r.cells[0]->value, 1.0, 1e-9);
	ck_assert_double_eq_tol(r.cells[0]->score, log(0.5), 1e-9);
	ck_assert_double_eq_tol(r.cells[1]->score, 0.0, 1e-9);
	ck_assert_double_eq_tol(r.cells[2]->value, 4.0, 1e-9);
	ck_assert_double_eq_tol(r.cells[3]->value, 0.0, 1e-9);
	ck_assert_int_eq(r.cells[0]->hot, 0);
	ck_assert_int_eq(r.cells[1]->hot, 0);
	ck_assert_int_eq(r.cells[2]->hot, 1);
	ck_assert_int_eq(r.cells[3]->hot, 0);
	vfx_done(&f);
}
END_TEST

START_TEST(test_views_default)
{
	struct views_fx f;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;
	struct matrix_event e;

	vfx_init(&f);
	/* an open communication event names the communicator to show */
	memset(&e, 0, sizeof(e));
	e.id = 1;
	e.kind = MATRIX_EV_COMM_HANG;
	e.state = MATRIX_ST_OPEN;
	e.comm = 0xb2;
	events_apply(&f.evs, &e, 1000000000ull);
	ck_assert_int_eq(views_matrix(&f.src, 0, &f.a, &r), 0);
	ck_assert_uint_eq(r.n_cells, 1);
	ck_assert_uint_eq(r.cells[0]->comm_hash, 0xb2);
	ck_assert_int_eq(r.cells[0]->transport,
			 C4__TRANSPORT_CLASS__TRANSPORT_NVLINK);
	vfx_done(&f);
}
END_TEST

int
main(void)
{
	const TTest *const tests[] = {test_views_job, test_views_ranks,
				      test_views_matrix, test_views_default};

	return fx_main("views", tests, sizeof(tests) / sizeof(tests[0]));
}
