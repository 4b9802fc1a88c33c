/*
 * Unit tests for linkest.c: Wilson bounds, loss estimates and their
 * confidence intervals over a window, blame between forward and return
 * paths, the states judged from them, and the weight model.
 *
 * The probes are simulated on tfab fabrics: every NIC port probes every
 * same-side NIC port of the other leaf pair over 72 source ports, twice,
 * at TTL 1 to 3.  A hash of the 5-tuple picks the forward cables; a hash
 * of (answering interface, source IP), as a switch hashes its ICMP answer,
 * picks the return path among the cables toward the leaves holding the
 * source IP.  Every cable direction and port drops with its own rate.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "linkest.h"
#include "tfab.h"

struct sim {
	struct topo *t;
	double *loss; /* per element, as linkest numbers them */
	uint64_t rng;
	uint32_t slow; /* a cable whose up direction queues 5 ms, or none */
};

static uint64_t
sim_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* True when a packet crosses element x. */
static bool
sim_pass(struct sim *s, uint32_t x)
{
	s->rng = sim_mix(s->rng + 0x9e3779b97f4a7c15ULL);
	return (double)(s->rng >> 11) / 9007199254740992.0 >= s->loss[x];
}

/* Links of the pair (leaf, spine) into v; their count. */
static uint32_t
sim_links(const struct topo *t, uint32_t leaf, uint32_t spine, uint32_t *v)
{
	uint32_t n = 0;

	for (uint32_t l = 0; l < t->nlinks; l++)
		if (t->links[l].leaf == leaf && t->links[l].spine == spine)
			v[n++] = l;
	return n;
}

/* The leaves holding the IP of port p, and the port on each. */
static uint32_t
sim_targets(const struct topo *t, uint32_t p, uint32_t *leaf, uint32_t *port)
{
	const struct topo_nic *nic = &t->nics[t->ports[p].nic];
	uint32_t n = 0;

	for (uint8_t s = 0; s < TOPO_SIDES; s++)
		if (t->ports[nic->port[s]].ip == t->ports[p].ip) {
			leaf[n] = t->ports[nic->port[s]].leaf;
			port[n++] = nic->port[s];
		}
	return n;
}

/*
 * The return of an answer from interface key toward port p: whether it
 * arrives.  TTL 2 answers from spine; TTL 3 from leaf dleaf.
 */
static bool
sim_return(struct sim *s, uint32_t p, uint8_t ttl, uint32_t spine,
	   uint32_t dleaf, uint64_t key)
{
	const struct topo *t = s->t;
	uint32_t pe = 2 * t->nlinks, leaf[2], port[2], nt, v[64][3], n = 0;
	uint32_t a[16], b[16];

	nt = sim_targets(t, p, leaf, port);
	for (uint32_t k = 0; k < nt; k++) {
		if (ttl == 3 && dleaf == leaf[k])
			return port[k] == p || sim_pass(s, pe + port[k]);
	}
	for (uint32_t k = 0; k < nt; k++) {
		if (ttl == 2) {
			uint32_t m = sim_links(t, leaf[k], spine, a);

			for (uint32_t i = 0; i < m; i++) {
				v[n][0] = TOPO_NONE;
				v[n][1] = 2 * a[i] + LINKEST_DOWN;
				v[n++][2] = port[k];
			}
			continue;
		}
		for (uint32_t sp = 0; sp < t->nspines; sp++) {
			uint32_t ma = sim_links(t, dleaf, sp, a);
			uint32_t mb = sim_links(t, leaf[k], sp, b);

			for (uint32_t i = 0; i < ma; i++)
				for (uint32_t j = 0; j < mb; j++) {
					v[n][0] = 2 * a[i] + LINKEST_UP;
					v[n][1] = 2 * b[j] + LINKEST_DOWN;
					v[n++][2] = port[k];
				}
		}
	}
	ck_assert_uint_gt(n, 0);
	n = (uint32_t)(sim_mix(key * 131 + t->ports[p].ip) % n);
	if (v[n][0] != TOPO_NONE && !sim_pass(s, v[n][0]))
		return false;
	if (!sim_pass(s, v[n][1]))
		return false;
	return v[n][2] == p || sim_pass(s, pe + v[n][2]);
}

