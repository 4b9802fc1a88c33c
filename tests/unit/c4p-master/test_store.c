/*
 * test_store.c - the store: writes commit to a real SQLite file in a
 * temporary folder and come back on the next open (jobs, requests with
 * their QPs, cables down, catalog entries); every kind of write the
 * writer knows (job, put, renew, del, del_job, expire, move, link,
 * catalog) leaves, after a reopen on a fresh fabric, what it wrote; the
 * committed callback reports each write's sequence number.
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

/* Copies the records of request key out of al into recs; returns how many. */
static size_t
records_of(const struct alloc *al, const char *key, struct alloc_record *recs,
	   size_t max)
{
	struct alloc_record r;
	size_t cur = 0, n = 0;

	while (alloc_next(al, &cur, &r) == 1)
		if (strcmp(r.req_id, key) == 0) {
			ck_assert_uint_lt(n, max);
			recs[n++] = r;
		}
	return n;
}

/* Allocates request key of job (n QPs h0/nic0 -> h2/nic0) and stores it. */
static void
put_request(struct tc4p *x, const struct alloc_qp_req *q, const char *key,
	    uint64_t job, uint64_t expires, size_t n)
{
	struct alloc_qp_req qs[4];
	struct alloc_qp_res res[4];
	struct alloc_record recs[4];
	char err[256];

	for (size_t i = 0; i < n; i++)
		qs[i] = *q;
	ck_assert_msg(alloc_request(x->p.alloc, key, job, 100, 600, qs, n, res,
				    err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(records_of(x->p.alloc, key, recs, 4), n);
	store_put(x->p.store, key, job, expires, recs, n);
}

/* The same QP, as the allocator that wrote it and the one that read it. */
static void
same_record(const struct alloc_record *a, const struct alloc_record *b)
{
	ck_assert_str_eq(a->req_id, b->req_id);
	ck_assert_uint_eq(a->job, b->job);
	ck_assert_uint_eq(a->index, b->index);
	ck_assert_uint_eq(a->nqp, b->nqp);
	ck_assert_uint_eq(a->req.sip, b->req.sip);
	ck_assert_uint_eq(a->req.dip, b->req.dip);
	ck_assert_uint_eq(a->req.side, b->req.side);
	ck_assert_uint_eq(a->req.weight, b->req.weight);
	ck_assert_uint_eq(a->sport, b->sport);
	ck_assert_uint_eq(a->side, b->side);
	ck_assert_int_eq(a->stranded, b->stranded);
	ck_assert_mem_eq(&a->path, &b->path, sizeof(a->path));
}

START_TEST(test_every_kind_reopened)
{
	struct tc4p *x = tc4p_new();
	struct alloc_qp_req q;
	struct alloc_qp_res res[2];
	struct alloc_record want[2], got;
	struct alloc_change *ch = NULL;
	struct catalog_entry ce;
	struct catalog_rec crecs[64];
	const struct catalog_entry *e;
	struct store_restore to;
	struct store_stats st;
	struct c4p_store *s;
	struct catalog *cat;
	struct alloc *al;
	struct topo *t2;
	uint32_t down, flap;
	size_t nch = 0, cur = 0, nrec = 0;
	char err[256];

	/* Jobs: "train" (1) through the job table, "eval" (2) directly. */
	ngot = 0;
	tc4p_alloc(x, 2, &q, res);
	store_job(x->p.store, 2, "eval");
	ck_assert_uint_eq(records_of(x->p.alloc, "1/r", want, 2), 2);
	store_put(x->p.store, "1/r", 1, 1000, want, 2);
	store_renew(x->p.store, "1/r", 200000);
	/* Requests that are gone again: by key, by job, by expiry. */
	put_request(x, &q, "1/del", 1, 5000, 1);
	store_del(x->p.store, "1/del");
	put_request(x, &q, "2/x", 2, 5000, 2);
	store_del_job(x->p.store, 2);
	put_request(x, &q, "1/old", 1, 20, 1);
	store_expire(x->p.store, 30);

	/* The cable of the first QP goes down: its QPs move, then it is
	 * recorded down, as link.c does. */
	down = res[0].path.up;
	ck_assert_uint_ne(down, TOPO_NONE);
	ck_assert_int_eq(alloc_link_set(x->p.alloc, down, false, &ch, &nch), 0);
	ck_assert_uint_ge(nch, 1);
	for (size_t i = 0; i < nch; i++) {
		ck_assert_int_eq(ch[i].kind, ALLOC_MOVED);
		store_move(x->p.store, &ch[i]);
	}
	free(ch);
	store_link(x->p.store, down, false);
	/* Another cable down, then up again: the last word stays. */
	flap = res[0].path.down;
	store_link(x->p.store, flap, false);
	store_link(x->p.store, flap, true);

	/* A catalog entry with a record changed, as a probe would leave it. */
	e = catalog_find(x->p.cat, &(struct catalog_key){q.sip, q.dip, q.side});
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_ge(e->n, 2);
	ck_assert_uint_le(e->n, 64);
	ce = *e;
	memcpy(crecs, e->recs, e->n * sizeof(*crecs));
	crecs[1].loss_permille = 7;
	crecs[1].origin = CATALOG_FROM_PROBE;
	ce.recs = crecs;
	store_catalog(x->p.store, &ce);
	tc4p_settle(x);
	store_get_stats(x->p.store, &st);
	ck_assert(!st.failed);
	ck_assert_uint_eq(st.committed, st.ops);
	ck_assert_uint_eq(records_of(x->p.alloc, "1/r", want, 2), 2);

	/* Reopened on a fresh fabric of the same shape. */
	t2 = tfab_new(2, 1, false);
	cat = catalog_new(t2, &x->p.model);
	al = alloc_new(t2, cat);
	s = store_open(x->dir, false, x->d.base, tc4p_committed, x, err,
		       sizeof(err));
	ck_assert_ptr_nonnull(s);
	to = (struct store_restore){on_job, NULL, cat, al};
	ck_assert_msg(store_load(s, &to, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(ngot, 2);
	ck_assert_uint_eq(got_ids[0], 1);
	ck_assert_str_eq(got_names[0], "train");
	ck_assert_uint_eq(got_ids[1], 2);
	ck_assert_str_eq(got_names[1], "eval");

	/* Only "1/r" is left, renewed, with its QPs where they moved. */
	while (alloc_next(al, &cur, &got) == 1) {
		ck_assert_uint_lt(got.index, 2);
		ck_assert_uint_eq(got.expires, 200000);
		same_record(&got, &want[got.index]);
		ck_assert_uint_eq(got.qp_id, want[got.index].qp_id);
		ck_assert_uint_ne(got.path.up, down);
		nrec++;
	}
	ck_assert_uint_eq(nrec, 2);
	/* Records were saved after the moves: loading moves nothing. */
	store_get_stats(s, &st);
	ck_assert_uint_eq(st.ops, 0);
	ck_assert(!t2->links[down].up);
	ck_assert(t2->links[flap].up);

	/* The catalog entry as written, without the hash model's help. */
	e = catalog_find(cat, &ce.key);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->n, ce.n);
	for (uint32_t i = 0; i < e->n; i++) {
		ck_assert_uint_eq(e->recs[i].sport, crecs[i].sport);
		ck_assert_mem_eq(&e->recs[i].path, &crecs[i].path,
				 sizeof(crecs[i].path));
		ck_assert_uint_eq(e->recs[i].loss_permille,
				  crecs[i].loss_permille);
		ck_assert_uint_eq(e->recs[i].origin, crecs[i].origin);
	}
	ck_assert_uint_eq(e->recs[1].loss_permille, 7);
	store_close(s);
	alloc_free(al);
	catalog_free(cat);
	topo_free(t2);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-store", test_round_trip, test_sequence_and_release,
      test_every_kind_reopened)
