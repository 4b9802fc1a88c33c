/*
 * test_evjson.c - the event object (docs/c4ctl.md) and the CloudEvent
 * around it, checked byte for byte.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "master.h"

static const char event_json[] =
	"{\"id\":\"job-1/rx-3\",\"job\":\"job-1\",\"kind\":\"comm_slow_rx\","
	"\"state\":\"updated\",\"revision\":2,\"summary\":\"rank 3 "
	"\\\"slow\\\"\",\"action\":null,\"confidence\":0.5,\"slowdown\":2,"
	"\"score\":0,\"comm_hash\":\"00000000000000ff\",\"first_interval\":4,"
	"\"last_interval\":9,\"first_seen_ns\":0,\"last_seen_ns\":0,"
	"\"suspects\":[{\"role\":\"rx\",\"rank\":3,\"host\":\"node-3\"},"
	"{\"role\":\"link\"}],\"cells\":[{\"src_rank\":1,\"dst_rank\":3,"
	"\"value\":4,\"baseline\":1,\"score\":9}]}";

static void
fill(C4__Event *ev, C4__Suspect **sv, C4__EvidenceCell **cv)
{
	ev->id = (char *)"job-1/rx-3";
	ev->job_id = (char *)"job-1";
	ev->has_kind = ev->has_state = ev->has_revision = 1;
	ev->kind = C4__EVENT_KIND__EVENT_COMM_SLOW_RX;
	ev->state = C4__EVENT_STATE__EVENT_UPDATED;
	ev->revision = 2;
	ev->summary = (char *)"rank 3 \"slow\"";
	ev->has_confidence = ev->has_slowdown = 1;
	ev->confidence = 0.5;
	ev->slowdown = 2;
	ev->has_comm_hash = 1;
	ev->comm_hash = 0xff;
	ev->first_interval = 4;
	ev->last_interval = 9;
	sv[0]->has_role = sv[0]->has_rank = 1;
	sv[0]->role = C4__SUSPECT_ROLE__SUSPECT_RX;
	sv[0]->rank = 3;
	sv[0]->host = (char *)"node-3";
	sv[1]->has_role = 1;
	sv[1]->role = C4__SUSPECT_ROLE__SUSPECT_LINK;
	ev->n_suspects = 2;
	ev->suspects = sv;
	cv[0]->src_rank = 1;
	cv[0]->dst_rank = 3;
	cv[0]->value = 4;
	cv[0]->baseline = 1;
	cv[0]->score = 9;
	ev->n_cells = 1;
	ev->cells = cv;
}

START_TEST(test_event_object)
{
	C4__Event ev = C4__EVENT__INIT;
	C4__Suspect s0 = C4__SUSPECT__INIT, s1 = C4__SUSPECT__INIT;
	C4__Suspect *sv[2] = {&s0, &s1};
	C4__EvidenceCell c0 = C4__EVIDENCE_CELL__INIT, *cv[1] = {&c0};
	size_t len;
	char *s;

	fill(&ev, sv, cv);
	s = evjson_string(&ev, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, event_json);
	ck_assert_uint_eq(len, strlen(event_json));
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

START_TEST(test_cloudevent)
{
	C4__Event ev = C4__EVENT__INIT;
	C4__Suspect s0 = C4__SUSPECT__INIT, s1 = C4__SUSPECT__INIT;
	C4__Suspect *sv[2] = {&s0, &s1};
	C4__EvidenceCell c0 = C4__EVIDENCE_CELL__INIT, *cv[1] = {&c0};
	char want[4096];
	size_t len;
	char *s;

	fill(&ev, sv, cv);
	/* 2026-11-21T05:00:00.000000007Z */
	s = webhook_cloudevent("job-1", &ev, 1795237200000000007ull, &len);
	ck_assert_ptr_nonnull(s);
	snprintf(want, sizeof(want),
		 "{\"specversion\":\"1.0\",\"id\":\"job-1/rx-3/2\","
		 "\"source\":\"c4d-master/job-1\","
		 "\"type\":\"io.c4.event.updated\","
		 "\"subject\":\"job-1/rx-3\","
		 "\"time\":\"2026-11-21T05:00:00.000000007Z\","
		 "\"datacontenttype\":\"application/json\",\"data\":%s}",
		 event_json);
	ck_assert_str_eq(s, want);
	ck_assert_uint_eq(len, strlen(want));
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
	tcase_add_test(tc, test_cloudevent);
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
