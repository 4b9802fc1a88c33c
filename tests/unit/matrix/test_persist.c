/*
 * test_persist.c: the engine's persistence rules, driven directly through
 * persist_observe() and persist_finish() interval by interval: a
 * candidate opens an event once it was hot with strong evidence in k of
 * the last n intervals (weak evidence: weak_k of weak_n; intermittent
 * strong evidence: flap_k of flap_n; a detector's own timeout: at once),
 * stays one event while hot, is updated when its
 * slowdown moves, resolves after resolve_n clean intervals with its last
 * seen interval, and never opens twice; quiet candidates are forgotten.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix_int.h"
#include "tmain.h"

#define KEY  0x1234u
#define KEY2 0x5678u

/* An engine with the windows these tests count on. */
static struct matrix *
engine(void)
{
	struct matrix_params p;
	struct matrix *m;

	matrix_params_default(&p);
	p.persist_k = 2;
	p.persist_n = 3;
	p.weak_k = 3;
	p.weak_n = 4;
	p.resolve_n = 3;
	p.z_strong = 5.0;
	p.z_min = 4.0;
	p.update_delta = 0.10;
	m = matrix_new(&p);
	ck_assert_ptr_nonnull(m);
	return m;
}

/* Starts interval iv as matrix_analyze() does: no output yet. */
static void
begin(struct matrix *m, uint64_t iv)
{
	m->iv = iv;
	m->nout = 0;
}

/* One candidate of key with score z and slowdown r, flags PERSIST_. */
static void
observe(struct matrix *m, uint64_t key, double z, double r, unsigned flags)
{
	struct matrix_event e;

	memset(&e, 0, sizeof(e));
	e.kind = MATRIX_EV_COMM_SLOW_LINK;
	e.score = z;
	e.slowdown = r;
	e.ncells_total = 1;
	ck_assert_int_eq(persist_observe(m, key, &e, flags, NULL), 0);
}

/* Ends the interval; returns how many events came out. */
static uint32_t
finish(struct matrix *m)
{
	ck_assert_int_eq(persist_finish(m), 0);
	ck_assert_int_eq(persist_compact(m), 0);
	return m->nout;
}

/* Interval iv with key hot at score z, flags PERSIST_ (clean: z 0). */
static uint32_t
interval(struct matrix *m, uint64_t iv, uint64_t key, double z, unsigned flags)
{
	begin(m, iv);
	if (z > 0)
		observe(m, key, z, 2.0, flags);
	return finish(m);
}

/*
 * Intervals iv0, iv0 + 1, ...: key hot at score z (flags PERSIST_) where
 * hot has an 'x' (clean at '.'), each giving as many events as the digit
 * of outs.
 */
static void
replay(struct matrix *m, uint64_t iv0, uint64_t key, double z, unsigned flags,
       const char *hot, const char *outs)
{
	ck_assert_uint_eq(strlen(hot), strlen(outs));
	for (size_t i = 0; hot[i] != '\0'; i++)
		ck_assert_msg(interval(m, iv0 + i, key, hot[i] == 'x' ? z : 0,
				       flags) == (uint32_t)(outs[i] - '0'),
			      "interval %zu", (size_t)(iv0 + i));
}

/* The only event of the interval: its id, state, first and last seen. */
static void
expect_event(const struct matrix *m, uint64_t key, unsigned state,
	     uint64_t first, uint64_t last)
{
	ck_assert_uint_eq(m->nout, 1);
	ck_assert_uint_eq(m->out[0].id, key);
	ck_assert_uint_eq(m->out[0].state, state);
	ck_assert_uint_eq(m->out[0].first_interval, first);
	ck_assert_uint_eq(m->out[0].last_interval, last);
}

START_TEST(test_strong_opens_after_k_of_n)
{
	struct matrix *m = engine();

	/* Hot, clean, hot: two of the last three. */
	replay(m, 1, KEY, 6.0, 0, "x.x", "001");
	expect_event(m, KEY, MATRIX_ST_OPEN, 1, 3);
	ck_assert(m->out[0].slowdown > 1.99 && m->out[0].slowdown < 2.01);
	ck_assert(m->out[0].confidence > 0 && m->out[0].confidence <= 0.99);
	matrix_free(m);

	/* Hot, clean, clean, hot: never two within three. */
	m = engine();
	replay(m, 1, KEY, 6.0, 0, "x..x..", "000000");
	matrix_free(m);
}
END_TEST

