/*
 * Unit tests for ecmp.c: determinism, seeds, bonded receive side,
 * resilient behaviour on failures.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ecmp.h"
#include "tfab.h"

START_TEST(test_deterministic_and_seeded)
{
	struct ecmp_flow f = {1, 2, 50000, HASH_ROCE_DPORT, HASH_PROTO_UDP};
	struct ecmp_model m1 = {1}, m2 = {2};
	uint64_t s1 = ecmp_switch_seed(&m1, 0, 3);

	ck_assert_uint_eq(ecmp_flow(s1, &f), ecmp_flow(s1, &f));
	ck_assert_uint_ne(s1, ecmp_switch_seed(&m2, 0, 3));
	ck_assert_uint_ne(s1, ecmp_switch_seed(&m1, 1, 3));
	ck_assert_uint_ne(s1, ecmp_switch_seed(&m1, 0, 4));
	f.sport++;
	ck_assert_uint_ne(
		ecmp_flow(s1, &f),
		ecmp_flow(s1, &(struct ecmp_flow){1, 2, 50000, HASH_ROCE_DPORT,
						  HASH_PROTO_UDP}));
}
END_TEST

/*
 * A bonded destination: the spine picks the receive leaf, so both sides
 * show up, each for roughly half of the source ports, and every path of
 * the groups is reachable.
 */
START_TEST(test_bonded_receive_side_is_hashed)
{
	struct topo *t = tfab_new(4, 1, true);
	struct ecmp_model m = {7};
	struct ecmp_ctx c;
	struct path p;
	char err[TOPO_ERR_MAX];
	unsigned side[2] = {0, 0}, spine[4] = {0}, i;
	uint32_t src = tfab_port(t, 0, 0, TOPO_LEFT), ix;

	ck_assert_int_eq(ecmp_ctx_init(&c, t, &m, src, tfab_ip(2, 0, 0, true),
				       err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.nup, 4);
	ck_assert_uint_eq(c.ndown, 8);
	ck_assert_uint_eq(c.npaths, 8);
	for (i = 0; i < 4000; i++) {
		ck_assert_int_eq(ecmp_ctx_route_ix(&c, (uint16_t)(49152 + i),
						   false, &p, &ix),
				 0);
		ck_assert_uint_lt(ix, c.nup * c.ndown + 1);
		side[t->ports[p.dst_port].side]++;
		spine[t->links[p.up].spine]++;
		ck_assert_uint_eq(t->links[p.up].spine, t->links[p.down].spine);
	}
	ck_assert_uint_gt(side[0], 1600);
	ck_assert_uint_gt(side[1], 1600);
	for (i = 0; i < 4; i++)
		ck_assert_uint_gt(spine[i], 700);
	ecmp_ctx_free(&c);
	topo_free(t);
}
END_TEST

START_TEST(test_direct_on_same_leaf)
{
	struct topo *t = tfab_new(2, 1, true);
	struct ecmp_model m = {1};
	struct path p;
	char err[TOPO_ERR_MAX];

	/* h1's bonded IP has its left port on leaf0, like h0's left port */
	ck_assert_int_eq(ecmp_route(t, &m, tfab_port(t, 0, 0, TOPO_LEFT),
				    tfab_ip(1, 0, 0, true), 50000, true, &p,
				    err, sizeof(err)),
			 0);
	ck_assert_uint_eq(p.up, TOPO_NONE);
	ck_assert_uint_eq(p.dst_port, tfab_port(t, 1, 0, TOPO_LEFT));
	ck_assert_int_eq(ecmp_route(t, &m, tfab_port(t, 0, 0, TOPO_LEFT),
				    0x01010101, 50000, true, &p, err,
				    sizeof(err)),
			 -1);
	topo_free(t);
}
END_TEST

/*
 * Resilient: when a cable fails, flows on healthy paths keep them; flows
 * on the failed cable move to healthy ones; with every uplink down there
 * is no route.
 */
START_TEST(test_resilient_on_failure)
{
	struct topo *t = tfab_new(4, 1, false);
	struct ecmp_model m = {3};
	struct ecmp_ctx c;
	struct path before[512], after;
	char err[TOPO_ERR_MAX];
	uint32_t src = tfab_port(t, 0, 1, TOPO_RIGHT), fail, i, moved = 0;

	ck_assert_int_eq(ecmp_ctx_init(&c, t, &m, src, tfab_ip(3, 1, 1, false),
				       err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.npaths, 4); /* unbonded: one receive leaf */
	for (i = 0; i < 512; i++)
		ck_assert_int_eq(ecmp_ctx_route(&c, (uint16_t)(49152 + i), true,
						&before[i]),
				 0);
	fail = before[0].up;
	topo_link_set_up(t, fail, false);
	for (i = 0; i < 512; i++) {
		ck_assert_int_eq(
			ecmp_ctx_route(&c, (uint16_t)(49152 + i), true, &after),
			0);
		ck_assert(path_healthy(t, &after));
		if (before[i].up != fail)
			ck_assert(path_equal(&before[i], &after));
		else
			moved++;
		/* without health the fabric-wide path is unchanged */
		ck_assert_int_eq(ecmp_ctx_route(&c, (uint16_t)(49152 + i),
						false, &after),
				 0);
		ck_assert(path_equal(&before[i], &after));
	}
	ck_assert_uint_gt(moved, 0);
	/* a downlink failure at the destination leaf also reroutes */
	topo_link_set_up(t, fail, true);
	topo_link_set_up(t, before[0].down, false);
	ck_assert_int_eq(ecmp_ctx_route(&c, 49152, true, &after), 0);
	ck_assert_uint_ne(after.down, before[0].down);
	for (i = 0; i < t->nlinks; i++)
		if (t->links[i].leaf == 1)
			topo_link_set_up(t, i, false);
	ck_assert_int_eq(ecmp_ctx_route(&c, 49152, true, &after), -1);
	ecmp_ctx_free(&c);
	topo_free(t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("ecmp");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_deterministic_and_seeded);
	tcase_add_test(tc, test_bonded_receive_side_is_hashed);
	tcase_add_test(tc, test_direct_on_same_leaf);
	tcase_add_test(tc, test_resilient_on_failure);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
