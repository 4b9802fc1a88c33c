/*
 * test_msg.c - envelope construction, type/body agreement, per-message
 * validation and the role table.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "evfix.h"
#include "msg.h"

/* Packs env and runs it through msg_unpack(); returns the result. */
static C4__Envelope *
roundtrip(C4__Envelope *env, struct msg_err *err)
{
	size_t n = msg_frame_size(env);
	uint8_t *buf = malloc(n);
	C4__Envelope *out;

	ck_assert_ptr_nonnull(buf);
	msg_pack_frame(env, buf);
	memset(err, 0, sizeof(*err));
	out = msg_unpack(buf + FRAME_HDR_LEN, n - FRAME_HDR_LEN, err);
	free(buf);
	return out;
}

static void
expect_invalid(C4__MsgType type, void *body, const char *text)
{
	C4__Envelope env, *out;
	struct msg_err err;

	msg_init(&env, type, body);
	out = roundtrip(&env, &err);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_INVALID);
	ck_assert_str_eq(err.text, text);
}

START_TEST(test_hello)
{
	C4__Hello h = C4__HELLO__INIT;
	C4__Envelope env, *out;
	struct msg_err err;

	expect_invalid(C4__MSG_TYPE__MSG_HELLO, &h,
		       "hello: role missing or unknown");
	h.has_role = 1;
	h.role = C4__ROLE__ROLE_CCL_CLIENT;
	expect_invalid(C4__MSG_TYPE__MSG_HELLO, &h,
		       "hello: a CCL client must name its job");
	h.job_id = (char *)"job-1";
	h.has_min_version = h.has_max_version = 1;
	h.min_version = 3;
	h.max_version = 2;
	expect_invalid(C4__MSG_TYPE__MSG_HELLO, &h,
		       "hello: min_version above max_version");
	h.min_version = 1;
	msg_init(&env, C4__MSG_TYPE__MSG_HELLO, &h);
	out = roundtrip(&env, &err);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(out->type, C4__MSG_TYPE__MSG_HELLO);
	ck_assert_ptr_eq(msg_body(out), out->hello);
	ck_assert_str_eq(out->hello->job_id, "job-1");
	msg_free(out);
}
END_TEST

START_TEST(test_long_strings)
{
	C4__Hello h = C4__HELLO__INIT;
	char *big = malloc(MSG_ID_MAX + 2);

	memset(big, 'x', MSG_ID_MAX + 1);
	big[MSG_ID_MAX + 1] = '\0';
	h.has_role = 1;
	h.role = C4__ROLE__ROLE_AGENT;
	h.node_name = big;
	expect_invalid(C4__MSG_TYPE__MSG_HELLO, &h,
		       "hello.node_name longer than 256 bytes");
	free(big);
}
END_TEST

START_TEST(test_type_body_mismatch)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	C4__Envelope env, *out;
	struct msg_err err;

	msg_init(&env, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	env.type = C4__MSG_TYPE__MSG_GOODBYE;
	out = roundtrip(&env, &err);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_MALFORMED);
	ck_assert_str_eq(err.text,
			 "type goodbye does not match the body carried");
	/* No body at all. */
	msg_init(&env, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	env.body_case = C4__ENVELOPE__BODY__NOT_SET;
	ck_assert_ptr_null(roundtrip(&env, &err));
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_MALFORMED);
	/* A type number nobody defined. */
	msg_init(&env, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	env.type = (C4__MsgType)99;
	ck_assert_ptr_null(roundtrip(&env, &err));
	ck_assert_str_eq(err.text, "message type 99 unknown");
}
END_TEST

