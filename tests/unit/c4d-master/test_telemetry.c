/*
 * test_telemetry.c - registrations become the engine's communicators once
 * complete (in parts, refused when contradicting, retired when
 * destroyed); a batch becomes one window of engine records on its host,
 * with wire nanoseconds as engine microseconds.
 */
#include <check.h>
#include <stdlib.h>

#include "fixture.h"
#include "telemetry.h"

struct telemetry_fx {
	struct hosts hosts;
	struct ingest_stats st;
	struct matrix *m;
	struct telemetry t;
};

static void
tfx_init(struct telemetry_fx *f)
{
	struct matrix_params mp;

	memset(f, 0, sizeof(*f));
	matrix_params_default(&mp);
	f->m = matrix_new(&mp);
	ck_assert_ptr_nonnull(f->m);
	ck_assert_int_eq(telemetry_init(&f->t, &f->hosts, f->m, &f->st), 0);
}

static void
tfx_done(struct telemetry_fx *f)
{
	telemetry_free(&f->t);
	hosts_free(&f->hosts);
	matrix_free(f->m);
}

START_TEST(test_tele_register)
{
	struct telemetry_fx f;
	struct msg_err err = {0};
	struct fx_comm c;
	const struct telemetry_comm *tc;

	tfx_init(&f);
	ck_assert_int_eq(telemetry_register(&f.t, fx_comm(&c, 0xa1, 2, 0, 1),
					    NULL, &err),
			 0);
	tc = telemetry_comm_find(&f.t, 0xa1);
	ck_assert_ptr_nonnull(tc);
	ck_assert_uint_eq(tc->nknown, 1);
	ck_assert_int_eq(tc->added, 0);
	ck_assert_uint_eq(telemetry_comms_incomplete(&f.t), 1);
	/* the second part completes it: the engine has it */
	ck_assert_int_eq(telemetry_register(&f.t, fx_comm(&c, 0xa1, 2, 1, 1),
					    NULL, &err),
			 0);
	tc = telemetry_comm_find(&f.t, 0xa1);
	ck_assert_uint_eq(tc->nknown, 2);
	ck_assert_int_eq(tc->added, 1);
	ck_assert_uint_eq(telemetry_comms_incomplete(&f.t), 0);
	ck_assert_str_eq(hosts_name(&f.hosts, tc->map[1].host), "node-1");
	ck_assert_str_eq(
		hosts_nic_name(&f.hosts, tc->map[1].host, tc->map[1].nic),
		"mlx5_1");
	ck_assert_uint_eq(f.st.registrations, 2);
	ck_assert_uint_eq(f.st.comms, 1);
	ck_assert_uint_eq(f.st.hosts, 2);

	/* the same communicator with another size is refused */
	ck_assert_int_eq(telemetry_register(&f.t, fx_comm(&c, 0xa1, 3, 0, 1),
					    NULL, &err),
			 -1);
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_INVALID);
	ck_assert_ptr_null(telemetry_comm_find(&f.t, 0xb2));

	/* destroyed by the job: retired, still known */
	fx_comm(&c, 0xa1, 2, 0, 0);
	c.m.has_destroyed = 1;
	c.m.destroyed = 1;
	ck_assert_int_eq(telemetry_register(&f.t, &c.m, NULL, &err), 0);
	ck_assert_int_eq(telemetry_comm_find(&f.t, 0xa1)->retired, 1);
	tfx_done(&f);
}
END_TEST

