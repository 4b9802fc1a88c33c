/*
 * test_store.c - the store: writes commit to a real SQLite file in a
 * temporary folder and come back on the next open (jobs, requests with
 * their QPs, cables down, catalog entries); the committed callback
 * reports each write's sequence number.
 */
#include "tc4p.h"
#include "tmain.h"

static uint64_t got_ids[4];
static char got_names[4][16];
static size_t ngot;

static int
on_job(void *arg, uint64_t id, const char *name)
{
	(void)arg;
	got_ids[ngot] = id;
	snprintf(got_names[ngot++], sizeof(got_names[0]), "%s", name);
	return 0;
}

START_TEST(test_round_trip)
{
	struct tc4p *x = tc4p_new();
	struct alloc_qp_req q;
	struct alloc_qp_res res[2];
	struct alloc_record recs[2], rec;
	struct topo *t = x->p.topo;
	struct c4p_store *s;
	struct catalog *cat;
	struct alloc *al;
	struct store_restore to;
	struct store_stats st;
	struct alloc_stats as;
	size_t cur = 0;
	char err[256];

	ngot = 0;
	tc4p_alloc(x, 2, &q, res);
	for (int i = 0; i < 2; i++) {
		memset(&recs[i], 0, sizeof(recs[i]));
		recs[i].qp_id = res[i].qp_id;
		recs[i].req = q;
		recs[i].sport = res[i].sport;
		recs[i].side = res[i].side;
		recs[i].path = res[i].path;
	}
	store_put(x->p.store, "1/r", 1, 100000, recs, 2);
	store_link(x->p.store, 3, false);
	tc4p_settle(x);
	store_get_stats(x->p.store, &st);
	ck_assert_uint_eq(st.ops, 3);
	ck_assert_uint_eq(st.committed, 3);
	ck_assert(!st.failed);
	/* a fresh open of the same file gives it all back */
	cat = catalog_new(t, &x->p.model);
	al = alloc_new(t, cat);
	s = store_open(x->dir, false, x->d.base, tc4p_committed, x, err,
		       sizeof(err));
	ck_assert_ptr_nonnull(s);
	to = (struct store_restore){on_job, NULL, cat, al};
	ck_assert_msg(store_load(s, &to, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(ngot, 1);
	ck_assert_uint_eq(got_ids[0], 1);
	ck_assert_str_eq(got_names[0], "train");
	alloc_stats(al, &as);
	ck_assert_uint_eq(as.requests, 1);
	ck_assert_uint_eq(as.qps, 2);
	ck_assert_int_eq(alloc_next(al, &cur, &rec), 1);
	ck_assert_str_eq(rec.req_id, "1/r");
	ck_assert_uint_eq(rec.expires, 100000);
	ck_assert(!t->links[3].up); /* stored down: set down again */
	store_close(s);
	alloc_free(al);
	catalog_free(cat);
	tc4p_free(x);
}
END_TEST

START_TEST(test_sequence_and_release)
{
	struct tc4p *x = tc4p_new();
	uint64_t a, b, c;
	struct store_stats st;

	a = store_job(x->p.store, 1, "a");
	b = store_del(x->p.store, "1/none");
	c = store_expire(x->p.store, 10);
	ck_assert_uint_lt(a, b);
	ck_assert_uint_lt(b, c);
	tc4p_settle(x);
	store_get_stats(x->p.store, &st);
	ck_assert_uint_eq(st.committed, c);
	ck_assert_uint_ge(st.commits, 1);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-store", test_round_trip, test_sequence_and_release)