START_TEST(test_comm_register)
{
	C4__CommRegister m = C4__COMM_REGISTER__INIT;
	C4__RankInfo r = C4__RANK_INFO__INIT, *rp = &r;

	expect_invalid(C4__MSG_TYPE__MSG_COMM_REGISTER, &m,
		       "comm_register: comm_hash is required");
	m.has_comm_hash = 1;
	m.comm_hash = 0xabcdef;
	expect_invalid(C4__MSG_TYPE__MSG_COMM_REGISTER, &m,
		       "comm_register: nranks must be 1..1048576");
	m.has_nranks = 1;
	m.nranks = 2;
	m.n_ranks = 1;
	m.ranks = &rp;
	r.has_rank = 1;
	r.rank = 2;
	expect_invalid(C4__MSG_TYPE__MSG_COMM_REGISTER, &m,
		       "comm_register: rank entry 0: rank missing or not "
		       "below nranks 2");
	r.rank = 1;
	expect_invalid(C4__MSG_TYPE__MSG_COMM_REGISTER, &m,
		       "rank.host is required");
	r.host = (char *)"node-1";
	{
		C4__Envelope env, *out;
		struct msg_err err;

		msg_init(&env, C4__MSG_TYPE__MSG_COMM_REGISTER, &m);
		out = roundtrip(&env, &err);
		ck_assert_ptr_nonnull(out);
		ck_assert_uint_eq(out->comm_register->comm_hash, 0xabcdef);
		msg_free(out);
	}
}
END_TEST

START_TEST(test_telemetry)
{
	C4__TelemetryBatch m = C4__TELEMETRY_BATCH__INIT;
	C4__ConnSummary c = C4__CONN_SUMMARY__INIT, *cp = &c;
	C4__DurationStats d = C4__DURATION_STATS__INIT;
	C4__QuantileSketch q = C4__QUANTILE_SKETCH__INIT;
	int32_t idx[2] = {10, 11};
	uint64_t cnt[1] = {5};

	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "telemetry: interval_id is required");
	m.has_interval_id = 1;
	m.n_conns = 1;
	m.conns = &cp;
	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "telemetry: conn summary 0 lacks comm_hash, src_rank "
		       "or dst_rank");
	c.has_comm_hash = c.has_src_rank = c.has_dst_rank = 1;
	c.transfer_time = &d;
	d.has_min_ns = d.has_max_ns = 1;
	d.min_ns = 10;
	d.max_ns = 5;
	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "transfer_time: min above max");
	d.max_ns = 50;
	d.sketch = &q;
	q.n_index = 2;
	q.index = idx;
	q.n_count = 1;
	q.count = cnt;
	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "transfer_time: sketch has 2 indexes but 1 counts");
	q.n_index = 1;
	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "transfer_time: sketch accuracy must be 1..999999 ppm");
	q.has_relative_accuracy_ppm = 1;
	q.relative_accuracy_ppm = 10000;
	/* Indexes no 64-bit value reaches (the sketch_value overflow). */
	idx[0] = INT32_MAX;
	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "transfer_time: sketch bucket index 2147483647 out of "
		       "range");
	idx[0] = -1;
	expect_invalid(C4__MSG_TYPE__MSG_TELEMETRY, &m,
		       "transfer_time: sketch bucket index -1 out of range");
	idx[0] = 10;
	{
		C4__Envelope env, *out;
		struct msg_err err;

		msg_init(&env, C4__MSG_TYPE__MSG_TELEMETRY, &m);
		out = roundtrip(&env, &err);
		ck_assert_msg(out != NULL, "%s", err.text);
		ck_assert_int_eq(out->telemetry->conns[0]
					 ->transfer_time->sketch->index[0],
				 10);
		msg_free(out);
	}
}
END_TEST

START_TEST(test_path_request)
{
	C4__PathRequest r = C4__PATH_REQUEST__INIT, *rp = &r;
	C4__PathRequestBatch b = C4__PATH_REQUEST_BATCH__INIT;

	r.job_id = (char *)"j";
	r.request_id = (char *)"r1";
	r.src_nic = (char *)"h1-nic0";
	r.dst_nic = (char *)"h2-nic0";
	expect_invalid(C4__MSG_TYPE__MSG_PATH_REQUEST, &r,
		       "path_request: qp_count must be 1..4096");
	r.has_qp_count = 1;
	r.qp_count = 5000;
	expect_invalid(C4__MSG_TYPE__MSG_PATH_REQUEST, &r,
		       "path_request: qp_count must be 1..4096");
	r.qp_count = 8;
	r.has_demand = 1;
	r.demand = -1;
	expect_invalid(C4__MSG_TYPE__MSG_PATH_REQUEST, &r,
		       "path_request: demand must be in (0, 1e6]");
	r.has_demand = 0;
	expect_invalid(C4__MSG_TYPE__MSG_PATH_REQUEST_BATCH, &b,
		       "path_request_batch: 1..65536 requests");
	b.n_requests = 1;
	b.requests = &rp;
	r.request_id = NULL;
	expect_invalid(C4__MSG_TYPE__MSG_PATH_REQUEST_BATCH, &b,
		       "path_request.request_id is required");
}
END_TEST

