/*
 * test_hold.c - the c4p-master's table of which session holds which
 * request: set, replace, delete, forget a session, and growth.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "c4p.h"
#include "hold.h"
#include "tmain.h"

START_TEST(test_set_get_replace_delete)
{
	struct hold *h = hold_new();
	struct c4p_sess a = {0}, b = {0};

	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_null(hold_get(h, "1/x"));
	ck_assert_int_eq(hold_set(h, "1/x", &a), 0);
	ck_assert_int_eq(hold_set(h, "2/x", &b), 0);
	ck_assert_ptr_eq(hold_get(h, "1/x"), &a);
	ck_assert_ptr_eq(hold_get(h, "2/x"), &b);
	/* a retry from another session moves the request to it */
	ck_assert_int_eq(hold_set(h, "1/x", &b), 0);
	ck_assert_ptr_eq(hold_get(h, "1/x"), &b);
	hold_del(h, "1/x");
	ck_assert_ptr_null(hold_get(h, "1/x"));
	hold_del(h, "1/x"); /* absent: nothing happens */
	ck_assert_ptr_eq(hold_get(h, "2/x"), &b);
	hold_free(h);
}
END_TEST

START_TEST(test_drop_session_and_growth)
{
	struct hold *h = hold_new();
	struct c4p_sess a = {0}, b = {0};
	char key[32];

	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "7/r%d", i);
		ck_assert_int_eq(hold_set(h, key, i % 2 ? &a : &b), 0);
	}
	hold_drop_sess(h, &a);
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "7/r%d", i);
		ck_assert_ptr_eq(hold_get(h, key), i % 2 ? NULL : &b);
	}
	hold_free(h);
}
END_TEST

TMAIN("hold", test_set_get_replace_delete, test_drop_session_and_growth)