/* One probe round of the whole fabric into e. */
static void
sim_round(struct sim *s, struct linkest *e)
{
	const struct topo *t = s->t;
	uint32_t pe = 2 * t->nlinks, up[16], dn[16];

	for (uint32_t p = 0; p < t->nports; p++)
		for (uint32_t q = 0; q < t->nports; q++) {
			uint32_t sl = t->ports[p].leaf, dl = t->ports[q].leaf;

			if (t->ports[p].side != t->ports[q].side ||
			    sl / 2 == dl / 2)
				continue;
			for (uint32_t sport = 0; sport < 72; sport++) {
				uint64_t h = sim_mix((uint64_t)p << 40 |
						     (uint64_t)q << 20 | sport);
				uint32_t nu = 0, nd, u, d;

				for (uint32_t sp = 0; sp < t->nspines; sp++)
					nu += sim_links(t, sl, sp, up + nu);
				u = up[h % nu];
				nd = sim_links(t, dl, t->links[u].spine, dn);
				d = dn[(h >> 20) % nd];
				for (uint8_t ttl = 1; ttl <= 3; ttl++)
					for (int rep = 0; rep < 2; rep++) {
						bool ok = sim_pass(s, pe + p);

						if (ok && ttl >= 2)
							ok = sim_pass(
								s,
								2 * u + LINKEST_UP);
						if (ok && ttl == 3)
							ok = sim_pass(
								s,
								2 * d + LINKEST_DOWN);
						if (ok && ttl > 1)
							ok = sim_return(
								s, p, ttl,
								t->links[u]
									.spine,
								dl,
								ttl == 2
									? u + 1000
									: d + 5000);
						ck_assert_int_eq(
							linkest_add(
								e, p, ttl, u, d,
								1, ok ? 1 : 0,
								ttl >= 2 && u == s->slow
									? 5010
									: 10),
							0);
					}
			}
		}
	ck_assert_int_eq(linkest_round_end(e), 0);
}

static struct sim
sim_new(uint32_t spines, uint32_t mult, uint64_t seed)
{
	struct sim s;

	s.t = tfab_new(spines, mult, true);
	s.loss = calloc(2 * s.t->nlinks + s.t->nports, sizeof(double));
	ck_assert_ptr_nonnull(s.loss);
	s.rng = seed;
	s.slow = TOPO_NONE;
	return s;
}

static void
sim_free(struct sim *s)
{
	free(s->loss);
	topo_free(s->t);
}

START_TEST(test_wilson)
{
	double lo, hi;

	linkest_wilson(0, 1000, 3, &lo, &hi);
	ck_assert(lo == 0);
	ck_assert(hi > 0.008 && hi < 0.0095);
	linkest_wilson(20, 1000, 3, &lo, &hi);
	ck_assert(lo > 0.009 && lo < 0.02);
	ck_assert(hi > 0.02 && hi < 0.045);
	linkest_wilson(0, 0, 3, &lo, &hi);
	ck_assert(lo == 0 && hi == 1);
	linkest_wilson(1000, 1000, 3, &lo, &hi);
	ck_assert(hi == 1 && lo > 0.99);
}
END_TEST

START_TEST(test_weight)
{
	struct linkest_conf c = {.gbn_window = 128};

	ck_assert(linkest_weight(&c, 0) == 1);
	ck_assert(linkest_weight(&c, 0.01) > linkest_weight(&c, 0.02));
	ck_assert(linkest_weight(&c, 0.02) > 0.25 &&
		  linkest_weight(&c, 0.02) < 0.3);
	ck_assert(linkest_weight(&c, 1) == LINKEST_WEIGHT_MIN);
	ck_assert(linkest_weight(&c, 0.9) == LINKEST_WEIGHT_MIN);
}
END_TEST

/*
 * One cable of a parallel pair drops a share p both ways (as a bad
 * optic): after the window its estimate's interval holds p in both
 * directions, it is judged degraded from 2 % within 3 rounds, and no other
 * cable is ever judged anything but up (its sibling's probes come back
 * over it half of the time).
 */
