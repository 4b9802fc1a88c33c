/*
 * Unit tests for alloc.c: the constraints (same side, healthy, least-loaded
 * worst cable, spread over spines), determinism, idempotent requests,
 * batches all-or-nothing, leases, link-down reassignment, restore.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "tfab.h"

struct fx {
	struct topo *t;
	struct catalog *c;
	struct alloc *a;
	struct ecmp_model m;
};

static void
fx_init(struct fx *f, uint32_t spines, uint32_t mult, bool bonded)
{
	f->t = tfab_new(spines, mult, bonded);
	f->m.seed = 42;
	f->c = catalog_new(f->t, &f->m);
	f->a = alloc_new(f->t, f->c);
	ck_assert_ptr_nonnull(f->a);
}

static void
fx_free(struct fx *f)
{
	alloc_free(f->a);
	catalog_free(f->c);
	topo_free(f->t);
}

/* n QPs from host sh NIC sn to host dh NIC dn, sides alternating. */
static void
qps(struct alloc_qp_req *q, size_t n, uint32_t sh, uint32_t sn, uint32_t dh,
    uint32_t dn, bool bonded)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t s = (uint8_t)(i % 2);

		q[i].sip = tfab_ip(sh, sn, s, bonded);
		q[i].dip = tfab_ip(dh, dn, s, bonded);
		q[i].side = s;
		q[i].weight = 0;
	}
}

START_TEST(test_same_side_and_spread)
{
	struct fx f;
	struct alloc_qp_req q[16];
	struct alloc_qp_res r[16];
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];
	unsigned per_spine[2][4] = {{0}};
	uint32_t l;
	size_t i;

	fx_init(&f, 4, 1, true);
	qps(q, 16, 0, 0, 2, 1, true);
	ck_assert_int_eq(alloc_request(f.a, "r1", 1, 100, 60, q, 16, r, err,
				       sizeof(err)),
			 0);
	for (i = 0; i < 16; i++) {
		const struct path *p = &r[i].path;

		ck_assert_uint_eq(r[i].side, i % 2);
		ck_assert_uint_eq(f.t->ports[p->src_port].side, r[i].side);
		ck_assert_uint_eq(f.t->ports[p->dst_port].side, r[i].side);
		ck_assert_uint_ge(r[i].sport, CATALOG_SPORT_BASE);
		ck_assert_uint_eq(r[i].qp_id, i + 1);
		per_spine[r[i].side][path_spine(f.t, p)]++;
		/* the port really takes the path */
		{
			struct path h;

			ck_assert_int_eq(ecmp_route(f.t, &f.m, p->src_port,
						    q[i].dip, r[i].sport, true,
						    &h, err, sizeof(err)),
					 0);
			ck_assert(path_equal(&h, p));
		}
	}
	/* 8 QPs per side over 4 spines: exactly 2 each */
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(per_spine[0][i], 2);
		ck_assert_uint_eq(per_spine[1][i], 2);
	}
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.qps, 16);
	ck_assert_uint_eq(st.requests, 1);
	ck_assert_uint_eq(st.max_link_load, 2);
	for (l = 0; l < f.t->nlinks; l++) {
		uint64_t up, down;

		ck_assert_int_eq(alloc_link_load(f.a, l, &up, &down), 0);
		ck_assert_uint_le(up, 2);
		ck_assert_uint_le(down, 2);
	}
	fx_free(&f);
}
END_TEST

/* Parallel cables: the tie-break spreads a leaf's QPs over the spines. */
START_TEST(test_spread_over_spines_with_parallel_cables)
{
	struct fx f;
	struct alloc_qp_req q[4];
	struct alloc_qp_res r[4];
	char err[TOPO_ERR_MAX];
	unsigned per_spine[2] = {0, 0};
	size_t i;

	fx_init(&f, 2, 2, false);
	for (i = 0; i < 4; i++) {
		q[i].sip = tfab_ip(0, 0, 0, false);
		q[i].dip = tfab_ip(2, 0, 0, false);
		q[i].side = TOPO_LEFT;
		q[i].weight = 0;
	}
	ck_assert_int_eq(
		alloc_request(f.a, "p", 1, 0, 60, q, 4, r, err, sizeof(err)),
		0);
	for (i = 0; i < 4; i++)
		per_spine[path_spine(f.t, &r[i].path)]++;
	ck_assert_uint_eq(per_spine[0], 2);
	ck_assert_uint_eq(per_spine[1], 2);
	fx_free(&f);
}
END_TEST

