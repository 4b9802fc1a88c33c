/*
 * test_ring.c - the plugin's handoff structures under concurrency: the
 * single-producer ring keeps order and counts every drop, the lock-free
 * pool never hands one index to two owners and counts exhaustion.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pool.h"
#include "ring.h"

#define RING_ITEMS   2000000ull
#define POOL_THREADS 4
#define POOL_ROUNDS  200000
#define POOL_CAP     64

struct ring_run {
	struct ring r;
	uint64_t pushed;
	_Atomic int done;
};

static void *
ring_producer(void *arg)
{
	struct ring_run *x = arg;
	uint64_t v;

	for (v = 1; v <= RING_ITEMS; v++)
		if (ring_push(&x->r, &v) == 0)
			x->pushed++;
	atomic_store(&x->done, 1);
	return NULL;
}

START_TEST(test_ring_order_and_drops)
{
	struct ring_run x = {0};
	pthread_t t;
	uint64_t v, last = 0, popped = 0;
	int done;

	ck_assert_int_eq(ring_init(&x.r, 1000, sizeof(uint64_t)), 0);
	ck_assert_uint_eq(x.r.cap, 1024);
	ck_assert_int_eq(pthread_create(&t, NULL, ring_producer, &x), 0);
	for (;;) {
		done = atomic_load(&x.done);
		while (ring_pop(&x.r, &v) == 0) {
			ck_assert_uint_gt(v, last); /* order kept */
			last = v;
			popped++;
		}
		if (done)
			break;
	}
	pthread_join(t, NULL);
	while (ring_pop(&x.r, &v) == 0)
		popped++;
	ck_assert_uint_eq(popped, x.pushed);
	ck_assert_uint_eq(popped + ring_drops(&x.r), RING_ITEMS);
	ring_free(&x.r);
}
END_TEST

START_TEST(test_ring_full_and_reset)
{
	struct ring r;
	uint32_t v = 7, i;

	ck_assert_int_eq(ring_init(&r, 16, sizeof(v)), 0);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(ring_push(&r, &v), 0);
	ck_assert_int_eq(ring_push(&r, &v), -1);
	ck_assert_uint_eq(ring_drops(&r), 1);
	ring_reset(&r);
	ck_assert_int_eq(ring_pop(&r, &v), -1);
	ring_free(&r);
	ck_assert_int_eq(ring_init(&r, RING_CAP_MAX + 1, 4), -1);
}
END_TEST

struct pool_run {
	struct pool p;
	_Atomic int owner[POOL_CAP];
	_Atomic int bad;
	_Atomic uint64_t gets;
};

static void *
pool_worker(void *arg)
{
	struct pool_run *x = arg;
	int64_t held[4];
	int i, j, n;

	for (i = 0; i < POOL_ROUNDS; i++) {
		n = 0;
		for (j = 0; j < 4; j++) {
			held[n] = pool_get(&x->p);
			if (held[n] < 0)
				continue;
			if (atomic_fetch_add(&x->owner[held[n]], 1) != 0)
				atomic_store(&x->bad, 1);
			atomic_fetch_add(&x->gets, 1);
			n++;
		}
		while (n > 0) {
			n--;
			atomic_fetch_sub(&x->owner[held[n]], 1);
			pool_put(&x->p, (uint32_t)held[n]);
		}
	}
	return NULL;
}

START_TEST(test_pool_concurrent)
{
	struct pool_run *x = calloc(1, sizeof(*x));
	pthread_t t[POOL_THREADS];
	int i, n = 0;

	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(pool_init(&x->p, POOL_CAP), 0);
	for (i = 0; i < POOL_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, pool_worker, x),
				 0);
	for (i = 0; i < POOL_THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(atomic_load(&x->bad), 0);
	ck_assert_uint_eq(atomic_load(&x->gets) + pool_drops(&x->p),
			  (uint64_t)POOL_THREADS * POOL_ROUNDS * 4);
	/* Everything came back: all indices are free again, once each. */
	while (pool_get(&x->p) >= 0)
		n++;
	ck_assert_int_eq(n, POOL_CAP);
	pool_free(&x->p);
	free(x);
}
END_TEST

START_TEST(test_pool_exhaustion)
{
	struct pool p;
	int i;

	ck_assert_int_eq(pool_init(&p, 3), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(pool_get(&p), i);
	ck_assert_int_eq(pool_get(&p), -1);
	ck_assert_int_eq(pool_get(&p), -1);
	ck_assert_uint_eq(pool_drops(&p), 2);
	pool_put(&p, 1);
	ck_assert_int_eq(pool_get(&p), 1);
	pool_free(&p);
	ck_assert_int_eq(pool_init(&p, 0), -1);
}
END_TEST

static Suite *
ring_suite(void)
{
	Suite *s = suite_create("nccl-ring");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ring_order_and_drops);
	tcase_add_test(tc, test_ring_full_and_reset);
	tcase_add_test(tc, test_pool_concurrent);
	tcase_add_test(tc, test_pool_exhaustion);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ring_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