START_TEST(test_weak_and_forced_evidence)
{
	struct matrix *m = engine();

	/* Below z_strong: three of four are needed. */
	replay(m, 1, KEY, 4.5, 0, "xxx", "001");
	expect_event(m, KEY, MATRIX_ST_OPEN, 1, 3);

	/* PERSIST_WEAK: a high score counts as weak all the same ... */
	replay(m, 4, KEY2, 9.0, PERSIST_WEAK, "xx", "00");
	matrix_free(m);

	/* ... and PERSIST_STRONG a low one as strong. */
	m = engine();
	replay(m, 1, KEY2, 4.1, PERSIST_STRONG, "xx", "01");
	expect_event(m, KEY2, MATRIX_ST_OPEN, 1, 2);

	/* PERSIST_IMMEDIATE (a detector's own timeout) opens at once, and
	 * still hot next interval it is the same event, not a second. */
	replay(m, 7, KEY, 1.0, PERSIST_IMMEDIATE, "x", "1");
	expect_event(m, KEY, MATRIX_ST_OPEN, 7, 7);
	replay(m, 8, KEY, 1.0, PERSIST_IMMEDIATE, "x", "0");
	matrix_free(m);
}
END_TEST

START_TEST(test_one_event_until_resolved)
{
	struct matrix *m = engine();

	replay(m, 1, KEY, 6.0, 0, "xx", "01");
	expect_event(m, KEY, MATRIX_ST_OPEN, 1, 2);
	/* Hot on, and back after fewer than resolve_n clean intervals:
	 * nothing new, in particular no second opening. */
	replay(m, 3, KEY, 6.0, 0, "x..x", "0000");
	ck_assert_uint_eq(m->ntrk, 1);
	/* Having been clean for two intervals and back, it needs twice
	 * that (4 > resolve_n) to resolve, last seen in interval 6. */
	replay(m, 7, KEY, 6.0, 0, "....", "0001");
	expect_event(m, KEY, MATRIX_ST_RESOLVED, 1, 6);
	ck_assert_uint_eq(m->ntrk, 0);
	/* Resolved means forgotten: hot again is a new event, after k. */
	replay(m, 11, KEY, 6.0, 0, ".xx", "001");
	expect_event(m, KEY, MATRIX_ST_OPEN, 12, 13);
	/* Steadily hot, it resolves after resolve_n clean intervals. */
	replay(m, 14, KEY, 6.0, 0, "x...", "0001");
	expect_event(m, KEY, MATRIX_ST_RESOLVED, 12, 14);
	matrix_free(m);
}
END_TEST

START_TEST(test_flapping_one_event)
{
	struct matrix *m = engine();

	/* Strong evidence in two of three opens it; slow one interval in
	 * three from then on, it stays one event for the fault's life ... */
	replay(m, 1, KEY, 6.0, 0, "xx", "01");
	replay(m, 3, KEY, 6.0, 0, "..x..x..x..x..x..x", "000000000000000000");
	ck_assert_uint_eq(m->ntrk, 1);
	ck_assert_uint_eq(m->trk[0].ev.last_interval, 20);
	/* ... and resolves after twice its longest clean run. */
	replay(m, 21, KEY, 6.0, 0, "....", "0001");
	expect_event(m, KEY, MATRIX_ST_RESOLVED, 1, 20);
	matrix_free(m);
}
END_TEST

START_TEST(test_intermittent_opens)
{
	struct matrix *m = engine();

	/* Strong one interval in three: never two in persist_n = 3, but
	 * flap_k = 3 of flap_n = 7 opens it on its third interval, dated
	 * from its first, with the clean runs between its hits counted. */
	replay(m, 1, KEY, 6.0, 0, "x..x..x", "0000001");
	expect_event(m, KEY, MATRIX_ST_OPEN, 1, 7);
	ck_assert_uint_eq(m->out[0].evidence.window, MATRIX_DEF_FLAP_N);
	ck_assert_uint_eq(m->out[0].evidence.hot_intervals, 3);
	/* One event while it goes on; twice its clean run (4) resolves it. */
	replay(m, 8, KEY, 6.0, 0, "..x..x", "000000");
	replay(m, 14, KEY, 6.0, 0, "....", "0001");
	expect_event(m, KEY, MATRIX_ST_RESOLVED, 1, 13);
	matrix_free(m);

	/* Weak evidence never counts; nor do hits further apart (three in
	 * nine intervals). */
	m = engine();
	replay(m, 1, KEY, 4.5, 0, "x..x..x..x", "0000000000");
	replay(m, 11, KEY, 6.0, 0, "x...x...x...x", "0000000000000");
	matrix_free(m);
}
END_TEST

START_TEST(test_intermittent_params)
{
	struct matrix_params p;
	struct matrix *m;

	/* One interval alone is never intermittent evidence; k <= n <= 16. */
	matrix_params_default(&p);
	p.flap_k = 1;
	ck_assert_ptr_null(matrix_new(&p));
	p.flap_k = 5;
	p.flap_n = 4;
	ck_assert_ptr_null(matrix_new(&p));
	p.flap_n = MATRIX_HIST_MAX + 1;
	ck_assert_ptr_null(matrix_new(&p));
	/* Two of four: hits three apart open on the second. */
	p.flap_k = 2;
	p.flap_n = 4;
	m = matrix_new(&p);
	ck_assert_ptr_nonnull(m);
	replay(m, 1, KEY, 6.0, 0, "x..x", "0001");
	expect_event(m, KEY, MATRIX_ST_OPEN, 1, 4);
	matrix_free(m);
}
END_TEST

