/*
 * Unit tests for addrplan.c: switch interface addresses both ways, cable
 * names, CIDR parsing, plans that do not fit or overlap a NIC, and the
 * switch_net YAML key.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "tfab.h"
#include "topo_yaml.h"

#define BASE TOPO_SWITCH_NET_DEFAULT_BASE

START_TEST(test_addr_both_ways)
{
	/* 4 leaves x 2 spines x 2 parallel cables = 16 links; 16 ports */
	struct topo *t = tfab_new(2, 2, true);
	enum addrplan_ifkind k;
	uint32_t i, id;

	ck_assert_uint_eq(t->nlinks, 16);
	ck_assert_uint_eq(t->nports, 16);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_CABLE_LEAF, 0), BASE);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_CABLE_SPINE, 0),
			  BASE + 1);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_CABLE_LEAF, 5),
			  BASE + 10);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_CABLE_SPINE, 15),
			  BASE + 31);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, 0),
			  BASE + 32);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, 15),
			  BASE + 62);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_CABLE_LEAF, 16), 0);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, 16), 0);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_NONE, 0), 0);
	for (i = 0; i < t->nlinks; i++) {
		id = TOPO_NONE;
		k = addrplan_if_lookup(
			t, addrplan_if_addr(t, ADDRPLAN_IF_CABLE_LEAF, i), &id);
		ck_assert_int_eq(k, ADDRPLAN_IF_CABLE_LEAF);
		ck_assert_uint_eq(id, i);
		k = addrplan_if_lookup(
			t, addrplan_if_addr(t, ADDRPLAN_IF_CABLE_SPINE, i),
			&id);
		ck_assert_int_eq(k, ADDRPLAN_IF_CABLE_SPINE);
		ck_assert_uint_eq(id, i);
	}
	for (i = 0; i < t->nports; i++) {
		k = addrplan_if_lookup(
			t, addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, i), &id);
		ck_assert_int_eq(k, ADDRPLAN_IF_LEAF_PORT);
		ck_assert_uint_eq(id, i);
		/* the other half of the port's /31 is no interface */
		ck_assert_int_eq(
			addrplan_if_lookup(
				t,
				addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, i) +
					1,
				&id),
			ADDRPLAN_IF_NONE);
	}
	ck_assert_int_eq(addrplan_if_lookup(t, BASE - 1, &id),
			 ADDRPLAN_IF_NONE);
	ck_assert_int_eq(addrplan_if_lookup(t, BASE + 64, &id),
			 ADDRPLAN_IF_NONE);
	ck_assert_int_eq(addrplan_if_lookup(t, tfab_ip(0, 0, 0, true), NULL),
			 ADDRPLAN_IF_NONE);
	ck_assert_int_eq(addrplan_if_lookup(t, BASE + 3, NULL),
			 ADDRPLAN_IF_CABLE_SPINE);
	topo_free(t);
}
END_TEST

START_TEST(test_link_names)
{
	struct topo *t = tfab_new(2, 2, true);
	char buf[3 * TOPO_NAME_MAX];
	uint32_t i;

	addrplan_link_name(t, 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "leaf0-spine0.0");
	addrplan_link_name(t, 3, buf, sizeof(buf));
	ck_assert_str_eq(buf, "leaf0-spine1.1");
	addrplan_link_name(t, 99, buf, sizeof(buf));
	ck_assert_str_eq(buf, "?");
	for (i = 0; i < t->nlinks; i++) {
		addrplan_link_name(t, i, buf, sizeof(buf));
		ck_assert_uint_eq(addrplan_link_lookup(t, buf), i);
	}
	ck_assert_uint_eq(addrplan_link_lookup(t, "leaf0-spine0"), TOPO_NONE);
	topo_free(t);

	t = tfab_new(2, 1, true);
	addrplan_link_name(t, 1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "leaf0-spine1");
	ck_assert_uint_eq(addrplan_link_lookup(t, "leaf3-spine1"), 7);
	ck_assert_uint_eq(addrplan_link_lookup(t, "leaf3-spine1.0"), TOPO_NONE);
	topo_free(t);
}
END_TEST

