/*
 * Unit tests for catalog.c: filling from the hash model, probe results,
 * restore through catalog_add, probe planning.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "catalog.h"
#include "tfab.h"

/* Every record's port really takes its path under the same hash model. */
START_TEST(test_fill_from_hash_model)
{
	struct topo *t = tfab_new(4, 2, true);
	struct ecmp_model m = {11};
	struct catalog *c = catalog_new(t, &m);
	struct catalog_key k = {tfab_ip(0, 0, 0, true), tfab_ip(3, 1, 0, true),
				TOPO_RIGHT};
	const struct catalog_entry *e;
	char err[TOPO_ERR_MAX];
	unsigned side[2] = {0, 0};
	uint32_t i, j;
	uint64_t gen;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_null(catalog_find(c, &k));
	gen = catalog_generation(c);
	e = catalog_get(c, &k, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_ne(gen, catalog_generation(c));
	/* 4 spines x 2 up cables x (2 leaves x 2 cables) down */
	ck_assert_uint_eq(e->n, 32);
	ck_assert_uint_eq(e->src_port, tfab_port(t, 0, 0, TOPO_RIGHT));
	for (i = 0; i < e->n; i++) {
		struct path p;

		ck_assert_int_eq(ecmp_route(t, &m, e->src_port, k.dip,
					    e->recs[i].sport, false, &p, err,
					    sizeof(err)),
				 0);
		ck_assert(path_equal(&p, &e->recs[i].path));
		ck_assert_uint_eq(e->recs[i].dst_side,
				  t->ports[p.dst_port].side);
		ck_assert_uint_eq(e->recs[i].origin, CATALOG_FROM_HASH);
		side[e->recs[i].dst_side]++;
		for (j = 0; j < i; j++)
			ck_assert(!path_equal(&e->recs[j].path,
					      &e->recs[i].path));
		if (i > 0)
			ck_assert_uint_gt(e->recs[i].sport,
					  e->recs[i - 1].sport);
	}
	ck_assert_uint_eq(side[0], 16);
	ck_assert_uint_eq(side[1], 16);
	/* cached: same pointer, no growth */
	gen = catalog_generation(c);
	ck_assert_ptr_eq(catalog_get(c, &k, err, sizeof(err)), e);
	ck_assert_uint_eq(gen, catalog_generation(c));
	ck_assert_uint_eq(catalog_count(c), 1);
	/* bad keys */
	k.side = 5;
	ck_assert_ptr_null(catalog_get(c, &k, err, sizeof(err)));
	k.side = 0;
	k.dip = 0x01010101;
	ck_assert_ptr_null(catalog_get(c, &k, err, sizeof(err)));
	k.dip = k.sip;
	ck_assert_ptr_null(catalog_get(c, &k, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "one NIC"));
	catalog_free(c);
	topo_free(t);
}
END_TEST

static struct probe_result
probe(const struct topo *t, uint16_t sport, uint32_t spine)
{
	struct probe_result r = {0};

	r.src_ip = tfab_ip(0, 0, 0, false);
	r.dst_ip = tfab_ip(2, 0, 0, false);
	r.side = TOPO_LEFT;
	r.dst_side = TOPO_LEFT;
	r.sport = sport;
	r.hops = 3;
	r.src_leaf = 0;
	r.spine = spine;
	r.dst_leaf = 2;
	r.up_link = r.down_link = TOPO_NONE;
	(void)t;
	return r;
}

START_TEST(test_probe_results)
{
	struct topo *t = tfab_new(2, 1, false);
	struct catalog *c = catalog_new(t, NULL);
	struct catalog_key k = {tfab_ip(0, 0, 0, false),
				tfab_ip(2, 0, 0, false), TOPO_LEFT};
	const struct catalog_entry *e;
	struct probe_result r;
	char err[TOPO_ERR_MAX];

	/* no model: nothing known until probed */
	ck_assert_ptr_null(catalog_get(c, &k, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "not probed"));
	r = probe(t, 50000, 1);
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), 0);
	r = probe(t, 50001, 0);
	r.loss_permille = 20;
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), 0);
	/* same path under another port: ignored */
	r = probe(t, 50002, 1);
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), 0);
	e = catalog_get(c, &k, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->n, 2);
	ck_assert_uint_eq(e->recs[0].sport, 50000);
	ck_assert_uint_eq(path_spine(t, &e->recs[0].path), 1);
	ck_assert_uint_eq(e->recs[1].loss_permille, 20);
	ck_assert_uint_eq(e->recs[1].origin, CATALOG_FROM_PROBE);
	/* a port seen again on another path: the newest wins */
	r = probe(t, 50001, 1);
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), 0);
	e = catalog_find(c, &k);
	ck_assert_uint_eq(path_spine(t, &e->recs[1].path), 1);
	ck_assert_uint_eq(e->recs[1].loss_permille, 0);
	/* wrong leaves for the ports' cabling */
	r = probe(t, 50003, 0);
	r.dst_leaf = 3;
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cabling"));
	r = probe(t, 50003, 7);
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), -1);
	r = probe(t, 50003, 0);
	r.src_ip = 0x01010101;
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), -1);
	ck_assert_int_eq(catalog_drop(c, &k), 0);
	ck_assert_int_eq(catalog_drop(c, &k), -1);
	ck_assert_uint_eq(catalog_count(c), 0);
	catalog_free(c);
	topo_free(t);
}
END_TEST

