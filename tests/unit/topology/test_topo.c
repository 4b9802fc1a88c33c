/*
 * Unit tests for topo.c: builder, validation, lookups, health.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tfab.h"

START_TEST(test_build_and_lookup)
{
	struct topo *t = tfab_new(2, 2, true);
	uint32_t first, count, p;

	ck_assert_uint_eq(t->nleaves, 4);
	ck_assert_uint_eq(t->nspines, 2);
	ck_assert_uint_eq(t->nlinks, 16);
	ck_assert_uint_eq(t->nbundles, 8);
	ck_assert_uint_eq(t->nnics, 8);
	ck_assert_uint_eq(t->nports, 16);
	ck_assert(t->nics[0].bonded);
	/* bonded: one IP, both sides */
	p = topo_port_by_ip(t, tfab_ip(2, 1, 0, true), TOPO_RIGHT);
	ck_assert_uint_eq(p, tfab_port(t, 2, 1, TOPO_RIGHT));
	ck_assert_uint_eq(t->ports[p].leaf, 3);
	ck_assert_uint_eq(topo_nic_by_ip(t, tfab_ip(2, 1, 0, true)),
			  t->hosts[2].first_nic + 1);
	ck_assert_uint_eq(topo_nic_by_ip(t, 0x01020304), TOPO_NONE);
	topo_bundle_links(t, 2, 1, &first, &count);
	ck_assert_uint_eq(count, 2);
	ck_assert_uint_eq(t->links[first].leaf, 2);
	ck_assert_uint_eq(t->links[first].spine, 1);
	ck_assert_uint_eq(t->links[first + 1].bundle, t->links[first].bundle);
	ck_assert_uint_eq(topo_leaf_by_name(t, "leaf3"), 3);
	ck_assert_uint_eq(topo_spine_by_name(t, "spine1"), 1);
	ck_assert_uint_eq(topo_host_by_name(t, "h2"), 2);
	ck_assert_uint_eq(topo_leaf_by_name(t, "nope"), TOPO_NONE);
	ck_assert_uint_eq(topo_bundle_healthy(t, t->links[first].bundle), 2);
	ck_assert_int_eq(topo_link_set_up(t, first, false), 0);
	ck_assert_uint_eq(topo_bundle_healthy(t, t->links[first].bundle), 1);
	ck_assert_int_eq(topo_link_set_up(t, t->nlinks, false), -1);
	topo_free(t);
}
END_TEST

START_TEST(test_unbonded_lookup)
{
	struct topo *t = tfab_new(2, 1, false);
	uint32_t ipr = tfab_ip(1, 0, 1, false);

	ck_assert(!t->nics[0].bonded);
	ck_assert_uint_eq(topo_port_by_ip(t, ipr, TOPO_RIGHT),
			  tfab_port(t, 1, 0, TOPO_RIGHT));
	/* the right port's IP does not name the left port */
	ck_assert_uint_eq(topo_port_by_ip(t, ipr, TOPO_LEFT), TOPO_NONE);
	ck_assert_uint_eq(topo_port_by_ip(t, ipr, TOPO_SIDE_ANY),
			  tfab_port(t, 1, 0, TOPO_RIGHT));
	topo_free(t);
}
END_TEST

/* A one-leaf-pair fabric where the test sets up a mistake. */
static struct topo *
tiny(uint32_t *l0, uint32_t *l1, uint32_t *s0)
{
	struct topo *t = topo_new();
	char err[TOPO_ERR_MAX];

	*l0 = topo_add_leaf(t, "a", 0, 0, err, sizeof(err));
	*l1 = topo_add_leaf(t, "b", 0, 0, err, sizeof(err));
	*s0 = topo_add_spine(t, "s", 0, 0, err, sizeof(err));
	ck_assert_uint_ne(topo_add_links(t, *l0, *s0, 1, 100, err, sizeof(err)),
			  TOPO_NONE);
	return t;
}

START_TEST(test_nic_ports_same_leaf)
{
	char err[TOPO_ERR_MAX];
	uint32_t l0, l1, s0, h;
	struct topo *t = tiny(&l0, &l1, &s0);

	h = topo_add_host(t, "h", err, sizeof(err));
	ck_assert_uint_ne(
		topo_add_nic(t, h, "n", l0, 1, l0, 2, 100, err, sizeof(err)),
		TOPO_NONE);
	ck_assert_int_eq(topo_finalize(t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "both on leaf a"));
	topo_free(t);
}
END_TEST

START_TEST(test_duplicate_ip)
{
	char err[TOPO_ERR_MAX];
	uint32_t l0, l1, s0, h;
	struct topo *t = tiny(&l0, &l1, &s0);

	h = topo_add_host(t, "h", err, sizeof(err));
	topo_add_nic(t, h, "n0", l0, 7, l1, 7, 100, err, sizeof(err));
	topo_add_nic(t, h, "n1", l0, 8, l1, 7, 100, err, sizeof(err));
	ck_assert_int_eq(topo_finalize(t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "already used by nic n0"));
	topo_free(t);
}
END_TEST

