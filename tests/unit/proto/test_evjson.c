/*
 * test_evjson.c - the event object (docs/c4ctl.md) checked byte for byte,
 * the names of kinds, states, roles, domains, actions, bases and
 * transports, and null for what an event leaves out.
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
	ck_assert_str_eq(evjson_kind_name(C4__EVENT_KIND__EVENT_HOST_SLOW),
			 "host_slow");
	ck_assert_str_eq(evjson_kind_name(C4__EVENT_KIND__EVENT_JOB_STALL),
			 "job_stall");
	ck_assert_str_eq(evjson_domain_name(C4__EVENT_DOMAIN__DOMAIN_NIC_PORT),
			 "nic_port");
	ck_assert_str_eq(evjson_domain_name(C4__EVENT_DOMAIN__DOMAIN_JOB),
			 "job");
	ck_assert_str_eq(evjson_domain_name(7), "unknown");
	ck_assert_str_eq(evjson_action_name(C4__ACTION__ACTION_OBSERVE),
			 "observe");
	ck_assert_str_eq(evjson_action_name(C4__ACTION__ACTION_ISOLATE_HOST),
			 "isolate_host");
	ck_assert_str_eq(evjson_action_name(C4__ACTION__ACTION_CHECK_JOB),
			 "check_job");
	ck_assert_str_eq(evjson_basis_name(C4__EVIDENCE_BASIS__BASIS_HEARTBEAT),
			 "heartbeat");
	ck_assert_str_eq(
		evjson_transport_name(C4__TRANSPORT_CLASS__TRANSPORT_PCIE),
		"pcie");
}
END_TEST

/* Absent enums, target and evidence are null, not missing or "unspecified". */
START_TEST(test_absent_is_null)
{
	C4__Event ev = C4__EVENT__INIT;
	char *s;

	ev.id = (char *)"e";
	ev.has_kind = 1;
	ev.kind = C4__EVENT_KIND__EVENT_JOB_STALL;
	s = evjson_string(&ev, NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(strstr(s, "\"kind\":\"job_stall\""));
	ck_assert_ptr_nonnull(strstr(
		s, "\"domain\":null,\"action_type\":null,\"target\":null"));
	ck_assert_ptr_nonnull(strstr(s, "\"evidence\":null}"));
	free(s);
}
END_TEST

static Suite *
evjson_suite(void)
{
	Suite *s = suite_create("evjson");
	TCase *tc = tcase_create("evjson");

	tcase_add_test(tc, test_event_object);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_absent_is_null);
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
