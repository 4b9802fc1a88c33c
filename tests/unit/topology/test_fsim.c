/*
 * Unit tests for fsim.c: max-min fair rates on hand-checked cases, the
 * dual-port receive collision, busbw, the pooled ideal, link balance.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "fsim.h"
#include "tfab.h"

#define NEAR(a, b) ck_assert_double_eq_tol((a), (b), 1e-6)

static struct fsim_flow
flow2(uint32_t a, uint32_t b)
{
	struct fsim_flow f = {{a, b}, 2, 0};

	return f;
}

/*
 * Classic example: resources A (cap 10) and B (cap 4); flow 0 on A, flow 1
 * on A and B, flow 2 on B. Max-min: flows 1 and 2 get 2 (B full), flow 0
 * gets 8.
 */
START_TEST(test_maxmin_classic)
{
	double cap[2] = {10, 4};
	struct fsim_flow f[3] = {{{0}, 1, 0}, flow2(0, 1), {{1}, 1, 0}};
	char err[TOPO_ERR_MAX];

	ck_assert_int_eq(fsim_solve(cap, 2, f, 3, err, sizeof(err)), 0);
	NEAR(f[0].rate, 8);
	NEAR(f[1].rate, 2);
	NEAR(f[2].rate, 2);
	/* a zero-capacity resource: rate 0, others unaffected */
	cap[1] = 0;
	ck_assert_int_eq(fsim_solve(cap, 2, f, 3, err, sizeof(err)), 0);
	NEAR(f[0].rate, 10);
	NEAR(f[1].rate, 0);
	f[0].res[0] = 9;
	ck_assert_int_eq(fsim_solve(cap, 2, f, 3, err, sizeof(err)), -1);
}
END_TEST

/*
 * Dual-port receive collision: a NIC sends on its left and right ports
 * (200G each) and both flows land on the same receive port: each gets 100,
 * the connection 200 instead of 400.
 */
START_TEST(test_dual_port_receive_collision)
{
	struct topo *t = tfab_new(2, 1, true);
	uint32_t nres = fsim_res_count(t), conn[2] = {0, 0}, job[1] = {0};
	double *cap = calloc(nres, sizeof(*cap)), bw;
	struct fsim_flow f[2];
	struct path p[2][4];
	char err[TOPO_ERR_MAX];

	fsim_res_caps(t, cap);
	path_enum(t, tfab_port(t, 0, 0, TOPO_LEFT),
		  tfab_port(t, 2, 0, TOPO_LEFT), p[0], 4);
	path_enum(t, tfab_port(t, 0, 0, TOPO_RIGHT),
		  tfab_port(t, 2, 0, TOPO_LEFT), p[1], 4);
	fsim_flow_path(t, &p[0][0], &f[0]);
	fsim_flow_path(t, &p[1][1], &f[1]);
	ck_assert_int_eq(fsim_solve(cap, nres, f, 2, err, sizeof(err)), 0);
	NEAR(f[0].rate, 100);
	NEAR(f[1].rate, 100);
	ck_assert_int_eq(fsim_busbw(f, 2, conn, 1, job, 1, &bw), 0);
	NEAR(bw, 200);
	/* same side on both ends: full rate */
	path_enum(t, tfab_port(t, 0, 0, TOPO_RIGHT),
		  tfab_port(t, 2, 0, TOPO_RIGHT), p[1], 4);
	fsim_flow_path(t, &p[1][1], &f[1]);
	ck_assert_int_eq(fsim_solve(cap, nres, f, 2, err, sizeof(err)), 0);
	ck_assert_int_eq(fsim_busbw(f, 2, conn, 1, job, 1, &bw), 0);
	NEAR(bw, 400);
	free(cap);
	topo_free(t);
}
END_TEST