static void
check_gray(double p, bool must_mark)
{
	struct sim s = sim_new(2, 2, (uint64_t)(p * 1e6) + 7);
	struct linkest *e = linkest_new(s.t, NULL);
	uint32_t bad = 1; /* leaf0-spine0, second cable */
	enum linkest_state st = LINKEST_OK;
	int marked_at = -1;

	ck_assert_ptr_nonnull(e);
	s.loss[2 * bad + LINKEST_UP] = p;
	s.loss[2 * bad + LINKEST_DOWN] = p;
	for (int round = 1; round <= 3; round++) {
		sim_round(&s, e);
		for (uint32_t l = 0; l < s.t->nlinks; l++) {
			enum linkest_state j;

			if (l == bad)
				continue;
			j = linkest_judge(e, l, LINKEST_OK, NULL);
			ck_assert_msg(j == LINKEST_OK,
				      "p %.2f round %d: healthy link %u judged "
				      "%d (loss up %.4f down %.4f)",
				      p, round, l, j,
				      linkest_elem(e, 2 * l)->loss,
				      linkest_elem(e, 2 * l + 1)->loss);
		}
		st = linkest_judge(e, bad, st, NULL);
		if (st != LINKEST_OK && marked_at < 0)
			marked_at = round;
	}
	for (uint32_t d = 0; d < 2; d++) {
		const struct linkest_dir *x = linkest_elem(e, 2 * bad + d);

		ck_assert_msg(x->lo <= p && p <= x->hi,
			      "p %.2f dir %u: [%.4f, %.4f] est %.4f", p, d,
			      x->lo, x->hi, x->loss);
	}
	if (must_mark)
		ck_assert_msg(st == LINKEST_DEGRADED && marked_at >= 1,
			      "p %.2f: state %d", p, st);
	linkest_free(e);
	sim_free(&s);
}

START_TEST(test_gray_1)
{
	check_gray(0.01, false);
}
END_TEST

START_TEST(test_gray_2)
{
	check_gray(0.02, true);
}
END_TEST

START_TEST(test_gray_5)
{
	check_gray(0.05, true);
}
END_TEST

START_TEST(test_gray_10)
{
	check_gray(0.10, true);
}
END_TEST

/* A tfab with 2 spines x 2 cables where element elem drops p, 3 rounds. */
static struct linkest *
sim_rounds(struct sim *s, uint64_t seed, uint32_t elem, double p)
{
	struct linkest *e;

	*s = sim_new(2, 2, seed);
	e = linkest_new(s->t, NULL);
	ck_assert_ptr_nonnull(e);
	s->loss[elem] = p;
	for (int round = 0; round < 3; round++)
		sim_round(s, e);
	return e;
}

/*
 * Loss on the return direction only (spine to leaf) of one cable: the
 * answers of its sibling's probes that come back over it are lost, yet
 * the sibling is not blamed; the lossy direction is found, and the other
 * direction of the same cable stays clean.
 */
START_TEST(test_blame_return)
{
	struct sim s;
	uint32_t bad = 1, sib = 0;
	struct linkest *e = sim_rounds(&s, 99, 2 * bad + LINKEST_DOWN, 0.05);

	ck_assert_int_eq(linkest_judge(e, sib, LINKEST_OK, NULL), LINKEST_OK);
	ck_assert(linkest_elem(e, 2 * sib + LINKEST_UP)->hi < 0.01);
	ck_assert(linkest_elem(e, 2 * sib + LINKEST_DOWN)->hi < 0.01);
	ck_assert(linkest_elem(e, 2 * bad + LINKEST_UP)->hi < 0.01);
	ck_assert(linkest_elem(e, 2 * bad + LINKEST_DOWN)->lo > 0.03);
	ck_assert_int_eq(linkest_judge(e, bad, LINKEST_OK, NULL),
			 LINKEST_DEGRADED);
	for (uint32_t l = 0; l < s.t->nlinks; l++)
		if (l != bad)
			ck_assert_int_eq(linkest_judge(e, l, LINKEST_OK, NULL),
					 LINKEST_OK);
	linkest_free(e);
	sim_free(&s);
}
END_TEST

/* Forward loss only (leaf to spine): blamed on that direction alone. */
START_TEST(test_blame_forward)
{
	struct sim s;
	uint32_t bad = 4; /* leaf1-spine0, first cable */
	struct linkest *e = sim_rounds(&s, 5, 2 * bad + LINKEST_UP, 0.05);

	ck_assert(linkest_elem(e, 2 * bad + LINKEST_UP)->lo > 0.03);
	ck_assert(linkest_elem(e, 2 * bad + LINKEST_DOWN)->hi < 0.01);
	for (uint32_t l = 0; l < s.t->nlinks; l++)
		ck_assert_int_eq(linkest_judge(e, l, LINKEST_OK, NULL),
				 l == bad ? LINKEST_DEGRADED : LINKEST_OK);
	linkest_free(e);
	sim_free(&s);
}
END_TEST

/*
 * A busy agent that drops its own probes (loss at the NIC port) blames no
 * cable: TTL 1 answers, which cross no cable, carry the same loss.
 */
