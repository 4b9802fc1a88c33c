/*
 * test_hello.c - the one Hello builder: what it sets, what it leaves out,
 * that what it builds passes the validation every daemon applies, and the
 * frame limit taken from a HelloReply.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "c4_build.h"
#include "hello.h"

START_TEST(test_full)
{
	C4__Envelope env, *out;
	struct msg_err err;
	C4__Hello h;
	uint8_t *buf;
	size_t n;

	hello_init(&h, C4__ROLE__ROLE_CCL_CLIENT, "job-1", "node-1", "tok", 42);
	msg_init(&env, C4__MSG_TYPE__MSG_HELLO, &h);
	n = msg_frame_size(&env);
	buf = malloc(n);
	ck_assert_ptr_nonnull(buf);
	msg_pack_frame(&env, buf);
	out = msg_unpack(buf + FRAME_HDR_LEN, n - FRAME_HDR_LEN, &err);
	free(buf);
	ck_assert_msg(out != NULL, "%s", err.text);
	ck_assert_int_eq(out->hello->role, C4__ROLE__ROLE_CCL_CLIENT);
	ck_assert_str_eq(out->hello->software_version, C4_VERSION);
	ck_assert_str_eq(out->hello->job_id, "job-1");
	ck_assert_str_eq(out->hello->node_name, "node-1");
	ck_assert(out->hello->has_credential);
	ck_assert_uint_eq(out->hello->credential.len, 3);
	ck_assert(memcmp(out->hello->credential.data, "tok", 3) == 0);
	ck_assert_uint_eq(out->hello->min_version, C4_PROTO_VERSION);
	ck_assert_uint_eq(out->hello->max_version, C4_PROTO_VERSION);
	ck_assert(out->hello->has_pid);
	ck_assert_uint_eq(out->hello->pid, 42);
	msg_free(out);
}
END_TEST

START_TEST(test_bare)
{
	C4__Hello h;

	memset(&h, 0xa5, sizeof(h));
	hello_init(&h, C4__ROLE__ROLE_CTL, NULL, NULL, NULL, 0);
	ck_assert(h.has_role);
	ck_assert_ptr_null(h.job_id);
	ck_assert_ptr_null(h.node_name);
	ck_assert(!h.has_credential);
	ck_assert(!h.has_pid);
	ck_assert_uint_eq(h.n_capabilities, 0);
}
END_TEST

START_TEST(test_reply_max_frame)
{
	C4__HelloReply r = C4__HELLO_REPLY__INIT;

	ck_assert_uint_eq(hello_reply_max_frame(&r), FRAME_MAX_DEFAULT);
	r.has_max_frame = 1;
	r.max_frame = FRAME_MAX_MIN - 1;
	ck_assert_uint_eq(hello_reply_max_frame(&r), FRAME_MAX_DEFAULT);
	r.max_frame = FRAME_MAX_MIN;
	ck_assert_uint_eq(hello_reply_max_frame(&r), FRAME_MAX_MIN);
}
END_TEST

static Suite *
hello_suite(void)
{
	Suite *s = suite_create("hello");
	TCase *tc = tcase_create("hello");

	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_bare);
	tcase_add_test(tc, test_reply_max_frame);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(hello_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