START_TEST(test_probe_parallel_cables)
{
	struct topo *t = tfab_new(2, 2, false);
	struct catalog *c = catalog_new(t, NULL);
	struct probe_result r = probe(t, 50000, 1);
	char err[TOPO_ERR_MAX];
	uint32_t first, cnt;

	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "parallel"));
	topo_bundle_links(t, 0, 1, &first, &cnt);
	r.up_link = first + 1;
	topo_bundle_links(t, 2, 1, &first, &cnt);
	r.down_link = first;
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), 0);
	/* cables that do not join at the reported spine */
	r.sport = 50001;
	topo_bundle_links(t, 2, 0, &first, &cnt);
	r.down_link = first;
	ck_assert_int_eq(catalog_add_probe(c, &r, err, sizeof(err)), -1);
	catalog_free(c);
	topo_free(t);
}
END_TEST

/* Iterate one catalog and restore it into another: same contents. */
START_TEST(test_iterate_and_restore)
{
	struct topo *t = tfab_new(3, 1, true);
	struct ecmp_model m = {5};
	struct catalog *a = catalog_new(t, &m), *b = catalog_new(t, NULL);
	char err[TOPO_ERR_MAX];
	uint32_t h, i;
	size_t n;

	for (h = 0; h < 4; h++) {
		for (i = 0; i < 2; i++) {
			struct catalog_key k = {
				tfab_ip(h, 0, 0, true),
				tfab_ip((h + 1) % 4, 0, 0, true), (uint8_t)i};

			ck_assert_ptr_nonnull(
				catalog_get(a, &k, err, sizeof(err)));
		}
	}
	ck_assert_uint_eq(catalog_count(a), 8);
	for (n = 0; n < catalog_count(a); n++) {
		const struct catalog_entry *e = catalog_entry_at(a, n);

		ck_assert_int_eq(catalog_add(b, &e->key, e->recs, e->n, err,
					     sizeof(err)),
				 0);
	}
	ck_assert_ptr_null(catalog_entry_at(a, 8));
	for (n = 0; n < catalog_count(a); n++) {
		const struct catalog_entry *e = catalog_entry_at(a, n);
		const struct catalog_entry *f = catalog_find(b, &e->key);

		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(f->n, e->n);
		ck_assert_int_eq(
			memcmp(f->recs, e->recs, e->n * sizeof(*e->recs)), 0);
	}
	/* a record that does not fit the key is refused */
	{
		const struct catalog_entry *e = catalog_entry_at(a, 0);
		struct catalog_rec bad = e->recs[0];
		struct catalog_key k2 = e->key;

		k2.side = (uint8_t)!k2.side;
		ck_assert_int_eq(catalog_add(b, &k2, &bad, 1, err, sizeof(err)),
				 -1);
	}
	catalog_free(a);
	catalog_free(b);
	topo_free(t);
}
END_TEST

START_TEST(test_probe_tasks)
{
	struct topo *t = tfab_new(2, 1, true);
	struct probe_task *v;
	char err[TOPO_ERR_MAX];
	size_t n, i;

	ck_assert_int_eq(
		catalog_probe_tasks(t, 1, 256, &v, &n, err, sizeof(err)), 0);
	/* left ports live on leaf0/leaf2, right on leaf1/leaf3: 2 x 2 */
	ck_assert_uint_eq(n, 4);
	for (i = 0; i < n; i++) {
		uint32_t sp = topo_port_by_ip(t, v[i].src_ip, v[i].side);
		uint32_t dp = topo_port_by_ip(t, v[i].dst_ip, v[i].side);

		ck_assert_uint_ne(sp, TOPO_NONE);
		ck_assert_uint_ne(dp, TOPO_NONE);
		ck_assert_uint_ne(t->ports[sp].leaf, t->ports[dp].leaf);
		ck_assert_uint_eq(v[i].sport_count, 256);
	}
	free(v);
	topo_free(t);
}
END_TEST