/* Uplink collision and the busbw minimum over a job's connections. */
START_TEST(test_uplink_collision_and_busbw)
{
	struct topo *t = tfab_new(2, 1, true);
	uint32_t nres = fsim_res_count(t), i;
	uint32_t conn[4] = {0, 0, 1, 1}, job[2] = {0, 0};
	double *cap = calloc(nres, sizeof(*cap)), bw;
	struct fsim_flow f[4];
	struct path p[4][4];
	char err[TOPO_ERR_MAX];

	/* links are 400G: three 200G flows on one uplink get 133.3 each */
	for (i = 0; i < 3; i++)
		path_enum(t, tfab_port(t, i < 2 ? 0 : 1, i % 2, TOPO_LEFT),
			  tfab_port(t, 2 + i % 2, i / 2, TOPO_LEFT), p[i], 4);
	path_enum(t, tfab_port(t, 1, 1, TOPO_LEFT),
		  tfab_port(t, 3, 1, TOPO_LEFT), p[3], 4);
	for (i = 0; i < 3; i++)
		fsim_flow_path(t, &p[i][0], &f[i]);
	fsim_flow_path(t, &p[3][1], &f[3]);
	fsim_res_caps(t, cap);
	ck_assert_int_eq(fsim_solve(cap, nres, f, 4, err, sizeof(err)), 0);
	NEAR(f[0].rate, 400.0 / 3);
	NEAR(f[3].rate, 200);
	ck_assert_int_eq(fsim_busbw(f, 4, conn, 2, job, 1, &bw), 0);
	NEAR(bw, 800.0 / 3);
	free(cap);
	topo_free(t);
}
END_TEST

/* The pooled ideal: a leaf's uplinks act as one pipe. */
START_TEST(test_pooled_ideal)
{
	struct topo *t = tfab_new(2, 1, true);
	uint32_t nres = fsim_res_count(t), i;
	double *cap = calloc(nres, sizeof(*cap));
	struct fsim_flow f[4];
	char err[TOPO_ERR_MAX];

	/* four 200G flows leave leaf0 (800G of uplinks): all at line rate */
	for (i = 0; i < 4; i++)
		fsim_flow_pooled(t, tfab_port(t, i / 2, i % 2, TOPO_LEFT),
				 tfab_port(t, 2 + i / 2, i % 2, TOPO_LEFT),
				 &f[i]);
	fsim_res_caps(t, cap);
	ck_assert_int_eq(fsim_solve(cap, nres, f, 4, err, sizeof(err)), 0);
	for (i = 0; i < 4; i++)
		NEAR(f[i].rate, 200);
	/* one uplink of leaf0 down: 400G for four flows */
	topo_link_set_up(t, t->leaf_links[t->leaves[0].link_first], false);
	fsim_res_caps(t, cap);
	ck_assert_int_eq(fsim_solve(cap, nres, f, 4, err, sizeof(err)), 0);
	for (i = 0; i < 4; i++)
		NEAR(f[i].rate, 100);
	free(cap);
	topo_free(t);
}
END_TEST

/*
 * Random instances checked against the definition: rates respect every
 * capacity, and every flow has a bottleneck, a full resource on which no
 * flow gets more than it (the characterization of max-min fairness).
 */
