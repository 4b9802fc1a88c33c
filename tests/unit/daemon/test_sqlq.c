/*
 * test_sqlq.c - the SQLite writer queue on a real file in a temporary
 * folder: commits in order, done and committed callbacks on the loop, a
 * full queue counted, a failed transaction retried, commits by the loop
 * and by the writer, and a shutdown that commits what is queued so that
 * a reopen sees it.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "sqlq.h"

#define NOPS 50

struct fixture {
	char dir[64];
	char path[128];
	struct event_base *base;
	struct sqlq *q;
	pthread_t loop;
	int done[NOPS * 2]; /* values, in the order done ran */
	int ndone, nfree, fail_left, wrong_thread;
	uint64_t last_seq, committed;
	int committed_calls, saw_failed;
};

struct top {
	struct sqlq_op op;
	struct fixture *f;
	int v;
};

static int
top_run(struct sqlq *q, struct sqlq_op *op)
{
	static const char sql[] = "INSERT INTO t(v) VALUES (?1)";
	struct top *t = (struct top *)op;
	sqlite3_stmt *st = sqlq_stmt(q, sql);
	int rc;

	if (t->f->fail_left > 0) {
		t->f->fail_left--;
		return -1;
	}
	ck_assert_ptr_nonnull(st);
	sqlite3_bind_int(st, 1, t->v);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static void
top_done(struct sqlq_op *op)
{
	struct top *t = (struct top *)op;
	struct fixture *f = t->f;

	if (!pthread_equal(pthread_self(), f->loop))
		f->wrong_thread++;
	if (op->seq <= f->last_seq)
		f->wrong_thread += 1000; /* out of order */
	f->last_seq = op->seq;
	f->done[f->ndone++] = t->v;
}

static void
top_free(struct sqlq_op *op)
{
	struct top *t = (struct top *)op;

	__atomic_add_fetch(&t->f->nfree, 1, __ATOMIC_SEQ_CST);
	free(t);
}

static void
fx_committed(uint64_t seq, bool failed, void *arg)
{
	struct fixture *f = arg;

	if (!pthread_equal(pthread_self(), f->loop))
		f->wrong_thread++;
	f->committed = seq;
	f->committed_calls++;
	f->saw_failed |= failed;
}

static struct sqlq_conf
fx_conf(struct fixture *f, enum sqlq_sync sync)
{
	return (struct sqlq_conf){
		.path = f->path,
		.sync = sync,
		.queue_max = 1000,
		.busy_ms = 1000,
		.retry_ms = 1,
		.retry_max_ms = 4,
		.committed = fx_committed,
		.arg = f,
	};
}

static void
fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/c4-sqlq-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/q.db", f->dir);
	f->base = event_base_new();
	ck_assert_ptr_nonnull(f->base);
	f->loop = pthread_self();
}

/* Opens the queue with conf, creates the table, and starts it unless not. */
static void
fx_open(struct fixture *f, const struct sqlq_conf *conf, int start)
{
	char err[256];

	f->last_seq = 0; /* a new queue numbers from 1 again */
	f->q = sqlq_open(conf, f->base, err, sizeof(err));
	ck_assert_msg(f->q != NULL, "%s", err);
	ck_assert_int_eq(sqlq_exec(f->q, "CREATE TABLE IF NOT EXISTS t("
					 "n INTEGER PRIMARY KEY, v INTEGER)"),
			 0);
	if (start)
		ck_assert_msg(sqlq_start(f->q, err, sizeof(err)) == 0, "%s",
			      err);
}

static uint64_t
fx_submit(struct fixture *f, int v, bool bulk)
{
	struct top *t = calloc(1, sizeof(*t));
	uint64_t seq;

	ck_assert_ptr_nonnull(t);
	t->op.run = top_run;
	t->op.done = top_done;
	t->op.free = top_free;
	t->op.bulk = bulk;
	t->op.weight = 1;
	t->f = f;
	t->v = v;
	seq = sqlq_submit(f->q, &t->op);
	if (seq == 0)
		free(t);
	return seq;
}

