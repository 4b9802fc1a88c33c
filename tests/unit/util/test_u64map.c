/*
 * test_u64map.c: the uint64 -> uint32 map against a plain array, through
 * growth, backward-shift deletion and clearing.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "u64map.h"

#define NKEYS 20000

START_TEST(test_put_get_del)
{
	static uint64_t keys[NKEYS];
	static int live[NKEYS];
	struct u64map h = {0};
	uint32_t i, v;
	uint64_t x = 12345;

	for (i = 0; i < NKEYS; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		keys[i] = (x >> 8) & 0xffffffu; /* collisions of slots */
		keys[i] = keys[i] * NKEYS + i;	/* unique keys */
		ck_assert_int_eq(u64map_put(&h, keys[i], i), 0);
		live[i] = 1;
	}
	ck_assert_uint_eq(h.n, NKEYS);
	for (i = 0; i < NKEYS; i += 3) {
		ck_assert_int_eq(u64map_del(&h, keys[i]), 0);
		live[i] = 0;
	}
	ck_assert_int_eq(u64map_del(&h, keys[0]), -1);
	for (i = 0; i < NKEYS; i++) {
		int found = u64map_get(&h, keys[i], &v) == 0;

		ck_assert_int_eq(found, live[i]);
		if (found)
			ck_assert_uint_eq(v, i);
	}
	/* no key is reserved: the old map's empty marker is a key too */
	ck_assert_int_eq(u64map_put(&h, UINT64_MAX, 1), 0);
	ck_assert_int_eq(u64map_get(&h, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 1);
	u64map_clear(&h);
	ck_assert_int_eq(u64map_get(&h, keys[1], &v), -1);
	ck_assert_int_eq(u64map_get(&h, UINT64_MAX, &v), -1);
	ck_assert_uint_eq(h.n, 0);
	u64map_free(&h);
}
END_TEST

START_TEST(test_empty)
{
	struct u64map h = {0};
	uint32_t v = 7;

	ck_assert_int_eq(u64map_get(&h, 1, &v), -1);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(u64map_del(&h, 1), -1);
	u64map_clear(&h);
	u64map_free(&h);
}
END_TEST

static Suite *
u64map_suite(void)
{
	Suite *s = suite_create("u64map");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_put_get_del);
	tcase_add_test(tc, test_empty);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(u64map_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
