/*
 * test_agg.c - the agent's per-job merge: registrations are a union
 * of rank entries and say when they changed, batches of several clients
 * become one batch, silent ranks get their last progress, an empty
 * interval still yields a batch, drop counts add up, limits hold.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static C4__CommRegister *
mk_reg(uint64_t hash, uint32_t nranks, const uint32_t *ranks, size_t n,
       const char *nic)
{
	C4__CommRegister *m = calloc(1, sizeof(*m));
	C4__RankInfo **rp = calloc(n + 1, sizeof(*rp));

	ck_assert_ptr_nonnull(m);
	c4__comm_register__init(m);
	m->has_comm_hash = m->has_nranks = 1;
	m->comm_hash = hash;
	m->nranks = nranks;
	for (size_t i = 0; i < n; i++) {
		rp[i] = calloc(1, sizeof(**rp));
		c4__rank_info__init(rp[i]);
		rp[i]->has_rank = 1;
		rp[i]->rank = ranks[i];
		rp[i]->host = (char *)"node-a";
		rp[i]->nic = (char *)nic;
	}
	m->ranks = rp;
	m->n_ranks = n;
	return m;
}

static void
free_reg(C4__CommRegister *m)
{
	for (size_t i = 0; i < m->n_ranks; i++)
		free(m->ranks[i]);
	free(m->ranks);
	free(m);
}

/* Unpacks a frame the aggregator made (and frees the frame). */
static C4__Envelope *
unframe(uint8_t *f, size_t len)
{
	struct msg_err err;
	C4__Envelope *env;

	ck_assert_ptr_nonnull(f);
	env = msg_unpack(f + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &err);
	ck_assert_msg(env != NULL, "%s", err.text);
	free(f);
	return env;
}

/* Ends an interval that must fit one part; returns its frame. */
static uint8_t *
take1(struct agg *a, uint64_t id, uint64_t start, uint32_t ms, uint64_t extra,
      size_t *len, uint64_t *records, uint64_t *dropped)
{
	struct agg_part *parts;
	uint8_t *f;

	ck_assert_int_eq(agg_take(a, id, start, ms, extra, &parts), 1);
	f = parts[0].frame;
	*len = parts[0].len;
	*records = parts[0].records;
	*dropped = parts[0].dropped;
	parts[0].frame = NULL;
	agg_parts_free(parts, 1);
	return f;
}

START_TEST(test_register_union)
{
	struct agg *a = agg_new("job-a", "node-a");
	uint32_t r01[] = {0, 1}, r1[] = {1}, r2[] = {2};
	C4__CommRegister *m;
	C4__Envelope *env;
	uint8_t *f;
	size_t len;

	ck_assert_ptr_nonnull(a);
	m = mk_reg(0xabc, 4, r01, 2, "mlx5_0");
	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	env = unframe(f, len);
	ck_assert_str_eq(env->comm_register->job_id, "job-a");
	ck_assert_uint_eq(env->comm_register->n_ranks, 2);
	msg_free(env);
	/* The same again changes nothing: nothing to forward. */
	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	ck_assert_ptr_null(f);
	free_reg(m);
	/* Another process's rank joins the union. */
	m = mk_reg(0xabc, 4, r2, 1, "mlx5_1");
	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	env = unframe(f, len);
	ck_assert_uint_eq(env->comm_register->n_ranks, 3);
	msg_free(env);
	free_reg(m);
	/* A changed entry replaces the old one. */
	m = mk_reg(0xabc, 4, r1, 1, "mlx5_3");
	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	env = unframe(f, len);
	ck_assert_uint_eq(env->comm_register->n_ranks, 3);
	for (size_t i = 0; i < 3; i++)
		if (env->comm_register->ranks[i]->rank == 1)
			ck_assert_str_eq(env->comm_register->ranks[i]->nic,
					 "mlx5_3");
	msg_free(env);
	free_reg(m);
	ck_assert_uint_eq(agg_ncomms(a), 1);
	ck_assert_uint_eq(agg_nranks(a), 3);
	env = unframe(agg_comm_frame(a, 0, &len), len);
	ck_assert_uint_eq(env->comm_register->comm_hash, 0xabc);
	msg_free(env);
	ck_assert_ptr_null(agg_comm_frame(a, 1, &len));
	/* Destroyed: forwarded once, then forgotten. */
	m = mk_reg(0xabc, 4, NULL, 0, NULL);
	m->has_destroyed = m->destroyed = 1;
	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	env = unframe(f, len);
	ck_assert(env->comm_register->destroyed);
	msg_free(env);
	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	ck_assert_ptr_null(f);
	free_reg(m);
	ck_assert_uint_eq(agg_ncomms(a), 0);
	ck_assert_uint_eq(agg_nranks(a), 0);
	agg_free(a);
}
END_TEST