static void
fx_wait(struct fixture *f, int ndone)
{
	while (f->ndone < ndone)
		ck_assert_int_ge(event_base_loop(f->base, EVLOOP_ONCE), 0);
}

/* The values of table t in row order, through a connection of its own. */
static int
fx_rows(const struct fixture *f, int *v, int max)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int n = 0;

	ck_assert_int_eq(
		sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL),
		SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT v FROM t ORDER BY n",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && n < max)
		v[n++] = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static void
fx_done(struct fixture *f)
{
	char cmd[160];

	sqlq_close(f->q);
	event_base_free(f->base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Both durability levels: commits in order, callbacks on the loop. */
START_TEST(test_ordered_commits)
{
	static const enum sqlq_sync syncs[] = {SQLQ_SYNC_PROCESS,
					       SQLQ_SYNC_FULL};
	struct fixture f;
	struct sqlq_conf c;
	struct sqlq_stats st;
	int v[NOPS];

	fx_init(&f);
	c = fx_conf(&f, syncs[_i]);
	fx_open(&f, &c, 1);
	for (int i = 0; i < NOPS; i++)
		ck_assert_uint_eq(fx_submit(&f, i, false), (uint64_t)i + 1);
	fx_wait(&f, NOPS);
	ck_assert_int_eq(f.wrong_thread, 0);
	for (int i = 0; i < NOPS; i++)
		ck_assert_int_eq(f.done[i], i);
	ck_assert_uint_eq(f.committed, NOPS);
	ck_assert_int_ge(f.committed_calls, 1);
	ck_assert_int_eq(f.saw_failed, 0);
	ck_assert_int_eq(fx_rows(&f, v, NOPS), NOPS);
	for (int i = 0; i < NOPS; i++)
		ck_assert_int_eq(v[i], i);
	sqlq_get_stats(f.q, &st);
	ck_assert_uint_eq(st.submitted, NOPS);
	ck_assert_uint_eq(st.committed, NOPS);
	ck_assert_uint_ge(st.commits, 1);
	ck_assert_uint_eq(st.failures, 0);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert(st.healthy);
	ck_assert_int_eq(f.nfree, NOPS);
	fx_done(&f);
}
END_TEST

/* A lone small write commits on the loop; a bulk one on the writer. */
START_TEST(test_inline_and_writer)
{
	struct fixture f;
	struct sqlq_conf c;
	struct sqlq_stats st;

	fx_init(&f);
	c = fx_conf(&f, SQLQ_SYNC_PROCESS);
	c.inline_ops_max = 8;
	c.inline_weight_max = 8;
	fx_open(&f, &c, 1);
	fx_submit(&f, 1, false);
	fx_wait(&f, 1);
	sqlq_get_stats(f.q, &st);
	ck_assert_uint_eq(st.commits, 1);
	ck_assert_uint_eq(st.inline_commits, 1);
	fx_submit(&f, 2, true);
	fx_wait(&f, 2);
	sqlq_get_stats(f.q, &st);
	ck_assert_uint_eq(st.commits, 2);
	ck_assert_uint_eq(st.inline_commits, 1);
	/* SQLQ_SYNC_FULL: an fsync never runs on the loop */
	sqlq_close(f.q);
	c.sync = SQLQ_SYNC_FULL;
	fx_open(&f, &c, 1);
	fx_submit(&f, 3, false);
	fx_wait(&f, 3);
	sqlq_get_stats(f.q, &st);
	ck_assert_uint_eq(st.commits, 1);
	ck_assert_uint_eq(st.inline_commits, 0);
	ck_assert_int_eq(f.wrong_thread, 0);
	fx_done(&f);
}
END_TEST

/* A full queue refuses and counts; what it holds still commits. */
START_TEST(test_full_queue_counted)
{
	struct fixture f;
	struct sqlq_conf c;
	struct sqlq_stats st;
	char err[256];
	int v[8];

	fx_init(&f);
	c = fx_conf(&f, SQLQ_SYNC_PROCESS);
	c.queue_max = 3;
	fx_open(&f, &c, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_ne(fx_submit(&f, i, false), 0);
	ck_assert_uint_eq(fx_submit(&f, 3, false), 0);
	ck_assert_uint_eq(fx_submit(&f, 4, false), 0);
	sqlq_get_stats(f.q, &st);
	ck_assert_uint_eq(st.full, 2);
	ck_assert_uint_eq(st.pending, 3);
	ck_assert_uint_eq(st.submitted, 3);
	ck_assert_msg(sqlq_start(f.q, err, sizeof(err)) == 0, "%s", err);
	fx_wait(&f, 3);
	ck_assert_int_eq(fx_rows(&f, v, 8), 3);
	/* room again once committed */
	ck_assert_uint_eq(fx_submit(&f, 5, false), 4);
	fx_wait(&f, 4);
	fx_done(&f);
}
END_TEST

/* A failed transaction is counted, reported and retried; nothing lost. */
START_TEST(test_failure_retried)
{
	struct fixture f;
	struct sqlq_conf c;
	struct sqlq_stats st;
	int v[8];

	fx_init(&f);
	c = fx_conf(&f, SQLQ_SYNC_PROCESS);
	fx_open(&f, &c, 1);
	f.fail_left = 2;
	fx_submit(&f, 7, false);
	fx_submit(&f, 8, false);
	fx_wait(&f, 2);
	sqlq_get_stats(f.q, &st);
	ck_assert_uint_eq(st.failures, 2);
	ck_assert(st.failed);
	ck_assert(st.healthy);
	ck_assert_int_eq(f.saw_failed, 1);
	ck_assert_int_eq(fx_rows(&f, v, 8), 2);
	ck_assert_int_eq(v[0], 7);
	ck_assert_int_eq(v[1], 8);
	fx_done(&f);
}
END_TEST

/*
 * Closing commits everything queued (done callbacks no longer run) and a
 * reopen sees it; with the checkpointer and a tiny WAL bound too.
 */
START_TEST(test_close_drains)
{
	struct fixture f;
	struct sqlq_conf c;
	int v[NOPS];
	sqlite3_stmt *st;

	fx_init(&f);
	c = fx_conf(&f, SQLQ_SYNC_PROCESS);
	c.checkpoint_ms = 5;
	c.wal_max_frames = 2;
	c.inline_ops_max = 2;
	c.inline_weight_max = 2;
	fx_open(&f, &c, 1);
	for (int i = 0; i < NOPS / 2; i++)
		fx_submit(&f, i, false);
	fx_wait(&f, NOPS / 2);
	for (int i = NOPS / 2; i < NOPS; i++)
		fx_submit(&f, i, false);
	sqlq_close(f.q);
	ck_assert_int_eq(f.ndone, NOPS / 2);
	ck_assert_int_eq(f.nfree, NOPS);
	ck_assert_int_eq(fx_rows(&f, v, NOPS), NOPS);
	for (int i = 0; i < NOPS; i++)
		ck_assert_int_eq(v[i], i);
	/* the queue's own reopen reads them before it starts */
	fx_open(&f, &c, 0);
	ck_assert_int_eq(sqlite3_prepare_v2(sqlq_db(f.q),
					    "SELECT count(*) FROM t", -1, &st,
					    NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(st, 0), NOPS);
	sqlite3_finalize(st);
	/* never started: what is submitted is dropped, not written */
	fx_submit(&f, 99, false);
	fx_done(&f);
	ck_assert_int_eq(f.nfree, NOPS + 1);
}
END_TEST

static Suite *
sqlq_suite(void)
{
	Suite *s = suite_create("sqlq");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_ordered_commits, 0, 2);
	tcase_add_test(tc, test_inline_and_writer);
	tcase_add_test(tc, test_full_queue_counted);
	tcase_add_test(tc, test_failure_retried);
	tcase_add_test(tc, test_close_drains);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sqlq_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
