/*
 * transport.c - the CCL client library's sender thread: the session with
 * the agent over its unix socket (connect, hello, heartbeats, reconnects
 * with backoff) and the sending of what c4client.c queued.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "c4client_int.h"
#include "clock.h"
#include "hello.h"

static uint64_t
transport_now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000u;
}

/* Keeps why the session failed, for c4client_stats(). */
static void
transport_set_error(struct c4client *c, const char *what, const char *why)
{
	pthread_mutex_lock(&c->mu);
	snprintf(c->st.last_error, sizeof(c->st.last_error), "%.40s: %.80s",
		 what, why);
	pthread_mutex_unlock(&c->mu);
}

static void
transport_disconnect(struct c4client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	frame_buf_free(&c->in);
	frame_buf_init(&c->in);
	pthread_mutex_lock(&c->mu);
	c->st.connected = 0;
	for (size_t i = 0; i < c->nregs; i++)
		c->regs[i].sent = 0;
	/* Deregistrations are moot on a new session. */
	while (c->ctrl != NULL) {
		struct c4client_item *it = c->ctrl;

		c->ctrl = it->next;
		free(it->frame);
		free(it);
	}
	c->ctrl_tail = NULL;
	pthread_mutex_unlock(&c->mu);
}

static int
transport_send_msg(struct c4client *c, C4__MsgType type, void *body)
{
	C4__Envelope env;
	uint8_t *buf;
	size_t len;
	int rc;

	pthread_mutex_lock(&c->mu);
	msg_init_seq(&env, type, body, ++c->seq);
	pthread_mutex_unlock(&c->mu);
	buf = msg_frame_new(&env, &len);
	if (buf == NULL)
		return -1;
	rc = net_send_all(c->fd, buf, len);
	free(buf);
	return rc;
}

/*
 * Waits up to timeout_ms for the next message from the agent.  Returns it
 * (msg_free() it), or NULL on timeout (*closed 0) or when the session is
 * unusable (*closed 1).
 */
static C4__Envelope *
transport_recv(struct c4client *c, int timeout_ms, int *closed)
{
	uint64_t until = transport_now_ms() + (uint64_t)timeout_ms;

	*closed = 0;
	for (;;) {
		const uint8_t *body;
		uint32_t blen;
		enum frame_status fs;
		struct msg_err err;
		struct pollfd p = {c->fd, POLLIN, 0};
		uint8_t buf[4096];
		uint64_t now;
		ssize_t n;
		int pr;

		fs = frame_buf_next(&c->in, FRAME_MAX_LIMIT, &body, &blen);
		if (fs == FRAME_READY) {
			C4__Envelope *env = msg_unpack(body, blen, &err);

			if (env == NULL) {
				transport_set_error(c, "agent sent", err.text);
				*closed = 1;
			}
			return env;
		}
		if (fs == FRAME_TOO_BIG) {
			*closed = 1;
			return NULL;
		}
		now = transport_now_ms();
		pr = poll(&p, 1, now >= until ? 0 : (int)(until - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			*closed = 1;
			return NULL;
		}
		if (pr == 0)
			return NULL;
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0 || frame_buf_append(&c->in, buf, (size_t)n) < 0) {
			*closed = 1;
			return NULL;
		}
	}
}

/* Handles a message from the agent; -1 when the session must end. */
static int
transport_handle(struct c4client *c, const C4__Envelope *env)
{
	if (env->type == C4__MSG_TYPE__MSG_ERROR) {
		pthread_mutex_lock(&c->mu);
		c->st.errors++;
		snprintf(c->st.last_error, sizeof(c->st.last_error), "%s",
			 env->error->text ? env->error->text : "error");
		pthread_mutex_unlock(&c->mu);
		return env->error->fatal ? -1 : 0;
	}
	if (env->type == C4__MSG_TYPE__MSG_GOODBYE)
		return -1;
	return 0; /* heartbeat echoes and anything newer */
}