START_TEST(test_weights)
{
	struct fx f;
	struct alloc_qp_req q[3];
	struct alloc_qp_res r[3];
	char err[TOPO_ERR_MAX];

	fx_init(&f, 2, 1, false);
	qps(q, 3, 0, 0, 2, 0, false);
	q[0].side = q[1].side = q[2].side = TOPO_LEFT;
	q[1].sip = q[2].sip = q[0].sip;
	q[1].dip = q[2].dip = q[0].dip;
	q[0].weight = 10; /* heavy QP takes one spine alone */
	q[1].weight = 1;
	q[2].weight = 1;
	ck_assert_int_eq(
		alloc_request(f.a, "w", 1, 0, 60, q, 3, r, err, sizeof(err)),
		0);
	ck_assert_uint_ne(path_spine(f.t, &r[0].path),
			  path_spine(f.t, &r[1].path));
	ck_assert_uint_eq(path_spine(f.t, &r[1].path),
			  path_spine(f.t, &r[2].path));
	q[0].weight = ALLOC_MAX_WEIGHT + 1;
	ck_assert_int_eq(
		alloc_request(f.a, "w2", 1, 0, 60, q, 1, r, err, sizeof(err)),
		-EINVAL);
	fx_free(&f);
}
END_TEST

START_TEST(test_deterministic)
{
	struct fx f1, f2;
	struct alloc_qp_req q[12];
	struct alloc_qp_res r1[12], r2[12];
	char err[TOPO_ERR_MAX], id[16];
	uint32_t h;

	fx_init(&f1, 3, 2, true);
	fx_init(&f2, 3, 2, true);
	for (h = 0; h < 4; h++) {
		qps(q, 12, h, h % 2, (h + 2) % 4, 1, true);
		snprintf(id, sizeof(id), "d%u", h);
		ck_assert_int_eq(alloc_request(f1.a, id, 7, 0, 60, q, 12, r1,
					       err, sizeof(err)),
				 0);
		ck_assert_int_eq(alloc_request(f2.a, id, 7, 0, 60, q, 12, r2,
					       err, sizeof(err)),
				 0);
		ck_assert_int_eq(memcmp(r1, r2, sizeof(r1)), 0);
	}
	fx_free(&f1);
	fx_free(&f2);
}
END_TEST

START_TEST(test_idempotent_and_conflicts)
{
	struct fx f;
	struct alloc_qp_req q[4];
	struct alloc_qp_res r[4], again[4];
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];

	fx_init(&f, 2, 1, true);
	qps(q, 4, 0, 0, 2, 0, true);
	ck_assert_int_eq(
		alloc_request(f.a, "x", 3, 0, 60, q, 4, r, err, sizeof(err)),
		0);
	ck_assert_int_eq(alloc_request(f.a, "x", 3, 10, 60, q, 4, again, err,
				       sizeof(err)),
			 0);
	ck_assert_int_eq(memcmp(r, again, sizeof(r)), 0);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.qps, 4);
	ck_assert_int_eq(alloc_request(f.a, "x", 4, 0, 60, q, 4, again, err,
				       sizeof(err)),
			 -EEXIST);
	ck_assert_int_eq(alloc_request(f.a, "x", 3, 0, 60, q, 2, again, err,
				       sizeof(err)),
			 -EEXIST);
	q[2].weight = 5;
	ck_assert_int_eq(alloc_request(f.a, "x", 3, 0, 60, q, 4, again, err,
				       sizeof(err)),
			 -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "QP 2 differs"));
	q[2].weight = 0;
	ck_assert_int_eq(alloc_lookup(f.a, "x", again, 4), 0);
	ck_assert_int_eq(memcmp(r, again, sizeof(r)), 0);
	ck_assert_int_eq(alloc_lookup(f.a, "y", again, 4), -ENOENT);
	/* the retry renewed the lease to 10 + 60 */
	ck_assert_uint_eq(alloc_expire(f.a, 69), 0);
	ck_assert_uint_eq(alloc_expire(f.a, 70), 4);
	fx_free(&f);
}
END_TEST

/* One bad QP in a batch: nothing is allocated, QP ids are not used up. */
START_TEST(test_batch_all_or_nothing)
{
	struct fx f;
	struct alloc_qp_req q[4];
	struct alloc_qp_res r[4];
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];

	fx_init(&f, 2, 1, false);
	qps(q, 4, 0, 0, 2, 0, false);
	q[3].dip = 0x01010101;
	ck_assert_int_eq(
		alloc_request(f.a, "b", 1, 0, 60, q, 4, r, err, sizeof(err)),
		-EINVAL);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.qps, 0);
	ck_assert_uint_eq(st.requests, 0);
	ck_assert_uint_eq(st.max_link_load, 0);
	/* unbonded: a cross-side pair of IPs is refused */
	qps(q, 4, 0, 0, 2, 0, false);
	q[1].dip = tfab_ip(2, 0, 0, false);
	ck_assert_int_eq(
		alloc_request(f.a, "b", 1, 0, 60, q, 4, r, err, sizeof(err)),
		-EINVAL);
	qps(q, 4, 0, 0, 2, 0, false);
	ck_assert_int_eq(
		alloc_request(f.a, "b", 1, 0, 60, q, 4, r, err, sizeof(err)),
		0);
	ck_assert_uint_eq(r[0].qp_id, 1);
	/* argument checks */
	ck_assert_int_eq(
		alloc_request(f.a, "", 1, 0, 60, q, 4, r, err, sizeof(err)),
		-EINVAL);
	ck_assert_int_eq(
		alloc_request(f.a, "z", 1, 0, 0, q, 4, r, err, sizeof(err)),
		-EINVAL);
	ck_assert_int_eq(
		alloc_request(f.a, "z", 1, 0, 60, q, 0, r, err, sizeof(err)),
		-EINVAL);
	q[0].dip = q[0].sip;
	ck_assert_int_eq(
		alloc_request(f.a, "z", 1, 0, 60, q, 1, r, err, sizeof(err)),
		-EINVAL);
	fx_free(&f);
}
END_TEST