START_TEST(test_probe_task)
{
	C4__ProbeTask t = C4__PROBE_TASK__INIT;
	uint32_t ports[2] = {49152, 70000};

	t.src_ip = (char *)"10.0.0.1";
	t.dst_ip = (char *)"10.0.0.2";
	expect_invalid(C4__MSG_TYPE__MSG_PROBE_TASK, &t,
		       "probe_task: 1..65536 source ports");
	t.n_sports = 2;
	t.sports = ports;
	expect_invalid(C4__MSG_TYPE__MSG_PROBE_TASK, &t,
		       "probe_task: source port 70000 invalid");
}
END_TEST

START_TEST(test_admin_request)
{
	C4__AdminRequest a = C4__ADMIN_REQUEST__INIT;

	expect_invalid(C4__MSG_TYPE__MSG_ADMIN_REQUEST, &a,
		       "admin_request: op is required");
}
END_TEST

/* The event of evfix.h travels whole; each new field is checked. */
START_TEST(test_event)
{
	C4__Event ev = C4__EVENT__INIT;
	C4__Suspect s0 = C4__SUSPECT__INIT, s1 = C4__SUSPECT__INIT;
	C4__Suspect *sv[2] = {&s0, &s1};
	C4__EvidenceCell c0 = C4__EVIDENCE_CELL__INIT, *cv[1] = {&c0};
	C4__Envelope env, *out;
	struct msg_err err;
	char *big = malloc(MSG_TEXT_MAX + 2);

	evfix_fill(&ev, sv, cv);
	msg_init(&env, C4__MSG_TYPE__MSG_EVENT, &ev);
	out = roundtrip(&env, &err);
	ck_assert_msg(out != NULL, "%s", err.text);
	ck_assert_int_eq(out->event->domain, C4__EVENT_DOMAIN__DOMAIN_NIC);
	ck_assert_int_eq(out->event->action_type,
			 C4__ACTION__ACTION_ISOLATE_NIC);
	ck_assert_str_eq(out->event->target, "node-3/mlx5_3");
	ck_assert_str_eq(out->event->suspects[1]->peer_host, "node-4");
	ck_assert_int_eq(out->event->suspects[1]->transport,
			 C4__TRANSPORT_CLASS__TRANSPORT_NVLINK);
	ck_assert_int_eq(out->event->evidence->basis,
			 C4__EVIDENCE_BASIS__BASIS_MEDIAN);
	ck_assert_uint_eq(out->event->evidence->n_member_gpus, 2);
	msg_free(out);

	ev.kind = (C4__EventKind)11;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "event kind 11 is not one of 0..10");
	ev.kind = C4__EVENT_KIND__EVENT_JOB_STALL;
	ev.domain = (C4__EventDomain)7;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "event domain 7 is not one of 0..6");
	ev.domain = C4__EVENT_DOMAIN__DOMAIN_JOB;
	ev.action_type = (C4__Action)6;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "event action_type 6 is not one of 0..5");
	ev.action_type = C4__ACTION__ACTION_CHECK_JOB;
	s1.transport = (C4__TransportClass)5;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "suspect transport 5 is not one of 0..4");
	s1.transport = C4__TRANSPORT_CLASS__TRANSPORT_PCIE;
	ev.evidence->basis = (C4__EvidenceBasis)7;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "evidence basis 7 is not one of 0..6");
	ev.evidence->basis = C4__EVIDENCE_BASIS__BASIS_HEARTBEAT;
	ev.evidence->hot_intervals = 4;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "event.evidence: 4 hot intervals in a window of 3");
	ev.evidence->hot_intervals = 3;
	memset(big, 'x', MSG_TEXT_MAX + 1);
	big[MSG_TEXT_MAX + 1] = '\0';
	ev.target = big;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "event.target longer than 4096 bytes");
	ev.target = NULL;
	big[MSG_ID_MAX + 1] = '\0';
	s1.peer_host = big;
	expect_invalid(C4__MSG_TYPE__MSG_EVENT, &ev,
		       "event.suspects[1] longer than 256 bytes");
	free(big);
}
END_TEST

