/*
 * test_cli.c - the blocking client against a peer in the same process on
 * 127.0.0.1 port 0: the hello it sends and the reply it keeps, a call
 * that skips unrelated messages to find its answer, an Error answer, a
 * timeout, an oversized frame, the daemon hanging up, goodbye on close,
 * and hellos answered wrongly.  The peer queues its answers before the
 * client asks (sequence numbers are predictable), so only the hello needs
 * a thread.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "peer.h"
#include "tmain.h"

enum { ANSWER_REPLY, ANSWER_ERROR, ANSWER_HEARTBEAT };

struct hello_side {
	struct peer p;
	int answer;
	C4__Role role;
	char job[32], cred[32];
};

/* The peer's side of cli_connect(): accepts, reads the hello, answers. */
static void *
hello_side_run(void *arg)
{
	struct hello_side *h = arg;
	C4__Error e = C4__ERROR__INIT;
	C4__Envelope *env;

	if (peer_accept(&h->p, 5000) < 0)
		return NULL;
	env = peer_recv(&h->p, 5000);
	if (env == NULL || env->type != C4__MSG_TYPE__MSG_HELLO)
		return NULL;
	h->role = env->hello->role;
	snprintf(h->job, sizeof(h->job), "%s", env->hello->job_id);
	snprintf(h->cred, sizeof(h->cred), "%.*s",
		 (int)env->hello->credential.len,
		 (const char *)env->hello->credential.data);
	e.text = (char *)"bad credential";
	if (h->answer == ANSWER_REPLY)
		peer_hello_reply(&h->p, env->seq);
	else if (h->answer == ANSWER_ERROR)
		peer_send(&h->p, C4__MSG_TYPE__MSG_ERROR, &e, env->seq);
	else
		peer_send(&h->p, C4__MSG_TYPE__MSG_HEARTBEAT,
			  &(C4__Heartbeat)C4__HEARTBEAT__INIT, env->seq);
	msg_free(env);
	return NULL;
}

/* Connects c to a new peer answering the hello as told; cli_connect's. */
static int
connect_to(struct cli *c, struct hello_side *h, int answer)
{
	struct cli_hello hello = {C4__ROLE__ROLE_CTL, "tok", "job-1", "n1"};
	pthread_t t;
	int rc;

	ck_assert_int_eq(peer_listen(&h->p, "127.0.0.1:0"), 0);
	h->answer = answer;
	ck_assert_int_eq(pthread_create(&t, NULL, hello_side_run, h), 0);
	rc = cli_connect(c, h->p.addr, &hello, 5000);
	pthread_join(t, NULL);
	return rc;
}

START_TEST(test_call)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	C4__Error e = C4__ERROR__INIT;
	struct hello_side h;
	C4__Envelope *env;
	struct cli c;

	ck_assert_int_eq(connect_to(&c, &h, ANSWER_REPLY), 0);
	ck_assert_int_eq(h.role, C4__ROLE__ROLE_CTL);
	ck_assert_str_eq(h.job, "job-1");
	ck_assert_str_eq(h.cred, "tok");
	ck_assert_str_eq(c.hello->daemon, "peer");
	/* Call 2: a heartbeat and another call's Error come first. */
	e.text = (char *)"not yours";
	e.has_ref_seq = 1;
	e.ref_seq = 99;
	ck_assert_int_eq(peer_send(&h.p, C4__MSG_TYPE__MSG_HEARTBEAT, &hb, 0),
			 0);
	ck_assert_int_eq(peer_send(&h.p, C4__MSG_TYPE__MSG_ERROR, &e, 0), 0);
	ck_assert_int_eq(peer_send(&h.p, C4__MSG_TYPE__MSG_HEARTBEAT, &hb, 2),
			 0);
	env = cli_call(&c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	ck_assert_ptr_nonnull(env);
	ck_assert_uint_eq(env->reply_to, 2);
	msg_free(env);
	env = peer_recv(&h.p, 5000);
	ck_assert_ptr_nonnull(env);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_HEARTBEAT);
	ck_assert_uint_eq(env->seq, 2);
	msg_free(env);
	/* Call 3 is answered by an Error naming it. */
	e.text = (char *)"refused";
	e.ref_seq = 3;
	ck_assert_int_eq(peer_send(&h.p, C4__MSG_TYPE__MSG_ERROR, &e, 0), 0);
	ck_assert_ptr_null(cli_call(&c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb));
	ck_assert_str_eq(c.err, "refused");
	env = peer_recv(&h.p, 5000);
	ck_assert_ptr_nonnull(env);
	ck_assert_uint_eq(env->seq, 3);
	msg_free(env);
	/* Nothing more comes: a timeout. */
	c.timeout_ms = 20;
	ck_assert_ptr_null(cli_recv(&c));
	ck_assert_str_eq(c.err, "no answer within 20 ms");
	/* The daemon hangs up (having read everything: no reset). */
	peer_hangup(&h.p);
	ck_assert_ptr_null(cli_recv(&c));
	ck_assert_str_eq(c.err, "connection closed by the daemon");
	cli_close(&c);
	peer_close(&h.p);
}
END_TEST

START_TEST(test_big_frame_and_goodbye)
{
	C4__Error e = C4__ERROR__INIT;
	struct hello_side h;
	C4__Envelope *env;
	char text[2000];
	struct cli c;

	ck_assert_int_eq(connect_to(&c, &h, ANSWER_REPLY), 0);
	memset(text, 'x', sizeof(text));
	text[sizeof(text) - 1] = '\0';
	e.text = text;
	c.max_frame = FRAME_MAX_MIN;
	ck_assert_int_eq(peer_send(&h.p, C4__MSG_TYPE__MSG_ERROR, &e, 0), 0);
	ck_assert_ptr_null(cli_recv(&c));
	ck_assert_ptr_nonnull(strstr(c.err, "above 1024"));
	cli_close(&c);
	ck_assert_int_eq(c.fd, -1);
	ck_assert_ptr_null(c.hello);
	env = peer_recv(&h.p, 5000);
	ck_assert_ptr_nonnull(env);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_GOODBYE);
	ck_assert_str_eq(env->goodbye->reason, "done");
	msg_free(env);
	peer_close(&h.p);
}
END_TEST

START_TEST(test_hello_refused)
{
	struct hello_side h;
	struct cli c;

	ck_assert_int_eq(connect_to(&c, &h, ANSWER_ERROR), -1);
	ck_assert_str_eq(c.err, "bad credential");
	ck_assert_int_eq(c.fd, -1);
	peer_close(&h.p);
	ck_assert_int_eq(connect_to(&c, &h, ANSWER_HEARTBEAT), -1);
	ck_assert_str_eq(c.err, "expected a hello reply, got heartbeat");
	peer_close(&h.p);
	ck_assert_int_eq(cli_connect(&c, "nowhere", NULL, 100), -1);
	ck_assert_ptr_nonnull(strstr(c.err, "nowhere: expected host:port"));
	ck_assert_int_eq(
		cli_connect(&c, "unix:/nonexistent/c4.sock", NULL, 100), -1);
	ck_assert_ptr_nonnull(strstr(c.err, "connect unix:/nonexistent"));
}
END_TEST

TMAIN("cli", test_call, test_big_frame_and_goodbye, test_hello_refused)