START_TEST(test_release_and_leases)
{
	struct fx f;
	struct alloc_qp_req q[2];
	struct alloc_qp_res r[2];
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];

	fx_init(&f, 2, 1, true);
	qps(q, 2, 0, 0, 2, 0, true);
	ck_assert_int_eq(
		alloc_request(f.a, "a", 1, 0, 10, q, 2, r, err, sizeof(err)),
		0);
	ck_assert_int_eq(
		alloc_request(f.a, "b", 1, 0, 20, q, 2, r, err, sizeof(err)),
		0);
	ck_assert_int_eq(
		alloc_request(f.a, "c", 2, 0, 30, q, 2, r, err, sizeof(err)),
		0);
	ck_assert_uint_eq(alloc_expire(f.a, 9), 0);
	ck_assert_uint_eq(alloc_expire(f.a, 10), 2);
	ck_assert_uint_eq(alloc_renew_job(f.a, 1, 10, 100), 1);
	ck_assert_uint_eq(alloc_expire(f.a, 50), 2); /* job 2 lapsed */
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.requests, 1);
	ck_assert_uint_eq(alloc_release(f.a, "nope"), 0);
	ck_assert_uint_eq(alloc_release_job(f.a, 1), 2);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.qps, 0);
	ck_assert_uint_eq(st.max_link_load, 0);
	/* slots are reused and ids keep growing */
	ck_assert_int_eq(
		alloc_request(f.a, "a", 1, 0, 10, q, 2, r, err, sizeof(err)),
		0);
	ck_assert_uint_eq(r[0].qp_id, 7);
	fx_free(&f);
}
END_TEST

/*
 * A cable goes down: exactly the QPs on it move, to healthy same-side
 * paths, the change list says old and new ports, and the loads stay
 * balanced; bringing it back changes nothing.
 */
