/*
 * test_upstream.c - the agent's session to a master, against a fake
 * master on 127.0.0.1 port 0 in the same thread: the test runs the
 * upstream's event loop in short slices between the fake master's own
 * bounded reads and writes.  Covered: the hello names the agent's role,
 * job, node and credential; the session is ready only once the hello is
 * answered, and a reply for another job is refused; batches queued while
 * the master is away go out after the registrations once it answers; the
 * FIFO's byte bound drops the oldest batches and take_dropped tells their
 * records once; the handler sees the master's messages but heartbeats and
 * errors; a handler's -1 ends the session and the next one comes up by
 * itself; free with queued batches closes the connection and runs no
 * callback.
 */
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent.h"
#include "peer.h"
#include "tmain.h"

/* Slices of the loop (5 ms each) allowed for one step: about 5 s. */
#define SLICES 1000

struct fx {
	struct event_base *base;
	struct peer p;
	struct agent_master_conf m;
	struct upstream *u;
	int ready;    /* ready callbacks run */
	uint8_t *reg; /* frame the ready callback sends, or NULL */
	size_t reg_len;
	int handled;	    /* messages the handler got */
	C4__MsgType last;   /* the type of the last one */
	uint64_t last_task; /* its task_id when a ProbeTask */
	int handler_rc;	    /* what the handler returns */
};

