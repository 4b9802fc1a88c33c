/*
 * test_jobs.c - the job table: ids by name, created once, restored in
 * order, found again after the index grows, bounded.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "jobs.h"
#include "tmain.h"

START_TEST(test_add_find_name)
{
	struct jobs *j = jobs_new(NULL, 1000);
	char name[32];

	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(jobs_id(j, "a", 0), 0);
	ck_assert_uint_eq(jobs_id(j, "a", 1), 1);
	ck_assert_uint_eq(jobs_id(j, "b", 1), 2);
	ck_assert_uint_eq(jobs_id(j, "a", 1), 1);
	ck_assert_uint_eq(jobs_id(j, "a", 0), 1);
	ck_assert_str_eq(jobs_name(j, 2), "b");
	ck_assert_str_eq(jobs_name(j, 0), "?");
	ck_assert_str_eq(jobs_name(j, 3), "?");
	/* past the index's first size: every name is still found */
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "job-%d", i);
		ck_assert_uint_eq(jobs_id(j, name, 1), (uint64_t)i + 3);
	}
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "job-%d", i);
		ck_assert_uint_eq(jobs_id(j, name, 0), (uint64_t)i + 3);
		ck_assert_str_eq(jobs_name(j, (uint64_t)i + 3), name);
	}
	ck_assert_uint_eq(jobs_count(j), 502);
	jobs_free(j);
}
END_TEST

START_TEST(test_restore_and_limit)
{
	struct jobs *j = jobs_new(NULL, 2);

	ck_assert_int_eq(jobs_restore(j, 2, "x"), -1); /* out of order */
	ck_assert_int_eq(jobs_restore(j, 1, "x"), 0);
	ck_assert_int_eq(jobs_restore(j, 2, "x"), -1); /* seen twice */
	ck_assert_int_eq(jobs_restore(j, 2, "y"), 0);
	ck_assert_uint_eq(jobs_id(j, "y", 0), 2);
	ck_assert_uint_eq(jobs_id(j, "z", 1), 0); /* full */
	ck_assert_uint_eq(jobs_count(j), 2);
	jobs_free(j);
}
END_TEST

TMAIN("c4p-jobs", test_add_find_name, test_restore_and_limit)