/* Connects and says hello; 0 with c->fd open, or -1. */
static int
transport_connect(struct c4client *c)
{
	struct timeval tv = {C4CLIENT_IO_TIMEOUT_MS / 1000,
			     (C4CLIENT_IO_TIMEOUT_MS % 1000) * 1000};
	char err[NET_PATH_MAX + 64];
	C4__Hello h;
	C4__Envelope *env;
	int closed;

	c->fd = net_connect(&c->agent, C4CLIENT_IO_TIMEOUT_MS, err,
			    sizeof(err));
	if (c->fd < 0) {
		transport_set_error(c, "agent", err);
		goto fail;
	}
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	hello_init(&h, C4__ROLE__ROLE_CCL_CLIENT, c->job, c->node, c->token,
		   (uint32_t)getpid());
	if (transport_send_msg(c, C4__MSG_TYPE__MSG_HELLO, &h) < 0)
		goto fail;
	env = transport_recv(c, C4CLIENT_HELLO_TIMEOUT_MS, &closed);
	if (env == NULL)
		goto fail;
	if (env->type != C4__MSG_TYPE__MSG_HELLO_REPLY) {
		transport_handle(c, env);
		msg_free(env);
		goto fail;
	}
	c->hb_ms = env->hello_reply->has_heartbeat_interval_ms
			   ? env->hello_reply->heartbeat_interval_ms
			   : 5000;
	if (c->hb_ms < 100)
		c->hb_ms = 100;
	c->max_frame = hello_reply_max_frame(env->hello_reply);
	msg_free(env);
	pthread_mutex_lock(&c->mu);
	c->st.connected = 1;
	if (c->sessions++ > 0)
		c->st.reconnects++;
	c->st.last_error[0] = '\0';
	pthread_mutex_unlock(&c->mu);
	return 0;
fail:
	transport_disconnect(c);
	return -1;
}

/*
 * Takes the next thing to send: an unsent registration, a control
 * message, or the oldest summary (with the drop count folded in).  NULL
 * when there is nothing.  *records gets the summaries in it, *folded the
 * drop count folded into it.
 */
static uint8_t *
transport_next(struct c4client *c, size_t *len, uint64_t *records,
	       int *is_report, uint64_t *folded)
{
	struct c4client_item *it;
	uint64_t dropped;
	uint8_t *buf = NULL;

	*records = 0;
	*is_report = 0;
	*folded = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregs; i++) {
		if (!c->regs[i].sent) {
			buf = batch_register(c, &c->regs[i], 0, len);
			if (buf != NULL) {
				c->regs[i].sent = 1;
				c->st.registers_sent++;
			}
			pthread_mutex_unlock(&c->mu);
			return buf;
		}
	}
	if ((it = c->ctrl) != NULL) {
		c->ctrl = it->next;
		if (c->ctrl == NULL)
			c->ctrl_tail = NULL;
	} else if ((it = c->head) != NULL) {
		c->head = it->next;
		if (c->head == NULL)
			c->tail = NULL;
		c->st.queue_bytes -= it->len;
		c->st.queue_reports--;
		*is_report = 1;
	}
	dropped = *is_report ? c->pending_dropped : 0;
	c->pending_dropped -= dropped;
	pthread_mutex_unlock(&c->mu);
	if (it == NULL)
		return NULL;
	buf = it->frame;
	*len = it->len;
	*records = it->records;
	free(it);
	if (dropped > 0) {
		/* Rare: re-encode with the count of what was lost before. */
		struct msg_err err;
		C4__Envelope *env = msg_unpack(buf + FRAME_HDR_LEN,
					       *len - FRAME_HDR_LEN, &err);
		uint8_t *nb = NULL;

		if (env != NULL) {
			env->telemetry->has_dropped_records = 1;
			env->telemetry->dropped_records += dropped;
			nb = msg_frame_new(env, len);
			msg_free(env);
		}
		if (nb == NULL) {
			pthread_mutex_lock(&c->mu);
			c->pending_dropped += dropped;
			pthread_mutex_unlock(&c->mu);
		} else {
			free(buf);
			buf = nb;
			*folded = dropped;
		}
	}
	return buf;
}

