/*
 * Unit tests for path.c: enumeration, health, formatting.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "tfab.h"

START_TEST(test_enum_counts_and_order)
{
	struct topo *t = tfab_new(3, 2, true);
	struct path p[64];
	uint32_t src = tfab_port(t, 0, 0, TOPO_LEFT);
	uint32_t dst = tfab_port(t, 2, 1, TOPO_LEFT);
	long n, i;

	/* 3 spines x 2 cables up x 2 cables down */
	n = path_enum(t, src, dst, p, 64);
	ck_assert_int_eq(n, 12);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(t->links[p[i].up].leaf, 0);
		ck_assert_uint_eq(t->links[p[i].down].leaf, 2);
		ck_assert_uint_eq(path_spine(t, &p[i]),
				  t->links[p[i].down].spine);
		if (i > 0)
			ck_assert_uint_le(path_spine(t, &p[i - 1]),
					  path_spine(t, &p[i]));
	}
	/* counting without storage */
	ck_assert_int_eq(path_enum(t, src, dst, NULL, 0), 12);
	ck_assert_int_eq(path_enum(t, src, dst, p, 5), 12);
	/* cross-side: leaf0 -> leaf3 also crosses spines */
	ck_assert_int_eq(
		path_enum(t, src, tfab_port(t, 2, 1, TOPO_RIGHT), p, 64), 12);
	ck_assert_int_eq(path_enum(t, src, src, p, 64), -1);
	ck_assert_int_eq(path_enum(t, src, t->nports, p, 64), -1);
	topo_free(t);
}
END_TEST

START_TEST(test_same_leaf_is_direct)
{
	struct topo *t = tfab_new(2, 1, true);
	struct path p[4];
	char buf[128];

	/* h0 and h1 share leaf0 on the left */
	ck_assert_int_eq(path_enum(t, tfab_port(t, 0, 0, TOPO_LEFT),
				   tfab_port(t, 1, 1, TOPO_LEFT), p, 4),
			 1);
	ck_assert_uint_eq(p[0].up, TOPO_NONE);
	ck_assert_uint_eq(p[0].down, TOPO_NONE);
	ck_assert_uint_eq(path_spine(t, &p[0]), TOPO_NONE);
	path_format(t, &p[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "h0/nic0:L leaf0 h1/nic1:L");
	topo_free(t);
}
END_TEST

START_TEST(test_health)
{
	struct topo *t = tfab_new(2, 1, true);
	struct path p[4];
	char buf[128];

	ck_assert_int_eq(path_enum(t, tfab_port(t, 0, 0, TOPO_RIGHT),
				   tfab_port(t, 3, 0, TOPO_RIGHT), p, 4),
			 2);
	ck_assert(path_healthy(t, &p[0]));
	ck_assert(path_uses_link(&p[0], p[0].up));
	ck_assert(!path_uses_link(&p[0], p[1].up));
	topo_link_set_up(t, p[0].down, false);
	ck_assert(!path_healthy(t, &p[0]));
	ck_assert(path_healthy(t, &p[1]));
	topo_port_set_up(t, p[1].dst_port, false);
	ck_assert(!path_healthy(t, &p[1]));
	ck_assert(!path_equal(&p[0], &p[1]));
	path_format(t, &p[1], buf, sizeof(buf));
	ck_assert_str_eq(buf, "h0/nic0:R leaf1>spine1>leaf3 h3/nic0:R");
	topo_free(t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("path");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_enum_counts_and_order);
	tcase_add_test(tc, test_same_leaf_is_direct);
	tcase_add_test(tc, test_health);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
