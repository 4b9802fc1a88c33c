/*
 * Unit tests for nic.c: NICs by "HOST/NIC" and by IP, ports by
 * "HOST/NIC/SIDE", and the name of a port's NIC.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "nic.h"
#include "tfab.h"

START_TEST(test_lookup_by_name_and_ip)
{
	struct topo *t = tfab_new(2, 1, false);
	uint32_t n = t->hosts[2].first_nic + 1;
	char ip[16];

	ck_assert_uint_eq(nic_lookup(t, "h2/nic1"), n);
	topo_ip_format(tfab_ip(2, 1, 1, false), ip, sizeof(ip));
	ck_assert_uint_eq(nic_lookup(t, ip), n);
	ck_assert_uint_eq(nic_lookup(t, "h2/nic9"), TOPO_NONE);
	ck_assert_uint_eq(nic_lookup(t, "h9/nic1"), TOPO_NONE);
	ck_assert_uint_eq(nic_lookup(t, "h2/nic1/left"), TOPO_NONE);
	ck_assert_uint_eq(nic_lookup(t, "10.9.9.9"), TOPO_NONE);
	ck_assert_uint_eq(nic_lookup(t, "not an ip"), TOPO_NONE);
	topo_free(t);
}
END_TEST

START_TEST(test_port_lookup)
{
	struct topo *t = tfab_new(2, 1, false);

	ck_assert_uint_eq(nic_port_lookup(t, "h1/nic0/left"),
			  tfab_port(t, 1, 0, TOPO_LEFT));
	ck_assert_uint_eq(nic_port_lookup(t, "h1/nic0/right"),
			  tfab_port(t, 1, 0, TOPO_RIGHT));
	ck_assert_uint_eq(nic_port_lookup(t, "h1/nic0/up"), TOPO_NONE);
	ck_assert_uint_eq(nic_port_lookup(t, "h1/nic0"), TOPO_NONE);
	ck_assert_uint_eq(nic_port_lookup(t, "h1/nicX/left"), TOPO_NONE);
	topo_free(t);
}
END_TEST

START_TEST(test_name)
{
	struct topo *t = tfab_new(2, 1, true);
	char buf[2 * TOPO_NAME_MAX];

	nic_name(t, tfab_port(t, 3, 1, TOPO_RIGHT), buf, sizeof(buf));
	ck_assert_str_eq(buf, "h3/nic1");
	ck_assert_uint_eq(nic_lookup(t, buf), t->hosts[3].first_nic + 1);
	nic_name(t, t->nports, buf, sizeof(buf));
	ck_assert_str_eq(buf, "?");
	topo_free(t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("nic");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_lookup_by_name_and_ip);
	tcase_add_test(tc, test_port_lookup);
	tcase_add_test(tc, test_name);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
