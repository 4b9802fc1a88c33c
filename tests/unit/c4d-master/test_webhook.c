/*
 * test_webhook.c - the CloudEvent c4d-master posts to its webhook: the
 * envelope around the event object of lib/proto/evjson.c, checked byte for
 * byte.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evfix.h"
#include "master.h"
#include "tmain.h"

START_TEST(test_cloudevent)
{
	C4__Event ev = C4__EVENT__INIT;
	C4__Suspect s0 = C4__SUSPECT__INIT, s1 = C4__SUSPECT__INIT;
	C4__Suspect *sv[2] = {&s0, &s1};
	C4__EvidenceCell c0 = C4__EVIDENCE_CELL__INIT, *cv[1] = {&c0};
	char want[4096];
	size_t len;
	char *s;

	evfix_fill(&ev, sv, cv);
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
		 evfix_json);
	ck_assert_str_eq(s, want);
	ck_assert_uint_eq(len, strlen(want));
	free(s);
}
END_TEST

TMAIN("c4d-master-webhook", test_cloudevent)
