/*
 * test_batch.c - the frames the CCL client library builds, read back
 * through msg_unpack() (the agent's validation): a TelemetryBatch
 * carrying every kind of record with its sketches and timing arrays,
 * numbered by the library when the caller gives no interval id, and the
 * CommRegister of a communicator and of its end.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "c4client_int.h"
#include "tmain.h"

/* A client with only what batch.c reads: job, node, counters, lock. */
static void
client_init(struct c4client *c)
{
	memset(c, 0, sizeof(*c));
	c->job = (char *)"job-1";
	c->node = (char *)"n1";
	ck_assert_int_eq(pthread_mutex_init(&c->mu, NULL), 0);
}

/* Unpacks a frame built by batch.c (which the caller frees). */
static C4__Envelope *
unpack(const uint8_t *frame, size_t len)
{
	struct msg_err err;
	uint32_t body;
	C4__Envelope *env;

	ck_assert_int_eq(frame_peek(frame, len, FRAME_MAX_DEFAULT, &body),
			 FRAME_READY);
	ck_assert_uint_eq(FRAME_HDR_LEN + body, len);
	env = msg_unpack(frame + FRAME_HDR_LEN, body, &err);
	ck_assert_msg(env != NULL, "%s", err.text);
	return env;
}

START_TEST(test_report)
{
	static const uint64_t tseq[2] = {40, 41}, tmean[2] = {1000, 2000};
	static const uint32_t tchunks[2] = {4, 4}, stuck[2] = {6, 7};
	struct c4client c;
	struct sketch k;
	struct c4client_op op = {C4CLIENT_ALLREDUCE,
				 3,
				 1 << 20,
				 C4CLIENT_ALGO_RING,
				 C4CLIENT_PROTO_SIMPLE,
				 8,
				 &k,
				 NULL,
				 NULL};
	struct c4client_coll co = {0x55, 2, 1, &op, 1, 3, 1, 3, 123, 0};
	struct c4client_conn cn = {0x55, 2,    3,     0xf,    C4CLIENT_NET, 0,
				   4096, 8,    1,     0,      NULL,	    0,
				   2,	 tseq, tmean, tchunks};
	struct c4client_wait w = {0x55, 2, &k, NULL, NULL, NULL, 77};
	struct c4client_progress pg = {
		0x55, 2, 3, 3, 99, C4CLIENT_BROADCAST, 2, stuck, 1};
	struct c4client_report r = {0, 5000, 1000, 1,  1,  1,
				    1, &co,  &cn,  &w, &pg};
	C4__TelemetryBatch *b;
	C4__Envelope *env;
	uint8_t *f;
	size_t len;

	client_init(&c);
	ck_assert_int_eq(sketch_init(&k, 10000), 0);
	for (uint64_t v = 1; v <= 100; v++)
		ck_assert_int_eq(sketch_add(&k, v * 1000), 0);
	f = batch_report(&c, &r, &len);
	ck_assert_ptr_nonnull(f);
	env = unpack(f, len);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_TELEMETRY);
	ck_assert_uint_eq(env->seq, 1);
	b = env->telemetry;
	ck_assert_str_eq(b->job_id, "job-1");
	ck_assert_str_eq(b->host, "n1");
	ck_assert_uint_eq(b->interval_id, 1);
	ck_assert_uint_eq(b->interval_start_ns, 5000);
	ck_assert_uint_eq(b->interval_ms, 1000);
	ck_assert_uint_eq(b->n_colls, 1);
	ck_assert_uint_eq(b->colls[0]->n_ops, 1);
	ck_assert_int_eq(b->colls[0]->ops[0]->func,
			 C4__COLL_FUNC__COLL_ALLREDUCE);
	ck_assert_uint_eq(b->colls[0]->ops[0]->bytes, 1 << 20);
	ck_assert_uint_eq(b->colls[0]->ops[0]->kernel_time->count, 100);
	ck_assert_uint_eq(b->colls[0]->ops[0]->kernel_time->max_ns, 100000);
	ck_assert_ptr_null(b->colls[0]->ops[0]->gap_time);
	ck_assert_uint_eq(b->colls[0]->first_start_ns, 123);
	ck_assert_uint_eq(b->n_conns, 1);
	ck_assert_uint_eq(b->conns[0]->dst_rank, 3);
	ck_assert_uint_eq(b->conns[0]->pending_chunks, 1);
	ck_assert_uint_eq(b->conns[0]->n_timed_seq, 2);
	ck_assert_uint_eq(b->conns[0]->timed_mean_ns[1], 2000);
	ck_assert_uint_eq(b->waits[0]->steps, 77);
	ck_assert_uint_eq(b->waits[0]->recv_wait->sum_ns, 5050000);
	ck_assert_uint_eq(b->progress[0]->n_stuck_peers, 2);
	ck_assert_uint_eq(b->progress[0]->stuck_peers[1], 7);
	ck_assert_int_eq(b->progress[0]->completed_at_enqueue, 1);
	msg_free(env);
	free(f);
	/* The next summary without an id is numbered after it. */
	r.ncolls = r.nconns = r.nwaits = 0;
	f = batch_report(&c, &r, &len);
	env = unpack(f, len);
	ck_assert_uint_eq(env->seq, 2);
	ck_assert_uint_eq(env->telemetry->interval_id, 2);
	msg_free(env);
	free(f);
	sketch_free(&k);
	pthread_mutex_destroy(&c.mu);
}
END_TEST

START_TEST(test_register)
{
	C4__RankInfo ranks[2];
	struct c4client_reg g = {0x99, 16, (char *)"tp", ranks, 2, 0};
	C4__CommRegister *m;
	C4__Envelope *env;
	struct c4client c;
	uint8_t *f;
	size_t len;

	client_init(&c);
	for (int i = 0; i < 2; i++) {
		c4__rank_info__init(&ranks[i]);
		ranks[i].has_rank = 1;
		ranks[i].rank = (uint32_t)(4 + i);
		ranks[i].host = (char *)"n1";
	}
	f = batch_register(&c, &g, 0, &len);
	env = unpack(f, len);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_COMM_REGISTER);
	m = env->comm_register;
	ck_assert_str_eq(m->job_id, "job-1");
	ck_assert_uint_eq(m->comm_hash, 0x99);
	ck_assert_uint_eq(m->nranks, 16);
	ck_assert_str_eq(m->name, "tp");
	ck_assert_uint_eq(m->n_ranks, 2);
	ck_assert_uint_eq(m->ranks[1]->rank, 5);
	ck_assert(!m->destroyed);
	msg_free(env);
	free(f);
	/* Its end carries no ranks. */
	f = batch_register(&c, &g, 1, &len);
	env = unpack(f, len);
	ck_assert_uint_eq(env->seq, 2);
	ck_assert(env->comm_register->destroyed);
	ck_assert_uint_eq(env->comm_register->n_ranks, 0);
	msg_free(env);
	free(f);
	pthread_mutex_destroy(&c.mu);
}
END_TEST

TMAIN("client-batch", test_report, test_register)