START_TEST(test_port_loss_blames_no_cable)
{
	struct sim s;
	struct linkest *e = sim_rounds(&s, 3, 2 * 16 /* port 0 */, 0.2);

	ck_assert_uint_eq(s.t->nlinks, 16);
	for (uint32_t l = 0; l < s.t->nlinks; l++)
		ck_assert_int_eq(linkest_judge(e, l, LINKEST_OK, NULL),
				 LINKEST_OK);
	ck_assert(linkest_elem(e, 2 * s.t->nlinks)->lo > 0.1);
	linkest_free(e);
	sim_free(&s);
}
END_TEST

/*
 * Congestion: a cable direction whose probes queue (RTT 5 ms above the
 * same port's TTL 1 answers) and drop 5 % is overflowing, not failing: it
 * is not marked, and its queueing delay is reported.
 */
START_TEST(test_congestion_not_marked)
{
	struct sim s = sim_new(2, 2, 17);
	struct linkest *e = linkest_new(s.t, NULL);
	uint32_t slow = 1;

	s.slow = slow;
	s.loss[2 * slow + LINKEST_UP] = 0.05;
	for (int round = 0; round < 3; round++)
		sim_round(&s, e);
	ck_assert(linkest_elem(e, 2 * slow + LINKEST_UP)->queue_us > 4000);
	ck_assert(linkest_elem(e, 2 * slow + LINKEST_UP)->lo > 0.03);
	for (uint32_t l = 0; l < s.t->nlinks; l++)
		ck_assert_int_eq(linkest_judge(e, l, LINKEST_OK, NULL),
				 LINKEST_OK);
	/* a marked cable does not come back while it still loses */
	ck_assert_int_eq(linkest_judge(e, slow, LINKEST_DEGRADED, NULL),
			 LINKEST_DEGRADED);
	linkest_free(e);
	sim_free(&s);
}
END_TEST

/*
 * Hysteresis: a degraded cable stays degraded while the window still
 * holds its lossy rounds, is bad above loss_down, and comes back once the
 * window is clean; a healthy window with no probes changes nothing.
 */
START_TEST(test_hysteresis)
{
	struct sim s = sim_new(2, 2, 11);
	struct linkest *e = linkest_new(s.t, NULL);
	enum linkest_state st = LINKEST_OK;
	uint32_t bad = 1;

	ck_assert_int_eq(linkest_judge(e, bad, LINKEST_DEGRADED, NULL),
			 LINKEST_DEGRADED); /* no evidence: stays */
	s.loss[2 * bad] = s.loss[2 * bad + 1] = 0.5;
	sim_round(&s, e);
	st = linkest_judge(e, bad, st, NULL);
	ck_assert_int_eq(st, LINKEST_BAD);
	s.loss[2 * bad] = s.loss[2 * bad + 1] = 0.03;
	for (int i = 0; i < 3; i++)
		sim_round(&s, e);
	st = linkest_judge(e, bad, st, NULL);
	ck_assert_int_eq(st, LINKEST_DEGRADED);
	s.loss[2 * bad] = s.loss[2 * bad + 1] = 0;
	sim_round(&s, e);
	st = linkest_judge(e, bad, st, NULL);
	ck_assert_int_eq(st, LINKEST_DEGRADED); /* the window remembers */
	sim_round(&s, e);
	sim_round(&s, e);
	st = linkest_judge(e, bad, st, NULL);
	ck_assert_int_eq(st, LINKEST_OK);
	ck_assert_int_eq(linkest_add(e, s.t->nports, 1, 0, 0, 1, 1, 0), -1);
	ck_assert_int_eq(linkest_add(e, 0, 2, 0, 0, 1, 2, 0), -1);
	linkest_free(e);
	sim_free(&s);
}
END_TEST

static Suite *
linkest_suite(void)
{
	Suite *s = suite_create("linkest");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_wilson);
	tcase_add_test(tc, test_weight);
	tcase_add_test(tc, test_gray_1);
	tcase_add_test(tc, test_gray_2);
	tcase_add_test(tc, test_gray_5);
	tcase_add_test(tc, test_gray_10);
	tcase_add_test(tc, test_blame_return);
	tcase_add_test(tc, test_blame_forward);
	tcase_add_test(tc, test_port_loss_blames_no_cable);
	tcase_add_test(tc, test_congestion_not_marked);
	tcase_add_test(tc, test_hysteresis);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(linkest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
