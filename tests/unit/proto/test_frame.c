/*
 * test_frame.c - framing: partial frames across reads, several frames in
 * one read, oversized, truncated, garbage and wrong-version bodies.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "msg.h"

/* A packed heartbeat frame with the given nonce; caller frees. */
static uint8_t *
mk_frame(uint64_t nonce, size_t *len)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	C4__Envelope env;
	uint8_t *buf;

	hb.has_nonce = 1;
	hb.nonce = nonce;
	msg_init(&env, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	*len = msg_frame_size(&env);
	buf = malloc(*len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(msg_pack_frame(&env, buf), *len);
	return buf;
}

/* Drains every ready frame, checking nonces count up from *next. */
static int
drain(struct frame_buf *fb, uint64_t *next)
{
	const uint8_t *body;
	uint32_t len;
	int n = 0;

	while (frame_buf_next(fb, FRAME_MAX_DEFAULT, &body, &len) ==
	       FRAME_READY) {
		struct msg_err err;
		C4__Envelope *env = msg_unpack(body, len, &err);

		ck_assert_msg(env != NULL, "unpack: %s", err.text);
		ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_HEARTBEAT);
		ck_assert_uint_eq(env->heartbeat->nonce, *next);
		(*next)++;
		msg_free(env);
		n++;
	}
	return n;
}

START_TEST(test_peek_header)
{
	uint8_t hdr[4] = {0, 0, 0, 0};
	uint32_t len = 0;

	ck_assert_int_eq(frame_peek(hdr, 0, 100, &len), FRAME_NEED_MORE);
	ck_assert_int_eq(frame_peek(hdr, 3, 100, &len), FRAME_NEED_MORE);
	frame_put_header(hdr, 0x01020304);
	ck_assert_uint_eq(hdr[0], 1);
	ck_assert_uint_eq(hdr[3], 4);
	/* Oversized is known from the header alone, before any body. */
	ck_assert_int_eq(frame_peek(hdr, 4, 1000, &len), FRAME_TOO_BIG);
	ck_assert_uint_eq(len, 0x01020304);
	frame_put_header(hdr, 10);
	ck_assert_int_eq(frame_peek(hdr, 4, 10, &len), FRAME_NEED_MORE);
	ck_assert_uint_eq(len, 10);
	frame_put_header(hdr, 11);
	ck_assert_int_eq(frame_peek(hdr, 4, 10, &len), FRAME_TOO_BIG);
}
END_TEST

/* Every split of a 3-frame stream into two reads yields the 3 frames. */
START_TEST(test_partial_across_reads)
{
	uint8_t *f[3], stream[512];
	size_t n[3], total = 0;

	for (int i = 0; i < 3; i++) {
		f[i] = mk_frame((uint64_t)i + 1, &n[i]);
		memcpy(stream + total, f[i], n[i]);
		total += n[i];
		free(f[i]);
	}
	for (size_t cut = 0; cut <= total; cut++) {
		struct frame_buf fb;
		uint64_t next = 1;
		int got = 0;

		frame_buf_init(&fb);
		ck_assert_int_eq(frame_buf_append(&fb, stream, cut), 0);
		got += drain(&fb, &next);
		ck_assert_int_eq(
			frame_buf_append(&fb, stream + cut, total - cut), 0);
		got += drain(&fb, &next);
		ck_assert_int_eq(got, 3);
		frame_buf_free(&fb);
	}
}
END_TEST

START_TEST(test_byte_at_a_time)
{
	struct frame_buf fb;
	uint64_t next = 1;
	int got = 0;

	frame_buf_init(&fb);
	for (int i = 0; i < 50; i++) {
		size_t n;
		uint8_t *f = mk_frame((uint64_t)i + 1, &n);

		for (size_t k = 0; k < n; k++) {
			ck_assert_int_eq(frame_buf_append(&fb, f + k, 1), 0);
			got += drain(&fb, &next);
		}
		free(f);
	}
	ck_assert_int_eq(got, 50);
	frame_buf_free(&fb);
}
END_TEST

START_TEST(test_several_in_one_read)
{
	struct frame_buf fb;
	uint8_t big[64 * 1024];
	size_t total = 0;
	uint64_t next = 1;

	frame_buf_init(&fb);
	for (int i = 0; i < 1000; i++) {
		size_t n;
		uint8_t *f = mk_frame((uint64_t)i + 1, &n);

		ck_assert(total + n <= sizeof(big));
		memcpy(big + total, f, n);
		total += n;
		free(f);
	}
	ck_assert_int_eq(frame_buf_append(&fb, big, total), 0);
	ck_assert_int_eq(drain(&fb, &next), 1000);
	frame_buf_free(&fb);
}
END_TEST