START_TEST(test_tele_batch)
{
	struct telemetry_fx f;
	struct msg_err err = {0};
	struct fx_comm c;
	C4__TelemetryBatch b;
	C4__RankCollSummary coll = C4__RANK_COLL_SUMMARY__INIT, *colls[1];
	C4__OpStats op = C4__OP_STATS__INIT, *ops[1];
	C4__DurationStats kt = C4__DURATION_STATS__INIT;
	C4__ConnSummary conn = C4__CONN_SUMMARY__INIT,
			rx = C4__CONN_SUMMARY__INIT;
	C4__ConnSummary *conns[2];
	C4__Progress prog = C4__PROGRESS__INIT, *progs[1];
	uint64_t seq[2] = {1, 2}, mean[2] = {10, 20};
	uint32_t chunks[1] = {4};
	const struct hosts_window *w;
	uint32_t hid;

	tfx_init(&f);
	ck_assert_int_eq(telemetry_register(&f.t, fx_comm(&c, 0xa1, 2, 0, 2),
					    NULL, &err),
			 0);
	/* no host name anywhere: refused */
	ck_assert_int_eq(telemetry_batch(&f.t, NULL, fx_heartbeat(&b, "", 1),
					 NULL, &err),
			 -1);
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_INVALID);

	fx_heartbeat(&b, "node-0", 9);
	kt.count = 4;
	kt.sum_ns = 8000;
	kt.min_ns = 1000;
	kt.max_ns = 3000;
	op.func = C4__COLL_FUNC__COLL_ALLREDUCE;
	op.algorithm = C4__ALGORITHM__ALGO_RING;
	op.count = 4;
	op.bytes = 4096;
	op.kernel_time = &kt;
	ops[0] = &op;
	coll.comm_hash = 0xa1;
	coll.rank = 0;
	coll.n_ops = 1;
	coll.ops = ops;
	colls[0] = &coll;
	b.n_colls = 1;
	b.colls = colls;
	/* rank 1's progress without a summary: a record of its own */
	prog.comm_hash = 0xa1;
	prog.rank = 1;
	prog.last_seq_entered = prog.last_seq_completed = 5;
	progs[0] = &prog;
	b.n_progress = 1;
	b.progress = progs;
	conn.comm_hash = 0xa1;
	conn.dst_rank = 1;
	conn.transport = C4__TRANSPORT_CLASS__TRANSPORT_NET;
	conn.bytes = 1 << 20;
	conn.chunks = 8;
	conn.transfer_time = &kt;
	/* a receiver's timing with unequal lists: refused, not a record */
	rx = conn;
	rx.receiver = 1;
	rx.n_timed_seq = 2;
	rx.timed_seq = seq;
	rx.n_timed_chunks = 1;
	rx.timed_chunks = chunks;
	rx.n_timed_mean_ns = 2;
	rx.timed_mean_ns = mean;
	conns[0] = &conn;
	conns[1] = &rx;
	b.n_conns = 2;
	b.conns = conns;
	ck_assert_int_eq(telemetry_batch(&f.t, "ignored", &b, NULL, &err), 0);

	ck_assert_ptr_nonnull(hosts_find(&f.hosts, "node-0", 0, &hid));
	ck_assert_uint_eq(f.hosts.v[hid].nq, 1);
	w = &f.hosts.v[hid].q[f.hosts.v[hid].head];
	ck_assert_uint_eq(w->ncoll, 2);
	ck_assert_uint_eq(w->coll[0].algo, MATRIX_ALGO_RING);
	ck_assert_double_eq_tol(w->coll[0].kernel.sum, 8.0, 1e-9);
	ck_assert_double_eq_tol(w->coll[0].kernel.p50, 2.0, 1e-9);
	ck_assert_uint_eq(w->coll[1].rank, 1);
	ck_assert_uint_eq(w->coll[1].seq_done, 5);
	ck_assert_uint_eq(w->nconn, 1);
	ck_assert_uint_eq(w->conn[0].transport, MATRIX_TR_NET);
	ck_assert_double_eq_tol(w->conn[0].xfer.max, 3.0, 1e-9);
	ck_assert_uint_eq(f.st.timing_refused, 1);
	ck_assert_uint_eq(f.st.batches, 1);
	ck_assert_uint_eq(f.st.records, 4);
	tfx_done(&f);
}
END_TEST

int
main(void)
{
	const TTest *const tests[] = {test_tele_register, test_tele_batch};

	return fx_main("telemetry", tests, sizeof(tests) / sizeof(tests[0]));
}
