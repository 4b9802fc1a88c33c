/*
 * test_evjson.c - the event object (docs/c4ctl.md) checked byte for byte,
 * and the names of kinds, states and roles.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "evfix.h"
#include "evjson.h"

START_TEST(test_event_object)
{
	C4__Event ev = C4__EVENT__INIT;
	C4__Suspect s0 = C4__SUSPECT__INIT, s1 = C4__SUSPECT__INIT;
	C4__Suspect *sv[2] = {&s0, &s1};
	C4__EvidenceCell c0 = C4__EVIDENCE_CELL__INIT, *cv[1] = {&c0};
	size_t len;
	char *s;

	evfix_fill(&ev, sv, cv);
	s = evjson_string(&ev, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, evfix_json);
	ck_assert_uint_eq(len, strlen(evfix_json));
	free(s);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(evjson_kind_name(C4__EVENT_KIND__EVENT_NODE_LOST),
			 "node_lost");
	ck_assert_str_eq(
		evjson_kind_name(C4__EVENT_KIND__EVENT_COMM_SLOW_AMBIGUOUS),
		"comm_slow_ambiguous");
	ck_assert_str_eq(evjson_kind_name(99), "unknown");
	ck_assert_str_eq(evjson_kind_name(-1), "unknown");
	ck_assert_str_eq(evjson_state_name(C4__EVENT_STATE__EVENT_RESOLVED),
			 "resolved");
	ck_assert_str_eq(evjson_role_name(C4__SUSPECT_ROLE__SUSPECT_HOST),
			 "host");
}
END_TEST

static Suite *
evjson_suite(void)
{
	Suite *s = suite_create("evjson");
	TCase *tc = tcase_create("evjson");

	tcase_add_test(tc, test_event_object);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(evjson_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
