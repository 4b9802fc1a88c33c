/*
 * test_median.c: the engine's median of a float array (odd and even
 * lengths).
 */
#include <check.h>
#include <stdlib.h>

#include "matrix_int.h"

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
median_suite(void)
{
	Suite *s = suite_create("matrix-median");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_median);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(median_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