START_TEST(test_cidr_parse)
{
	uint32_t b;
	uint8_t p;

	ck_assert_int_eq(addrplan_cidr_parse("100.64.0.0/10", &b, &p), 0);
	ck_assert_uint_eq(b, BASE);
	ck_assert_uint_eq(p, 10);
	ck_assert_int_eq(addrplan_cidr_parse("192.168.7.0/24", &b, &p), 0);
	ck_assert_uint_eq(b, 0xc0a80700u);
	ck_assert_int_eq(addrplan_cidr_parse("10.1.2.3/32", &b, &p), 0);
	ck_assert_uint_eq(p, 32);
	ck_assert_int_eq(addrplan_cidr_parse("0.0.0.0/0", &b, &p), 0);
	ck_assert_int_eq(addrplan_cidr_parse("10.1.2.3/24", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("10.0.0.0/33", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("10.0.0.0", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("10.0.0.0/", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("10.0.0.0/8x", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("10.0.0/8", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("10.0.0.0/0008", &b, &p), -1);
	ck_assert_int_eq(addrplan_cidr_parse("x/8", &b, &p), -1);
}
END_TEST

/* A fabric like tfab_new(2, 1, true) with switch_net set before finalize. */
static int
plan_fabric(uint32_t base, uint8_t prefix, char *err, size_t len)
{
	struct topo *t = topo_new();
	char name[TOPO_NAME_MAX];
	uint32_t i, h;
	int rc;

	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "leaf%u", i);
		topo_add_leaf(t, name, 0, 0, err, len);
	}
	topo_add_spine(t, "spine0", 0, 0, err, len);
	topo_add_links(t, 0, 0, 1, 400, err, len);
	topo_add_links(t, 1, 0, 1, 400, err, len);
	h = topo_add_host(t, "h0", err, len);
	topo_add_nic(t, h, "nic0", 0, 0x0a000001, 1, 0x0a000001, 200, err, len);
	/* 2 links + 2 ports: 8 addresses */
	if (addrplan_set_switch_net(t, base, prefix, err, len) < 0)
		rc = -2;
	else
		rc = topo_finalize(t, err, len);
	topo_free(t);
	return rc;
}

START_TEST(test_plan_fits)
{
	char err[TOPO_ERR_MAX];

	ck_assert_int_eq(plan_fabric(0xc0a80000u, 29, err, sizeof(err)), 0);
	ck_assert_int_eq(plan_fabric(0xc0a80000u, 30, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "8 addresses needed"));
	/* the NIC IP 10.0.0.1 inside the used part of the plan */
	ck_assert_int_eq(plan_fabric(0x0a000000u, 24, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "h0/nic0 IP 10.0.0.1"));
	/* ... but not past its end */
	ck_assert_int_eq(plan_fabric(0x0a000000u, 8, err, sizeof(err)), -1);
	ck_assert_int_eq(plan_fabric(0x0a000008u, 29, err, sizeof(err)), 0);
	ck_assert_int_eq(plan_fabric(0, 8, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "0.0.0.0"));
	ck_assert_int_eq(plan_fabric(0x0a000001u, 24, err, sizeof(err)), -2);
}
END_TEST

static int
load(const char *text, struct topo **t, struct cfg_diag *d)
{
	return topo_yaml_load_buffer("mem.yaml", text, strlen(text), t, d);
}

#define YAML_FABRIC                                                            \
	"leaves: [{name: a}, {name: b}]\n"                                     \
	"spines: [{name: s}]\n"                                                \
	"links: [{leaf: '*', spine: s, gbps: 400}]\n"                          \
	"hosts:\n"                                                             \
	"  - name: h\n"                                                        \
	"    nics:\n"                                                          \
	"      - {name: n, gbps: 100, left: {leaf: a, ip: 10.0.0.1},\n"        \
	"         right: {leaf: b, ip: 10.0.0.1}}\n"

START_TEST(test_yaml_switch_net)
{
	struct cfg_diag d;
	struct topo *t;

	ck_assert_int_eq(load(YAML_FABRIC, &t, &d), 0);
	ck_assert_uint_eq(t->swnet_base, BASE);
	ck_assert_uint_eq(t->swnet_prefix, 10);
	topo_free(t);
	cfg_diag_free(&d);

	ck_assert_int_eq(
		load(YAML_FABRIC "switch_net: 172.16.0.0/29\n", &t, &d), 0);
	ck_assert_uint_eq(addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, 1),
			  0xac100006u);
	topo_free(t);
	cfg_diag_free(&d);

	ck_assert_int_eq(
		load(YAML_FABRIC "switch_net: 172.16.0.1/24\n", &t, &d), -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "mem.yaml:9:13: switch_net: "
						"'172.16.0.1/24' is not"));
	cfg_diag_free(&d);

	ck_assert_int_eq(load(YAML_FABRIC "switch_net: banana\n", &t, &d), -1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "mem.yaml:9:13: "));
	cfg_diag_free(&d);

	/* does not fit: the key's position */
	ck_assert_int_eq(
		load(YAML_FABRIC "switch_net: 172.16.0.0/30\n", &t, &d), -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "mem.yaml:9:13: switch_net "
						"172.16.0.0/30: 8 addresses"));
	cfg_diag_free(&d);

	/* overlaps the NIC */
	ck_assert_int_eq(load(YAML_FABRIC "switch_net: 10.0.0.0/8\n", &t, &d),
			 -1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "h/n IP 10.0.0.1"));
	cfg_diag_free(&d);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("addrplan");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_addr_both_ways);
	tcase_add_test(tc, test_link_names);
	tcase_add_test(tc, test_cidr_parse);
	tcase_add_test(tc, test_plan_fits);
	tcase_add_test(tc, test_yaml_switch_net);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