START_TEST(test_roles)
{
	/* Reporters send telemetry; operators and masters do not. */
	ck_assert(msg_role_may_send(C4__ROLE__ROLE_AGENT,
				    C4__MSG_TYPE__MSG_TELEMETRY));
	ck_assert(msg_role_may_send(C4__ROLE__ROLE_CCL_CLIENT,
				    C4__MSG_TYPE__MSG_TELEMETRY));
	ck_assert(!msg_role_may_send(C4__ROLE__ROLE_CTL,
				     C4__MSG_TYPE__MSG_TELEMETRY));
	/* Only operators send admin requests. */
	ck_assert(msg_role_may_send(C4__ROLE__ROLE_CTL,
				    C4__MSG_TYPE__MSG_ADMIN_REQUEST));
	ck_assert(!msg_role_may_send(C4__ROLE__ROLE_AGENT,
				     C4__MSG_TYPE__MSG_ADMIN_REQUEST));
	/* Peers never send what only servers send. */
	ck_assert(!msg_role_may_send(C4__ROLE__ROLE_AGENT,
				     C4__MSG_TYPE__MSG_PROBE_TASK));
	ck_assert(!msg_role_may_send(C4__ROLE__ROLE_CCL_CLIENT,
				     C4__MSG_TYPE__MSG_EVENT));
	ck_assert(msg_role_may_send(C4__ROLE__ROLE_AGENT,
				    C4__MSG_TYPE__MSG_PROBE_RESULT));
	ck_assert(!msg_role_may_send(C4__ROLE__ROLE_CCL_CLIENT,
				     C4__MSG_TYPE__MSG_PROBE_RESULT));
	/* Everyone heartbeats. */
	for (int r = 1; r <= 4; r++)
		ck_assert(msg_role_may_send((C4__Role)r,
					    C4__MSG_TYPE__MSG_HEARTBEAT));
	ck_assert(
		!msg_role_may_send((C4__Role)77, C4__MSG_TYPE__MSG_HEARTBEAT));
	ck_assert(!msg_role_may_send(C4__ROLE__ROLE_AGENT, (C4__MsgType)99));
}
END_TEST

START_TEST(test_names)
{
	C4__Role r;

	ck_assert_str_eq(msg_type_name(C4__MSG_TYPE__MSG_TELEMETRY),
			 "telemetry");
	ck_assert_str_eq(msg_type_name((C4__MsgType)1234), "unknown");
	ck_assert_str_eq(msg_role_name(C4__ROLE__ROLE_CCL_CLIENT),
			 "ccl-client");
	ck_assert_int_eq(msg_role_parse("ctl", &r), 0);
	ck_assert_int_eq(r, C4__ROLE__ROLE_CTL);
	ck_assert_int_eq(msg_role_parse("unspecified", &r), -1);
	ck_assert_int_eq(msg_role_parse("root", &r), -1);
}
END_TEST

/* Every type in the enum has a body member with the same number. */
START_TEST(test_every_type_has_body)
{
	const ProtobufCEnumDescriptor *ed = &c4__msg_type__descriptor;

	for (unsigned i = 0; i < ed->n_values; i++) {
		int v = ed->values[i].value;

		if (v == 0)
			continue;
		ck_assert_msg(protobuf_c_message_descriptor_get_field(
				      &c4__envelope__descriptor, (unsigned)v) !=
				      NULL,
			      "type %d has no body member", v);
		ck_assert_str_ne(msg_type_name((C4__MsgType)v), "unknown");
	}
}
END_TEST

static Suite *
msg_suite(void)
{
	Suite *s = suite_create("msg");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_hello);
	tcase_add_test(tc, test_long_strings);
	tcase_add_test(tc, test_type_body_mismatch);
	tcase_add_test(tc, test_comm_register);
	tcase_add_test(tc, test_telemetry);
	tcase_add_test(tc, test_path_request);
	tcase_add_test(tc, test_probe_task);
	tcase_add_test(tc, test_admin_request);
	tcase_add_test(tc, test_event);
	tcase_add_test(tc, test_roles);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_every_type_has_body);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(msg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