/*
 * Is c closing?  When it is, *by gets the deadline (CLOCK_MONOTONIC ns)
 * for sending what is queued.
 */
static int
transport_closing(struct c4client *c, uint64_t *by)
{
	int closing;

	pthread_mutex_lock(&c->mu);
	closing = c->closing;
	*by = c->close_by_ns;
	pthread_mutex_unlock(&c->mu);
	return closing;
}

/* Is the close deadline past (never, unless closing)? */
static int
transport_past_close(struct c4client *c)
{
	uint64_t by;

	return transport_closing(c, &by) && clock_ns(CLOCK_MONOTONIC) >= by;
}

/* Is nothing queued, control messages included? */
static int
transport_idle(struct c4client *c)
{
	int idle;

	pthread_mutex_lock(&c->mu);
	idle = c->head == NULL && c->ctrl == NULL;
	pthread_mutex_unlock(&c->mu);
	return idle;
}

/*
 * Sends everything pending (when closing, only until the deadline); -1
 * when the session broke.
 */
static int
transport_flush(struct c4client *c)
{
	for (;;) {
		uint64_t records, folded;
		int is_report;
		size_t len;
		uint8_t *buf;
		int rc;

		if (transport_past_close(c))
			return 0;
		buf = transport_next(c, &len, &records, &is_report, &folded);
		if (buf == NULL)
			return 0;
		/* The agent would close the session on a frame this big. */
		if (len > FRAME_HDR_LEN + (size_t)c->max_frame) {
			free(buf);
			pthread_mutex_lock(&c->mu);
			if (is_report) {
				c->st.reports_dropped++;
				c->st.records_dropped += records;
				c->pending_dropped += records + folded;
			}
			pthread_mutex_unlock(&c->mu);
			continue;
		}
		rc = net_send_all(c->fd, buf, len);
		free(buf);
		pthread_mutex_lock(&c->mu);
		if (rc < 0 && is_report) {
			c->st.reports_dropped++;
			c->st.records_dropped += records;
			/* The count it carried must travel in a later one. */
			c->pending_dropped += records + folded;
		} else if (is_report) {
			c->st.reports_sent++;
		}
		pthread_mutex_unlock(&c->mu);
		if (rc < 0)
			return -1;
	}
}

static void
transport_drain_wake(struct c4client *c)
{
	char buf[64];

	while (read(c->wake[0], buf, sizeof(buf)) > 0)
		;
}

/* Sleeps until woken or ms pass. */
static void
transport_sleep(struct c4client *c, uint64_t ms)
{
	struct pollfd p = {c->wake[0], POLLIN, 0};

	if (poll(&p, 1, (int)ms) > 0)
		transport_drain_wake(c);
}

/* The sender thread's timers, in CLOCK_MONOTONIC ms. */
struct transport_loop {
	uint64_t next_try;   /* the next connection attempt */
	uint64_t last_hb;    /* the last heartbeat sent */
	uint64_t last_heard; /* the last bytes from the agent */
	int close_tried;     /* closing made its one attempt to connect */
};

/*
 * While closing: 1 when the thread must stop (the deadline is past, or
 * there is no session and nothing to send or the one attempt at once
 * was made), else 0.
 */
static int
transport_close_done(struct c4client *c, struct transport_loop *l, uint64_t by)
{
	if (clock_ns(CLOCK_MONOTONIC) >= by)
		return 1;
	/*
	 * Without a session, closing makes one attempt at once so that a
	 * short-lived process still delivers what it queued; then it gives
	 * up.
	 */
	if (c->fd < 0 && (transport_idle(c) || l->close_tried))
		return 1;
	if (c->fd < 0) {
		l->close_tried = 1;
		l->next_try = 0;
	}
	return 0;
}

