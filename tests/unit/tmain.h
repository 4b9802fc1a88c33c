/*
 * tmain.h - the main() of a unit test program: one Check suite of one
 * case holding the given tests.  Every unit test can include it (the
 * unit_tests loop adds tests/unit to the include path).
 */
#ifndef C4_TEST_TMAIN_H
#define C4_TEST_TMAIN_H

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Runs the n tests as suite name and returns the program's exit status:
 * EXIT_SUCCESS when every test passed.  Reads tests only.
 */
static inline int
tmain_run(const char *name, const TTest *const *tests, size_t n)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The main() of a program running the tests named after the suite name. */
#define TMAIN(name, ...)                                                       \
	int main(void)                                                         \
	{                                                                      \
		const TTest *const tmain_tests[] = {__VA_ARGS__};              \
                                                                               \
		return tmain_run(name, tmain_tests,                            \
				 sizeof(tmain_tests) /                         \
					 sizeof(tmain_tests[0]));              \
	}

#endif