START_TEST(test_maxmin_certificate)
{
	enum { NRES = 40, NFLOW = 300, ROUNDS = 20 };
	double cap[NRES], used[NRES];
	struct fsim_flow f[NFLOW];
	char err[TOPO_ERR_MAX];
	uint64_t x = 12345;
	int round, i, k;

	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < NRES; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			cap[i] = 10 + (double)(x >> 40) / (1 << 20);
		}
		for (i = 0; i < NFLOW; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			f[i].nres = (uint8_t)(1 + (x >> 60) % FSIM_MAX_HOPS);
			for (k = 0; k < f[i].nres; k++) {
				x = x * 6364136223846793005ULL +
				    1442695040888963407ULL;
				f[i].res[k] = (uint32_t)((x >> 33) % NRES);
			}
		}
		ck_assert_int_eq(
			fsim_solve(cap, NRES, f, NFLOW, err, sizeof(err)), 0);
		for (i = 0; i < NRES; i++)
			used[i] = 0;
		for (i = 0; i < NFLOW; i++)
			for (k = 0; k < f[i].nres; k++)
				used[f[i].res[k]] += f[i].rate;
		for (i = 0; i < NRES; i++)
			ck_assert(used[i] <= cap[i] * (1 + 1e-9));
		for (i = 0; i < NFLOW; i++) {
			bool has_bottleneck = false;

			ck_assert(f[i].rate > 0);
			for (k = 0; k < f[i].nres && !has_bottleneck; k++) {
				uint32_t r = f[i].res[k];
				bool top = true;
				int j, m;

				if (used[r] < cap[r] * (1 - 1e-9))
					continue;
				for (j = 0; j < NFLOW && top; j++)
					for (m = 0; m < f[j].nres; m++)
						if (f[j].res[m] == r &&
						    f[j].rate >
							    f[i].rate *
								    (1 + 1e-9))
							top = false;
				has_bottleneck = top;
			}
			ck_assert_msg(has_bottleneck,
				      "flow %d has no bottleneck", i);
		}
	}
}
END_TEST

START_TEST(test_link_balance)
{
	struct topo *t = tfab_new(2, 1, true);
	struct path p[4][4];
	struct path sel[2];
	double g, l;

	path_enum(t, tfab_port(t, 0, 0, TOPO_LEFT),
		  tfab_port(t, 2, 0, TOPO_LEFT), p[0], 4);
	sel[0] = p[0][0];
	sel[1] = p[0][1];
	fsim_link_balance(t, sel, 2, &g, &l);
	/* leaf0 up: 1,1 -> 1.0; globally 4 of 16 directions used */
	NEAR(l, 1.0);
	NEAR(g, 4.0);
	sel[1] = p[0][0];
	fsim_link_balance(t, sel, 2, &g, &l);
	NEAR(l, 2.0);
	/* floor: 2 QPs leave leaf0 over 2 uplinks -> 1 per cable; mean 4/16 */
	NEAR(fsim_link_floor(t, sel, 2), 4.0);
	/* with one of leaf0's uplinks down: 2 on one cable; mean 4/14 */
	topo_link_set_up(t, p[0][0].up, false);
	NEAR(fsim_link_floor(t, sel, 2), 7.0);
	topo_free(t);
}
END_TEST

/*
 * Throughput balance: two equal flows on two different paths load 4 of
 * the 16 cable directions equally; on one path, 2 directions carry all.
 */
START_TEST(test_link_util_balance)
{
	struct topo *t = tfab_new(2, 1, true);
	struct path p[4];
	struct fsim_flow f[2];

	path_enum(t, tfab_port(t, 0, 0, TOPO_LEFT),
		  tfab_port(t, 2, 0, TOPO_LEFT), p, 4);
	fsim_flow_path(t, &p[0], &f[0]);
	fsim_flow_path(t, &p[1], &f[1]);
	f[0].rate = f[1].rate = 50;
	NEAR(fsim_link_util_balance(t, f, 2), 4.0);
	fsim_flow_path(t, &p[0], &f[1]);
	f[1].rate = 50;
	NEAR(fsim_link_util_balance(t, f, 2), 8.0);
	f[0].rate = f[1].rate = 0;
	NEAR(fsim_link_util_balance(t, f, 2), 0.0);
	topo_free(t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fsim");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_maxmin_classic);
	tcase_add_test(tc, test_maxmin_certificate);
	tcase_add_test(tc, test_dual_port_receive_collision);
	tcase_add_test(tc, test_uplink_collision_and_busbw);
	tcase_add_test(tc, test_pooled_ideal);
	tcase_add_test(tc, test_link_balance);
	tcase_add_test(tc, test_link_util_balance);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