/*
 * Has a session, connecting when the backoff allows; 0 when there is
 * none yet (it slept or the attempt failed), 1 when there is one.
 */
static int
transport_session(struct c4client *c, struct transport_loop *l, uint64_t now)
{
	unsigned d = c->backoff_ms;

	if (c->fd >= 0)
		return 1;
	if (now < l->next_try) {
		transport_sleep(c, l->next_try - now);
		return 0;
	}
	if (transport_connect(c) < 0) {
		/* Exponential backoff, jittered into [d/2, d] so clients do
		 * not herd. */
		l->next_try =
			now + d / 2 + (unsigned)rand_r(&c->seed) % (d / 2 + 1);
		c->backoff_ms = d * 2 > C4CLIENT_BACKOFF_MAX_MS
					? C4CLIENT_BACKOFF_MAX_MS
					: d * 2;
		return 0;
	}
	c->backoff_ms = C4CLIENT_BACKOFF_MIN_MS;
	l->last_hb = l->last_heard = transport_now_ms();
	return 1;
}

/*
 * Sends a heartbeat when one is due and ends a session the agent left
 * silent too long; -1 when the session ended.
 */
static int
transport_beat(struct c4client *c, struct transport_loop *l, uint64_t now)
{
	if (now >= l->last_hb + c->hb_ms) {
		C4__Heartbeat hb = C4__HEARTBEAT__INIT;

		hb.has_sent_ns = 1;
		hb.sent_ns = now * 1000000u;
		if (transport_send_msg(c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb) <
		    0) {
			transport_disconnect(c);
			return -1;
		}
		l->last_hb = now;
	}
	if (now > l->last_heard + (uint64_t)C4CLIENT_SILENT_BEATS * c->hb_ms) {
		transport_set_error(c, "agent", "silent");
		transport_disconnect(c);
		return -1;
	}
	return 0;
}

/* Handles what the agent sent; ends the session when it must. */
static void
transport_read(struct c4client *c, struct transport_loop *l)
{
	int closed = 0;
	C4__Envelope *env = transport_recv(c, 0, &closed);

	if (env == NULL && !closed) {
		/* Bytes arrived but not yet a frame. */
		l->last_heard = transport_now_ms();
		return;
	}
	while (env != NULL) {
		int r = transport_handle(c, env);

		msg_free(env);
		l->last_heard = transport_now_ms();
		if (r < 0) {
			closed = 1;
			break;
		}
		env = transport_recv(c, 0, &closed);
	}
	if (closed)
		transport_disconnect(c);
}

void *
transport_run(void *arg)
{
	struct c4client *c = arg;
	struct transport_loop l = {0, 0, 0, 0};

	for (;;) {
		struct pollfd p[2];
		uint64_t now = transport_now_ms(), by;
		int closing = transport_closing(c, &by);
		int timeout;

		if (closing && transport_close_done(c, &l, by))
			break;
		if (!transport_session(c, &l, now))
			continue;
		transport_drain_wake(c);
		if (transport_flush(c) < 0) {
			transport_disconnect(c);
			continue;
		}
		if (closing && transport_idle(c)) {
			C4__Goodbye g = C4__GOODBYE__INIT;

			g.reason = (char *)"closing";
			transport_send_msg(c, C4__MSG_TYPE__MSG_GOODBYE, &g);
			break;
		}
		now = transport_now_ms();
		if (transport_beat(c, &l, now) < 0)
			continue;
		timeout = closing ? 10 : (int)(l.last_hb + c->hb_ms - now);
		p[0] = (struct pollfd){c->fd, POLLIN, 0};
		p[1] = (struct pollfd){c->wake[0], POLLIN, 0};
		if (poll(p, 2, timeout) > 0 && p[0].revents)
			transport_read(c, &l);
	}
	transport_disconnect(c);
	return NULL;
}