/* QPs leaving leaf0 per uplink, into up[0..4). */
static uint64_t
link_ups(const struct alloc *a, const struct topo *t, uint64_t *up)
{
	uint64_t sum = 0, dn;
	uint32_t k = 0;

	for (uint32_t l = 0; l < t->nlinks; l++)
		if (t->links[l].leaf == 0) {
			alloc_link_load(a, l, &up[k], &dn);
			sum += up[k++];
		}
	ck_assert_uint_eq(k, 4);
	return sum;
}

/*
 * A degraded cable keeps a weight: its state and weight are recorded in
 * the catalog, the allocator counts its capacity at that share, QPs leave
 * it only down to its share and no sibling gets more than its own; back
 * at weight 1 the QPs spread evenly again.  Bad records are refused.
 */
START_TEST(test_link_weight)
{
	struct topo *t = tfab_new(2, 2, true);
	struct ecmp_model m = {7};
	struct catalog *c = catalog_new(t, &m);
	struct alloc *a = alloc_new(t, c);
	struct alloc_qp_req q[16];
	struct alloc_qp_res r[16];
	struct alloc_change *ch;
	size_t nch;
	uint64_t up[4];
	char err[256];
	struct catalog_link v = {
		.state = CATALOG_LINK_DEGRADED, .weight = 0.28, .loss = 0.02};
	uint32_t l0 = 0; /* leaf0-spine0, first cable */

	ck_assert_ptr_nonnull(a);
	ck_assert(catalog_link(c, l0)->weight == 1);
	ck_assert_int_eq(catalog_link(c, l0)->state, CATALOG_LINK_UP);
	for (int i = 0; i < 16; i++)
		q[i] = (struct alloc_qp_req){tfab_ip(0, 0, 0, true),
					     tfab_ip(2, 0, 0, true), TOPO_LEFT,
					     1};
	ck_assert_int_eq(
		alloc_request(a, "r", 1, 0, 60, q, 16, r, err, sizeof(err)), 0);
	ck_assert_uint_eq(link_ups(a, t, up), 16);
	for (int k = 0; k < 4; k++)
		ck_assert_uint_eq(up[k], 4);
	ck_assert_int_eq(catalog_link_set(c, l0, &v), 0);
	ck_assert_int_eq(alloc_link_reweigh(a, l0, 1000, &ch, &nch), 0);
	ck_assert_uint_gt(nch, 0);
	free(ch);
	ck_assert_uint_eq(link_ups(a, t, up), 16);
	/* shares: 16 x 0.28 / 3.28 = 1.4 and 16 / 3.28 = 4.9 */
	ck_assert_uint_ge(up[0], 1);
	ck_assert_uint_le(up[0], 2);
	for (int k = 1; k < 4; k++)
		ck_assert_uint_le(up[k], 5);
	/* a new QP avoids the degraded cable while others have room */
	ck_assert_int_eq(
		alloc_request(a, "r2", 1, 0, 60, q, 1, r, err, sizeof(err)), 0);
	ck_assert_uint_ne(r[0].path.up, l0);
	ck_assert_uint_eq(alloc_release(a, "r2"), 1);
	v = (struct catalog_link){.state = CATALOG_LINK_UP, .weight = 1};
	ck_assert_int_eq(catalog_link_set(c, l0, &v), 0);
	ck_assert_int_eq(alloc_link_reweigh(a, l0, 1000, &ch, &nch), 0);
	free(ch);
	link_ups(a, t, up);
	for (int k = 0; k < 4; k++)
		ck_assert_uint_eq(up[k], 4);
	v.weight = 1.5;
	ck_assert_int_eq(catalog_link_set(c, l0, &v), -1);
	v.weight = 1;
	v.state = 7;
	ck_assert_int_eq(catalog_link_set(c, l0, &v), -1);
	ck_assert_int_eq(catalog_link_set(c, t->nlinks, &v), -1);
	ck_assert_ptr_null(catalog_link(c, t->nlinks));
	alloc_free(a);
	catalog_free(c);
	topo_free(t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("catalog");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_fill_from_hash_model);
	tcase_add_test(tc, test_probe_results);
	tcase_add_test(tc, test_probe_parallel_cables);
	tcase_add_test(tc, test_iterate_and_restore);
	tcase_add_test(tc, test_probe_tasks);
	tcase_add_test(tc, test_link_weight);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