START_TEST(test_link_down_reassigns)
{
	struct fx f;
	struct alloc_qp_req q[16];
	struct alloc_qp_res r[16], now[16];
	struct alloc_change *ch;
	char err[TOPO_ERR_MAX];
	size_t nch, i, j, on_link = 0;
	uint32_t link;
	uint64_t up, down;

	fx_init(&f, 4, 1, true);
	qps(q, 16, 0, 0, 2, 1, true);
	ck_assert_int_eq(
		alloc_request(f.a, "L", 9, 0, 60, q, 16, r, err, sizeof(err)),
		0);
	link = r[0].path.up;
	for (i = 0; i < 16; i++)
		on_link += path_uses_link(&r[i].path, link);
	ck_assert_int_eq(alloc_link_set(f.a, link, false, &ch, &nch), 0);
	ck_assert_uint_eq(nch, on_link);
	ck_assert_int_eq(alloc_lookup(f.a, "L", now, 16), 0);
	for (j = 0; j < nch; j++) {
		ck_assert_uint_eq(ch[j].kind, ALLOC_MOVED);
		ck_assert_uint_eq(ch[j].job, 9);
		ck_assert_str_eq(ch[j].req_id, "L");
		ck_assert_uint_eq(ch[j].old_sport, r[ch[j].index].sport);
		ck_assert_uint_eq(ch[j].new_sport, now[ch[j].index].sport);
		ck_assert_uint_ne(ch[j].new_sport, ch[j].old_sport);
		ck_assert(path_uses_link(&ch[j].old_path, link));
		if (j > 0)
			ck_assert_uint_gt(ch[j].qp_id, ch[j - 1].qp_id);
	}
	for (i = 0; i < 16; i++) {
		ck_assert(!path_uses_link(&now[i].path, link));
		ck_assert(path_healthy(f.t, &now[i].path));
		ck_assert_uint_eq(f.t->ports[now[i].path.dst_port].side,
				  now[i].side);
		if (!path_uses_link(&r[i].path, link))
			ck_assert(path_equal(&r[i].path, &now[i].path));
	}
	ck_assert_int_eq(alloc_link_load(f.a, link, &up, &down), 0);
	ck_assert_uint_eq(up, 0);
	free(ch);
	ck_assert_int_eq(alloc_link_set(f.a, link, true, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 0);
	ck_assert_ptr_null(ch);
	ck_assert_int_eq(alloc_link_set(f.a, f.t->nlinks, true, &ch, &nch),
			 -EINVAL);
	fx_free(&f);
}
END_TEST

/*
 * After a cable comes back, rebalancing moves QPs onto it again until
 * every cable carries its fair share; a balanced state moves nothing.
 */
START_TEST(test_rebalance_after_recovery)
{
	struct fx f;
	struct alloc_qp_req q[16];
	struct alloc_qp_res r[16];
	struct alloc_change *ch;
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];
	size_t nch, i;
	uint32_t link;
	uint64_t up, down;

	fx_init(&f, 4, 1, true);
	qps(q, 16, 0, 0, 2, 1, true);
	ck_assert_int_eq(
		alloc_request(f.a, "R", 1, 0, 60, q, 16, r, err, sizeof(err)),
		0);
	ck_assert_int_eq(alloc_rebalance(f.a, 100, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 0);
	link = r[0].path.up;
	ck_assert_int_eq(alloc_link_set(f.a, link, false, &ch, &nch), 0);
	free(ch);
	ck_assert_int_eq(alloc_link_set(f.a, link, true, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 0);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.max_link_load, 3);
	/* at most one move allowed: exactly one */
	ck_assert_int_eq(alloc_rebalance(f.a, 1, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 1);
	free(ch);
	ck_assert_int_eq(alloc_rebalance(f.a, 100, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 1);
	for (i = 0; i < nch; i++) {
		ck_assert_uint_ne(ch[i].new_sport, ch[i].old_sport);
		ck_assert(path_uses_link(&ch[i].new_path, link));
	}
	free(ch);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.max_link_load, 2);
	ck_assert_int_eq(alloc_link_load(f.a, link, &up, &down), 0);
	ck_assert_uint_eq(up, 2);
	fx_free(&f);
}
END_TEST

/* All uplinks of a leaf down: QPs are stranded, then placed again. */
START_TEST(test_stranded_and_back)
{
	struct fx f;
	struct alloc_qp_req q[2];
	struct alloc_qp_res r[2];
	struct alloc_change *ch;
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];
	size_t nch, total = 0;
	uint32_t l;

	fx_init(&f, 2, 1, false);
	qps(q, 2, 0, 0, 2, 0, false);
	q[1] = q[0];
	ck_assert_int_eq(
		alloc_request(f.a, "s", 1, 0, 60, q, 2, r, err, sizeof(err)),
		0);
	for (l = 0; l < f.t->nlinks; l++) {
		if (f.t->links[l].leaf != 0)
			continue;
		ck_assert_int_eq(alloc_link_set(f.a, l, false, &ch, &nch), 0);
		total += nch;
		free(ch);
	}
	/* one move on the first failure, both stranded on the second */
	ck_assert_uint_eq(total, 3);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.stranded, 2);
	ck_assert_int_eq(alloc_lookup(f.a, "s", r, 2), 0);
	ck_assert(r[0].stranded);
	/* a new request finds no path */
	ck_assert_int_eq(
		alloc_request(f.a, "t", 1, 0, 60, q, 1, r, err, sizeof(err)),
		-ENOENT);
	/* one uplink back: both QPs share it */
	ck_assert_int_eq(
		alloc_link_set(f.a, f.t->leaf_links[0], true, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 2);
	ck_assert_uint_eq(ch[0].kind, ALLOC_MOVED);
	free(ch);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.stranded, 0);
	ck_assert_uint_eq(st.max_link_load, 2);
	fx_free(&f);
}
END_TEST

