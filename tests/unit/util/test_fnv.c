/*
 * test_fnv.c - FNV-1a 64 (fnv.h) against the published test vectors, its
 * fixed start, and chaining: two calls hash like one call on the
 * concatenation.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"

/* The published FNV-1a 64 offset basis, for the published vectors. */
#define FNV_BASIS 0xcbf29ce484222325ull

START_TEST(test_vectors)
{
	ck_assert_uint_eq(fnv1a64_str(FNV_BASIS, ""), FNV_BASIS);
	ck_assert_uint_eq(fnv1a64_str(FNV_BASIS, "a"), 0xaf63dc4c8601ec8cull);
	ck_assert_uint_eq(fnv1a64_str(FNV_BASIS, "foobar"),
			  0x85944171f73967e8ull);
	ck_assert_uint_eq(fnv1a64(FNV_BASIS, "foobar", 6),
			  0x85944171f73967e8ull);
	/* Stored keys were hashed from this basis: it must not move. */
	ck_assert_uint_eq(FNV1A64_INIT, 1469598103934665603ull);
}
END_TEST

START_TEST(test_chain)
{
	uint64_t h = fnv1a64(FNV1A64_INIT, "foo", 3);

	ck_assert_uint_eq(fnv1a64_str(h, "bar"),
			  fnv1a64_str(FNV1A64_INIT, "foobar"));
	/* The NUL is hashed only when the caller counts it. */
	ck_assert_uint_ne(fnv1a64(FNV1A64_INIT, "a", 2),
			  fnv1a64_str(FNV1A64_INIT, "a"));
}
END_TEST

static Suite *
fnv_suite(void)
{
	Suite *s = suite_create("fnv");
	TCase *tc = tcase_create("fnv");

	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_chain);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fnv_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