START_TEST(test_duplicate_names_and_links)
{
	char err[TOPO_ERR_MAX];
	uint32_t l0, l1, s0, h;
	struct topo *t = tiny(&l0, &l1, &s0);

	h = topo_add_host(t, "h", err, sizeof(err));
	topo_add_nic(t, h, "n0", l0, 1, l1, 1, 100, err, sizeof(err));
	topo_add_leaf(t, "a", 0, 0, err, sizeof(err));
	ck_assert_int_eq(topo_finalize(t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "duplicate leaf name 'a'"));
	topo_free(t);

	t = tiny(&l0, &l1, &s0);
	h = topo_add_host(t, "h", err, sizeof(err));
	topo_add_nic(t, h, "n0", l0, 1, l1, 1, 100, err, sizeof(err));
	topo_add_links(t, l0, s0, 2, 100, err, sizeof(err));
	ck_assert_int_eq(topo_finalize(t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "declared twice"));
	topo_free(t);
}
END_TEST

START_TEST(test_bad_arguments)
{
	char err[TOPO_ERR_MAX];
	uint32_t l0, l1, s0, h;
	struct topo *t = tiny(&l0, &l1, &s0);
	char longname[TOPO_NAME_MAX + 8];

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_uint_eq(topo_add_leaf(t, "", 0, 0, err, sizeof(err)),
			  TOPO_NONE);
	ck_assert_uint_eq(topo_add_leaf(t, longname, 0, 0, err, sizeof(err)),
			  TOPO_NONE);
	ck_assert_uint_eq(topo_add_links(t, l1, s0, 0, 100, err, sizeof(err)),
			  TOPO_NONE);
	ck_assert_uint_eq(topo_add_links(t, l1, s0, 1, -1, err, sizeof(err)),
			  TOPO_NONE);
	ck_assert_uint_eq(topo_add_links(t, 99, s0, 1, 100, err, sizeof(err)),
			  TOPO_NONE);
	h = topo_add_host(t, "h", err, sizeof(err));
	topo_add_host(t, "g", err, sizeof(err));
	/* NICs only go to the most recent host */
	ck_assert_uint_eq(
		topo_add_nic(t, h, "n", l0, 1, l1, 1, 100, err, sizeof(err)),
		TOPO_NONE);
	/* a host without NICs is an error */
	ck_assert_int_eq(topo_finalize(t, err, sizeof(err)), -1);
	topo_free(t);
}
END_TEST

START_TEST(test_pod_mismatch)
{
	struct topo *t = topo_new();
	char err[TOPO_ERR_MAX];
	uint32_t a, b, s, h;

	a = topo_add_leaf(t, "a", 0, 0, err, sizeof(err));
	b = topo_add_leaf(t, "b", 0, 0, err, sizeof(err));
	s = topo_add_spine(t, "s", 1, 0, err, sizeof(err));
	topo_add_links(t, a, s, 1, 100, err, sizeof(err));
	h = topo_add_host(t, "h", err, sizeof(err));
	topo_add_nic(t, h, "n", a, 1, b, 1, 100, err, sizeof(err));
	ck_assert_int_eq(topo_finalize(t, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "pod/plane"));
	/* a final topology cannot grow */
	topo_free(t);
	t = tfab_new(1, 1, true);
	ck_assert_uint_eq(topo_add_leaf(t, "z", 0, 0, err, sizeof(err)),
			  TOPO_NONE);
	ck_assert_ptr_nonnull(strstr(err, "final"));
	topo_free(t);
}
END_TEST

START_TEST(test_ip_text)
{
	uint32_t ip;
	char buf[16];

	ck_assert_int_eq(topo_ip_parse("10.1.2.254", &ip), 0);
	ck_assert_uint_eq(ip, 0x0a0102fe);
	topo_ip_format(ip, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10.1.2.254");
	ck_assert_int_eq(topo_ip_parse("10.1.2", &ip), -1);
	ck_assert_int_eq(topo_ip_parse("10.1.2.256", &ip), -1);
	ck_assert_int_eq(topo_ip_parse("10.1.2.3x", &ip), -1);
	ck_assert_int_eq(topo_ip_parse("1..2.3", &ip), -1);
	ck_assert_int_eq(topo_ip_parse("0001.2.3.4", &ip), -1);
}
END_TEST

static Suite *
topo_suite(void)
{
	Suite *s = suite_create("topo");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_build_and_lookup);
	tcase_add_test(tc, test_unbonded_lookup);
	tcase_add_test(tc, test_nic_ports_same_leaf);
	tcase_add_test(tc, test_duplicate_ip);
	tcase_add_test(tc, test_duplicate_names_and_links);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_pod_mismatch);
	tcase_add_test(tc, test_ip_text);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(topo_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