START_TEST(test_port_down)
{
	struct fx f;
	struct alloc_qp_req q[2];
	struct alloc_qp_res r[2];
	struct alloc_change *ch;
	char err[TOPO_ERR_MAX];
	size_t nch;

	fx_init(&f, 2, 1, true);
	qps(q, 2, 0, 0, 2, 0, true);
	ck_assert_int_eq(
		alloc_request(f.a, "p", 1, 0, 60, q, 2, r, err, sizeof(err)),
		0);
	/* the destination's left port fails: its QP has no left path, and
	 * the bond fails over to the right ports */
	ck_assert_int_eq(
		alloc_port_set(f.a, r[0].path.dst_port, false, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 1);
	ck_assert_uint_eq(ch[0].kind, ALLOC_MOVED);
	ck_assert_uint_eq(ch[0].index, 0);
	ck_assert(ch[0].fallback);
	ck_assert_uint_eq(ch[0].new_side, TOPO_RIGHT);
	ck_assert_uint_eq(f.t->ports[ch[0].new_path.src_port].side, TOPO_RIGHT);
	free(ch);
	ck_assert_int_eq(
		alloc_port_set(f.a, r[0].path.dst_port, true, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 1);
	ck_assert(!ch[0].fallback);
	ck_assert_uint_eq(ch[0].new_side, TOPO_LEFT);
	free(ch);
	fx_free(&f);
}
END_TEST

/*
 * A catalog filled only from probe results (no hash model): allocation
 * uses the probed ports, skips lossy ones, and says so when a pair was
 * never probed.
 */
START_TEST(test_probe_only_catalog)
{
	struct topo *t = tfab_new(3, 1, false);
	struct catalog *c = catalog_new(t, NULL);
	struct alloc *a = alloc_new(t, c);
	struct alloc_qp_req q[3];
	struct alloc_qp_res r[3];
	char err[TOPO_ERR_MAX];
	uint32_t sp;

	for (sp = 0; sp < 3; sp++) {
		struct probe_result p = {0};

		p.src_ip = tfab_ip(0, 0, 0, false);
		p.dst_ip = tfab_ip(2, 0, 0, false);
		p.side = p.dst_side = TOPO_LEFT;
		p.sport = (uint16_t)(60000 + sp);
		p.hops = 3;
		p.src_leaf = 0;
		p.spine = sp;
		p.dst_leaf = 2;
		p.up_link = p.down_link = TOPO_NONE;
		p.loss_permille = sp == 1 ? 5 : 0; /* spine1 loses packets */
		ck_assert_int_eq(catalog_add_probe(c, &p, err, sizeof(err)), 0);
	}
	qps(q, 3, 0, 0, 2, 0, false);
	q[0].side = q[1].side = q[2].side = TOPO_LEFT;
	q[1] = q[2] = q[0];
	ck_assert_int_eq(
		alloc_request(a, "pr", 1, 0, 60, q, 3, r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r[0].sport, 60000);
	ck_assert_uint_eq(r[1].sport, 60002);
	ck_assert_uint_eq(r[2].sport, 60000);
	/* the right side was never probed */
	q[0].sip = tfab_ip(0, 0, 1, false);
	q[0].dip = tfab_ip(2, 0, 1, false);
	q[0].side = TOPO_RIGHT;
	ck_assert_int_eq(
		alloc_request(a, "pr2", 1, 0, 60, q, 1, r, err, sizeof(err)),
		-ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "not probed"));
	alloc_free(a);
	catalog_free(c);
	topo_free(t);
}
END_TEST

/* TOPO_SIDE_ANY: the master balances a NIC's QPs over both ports. */
START_TEST(test_side_any_balances)
{
	struct fx f;
	struct alloc_qp_req q[6];
	struct alloc_qp_res r[6];
	char err[TOPO_ERR_MAX];
	unsigned side[2] = {0, 0};
	size_t i;

	fx_init(&f, 2, 1, true);
	qps(q, 6, 1, 1, 3, 1, true);
	for (i = 0; i < 6; i++)
		q[i].side = TOPO_SIDE_ANY;
	ck_assert_int_eq(
		alloc_request(f.a, "any", 1, 0, 60, q, 6, r, err, sizeof(err)),
		0);
	for (i = 0; i < 6; i++)
		side[r[i].side]++;
	ck_assert_uint_eq(side[0], 3);
	ck_assert_uint_eq(side[1], 3);
	ck_assert_uint_eq(r[0].side, TOPO_LEFT);
	fx_free(&f);
}
END_TEST

/* Every placed QP's port maps to its path in the catalog, and is healthy. */
static void
consistent(struct alloc *a, struct catalog *c, const struct topo *t)
{
	struct alloc_record rec;
	size_t cur = 0;

	while (alloc_next(a, &cur, &rec) == 1) {
		struct catalog_key k = {rec.req.sip, rec.req.dip, rec.side};
		const struct catalog_entry *e = catalog_find(c, &k);
		bool found = false;

		if (rec.stranded)
			continue;
		ck_assert(path_healthy(t, &rec.path));
		ck_assert_ptr_nonnull(e);
		for (uint32_t i = 0; i < e->n; i++)
			if (e->recs[i].sport == rec.sport)
				found = path_equal(&e->recs[i].path, &rec.path);
		ck_assert_msg(found, "QP %llu: port %u does not take its path",
			      (unsigned long long)rec.qp_id, rec.sport);
	}
}

/* One probe record of h0/nic0 -> h2/nic0, left, over spine sp. */
static void
probe_rec(struct catalog *c, uint16_t sport, uint32_t sp)
{
	struct probe_result p = {0};
	char err[TOPO_ERR_MAX];

	p.src_ip = tfab_ip(0, 0, 0, false);
	p.dst_ip = tfab_ip(2, 0, 0, false);
	p.side = p.dst_side = TOPO_LEFT;
	p.sport = sport;
	p.hops = 3;
	p.src_leaf = 0;
	p.spine = sp;
	p.dst_leaf = 2;
	p.up_link = p.down_link = TOPO_NONE;
	ck_assert_int_eq(catalog_add_probe(c, &p, err, sizeof(err)), 0);
}

/*
 * A probe round replaces a pair's ports (the switches rehashed): the port
 * a QP holds now takes another path. Rebalancing never swaps the port of
 * a QP whose path stays (that would be a change nobody is told of), and
 * alloc_recheck places the stale QPs again, reporting every move.
 */
START_TEST(test_port_never_changes_silently)
{
	struct topo *t = tfab_new(2, 1, false);
	struct catalog *c = catalog_new(t, NULL);
	struct alloc *a = alloc_new(t, c);
	struct catalog_key k = {tfab_ip(0, 0, 0, false),
				tfab_ip(2, 0, 0, false), TOPO_LEFT};
	struct alloc_qp_req q[2];
	struct alloc_qp_res r[2], r2[2];
	struct alloc_change *ch;
	char err[TOPO_ERR_MAX];
	size_t nch, i;

	probe_rec(c, 60000, 0);
	probe_rec(c, 60001, 1);
	qps(q, 2, 0, 0, 2, 0, false);
	q[1] = q[0];
	ck_assert_int_eq(
		alloc_request(a, "x", 1, 0, 60, q, 2, r, err, sizeof(err)), 0);
	ck_assert_uint_ne(r[0].sport, r[1].sport);
	ck_assert_int_eq(alloc_recheck(a, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 0); /* nothing stale */
	/* the round: 60000 now takes spine1, 60002 spine0, 60001 gone */
	ck_assert_int_eq(catalog_drop(c, &k), 0);
	probe_rec(c, 60000, 1);
	probe_rec(c, 60002, 0);
	/* rebalancing alone must not hand out 60002 for spine0 silently */
	ck_assert_int_eq(alloc_rebalance(a, 100, &ch, &nch), 0);
	ck_assert_int_eq(alloc_lookup(a, "x", r2, 2), 0);
	for (i = 0; i < 2; i++) {
		bool told = false;

		for (size_t j = 0; j < nch; j++)
			told |= ch[j].index == i &&
				ch[j].new_sport == r2[i].sport;
		ck_assert(r2[i].sport == r[i].sport || told);
	}
	free(ch);
	/* both QPs are stale: each is placed again and reported */
	ck_assert_int_eq(alloc_recheck(a, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 2);
	for (i = 0; i < nch; i++) {
		ck_assert_uint_eq(ch[i].kind, ALLOC_MOVED);
		ck_assert_uint_ne(ch[i].new_sport, 60001);
	}
	free(ch);
	consistent(a, c, t);
	/* the spines are spread again: one QP per spine */
	ck_assert_int_eq(alloc_lookup(a, "x", r2, 2), 0);
	ck_assert_uint_ne(path_spine(t, &r2[0].path),
			  path_spine(t, &r2[1].path));
	ck_assert_int_eq(alloc_recheck(a, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 0);
	alloc_free(a);
	catalog_free(c);
	topo_free(t);
}
END_TEST

/*
 * The holder's word: a request's answer and a matching report confirm the
 * port; a move leaves it pending until the holder reports the new port; a
 * report of another port is a disagreement.
 */
START_TEST(test_confirm_pending)
{
	struct fx f;
	struct alloc_qp_req q[2];
	struct alloc_qp_res r[2];
	struct alloc_change *ch;
	struct alloc_stats st;
	struct alloc_record rec;
	char err[TOPO_ERR_MAX];
	size_t nch, cur = 0;

	fx_init(&f, 4, 1, true);
	qps(q, 2, 0, 0, 2, 0, true);
	ck_assert_int_eq(
		alloc_request(f.a, "c", 1, 0, 60, q, 2, r, err, sizeof(err)),
		0);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_int_eq(alloc_link_set(f.a, r[0].path.up, false, &ch, &nch),
			 0);
	ck_assert_uint_eq(nch, 1);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.pending, 1);
	while (alloc_next(f.a, &cur, &rec) == 1 && rec.index != 0)
		;
	ck_assert_uint_eq(rec.conf_sport, r[0].sport);
	ck_assert_uint_eq(rec.sport, ch[0].new_sport);
	ck_assert_int_eq(alloc_confirm(f.a, "c", 0, r[0].sport), 1);
	ck_assert_int_eq(alloc_confirm(f.a, "c", 0, ch[0].new_sport), 0);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_int_eq(alloc_confirm(f.a, "c", 2, 1), -ENOENT);
	ck_assert_int_eq(alloc_confirm(f.a, "nope", 0, 1), -ENOENT);
	free(ch);
	fx_free(&f);
}
END_TEST

/* The cables of leaf l to spines [from, to), for a batch. */
static size_t
leaf_cables(const struct topo *t, uint32_t l, uint32_t from, uint32_t to,
	    uint32_t *v, bool *up, bool state)
{
	size_t n = 0;

	for (uint32_t i = 0; i < t->nlinks; i++)
		if (t->links[i].leaf == l && t->links[i].spine >= from &&
		    t->links[i].spine < to) {
			v[n] = i;
			up[n++] = state;
		}
	return n;
}

/* A bonded 4-spine fabric with request id: 8 QPs h0/nic0 -> h2/nic0. */
static void
fx_eight(struct fx *f, const char *id, struct alloc_qp_res *r)
{
	struct alloc_qp_req q[8];
	char err[TOPO_ERR_MAX];

	fx_init(f, 4, 1, true);
	qps(q, 8, 0, 0, 2, 0, true);
	ck_assert_int_eq(
		alloc_request(f->a, id, 1, 0, 60, q, 8, r, err, sizeof(err)),
		0);
}

/*
 * A whole side down (every uplink of the left leaf): no QP is stranded,
 * the left QPs fail over to the right ports, and return when the side
 * recovers. No move lands on a cable the same batch takes down.
 */
START_TEST(test_fallback_and_return)
{
	struct fx f;
	struct alloc_qp_res r[8];
	struct alloc_change *ch;
	struct alloc_stats st;
	char err[TOPO_ERR_MAX];
	uint32_t v[16];
	bool up[16];
	size_t nch, n, i;

	fx_eight(&f, "f", r);
	n = leaf_cables(f.t, 0, 0, 4, v, up, false);
	ck_assert_int_eq(alloc_links_set(f.a, v, up, n, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 4); /* the left QPs, once each */
	for (i = 0; i < nch; i++) {
		ck_assert_uint_eq(ch[i].kind, ALLOC_MOVED);
		ck_assert(ch[i].fallback);
		ck_assert_uint_eq(ch[i].old_side, TOPO_LEFT);
		ck_assert_uint_eq(ch[i].new_side, TOPO_RIGHT);
		ck_assert(path_healthy(f.t, &ch[i].new_path));
	}
	free(ch);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.stranded, 0);
	ck_assert_uint_eq(st.fallback, 4);
	ck_assert_int_eq(alloc_lookup(f.a, "f", r, 8), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_uint_eq(r[i].side, TOPO_RIGHT);
		ck_assert_uint_eq(r[i].home_side, i % 2);
		ck_assert_int_eq(r[i].fallback, i % 2 == 0);
	}
	consistent(f.a, f.c, f.t);
	/* a restart keeps the failover and its home side */
	{
		struct fx g;
		struct alloc_record recs[8];
		size_t cur = 0, k = 0;
		struct alloc_qp_res r2[8];

		while (alloc_next(f.a, &cur, &recs[k]) == 1)
			k++;
		fx_init(&g, 4, 1, true);
		for (i = 0; i < n; i++) {
			ck_assert_int_eq(
				alloc_link_set(g.a, v[i], false, &ch, &nch), 0);
			free(ch);
		}
		ck_assert_int_eq(alloc_restore(g.a, recs, k, err, sizeof(err)),
				 0);
		ck_assert_int_eq(alloc_lookup(g.a, "f", r2, 8), 0);
		ck_assert_mem_eq(r, r2, sizeof(r));
		fx_free(&g);
	}
	/* the side recovers (two cables in one batch): they go home */
	n = leaf_cables(f.t, 0, 0, 2, v, up, true);
	ck_assert_int_eq(alloc_links_set(f.a, v, up, n, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 4);
	for (i = 0; i < nch; i++) {
		ck_assert(!ch[i].fallback);
		ck_assert_uint_eq(ch[i].new_side, TOPO_LEFT);
		ck_assert(path_healthy(f.t, &ch[i].new_path));
	}
	free(ch);
	alloc_stats(f.a, &st);
	ck_assert_uint_eq(st.fallback, 0);
	consistent(f.a, f.c, f.t);
	fx_free(&f);
}
END_TEST

/*
 * Three of four uplinks fail in one batch: every QP on them moves straight
 * to the last one, none through a cable of the same batch.
 */
START_TEST(test_batch_ordering)
{
	struct fx f;
	struct alloc_qp_res r[8];
	struct alloc_change *ch;
	uint32_t v[16];
	bool up[16];
	size_t nch, n, i, j;

	fx_eight(&f, "b", r);
	n = leaf_cables(f.t, 0, 0, 3, v, up, false);
	ck_assert_int_eq(alloc_links_set(f.a, v, up, n, &ch, &nch), 0);
	ck_assert_uint_eq(nch, 3); /* left QPs on spines 0-2, once each */
	for (i = 0; i < nch; i++) {
		ck_assert_uint_eq(ch[i].kind, ALLOC_MOVED);
		ck_assert(!ch[i].fallback);
		for (j = 0; j < n; j++)
			ck_assert(!path_uses_link(&ch[i].new_path, v[j]));
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(ch[i].qp_id, ch[j].qp_id);
	}
	free(ch);
	/* a bad id refuses the whole batch */
	v[0] = f.t->nlinks;
	up[0] = true;
	ck_assert_int_eq(alloc_links_set(f.a, v, up, n, &ch, &nch), -EINVAL);
	ck_assert(!f.t->links[v[1]].up);
	consistent(f.a, f.c, f.t);
	fx_free(&f);
}
END_TEST

/*
 * Save every record, restore into a fresh allocator: same state, and the
 * next decisions are the same as the original's.
 */
START_TEST(test_restore_from_records)
{
	struct fx f1, f2;
	struct alloc_qp_req q[8];
	struct alloc_qp_res r1[8], r2[8];
	struct alloc_record *recs = NULL, rec;
	char err[TOPO_ERR_MAX], id[16];
	size_t cur = 0, n = 0;
	uint32_t h, l;

	fx_init(&f1, 3, 1, true);
	fx_init(&f2, 3, 1, true);
	for (h = 0; h < 3; h++) {
		qps(q, 8, h, 0, (h + 2) % 4, 0, true);
		snprintf(id, sizeof(id), "j%u", h);
		ck_assert_int_eq(alloc_request(f1.a, id, h, 5, 60, q, 8, r1,
					       err, sizeof(err)),
				 0);
	}
	alloc_release(f1.a, "j1");
	while (alloc_next(f1.a, &cur, &rec) == 1) {
		recs = realloc(recs, (n + 1) * sizeof(*recs));
		recs[n++] = rec;
	}
	ck_assert_uint_eq(n, 16);
	/* incomplete requests are refused, and nothing is restored */
	ck_assert_int_eq(alloc_restore(f2.a, recs, n - 1, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(alloc_restore(f2.a, recs, n, err, sizeof(err)), 0);
	ck_assert_int_eq(alloc_restore(f2.a, recs, n, err, sizeof(err)),
			 -EEXIST);
	for (l = 0; l < f1.t->nlinks; l++) {
		uint64_t u1, d1, u2, d2;

		alloc_link_load(f1.a, l, &u1, &d1);
		alloc_link_load(f2.a, l, &u2, &d2);
		ck_assert_uint_eq(u1, u2);
		ck_assert_uint_eq(d1, d2);
	}
	ck_assert_int_eq(alloc_lookup(f1.a, "j2", r1, 8), 0);
	ck_assert_int_eq(alloc_lookup(f2.a, "j2", r2, 8), 0);
	ck_assert_int_eq(memcmp(r1, r2, sizeof(r1)), 0);
	/* the next request: same answer, ids continue */
	qps(q, 8, 3, 1, 1, 1, true);
	ck_assert_int_eq(
		alloc_request(f1.a, "n", 1, 5, 60, q, 8, r1, err, sizeof(err)),
		0);
	ck_assert_int_eq(
		alloc_request(f2.a, "n", 1, 5, 60, q, 8, r2, err, sizeof(err)),
		0);
	ck_assert_int_eq(memcmp(r1, r2, sizeof(r1)), 0);
	ck_assert_uint_eq(r2[0].qp_id, 25);
	/* a record whose path does not fit its IPs */
	recs[0].path.dst_port = recs[0].path.src_port;
	strcpy(recs[0].req_id, "zz");
	recs[0].nqp = 1;
	recs[0].index = 0;
	ck_assert_int_eq(alloc_restore(f2.a, recs, 1, err, sizeof(err)),
			 -EINVAL);
	free(recs);
	fx_free(&f1);
	fx_free(&f2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_same_side_and_spread);
	tcase_add_test(tc, test_spread_over_spines_with_parallel_cables);
	tcase_add_test(tc, test_weights);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_idempotent_and_conflicts);
	tcase_add_test(tc, test_batch_all_or_nothing);
	tcase_add_test(tc, test_release_and_leases);
	tcase_add_test(tc, test_link_down_reassigns);
	tcase_add_test(tc, test_rebalance_after_recovery);
	tcase_add_test(tc, test_stranded_and_back);
	tcase_add_test(tc, test_port_down);
	tcase_add_test(tc, test_probe_only_catalog);
	tcase_add_test(tc, test_side_any_balances);
	tcase_add_test(tc, test_restore_from_records);
	tcase_add_test(tc, test_port_never_changes_silently);
	tcase_add_test(tc, test_confirm_pending);
	tcase_add_test(tc, test_fallback_and_return);
	tcase_add_test(tc, test_batch_ordering);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