START_TEST(test_oversized)
{
	struct frame_buf fb;
	uint8_t hdr[4];
	const uint8_t *body;
	uint32_t len;

	frame_buf_init(&fb);
	frame_put_header(hdr, FRAME_MAX_DEFAULT + 1);
	ck_assert_int_eq(frame_buf_append(&fb, hdr, 4), 0);
	ck_assert_int_eq(frame_buf_next(&fb, FRAME_MAX_DEFAULT, &body, &len),
			 FRAME_TOO_BIG);
	ck_assert_uint_eq(len, FRAME_MAX_DEFAULT + 1);
	frame_buf_free(&fb);
}
END_TEST

START_TEST(test_truncated)
{
	struct frame_buf fb;
	const uint8_t *body;
	uint32_t len;
	size_t n;
	uint8_t *f = mk_frame(7, &n);

	frame_buf_init(&fb);
	/* The stream ends one byte short: the frame never becomes ready. */
	ck_assert_int_eq(frame_buf_append(&fb, f, n - 1), 0);
	ck_assert_int_eq(frame_buf_next(&fb, FRAME_MAX_DEFAULT, &body, &len),
			 FRAME_NEED_MORE);
	/* A body cut short and framed as whole does not decode. */
	{
		struct msg_err err;
		C4__Envelope *env = msg_unpack(f + 4, n - 5, &err);

		ck_assert_ptr_null(env);
		ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_MALFORMED);
	}
	free(f);
	frame_buf_free(&fb);
}
END_TEST

START_TEST(test_garbage)
{
	static const uint8_t junk[][8] = {
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
		{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
		{'G', 'E', 'T', ' ', '/', ' ', 'H', 'T'},
	};
	struct msg_err err;

	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		C4__Envelope *env = msg_unpack(junk[i], sizeof(junk[i]), &err);

		ck_assert_ptr_null(env);
		ck_assert(err.code == C4__ERROR_CODE__ERR_MALFORMED ||
			  err.code == C4__ERROR_CODE__ERR_BAD_VERSION);
	}
	/* An empty body is an envelope with nothing set: no version. */
	ck_assert_ptr_null(msg_unpack((const uint8_t *)"", 0, &err));
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_BAD_VERSION);
	/* "GET / HTTP" read as a length is far above any maximum. */
	{
		uint32_t len;

		ck_assert_int_eq(frame_peek((const uint8_t *)"GET / HTTP/1.1",
					    14, FRAME_MAX_LIMIT, &len),
				 FRAME_TOO_BIG);
	}
}
END_TEST

START_TEST(test_wrong_version)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	C4__Envelope env;
	struct msg_err err;
	uint8_t buf[64];
	size_t n;

	msg_init(&env, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	env.version = C4_PROTO_VERSION + 1;
	n = msg_pack_frame(&env, buf);
	ck_assert_ptr_null(msg_unpack(buf + 4, n - 4, &err));
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_BAD_VERSION);
	ck_assert_str_eq(
		err.text,
		"protocol version 2 not supported (this side speaks 1)");
	env.has_version = 0;
	n = msg_pack_frame(&env, buf);
	ck_assert_ptr_null(msg_unpack(buf + 4, n - 4, &err));
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_BAD_VERSION);
}
END_TEST

START_TEST(test_buf_reuse)
{
	/* Many small appends and drains keep memory bounded. */
	struct frame_buf fb;
	uint64_t next = 1;

	frame_buf_init(&fb);
	for (int i = 0; i < 10000; i++) {
		size_t n;
		uint8_t *f = mk_frame((uint64_t)i + 1, &n);

		ck_assert_int_eq(frame_buf_append(&fb, f, n), 0);
		free(f);
		ck_assert_int_eq(drain(&fb, &next), 1);
	}
	ck_assert_uint_le(fb.cap, 4096);
	ck_assert_int_eq(frame_buf_append(&fb, NULL, 0), 0);
	frame_buf_free(&fb);
}
END_TEST

static Suite *
frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_peek_header);
	tcase_add_test(tc, test_partial_across_reads);
	tcase_add_test(tc, test_byte_at_a_time);
	tcase_add_test(tc, test_several_in_one_read);
	tcase_add_test(tc, test_oversized);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_wrong_version);
	tcase_add_test(tc, test_buf_reuse);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(frame_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
