/*
 * test_hmap.c: the engine's hash map against a plain array, through
 * growth and backward-shift deletion.
 */
#include <check.h>
#include <stdlib.h>

#include "matrix_int.h"

#define NKEYS 20000

START_TEST(test_put_get_del)
{
	static uint64_t keys[NKEYS];
	static int live[NKEYS];
	struct hmap h;
	uint32_t i, v;
	uint64_t x = 12345;

	ck_assert_int_eq(hmap_init(&h, 4), 0);
	for (i = 0; i < NKEYS; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		keys[i] = (x >> 8) & 0xffffffu; /* collisions of slots */
		keys[i] = keys[i] * NKEYS + i;	/* unique keys */
		ck_assert_int_eq(hmap_put(&h, keys[i], i), 0);
		live[i] = 1;
	}
	ck_assert_uint_eq(h.n, NKEYS);
	for (i = 0; i < NKEYS; i += 3) {
		ck_assert_int_eq(hmap_del(&h, keys[i]), 0);
		live[i] = 0;
	}
	ck_assert_int_eq(hmap_del(&h, keys[0]), -1);
	for (i = 0; i < NKEYS; i++) {
		int found = hmap_get(&h, keys[i], &v) == 0;

		ck_assert_int_eq(found, live[i]);
		if (found)
			ck_assert_uint_eq(v, i);
	}
	ck_assert_int_eq(hmap_put(&h, HMAP_EMPTY, 1), -1);
	hmap_clear(&h);
	ck_assert_int_eq(hmap_get(&h, keys[1], &v), -1);
	hmap_free(&h);
}
END_TEST

START_TEST(test_median)
{
	float a[] = {5, 1, 4, 2, 3};
	float b[40];
	uint32_t i;

	ck_assert(matrix_median(a, 5) == 3.0f);
	for (i = 0; i < 40; i++)
		b[i] = (float)((i * 17) % 40);
	ck_assert(matrix_median(b, 40) == 19.5f);
}
END_TEST

static Suite *
hmap_suite(void)
{
	Suite *s = suite_create("matrix-hmap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_put_get_del);
	tcase_add_test(tc, test_median);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(hmap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
