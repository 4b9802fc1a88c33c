/*
 * test_scen.c: a slice of the labeled scenario suite run end to end
 * through the engine. Every fault kind (and two at once) at 1.5x on 64
 * ranks in each of the three quality layouts, plus fault-free jobs: every
 * injected fault must be named, no event may be false, and hangs must be
 * named within the hang timeout plus one interval.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "matrix.h"
#include "scen.h"

#define NINT   20
#define START  7
#define NRANKS 64

static const unsigned layouts[] = {SCEN_L_TP_DP, SCEN_L_TP_PP_DP,
				   SCEN_L_DP_FLAT};

/*
 * Run one job with faults kinds[0..nk) (none when nk == 0). Returns the
 * number of faults not named; *false_ev gets the events naming nothing.
 */
static unsigned
episode(unsigned layout, const unsigned *kinds, unsigned nk, uint64_t seed,
	unsigned *false_ev)
{
	struct scen_params sp;
	struct scen_fault f[SCEN_MAX_FAULTS];
	int named[SCEN_MAX_FAULTS] = {0};
	struct scen *s;
	struct matrix *m;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k;
	unsigned i, missed = 0;
	uint32_t iv;

	scen_params_default(&sp);
	sp.nranks = NRANKS;
	sp.layout = (uint8_t)layout;
	sp.seed = seed;
	s = scen_new(&sp);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < nk; i++)
		ck_assert_int_eq(scen_add_fault(s, kinds[i], 1.5, START, &f[i]),
				 0);
	m = matrix_new(NULL);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(scen_register(s, m), 0);
	*false_ev = 0;
	for (iv = 0; iv < NINT; iv++) {
		ck_assert_int_eq(scen_interval(s, iv, &in), 0);
		ck_assert_int_eq(matrix_analyze(m, &in, &ev, &nev), 0);
		for (k = 0; k < nev; k++) {
			int hit = 0;

			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			for (i = 0; i < nk; i++) {
				if (!score_matches(&ev[k], iv, &f[i]))
					continue;
				hit = 1;
				if (named[i])
					continue;
				named[i] = 1;
				if (f[i].base == SCEN_F_COMM_HANG ||
				    f[i].base == SCEN_F_NONCOMM_HANG ||
				    f[i].base == SCEN_F_NODE_LOST)
					ck_assert_uint_le(
						iv - f[i].start + 1,
						MATRIX_DEF_HANG_TIMEOUT + 1);
			}
			if (!hit) {
				fprintf(stderr,
					"false %s layout %u seed %llu\n",
					matrix_kind_name(ev[k].kind), layout,
					(unsigned long long)seed);
				(*false_ev)++;
			}
		}
	}
	for (i = 0; i < nk; i++)
		if (!named[i]) {
			fprintf(stderr, "missed %s layout %u seed %llu\n",
				scen_fault_name(f[i].kind), layout,
				(unsigned long long)seed);
			missed++;
		}
	matrix_free(m);
	scen_free(s);
	return missed;
}

START_TEST(test_every_fault_named)
{
	unsigned layout = layouts[_i];
	unsigned kind, fe;

	/* whole-host kinds are scored per family (bench, test_family.c) */
	for (kind = SCEN_F_SLOW_CONN; kind < SCEN_F_SLOW_HOST; kind++) {
		ck_assert_uint_eq(episode(layout, &kind, 1, 100 + kind, &fe),
				  0);
		ck_assert_uint_eq(fe, 0);
	}
}
END_TEST

START_TEST(test_two_faults)
{
	/* a slow transmit NIC and a slow GPU, on different hosts */
	static const unsigned kinds[2] = {SCEN_F_SLOW_TX, SCEN_F_SLOW_GPU};
	unsigned fe, missed;
	uint64_t seed = 7;

	missed = episode(layouts[_i], kinds, 2, seed, &fe);
	ck_assert_uint_eq(missed, 0);
	ck_assert_uint_eq(fe, 0);
}
END_TEST

START_TEST(test_fault_free_quiet)
{
	unsigned fe, rep;

	for (rep = 0; rep < 3; rep++) {
		ck_assert_uint_eq(episode(layouts[_i], NULL, 0, 900 + rep, &fe),
				  0);
		ck_assert_uint_eq(fe, 0);
	}
}
END_TEST

static Suite *
scenario_suite(void)
{
	Suite *s = suite_create("scenario-scen");
	TCase *tc = tcase_create("slice");

	tcase_add_loop_test(tc, test_every_fault_named, 0, 3);
	tcase_add_loop_test(tc, test_two_faults, 0, 3);
	tcase_add_loop_test(tc, test_fault_free_quiet, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(scenario_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