/* Runs the upstream's loop for ms milliseconds. */
static void
loop_ms(struct event_base *base, int ms)
{
	struct timeval tv = {0, ms * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void
on_ready(struct upstream *u, void *arg)
{
	struct fx *f = arg;

	f->ready++;
	if (f->reg != NULL)
		upstream_send_now(u, f->reg, f->reg_len);
}

static int
on_msg(struct upstream *u, const C4__Envelope *env, void *arg)
{
	struct fx *f = arg;

	(void)u;
	f->handled++;
	f->last = env->type;
	if (env->type == C4__MSG_TYPE__MSG_PROBE_TASK)
		f->last_task = env->probe_task->task_id;
	return f->handler_rc;
}

/* A fake master listening and an upstream for job (NULL: none) to it. */
static void
fx_start(struct fx *f, const char *job, size_t limit)
{
	memset(f, 0, sizeof(*f));
	f->base = event_base_new();
	ck_assert_ptr_nonnull(f->base);
	ck_assert_int_eq(peer_listen(&f->p, "127.0.0.1:0"), 0);
	f->m.job = (char *)job;
	f->m.address = f->p.addr;
	f->m.secret = (char *)"s3cret";
	f->u = upstream_new(f->base, NULL, &f->m, "node-a", limit, on_ready, f);
	ck_assert_ptr_nonnull(f->u);
}

static void
fx_stop(struct fx *f)
{
	upstream_free(f->u);
	peer_close(&f->p);
	free(f->reg);
	event_base_free(f->base);
}

/* Accepts the upstream's connection while its loop runs. */
static void
fx_accept(struct fx *f)
{
	for (int i = 0; i < SLICES; i++) {
		loop_ms(f->base, 5);
		if (peer_accept(&f->p, 0) == 0)
			return;
	}
	ck_abort_msg("the upstream did not connect");
}

/* The next message from the upstream, its loop running meanwhile. */
static C4__Envelope *
fx_recv(struct fx *f)
{
	for (int i = 0; i < SLICES; i++) {
		C4__Envelope *env;

		loop_ms(f->base, 5);
		env = peer_recv(&f->p, 5);
		if (env != NULL)
			return env;
	}
	ck_abort_msg("no message from the upstream");
	return NULL;
}

/* The next message, which must be of the given type (caller frees). */
static C4__Envelope *
fx_expect(struct fx *f, C4__MsgType type)
{
	C4__Envelope *env = fx_recv(f);

	ck_assert_int_eq(env->type, type);
	return env;
}

/* 1 once the upstream closed the connection; data before it is read. */
static int
fx_closed(struct fx *f)
{
	for (int i = 0; i < SLICES; i++) {
		struct pollfd pfd = {f->p.fd, POLLIN, 0};
		uint8_t chunk[4096];

		loop_ms(f->base, 5);
		if (poll(&pfd, 1, 5) == 1 && read(f->p.fd, chunk, 1) <= 0)
			return 1;
	}
	return 0;
}

/* Answers the hello numbered seq as a master of job (NULL: none). */
static void
fx_reply(struct fx *f, uint64_t seq, const char *job)
{
	C4__HelloReply r = C4__HELLO_REPLY__INIT;

	r.has_role = 1;
	r.role = C4__ROLE__ROLE_MASTER;
	r.daemon = (char *)"fake-master";
	r.job_id = (char *)job;
	/* Heartbeats far apart: none comes between the messages checked. */
	r.has_heartbeat_interval_ms = 1;
	r.heartbeat_interval_ms = 600000;
	ck_assert_int_eq(
		peer_send(&f->p, C4__MSG_TYPE__MSG_HELLO_REPLY, &r, seq), 0);
}

/* Runs the loop until upstream_is_ready() is want; aborts otherwise. */
static void
fx_wait_ready(struct fx *f, int want)
{
	for (int i = 0; i < SLICES && upstream_is_ready(f->u) != want; i++)
		loop_ms(f->base, 5);
	ck_assert_int_eq(upstream_is_ready(f->u), want);
}

/* Accepts the connection and returns its hello (caller frees). */
static C4__Envelope *
fx_hello(struct fx *f)
{
	fx_accept(f);
	return fx_expect(f, C4__MSG_TYPE__MSG_HELLO);
}

/* Accepts, reads the hello, answers it for job and waits for the session. */
static void
fx_session(struct fx *f, const char *job)
{
	C4__Envelope *env = fx_hello(f);

	fx_reply(f, env->seq, job);
	msg_free(env);
	fx_wait_ready(f, 1);
}

/* A TelemetryBatch frame of job-1 for interval id (caller frees). */
static uint8_t *
batch(uint64_t id, size_t *len)
{
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	C4__Envelope env;
	uint8_t *buf;

	b.job_id = (char *)"job-1";
	b.has_interval_id = 1;
	b.interval_id = id;
	msg_init(&env, C4__MSG_TYPE__MSG_TELEMETRY, &b);
	buf = msg_frame_new(&env, len);
	ck_assert_ptr_nonnull(buf);
	return buf;
}

/* Queues the batch of interval id with its record and carried counts. */
static size_t
queue_batch(struct fx *f, uint64_t id, uint64_t records, uint64_t carried)
{
	size_t len;
	uint8_t *buf = batch(id, &len);

	upstream_send_batch(f->u, buf, len, records, carried);
	return len;
}

/* The next message must be the batch of interval id. */
static void
expect_batch(struct fx *f, uint64_t id)
{
	C4__Envelope *env = fx_expect(f, C4__MSG_TYPE__MSG_TELEMETRY);

	ck_assert_uint_eq(env->telemetry->interval_id, id);
	msg_free(env);
}

/* Sends a ProbeTask numbered task from the fake master. */
static void
send_task(struct fx *f, uint64_t task)
{
	C4__ProbeTask t = C4__PROBE_TASK__INIT;
	uint32_t sport = 49152;

	t.has_task_id = 1;
	t.task_id = task;
	t.src_ip = (char *)"10.0.0.1";
	t.dst_ip = (char *)"10.0.0.2";
	t.n_sports = 1;
	t.sports = &sport;
	ck_assert_int_eq(peer_send(&f->p, C4__MSG_TYPE__MSG_PROBE_TASK, &t, 0),
			 0);
}

/* Sends a non-fatal Error from the fake master. */
static void
send_error(struct fx *f)
{
	C4__Error e = C4__ERROR__INIT;

	e.text = (char *)"not fatal";
	ck_assert_int_eq(peer_send(&f->p, C4__MSG_TYPE__MSG_ERROR, &e, 0), 0);
}

START_TEST(test_hello_then_ready)
{
	C4__ProbeResult pr = C4__PROBE_RESULT__INIT;
	const struct upstream_stats *st;
	C4__Envelope *env;
	uint64_t hello_seq;
	struct fx f;

	fx_start(&f, "job-1", 1 << 20);
	st = upstream_get_stats(f.u);
	ck_assert_str_eq(upstream_address(f.u), f.p.addr);
	env = fx_hello(&f);
	ck_assert(env->hello->has_role);
	ck_assert_int_eq(env->hello->role, C4__ROLE__ROLE_AGENT);
	ck_assert_str_eq(env->hello->job_id, "job-1");
	ck_assert_str_eq(env->hello->node_name, "node-a");
	ck_assert(env->hello->has_credential);
	ck_assert_uint_eq(env->hello->credential.len, strlen("s3cret"));
	ck_assert_mem_eq(env->hello->credential.data, "s3cret", 6);
	ck_assert(env->hello->has_pid);
	ck_assert_uint_eq(env->hello->pid, (uint32_t)getpid());
	hello_seq = env->seq;

	/* Nothing is ready, nor sent, before the hello is answered. */
	ck_assert_int_eq(upstream_is_ready(f.u), 0);
	pr.has_task_id = 1;
	pr.task_id = 5;
	ck_assert_int_eq(
		upstream_send(f.u, C4__MSG_TYPE__MSG_PROBE_RESULT, &pr), -1);
	ck_assert_int_eq(f.ready, 0);
	ck_assert_uint_eq(st->connected, 0);

	fx_reply(&f, hello_seq, "job-1");
	msg_free(env);
	fx_wait_ready(&f, 1);
	ck_assert_int_eq(f.ready, 1);
	ck_assert_uint_eq(st->connected, 1);
	ck_assert_uint_eq(st->sessions, 1);
	ck_assert_uint_eq(st->reconnects, 0);
	ck_assert_uint_eq(st->connect_failures, 0);

	ck_assert_int_eq(
		upstream_send(f.u, C4__MSG_TYPE__MSG_PROBE_RESULT, &pr), 0);
	env = fx_expect(&f, C4__MSG_TYPE__MSG_PROBE_RESULT);
	ck_assert_uint_eq(env->probe_result->task_id, 5);
	ck_assert_uint_gt(env->seq, hello_seq);
	msg_free(env);
	fx_stop(&f);
}
END_TEST

START_TEST(test_reply_for_another_job_refused)
{
	C4__Envelope *env;
	struct fx f;

	fx_start(&f, "job-1", 1 << 20);
	env = fx_hello(&f);
	fx_reply(&f, env->seq, "job-2");
	msg_free(env);
	ck_assert_int_eq(fx_closed(&f), 1);
	ck_assert_int_eq(upstream_is_ready(f.u), 0);
	ck_assert_int_eq(f.ready, 0);
	ck_assert_uint_eq(upstream_get_stats(f.u)->sessions, 0);
	ck_assert_uint_ge(upstream_get_stats(f.u)->connect_failures, 1);
	fx_stop(&f);
}
END_TEST

START_TEST(test_no_job_session)
{
	C4__Envelope *env;
	struct fx f;

	/* The c4p-master's session: no job named, the reply's not checked. */
	fx_start(&f, NULL, 0);
	env = fx_hello(&f);
	ck_assert_ptr_null(env->hello->job_id);
	ck_assert_str_eq(env->hello->node_name, "node-a");
	fx_reply(&f, env->seq, "any-job");
	msg_free(env);
	fx_wait_ready(&f, 1);
	ck_assert_int_eq(f.ready, 1);
	fx_stop(&f);
}
END_TEST

START_TEST(test_batches_wait_for_session)
{
	C4__CommRegister reg = C4__COMM_REGISTER__INIT;
	const struct upstream_stats *st;
	C4__Envelope renv, *env;
	size_t bytes = 0;
	struct fx f;

	fx_start(&f, "job-1", 1 << 20);
	st = upstream_get_stats(f.u);
	reg.has_comm_hash = 1;
	reg.comm_hash = 0xc0ffee;
	reg.has_nranks = 1;
	reg.nranks = 8;
	msg_init(&renv, C4__MSG_TYPE__MSG_COMM_REGISTER, &reg);
	f.reg = msg_frame_new(&renv, &f.reg_len);
	ck_assert_ptr_nonnull(f.reg);

	/* The master has not answered yet: the batches wait in order. */
	for (uint64_t id = 1; id <= 3; id++)
		bytes += queue_batch(&f, id, 10, 0);
	loop_ms(f.base, 20);
	ck_assert_uint_eq(st->frames_buffered, 3);
	ck_assert_uint_eq(st->bytes_buffered, bytes);
	ck_assert_uint_eq(st->frames_forwarded, 0);

	/* Registrations first (the ready callback), then the batches. */
	fx_session(&f, "job-1");
	env = fx_expect(&f, C4__MSG_TYPE__MSG_COMM_REGISTER);
	ck_assert_uint_eq(env->comm_register->comm_hash, 0xc0ffee);
	msg_free(env);
	for (uint64_t id = 1; id <= 3; id++)
		expect_batch(&f, id);
	ck_assert_uint_eq(st->frames_buffered, 0);
	ck_assert_uint_eq(st->bytes_buffered, 0);
	ck_assert_uint_eq(st->frames_forwarded, 3);
	ck_assert_uint_eq(st->bytes_forwarded, bytes);
	ck_assert_uint_eq(st->frames_dropped, 0);
	ck_assert_uint_eq(upstream_take_dropped(f.u), 0);

	/* With the session up a batch goes out at once. */
	queue_batch(&f, 4, 10, 0);
	expect_batch(&f, 4);
	ck_assert_uint_eq(st->frames_forwarded, 4);
	fx_stop(&f);
}
END_TEST

START_TEST(test_buffer_limit_drops_oldest)
{
	const struct upstream_stats *st;
	size_t len, big_len;
	uint8_t *big;
	struct fx f;

	/* Every batch frame here has the same size: two and a half fit. */
	free(batch(1, &len));
	fx_start(&f, "job-1", 2 * len + len / 2);
	st = upstream_get_stats(f.u);
	ck_assert_uint_eq(queue_batch(&f, 1, 10, 1), len);
	ck_assert_uint_eq(queue_batch(&f, 2, 20, 2), len);
	ck_assert_uint_eq(st->frames_buffered, 2);
	ck_assert_uint_eq(upstream_take_dropped(f.u), 0);

	/* Each new batch pushes the oldest out; records and carried told. */
	queue_batch(&f, 3, 30, 3);
	ck_assert_uint_eq(st->frames_buffered, 2);
	ck_assert_uint_eq(st->frames_dropped, 1);
	ck_assert_uint_eq(st->records_dropped, 10);
	queue_batch(&f, 4, 40, 4);
	ck_assert_uint_eq(st->frames_buffered, 2);
	ck_assert_uint_eq(st->bytes_buffered, 2 * len);
	ck_assert_uint_eq(st->frames_dropped, 2);
	ck_assert_uint_eq(st->records_dropped, 30);
	ck_assert_uint_eq(upstream_take_dropped(f.u), 10 + 1 + 20 + 2);
	ck_assert_uint_eq(upstream_take_dropped(f.u), 0);

	/* A batch above the whole limit is dropped itself; the FIFO stays. */
	big_len = 3 * len;
	big = calloc(1, big_len);
	ck_assert_ptr_nonnull(big);
	upstream_send_batch(f.u, big, big_len, 7, 5);
	ck_assert_uint_eq(st->frames_buffered, 2);
	ck_assert_uint_eq(st->frames_dropped, 3);
	ck_assert_uint_eq(st->records_dropped, 37);
	ck_assert_uint_eq(upstream_take_dropped(f.u), 12);

	/* Only the two newest reach the master, then what comes next. */
	fx_session(&f, "job-1");
	expect_batch(&f, 3);
	expect_batch(&f, 4);
	queue_batch(&f, 5, 50, 0);
	expect_batch(&f, 5);
	ck_assert_uint_eq(st->frames_forwarded, 3);
	ck_assert_uint_eq(upstream_take_dropped(f.u), 0);
	fx_stop(&f);
}
END_TEST

START_TEST(test_handler_and_reconnect)
{
	const struct upstream_stats *st;
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	struct fx f;

	fx_start(&f, "job-1", 1 << 20);
	st = upstream_get_stats(f.u);
	fx_session(&f, "job-1");
	upstream_set_handler(f.u, on_msg, &f);

	/* Heartbeats and errors stay with the upstream; a task is handed on. */
	hb.has_echo = 1;
	hb.echo = 1;
	ck_assert_int_eq(peer_send(&f.p, C4__MSG_TYPE__MSG_HEARTBEAT, &hb, 0),
			 0);
	send_error(&f);
	send_task(&f, 7);
	for (int i = 0; i < SLICES && f.handled == 0; i++)
		loop_ms(f.base, 5);
	ck_assert_int_eq(f.handled, 1);
	ck_assert_int_eq(f.last, C4__MSG_TYPE__MSG_PROBE_TASK);
	ck_assert_uint_eq(f.last_task, 7);
	ck_assert_uint_eq(st->errors, 1);
	ck_assert_int_eq(upstream_is_ready(f.u), 1);

	/* Without a handler a task is ignored (the error after it shows when
	 * it was read). */
	upstream_set_handler(f.u, NULL, NULL);
	send_task(&f, 8);
	send_error(&f);
	for (int i = 0; i < SLICES && st->errors < 2; i++)
		loop_ms(f.base, 5);
	ck_assert_uint_eq(st->errors, 2);
	ck_assert_int_eq(f.handled, 1);
	ck_assert_int_eq(upstream_is_ready(f.u), 1);

	/* A handler's -1 ends the session; the next comes up by itself. */
	f.handler_rc = -1;
	upstream_set_handler(f.u, on_msg, &f);
	send_task(&f, 9);
	ck_assert_int_eq(fx_closed(&f), 1);
	ck_assert_int_eq(f.handled, 2);
	ck_assert_uint_eq(f.last_task, 9);
	ck_assert_int_eq(upstream_is_ready(f.u), 0);
	ck_assert_uint_eq(st->connected, 0);
	peer_hangup(&f.p);
	fx_session(&f, "job-1");
	ck_assert_int_eq(f.ready, 2);
	ck_assert_uint_eq(st->sessions, 2);
	ck_assert_uint_eq(st->reconnects, 1);
	fx_stop(&f);
}
END_TEST

START_TEST(test_free_with_queued)
{
	struct fx f;

	fx_start(&f, "job-1", 1 << 20);
	msg_free(fx_hello(&f));
	queue_batch(&f, 1, 10, 0);
	queue_batch(&f, 2, 10, 0);
	ck_assert_uint_eq(upstream_get_stats(f.u)->frames_buffered, 2);

	/* Freed before the hello is answered: the queue goes, no callback. */
	upstream_free(f.u);
	f.u = NULL;
	upstream_free(NULL);
	ck_assert_int_eq(fx_closed(&f), 1);
	ck_assert_int_eq(f.ready, 0);
	fx_stop(&f);
}
END_TEST

TMAIN("upstream", test_hello_then_ready, test_reply_for_another_job_refused,
      test_no_job_session, test_batches_wait_for_session,
      test_buffer_limit_drops_oldest, test_handler_and_reconnect,
      test_free_with_queued)