START_TEST(test_resolve_max_caps_the_wait)
{
	struct matrix_params p;
	struct matrix *m;

	matrix_params_default(&p);
	p.resolve_n = 4;
	p.resolve_max = 5;
	m = matrix_new(&p);
	ck_assert_ptr_nonnull(m);
	/* A clean run of three inside it would ask for six: capped. */
	replay(m, 1, KEY, 6.0, 0, "xx...x", "010000");
	replay(m, 7, KEY, 6.0, 0, ".....", "00001");
	expect_event(m, KEY, MATRIX_ST_RESOLVED, 1, 6);
	matrix_free(m);
	/* resolve_max below resolve_n is refused. */
	p.resolve_max = 3;
	ck_assert_ptr_null(matrix_new(&p));
}
END_TEST

START_TEST(test_updated_when_slowdown_moves)
{
	struct matrix *m = engine();
	const double r[] = {2.0, 2.0, 2.1, 2.5, 2.6};

	for (uint64_t iv = 1; iv <= 5; iv++) {
		uint32_t n;

		begin(m, iv);
		observe(m, KEY, 6.0, r[iv - 1], 0);
		n = finish(m);
		if (iv == 2) {
			expect_event(m, KEY, MATRIX_ST_OPEN, 1, 2);
		} else if (iv == 4) {
			/* 25% above what was reported; 2.1 (5%) and 2.6 (4%
			 * above 2.5) are not worth an update. */
			expect_event(m, KEY, MATRIX_ST_UPDATED, 1, 4);
			ck_assert(fabs(m->out[0].slowdown - 2.5) < 1e-9);
		} else {
			ck_assert_uint_eq(n, 0);
		}
	}
	matrix_free(m);
}
END_TEST

START_TEST(test_observations_merged)
{
	struct matrix *m = engine();
	struct matrix_event e;

	/* Two observations in one interval: the strongest score, the
	 * geometric mean of the slowdowns, the cells added up. */
	for (uint64_t iv = 1; iv <= 2; iv++) {
		begin(m, iv);
		memset(&e, 0, sizeof(e));
		e.score = 5.5;
		e.slowdown = 2.0;
		e.ncells = 1;
		e.ncells_total = 3;
		e.cells[0].ratio = 2.0;
		ck_assert_int_eq(persist_observe(m, KEY, &e, 0, NULL), 0);
		e.score = 8.0;
		e.slowdown = 8.0;
		e.ncells_total = 4;
		e.cells[0].ratio = 8.0;
		ck_assert_int_eq(persist_observe(m, KEY, &e, 0, NULL), 0);
		ck_assert_uint_eq(finish(m), iv == 2);
	}
	expect_event(m, KEY, MATRIX_ST_OPEN, 1, 2);
	ck_assert(fabs(m->out[0].slowdown - 4.0) < 1e-9);
	ck_assert(m->out[0].score == 8.0);
	ck_assert_uint_eq(m->out[0].ncells_total, 7);
	ck_assert_uint_eq(m->out[0].ncells, 2);
	matrix_free(m);
}
END_TEST

START_TEST(test_quiet_candidate_forgotten)
{
	struct matrix *m = engine();

	/* Seen once: kept while the longest window (flap_n) holds it. */
	replay(m, 1, KEY, 4.5, 0, "x", "0");
	for (uint64_t iv = 2; iv <= MATRIX_DEF_FLAP_N; iv++) {
		ck_assert_uint_eq(interval(m, iv, KEY, 0, 0), 0);
		ck_assert_uint_eq(m->ntrk, 1);
	}
	ck_assert_uint_eq(interval(m, MATRIX_DEF_FLAP_N + 1, KEY, 0, 0), 0);
	ck_assert_uint_eq(m->ntrk, 0);
	matrix_free(m);
}
END_TEST

START_TEST(test_key_stable)
{
	/* Event ids are keys: they must not change from one version to the
	 * next (the value pinned is the one this version gives). */
	uint64_t a = persist_key(MATRIX_EV_COMM_SLOW_LINK, 1, 2);

	ck_assert_uint_eq(a, persist_key(MATRIX_EV_COMM_SLOW_LINK, 1, 2));
	ck_assert_uint_ne(a, persist_key(MATRIX_EV_COMM_SLOW_LINK, 2, 1));
	ck_assert_uint_ne(a, persist_key(MATRIX_EV_COMM_HANG, 1, 2));
	ck_assert_uint_ne(persist_key(0, 0, 0), UINT64_MAX);
	ck_assert_uint_eq(a, 0x098911e5cb336aceull);
}
END_TEST

TMAIN("matrix-persist", test_strong_opens_after_k_of_n,
      test_weak_and_forced_evidence, test_one_event_until_resolved,
      test_flapping_one_event, test_intermittent_opens,
      test_intermittent_params, test_resolve_max_caps_the_wait,
      test_updated_when_slowdown_moves, test_observations_merged,
      test_quiet_candidate_forgotten, test_key_stable)
