/*
 * test_transport.c - the CCL client library's sender thread against an
 * agent played by the test on a unix socket: the hello it says, the
 * registration and summaries it sends in order, registering again on
 * the session after the agent hung up, the count of summaries dropped
 * while no agent listened folded into the first one sent, and goodbye on
 * close.  Waits are bounded by timeouts; nothing depends on how long a
 * step takes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4client.h"
#include "peer.h"
#include "tmain.h"

#define WAIT_MS 10000

struct agent {
	struct peer p;
	char dir[32], path[64];
};

static void
agent_init(struct agent *a)
{
	snprintf(a->dir, sizeof(a->dir), "/tmp/c4-test-tr-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(a->dir));
	snprintf(a->path, sizeof(a->path), "%s/agent.sock", a->dir);
}

static void
agent_listen(struct agent *a)
{
	char addr[80];

	snprintf(addr, sizeof(addr), "unix:%s", a->path);
	ck_assert_int_eq(peer_listen(&a->p, addr), 0);
}

/* Accepts the client's session and answers its hello; checks the hello. */
static void
agent_session(struct agent *a)
{
	C4__Envelope *env;

	ck_assert_int_eq(peer_accept(&a->p, WAIT_MS), 0);
	env = peer_recv(&a->p, WAIT_MS);
	ck_assert_ptr_nonnull(env);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_HELLO);
	ck_assert_int_eq(env->hello->role, C4__ROLE__ROLE_CCL_CLIENT);
	ck_assert_str_eq(env->hello->job_id, "job-1");
	ck_assert_str_eq(env->hello->node_name, "n1");
	ck_assert_uint_eq(env->hello->pid, (uint32_t)getpid());
	ck_assert_int_eq(peer_hello_reply(&a->p, env->seq), 0);
	msg_free(env);
}

/* The next message, skipping heartbeats; it must be of the given type. */
static C4__Envelope *
agent_expect(struct agent *a, C4__MsgType type)
{
	C4__Envelope *env;

	while ((env = peer_recv(&a->p, WAIT_MS)) != NULL &&
	       env->type == C4__MSG_TYPE__MSG_HEARTBEAT)
		msg_free(env);
	ck_assert_ptr_nonnull(env);
	ck_assert_str_eq(msg_type_name(env->type), msg_type_name(type));
	return env;
}

static void
agent_done(struct agent *a)
{
	peer_close(&a->p);
	unlink(a->path);
	rmdir(a->dir);
}

/* A summary of one idle collective record numbered id. */
static int
report_idle(struct c4client *c, uint64_t id)
{
	struct c4client_coll co = {0x31, 0, 0, NULL, 0, 0, 0, 0, 0, 1};
	struct c4client_report r = {id, 1,   1000, 1,	 0,   0,
				    0,	&co, NULL, NULL, NULL};

	return c4client_report(c, &r);
}

START_TEST(test_session)
{
	struct c4client_rank rk = {1, NULL, 0, NULL, NULL, 0, 1};
	struct c4client_comm m = {0x31, 2, "dp", 1, &rk};
	struct c4client_opts o = {NULL, "job-1", "tok", "n1", 0};
	struct c4client_stats st;
	C4__Envelope *env;
	struct agent a;
	struct c4client *c;

	agent_init(&a);
	agent_listen(&a);
	o.socket_path = a.path;
	c = c4client_open(&o);
	ck_assert_ptr_nonnull(c);
	agent_session(&a);
	ck_assert_int_eq(c4client_register(c, &m), 0);
	env = agent_expect(&a, C4__MSG_TYPE__MSG_COMM_REGISTER);
	ck_assert_uint_eq(env->comm_register->comm_hash, 0x31);
	ck_assert_str_eq(env->comm_register->ranks[0]->host, "n1");
	msg_free(env);
	for (uint64_t id = 1; id <= 3; id++)
		ck_assert_int_eq(report_idle(c, id), 0);
	for (uint64_t id = 1; id <= 3; id++) {
		env = agent_expect(&a, C4__MSG_TYPE__MSG_TELEMETRY);
		ck_assert_uint_eq(env->telemetry->interval_id, id);
		ck_assert_uint_eq(env->telemetry->n_colls, 1);
		msg_free(env);
	}
	/* The agent goes away: a new session registers the comm again. */
	peer_hangup(&a.p);
	agent_session(&a);
	env = agent_expect(&a, C4__MSG_TYPE__MSG_COMM_REGISTER);
	ck_assert_uint_eq(env->comm_register->comm_hash, 0x31);
	msg_free(env);
	ck_assert_int_eq(report_idle(c, 4), 0);
	env = agent_expect(&a, C4__MSG_TYPE__MSG_TELEMETRY);
	ck_assert_uint_eq(env->telemetry->interval_id, 4);
	msg_free(env);
	/*
	 * The deregistration comes after the summary was counted as sent
	 * (the thread counts each before it takes the next).
	 */
	ck_assert_int_eq(c4client_deregister(c, 0x31), 0);
	env = agent_expect(&a, C4__MSG_TYPE__MSG_COMM_REGISTER);
	ck_assert(env->comm_register->destroyed);
	msg_free(env);
	c4client_stats(c, &st);
	ck_assert_uint_eq(st.reconnects, 1);
	ck_assert_uint_eq(st.reports_sent, 4);
	ck_assert_uint_eq(st.registers_sent, 2);
	ck_assert_int_eq(st.connected, 1);
	/* Goodbye is sent before close returns. */
	c4client_close(c);
	env = agent_expect(&a, C4__MSG_TYPE__MSG_GOODBYE);
	msg_free(env);
	agent_done(&a);
}
END_TEST

START_TEST(test_dropped_count_travels)
{
	struct c4client_opts o = {NULL, "job-1", "tok", "n1",
				  C4CLIENT_QUEUE_MIN};
	struct c4client_stats st;
	C4__Envelope *env;
	struct agent a;
	struct c4client *c;
	uint64_t first, told;

	agent_init(&a);
	o.socket_path = a.path;
	c = c4client_open(&o);
	ck_assert_ptr_nonnull(c);
	/* No agent yet: the queue keeps the newest summaries only. */
	for (uint64_t id = 1; id <= 300; id++)
		ck_assert_int_eq(report_idle(c, id), 0);
	c4client_stats(c, &st);
	ck_assert_uint_gt(st.records_dropped, 0);
	agent_listen(&a);
	agent_session(&a);
	env = agent_expect(&a, C4__MSG_TYPE__MSG_TELEMETRY);
	first = env->telemetry->interval_id;
	told = env->telemetry->dropped_records;
	msg_free(env);
	ck_assert_uint_eq(first, st.reports_dropped + 1);
	ck_assert_uint_eq(told, st.records_dropped);
	/* The rest follow in order, with nothing more to tell. */
	for (uint64_t id = first + 1; id <= 300; id++) {
		env = agent_expect(&a, C4__MSG_TYPE__MSG_TELEMETRY);
		ck_assert_uint_eq(env->telemetry->interval_id, id);
		ck_assert_uint_eq(env->telemetry->dropped_records, 0);
		msg_free(env);
	}
	c4client_close(c);
	agent_done(&a);
}
END_TEST

TMAIN("client-transport", test_session, test_dropped_count_travels)