/* A client's batch with one coll summary and optionally a progress. */
static void
add_batch(struct agg *a, uint64_t comm, uint32_t rank, uint64_t seq,
	  int with_progress, uint64_t dropped)
{
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	C4__RankCollSummary c = C4__RANK_COLL_SUMMARY__INIT, *cp = &c;
	C4__Progress p = C4__PROGRESS__INIT, *pp = &p;

	b.has_interval_id = 1;
	b.interval_id = 7;
	b.has_dropped_records = dropped != 0;
	b.dropped_records = dropped;
	c.has_comm_hash = c.has_rank = 1;
	c.comm_hash = comm;
	c.rank = rank;
	c.has_last_seq_entered = c.has_last_seq_completed = 1;
	c.last_seq_entered = c.last_seq_completed = seq;
	b.colls = &cp;
	b.n_colls = 1;
	if (with_progress) {
		p.has_comm_hash = p.has_rank = 1;
		p.comm_hash = comm;
		p.rank = rank;
		p.has_last_seq_entered = 1;
		p.last_seq_entered = seq;
		b.progress = &pp;
		b.n_progress = 1;
	}
	ck_assert_int_eq(agg_add(a, &b), 0);
}

static C4__Progress *
find_progress(C4__TelemetryBatch *b, uint64_t comm, uint32_t rank)
{
	for (size_t i = 0; i < b->n_progress; i++)
		if (b->progress[i]->comm_hash == comm &&
		    b->progress[i]->rank == rank)
			return b->progress[i];
	return NULL;
}

START_TEST(test_merge_and_silent_ranks)
{
	struct agg *a = agg_new("job-a", "node-a");
	uint32_t ranks[] = {0, 1, 2};
	C4__CommRegister *m = mk_reg(0x1, 3, ranks, 3, NULL);
	C4__Envelope *env;
	C4__TelemetryBatch *b;
	uint64_t records, dropped;
	uint8_t *f;
	size_t len;

	ck_assert_int_eq(agg_register(a, m, &f, &len), 0);
	free(f);
	free_reg(m);
	/* Ranks 0 and 1 report (two clients); rank 2 stays silent. */
	add_batch(a, 0x1, 0, 10, 1, 3);
	add_batch(a, 0x1, 1, 12, 0, 4);
	f = take1(a, 5, 1000, 100, 2, &len, &records, &dropped);
	env = unframe(f, len);
	b = env->telemetry;
	ck_assert_str_eq(b->job_id, "job-a");
	ck_assert_str_eq(b->host, "node-a");
	ck_assert_uint_eq(b->interval_id, 5);
	ck_assert_uint_eq(b->interval_start_ns, 1000);
	ck_assert_uint_eq(b->interval_ms, 100);
	ck_assert_uint_eq(b->n_colls, 2);
	/* Rank 0 sent its own; 1 and 2 get their last known markers. */
	ck_assert_uint_eq(b->n_progress, 3);
	ck_assert_uint_eq(records, 5);
	ck_assert_uint_eq(find_progress(b, 0x1, 1)->last_seq_entered, 12);
	ck_assert_uint_eq(find_progress(b, 0x1, 2)->last_seq_entered, 0);
	/* Clients' drops plus the upstream's. */
	ck_assert_uint_eq(b->dropped_records, 3 + 4 + 2);
	ck_assert_uint_eq(dropped, 3 + 4 + 2);
	msg_free(env);

	/* Nobody reports: still a batch, every rank with its markers. */
	f = take1(a, 6, 2000, 100, 0, &len, &records, &dropped);
	env = unframe(f, len);
	b = env->telemetry;
	ck_assert_uint_eq(b->interval_id, 6);
	ck_assert_uint_eq(b->n_colls, 0);
	ck_assert_uint_eq(b->n_progress, 3);
	ck_assert_uint_eq(find_progress(b, 0x1, 0)->last_seq_entered, 10);
	ck_assert_uint_eq(find_progress(b, 0x1, 1)->last_seq_completed, 12);
	ck_assert_uint_eq(b->dropped_records, 0);
	msg_free(env);
	ck_assert_uint_eq(agg_get_stats(a)->batches, 2);
	ck_assert_uint_eq(agg_get_stats(a)->client_dropped, 7);
	agg_free(a);
}
END_TEST

