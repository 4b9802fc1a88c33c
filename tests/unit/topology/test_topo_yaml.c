/*
 * Unit tests for topo_yaml.c: the example fabric loads, a file full of
 * mistakes reports each of them with its position in one run.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_yaml.h"

static char *
data_path(const char *rel)
{
	const char *dir = getenv("C4_TEST_DATA");
	char *p;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, rel), 0);
	return p;
}

START_TEST(test_example_loads)
{
	char *path = data_path("../../conf/topology-example.yaml");
	struct cfg_diag d;
	struct topo *t;
	uint32_t i;

	if (topo_yaml_load(path, &t, &d) < 0) {
		cfg_diag_print(&d, stderr);
		ck_abort_msg("example topology does not load");
	}
	ck_assert_uint_eq(d.n, 0);
	ck_assert_uint_eq(t->nleaves, 8);
	ck_assert_uint_eq(t->nspines, 8);
	ck_assert_uint_eq(t->nlinks, 64);
	ck_assert_uint_eq(t->nhosts, 16);
	ck_assert_uint_eq(t->nnics, 128);
	for (i = 0; i < t->nnics; i++)
		ck_assert(t->nics[i].bonded);
	ck_assert_uint_eq(t->links[0].gbps, 800);
	ck_assert_uint_eq(t->ports[t->nics[5 * 8].port[1]].leaf,
			  topo_leaf_by_name(t, "leaf3"));
	topo_free(t);
	cfg_diag_free(&d);
	free(path);
}
END_TEST

START_TEST(test_bad_file_reports_everything)
{
	char *path = data_path("topology/bad-topology.yaml");
	char *errp = data_path("topology/bad-topology.err");
	char line[1024], want[1200];
	struct cfg_diag d;
	struct topo *t;
	FILE *fp;
	size_t i = 0;

	ck_assert_int_eq(topo_yaml_load(path, &t, &d), -1);
	ck_assert_ptr_null(t);
	fp = fopen(errp, "r");
	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		ck_assert_int_eq(strncmp(line, "@FILE@", 6), 0);
		snprintf(want, sizeof(want), "%s%s", path, line + 6);
		ck_assert_uint_lt(i, d.n);
		ck_assert_str_eq(d.msgs[i], want);
		i++;
	}
	fclose(fp);
	ck_assert_uint_eq(i, d.n);
	cfg_diag_free(&d);
	free(path);
	free(errp);
}
END_TEST

static int
load(const char *text, struct topo **t, struct cfg_diag *d)
{
	return topo_yaml_load_buffer("mem.yaml", text, strlen(text), t, d);
}

START_TEST(test_small_files)
{
	static const char ok[] =
		"leaves:\n"
		"  - {name: a, pod: 1}\n"
		"  - {name: b, pod: 1}\n"
		"  - {name: c, pod: 2}\n"
		"spines:\n"
		"  - {name: s, pod: 1}\n"
		"  - {name: other, pod: 2}\n"
		"links:\n"
		"  - {leaf: '*', spine: s, count: 2, gbps: 400}\n"
		"  - {leaf: c, spine: other, count: 1, gbps: 400}\n"
		"hosts:\n"
		"  - name: h\n"
		"    nics:\n"
		"      - name: n\n"
		"        gbps: 100\n"
		"        left: {leaf: a, ip: 10.0.0.1}\n"
		"        right: {leaf: b, ip: 10.0.0.2}\n";
	struct cfg_diag d;
	struct topo *t;

	ck_assert_int_eq(load(ok, &t, &d), 0);
	ck_assert_uint_eq(t->nlinks, 5); /* '*' skips pod 2 */
	ck_assert_uint_eq(t->nbundles, 3);
	ck_assert(!t->nics[0].bonded);
	ck_assert_uint_eq(topo_port_by_ip(t, 0x0a000002, TOPO_RIGHT),
			  t->nics[0].port[TOPO_RIGHT]);
	topo_free(t);
	cfg_diag_free(&d);

	/* YAML syntax */
	ck_assert_int_eq(load("leaves: [\n", &t, &d), -1);
	ck_assert_uint_ge(d.n, 1);
	ck_assert_int_eq(strncmp(d.msgs[0], "mem.yaml:", 9), 0);
	cfg_diag_free(&d);

	/* a missing port, an unknown key */
	ck_assert_int_eq(load("leaves: [{name: a}, {name: b}]\n"
			      "hosts:\n"
			      "  - name: h\n"
			      "    nics:\n"
			      "      - {name: n, gbps: 1, left: {leaf: a, ip: "
			      "1.2.3.4}, colour: red}\n",
			      &t, &d),
			 -1);
	ck_assert_uint_eq(d.n, 3);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "leaf a carries host ports"));
	ck_assert_ptr_nonnull(
		strstr(d.msgs[1], "missing required key 'right'"));
	ck_assert_ptr_nonnull(strstr(d.msgs[2], "mem.yaml:5:58: unknown key "
						"'colour'"));
	cfg_diag_free(&d);

	/* a leaf with host ports and no uplink, a spine without cables */
	ck_assert_int_eq(load("leaves: [{name: a}, {name: b}, {name: c}]\n"
			      "spines: [{name: s}, {name: t}]\n"
			      "links:\n"
			      "  - {leaf: a, spine: s, count: 1, gbps: 1}\n"
			      "  - {leaf: c, spine: s, count: 1, gbps: 1}\n"
			      "hosts:\n"
			      "  - name: h\n"
			      "    nics:\n"
			      "      - {name: n, gbps: 1, left: {leaf: a, ip: "
			      "1.2.3.4}, right: {leaf: b, ip: 1.2.3.5}}\n",
			      &t, &d),
			 -1);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_str_eq(d.msgs[0],
			 "mem.yaml:1:21: leaf b carries host ports but has no "
			 "uplink: its hosts could reach no other leaf");
	ck_assert_str_eq(d.msgs[1],
			 "mem.yaml:2:21: spine t has no cables (no link names "
			 "it)");
	cfg_diag_free(&d);

	/* empty lists */
	ck_assert_int_eq(load("leaves: []\nhosts: []\n", &t, &d), -1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "no leaves"));
	cfg_diag_free(&d);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("topo_yaml");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_example_loads);
	tcase_add_test(tc, test_bad_file_reports_everything);
	tcase_add_test(tc, test_small_files);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