START_TEST(test_empty_job_heartbeat)
{
	struct agg *a = agg_new("job-b", "node-b");
	C4__Envelope *env;
	uint64_t records = 99, dropped;
	uint8_t *f;
	size_t len;

	f = take1(a, 1, 5, 1000, 0, &len, &records, &dropped);
	env = unframe(f, len);
	ck_assert_uint_eq(records, 0);
	ck_assert_str_eq(env->telemetry->host, "node-b");
	ck_assert_uint_eq(env->telemetry->n_progress, 0);
	msg_free(env);
	agg_free(a);
}
END_TEST

START_TEST(test_records_limit)
{
	struct agg *a = agg_new("job-a", "node-a");
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	C4__Envelope *env;
	uint64_t records, dropped;
	uint8_t *f;
	size_t len;

	/* A count above the limit is refused before anything is copied. */
	b.has_interval_id = 1;
	b.n_conns = AGG_RECORDS_MAX + 1;
	ck_assert_int_eq(agg_add(a, &b), -1);
	ck_assert_uint_eq(agg_get_stats(a)->records_refused,
			  AGG_RECORDS_MAX + 1);
	f = take1(a, 1, 0, 100, 0, &len, &records, &dropped);
	env = unframe(f, len);
	ck_assert_uint_eq(env->telemetry->dropped_records, AGG_RECORDS_MAX + 1);
	msg_free(env);
	agg_free(a);
}
END_TEST

/* An interval too big for one frame goes out in parts, nothing lost. */
START_TEST(test_split_large_interval)
{
	struct agg *a = agg_new("job-a", "node-a");
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	size_t n = 40000, total = 0;
	C4__ConnSummary *cs = calloc(n, sizeof(*cs));
	C4__ConnSummary **cp = calloc(n, sizeof(*cp));
	struct agg_part *parts;
	ssize_t np;

	ck_assert_ptr_nonnull(cs);
	ck_assert_ptr_nonnull(cp);
	for (size_t i = 0; i < n; i++) {
		c4__conn_summary__init(&cs[i]);
		cs[i].has_comm_hash = cs[i].has_src_rank = 1;
		cs[i].has_dst_rank = cs[i].has_bytes = 1;
		cs[i].comm_hash = 0x5;
		cs[i].src_rank = 0;
		cs[i].dst_rank = (uint32_t)i;
		cs[i].bytes = 1ull << 40;
		cp[i] = &cs[i];
	}
	b.has_interval_id = 1;
	b.has_dropped_records = 1;
	b.dropped_records = 11;
	b.conns = cp;
	b.n_conns = n;
	ck_assert_int_eq(agg_add(a, &b), 0);
	np = agg_take(a, 3, 0, 100, 0, &parts);
	ck_assert_int_gt(np, 1);
	for (ssize_t k = 0; k < np; k++) {
		C4__Envelope *env;
		struct msg_err err;

		ck_assert_uint_le(parts[k].len, AGG_PART_TARGET + 4096);
		env = msg_unpack(parts[k].frame + FRAME_HDR_LEN,
				 parts[k].len - FRAME_HDR_LEN, &err);
		ck_assert_msg(env != NULL, "%s", err.text);
		ck_assert_uint_eq(env->telemetry->interval_id, 3);
		ck_assert_uint_eq(env->telemetry->n_conns, parts[k].records);
		/* In order, nothing lost or repeated. */
		ck_assert_uint_eq(env->telemetry->conns[0]->dst_rank, total);
		total += env->telemetry->n_conns;
		ck_assert_uint_eq(env->telemetry->dropped_records,
				  k == 0 ? 11 : 0);
		ck_assert_uint_eq(parts[k].dropped, k == 0 ? 11 : 0);
		msg_free(env);
	}
	ck_assert_uint_eq(total, n);
	agg_parts_free(parts, (size_t)np);
	free(cs);
	free(cp);
	agg_free(a);
}
END_TEST

static Suite *
aggregate_suite(void)
{
	Suite *s = suite_create("aggregate");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_register_union);
	tcase_add_test(tc, test_merge_and_silent_ranks);
	tcase_add_test(tc, test_empty_job_heartbeat);
	tcase_add_test(tc, test_records_limit);
	tcase_add_test(tc, test_split_large_interval);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(aggregate_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
