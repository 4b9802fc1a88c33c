/*
 * upstream.c - the agent's session to one master (a job's c4d-master, or
 * the c4p-master when the session has no job): non-blocking connect,
 * hello as an agent, heartbeats at the master's interval, replies read and
 * validated, reconnection with jittered exponential backoff, and a FIFO of
 * batch frames bounded in bytes that holds what the master cannot take.
 */
#define LOG_SUBSYS "upstream"

#include "clock.h"
#include "agent.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <openssl/err.h>

#include "hello.h"
#include "log.h"
#include "net.h"
#include "srv_tls.h"

enum upstream_state {
	UPSTREAM_WAIT,	     /* no session; the retry timer runs */
	UPSTREAM_CONNECTING, /* TCP (or unix) connect in progress */
	UPSTREAM_HELLO,	     /* hello sent, reply awaited */
	UPSTREAM_READY,
};

struct upstream_frame {
	STAILQ_ENTRY(upstream_frame) entry;
	uint8_t *buf;
	size_t len;
	uint64_t records;
	uint64_t carried; /* its dropped_records */
};

struct upstream {
	struct event_base *base;
	struct evdns_base *dns;
	char *job, *address, *secret, *node;
	struct net_addr addr;
	struct bufferevent *bev;
	struct event *timer; /* retry, or hello timeout */
	struct event *hb;
	enum upstream_state state;
	unsigned backoff_ms;
	unsigned seed;
	uint32_t max_frame, hb_ms;
	uint64_t seq;
	STAILQ_HEAD(, upstream_frame) fifo;
	size_t limit;
	uint64_t pending_dropped;
	upstream_ready_fn ready;
	void *arg;
	upstream_msg_fn on_msg;
	void *msg_arg;
	struct upstream_stats st;
	SSL_CTX *tls; /* TLS 1.3 to the master, or NULL (plaintext) */
};

static void upstream_connect(struct upstream *u);

/* The job in log lines: the c4p-master's session has none. */
static const char *
upstream_job(const struct upstream *u)
{
	return u->job != NULL ? u->job : "-";
}

static void
upstream_timer_ms(struct event *ev, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_add(ev, &tv);
}

/* Closes the session (if any) and schedules the next attempt. */
static void
upstream_down(struct upstream *u, const char *why)
{
	unsigned d = u->backoff_ms;

	if (u->state == UPSTREAM_READY)
		log_warnx("master %s (job %s): session lost: %s", u->address,
			  upstream_job(u), why);
	else
		log_debug("master %s (job %s): no session: %s", u->address,
			  upstream_job(u), why);
	if (u->state != UPSTREAM_READY)
		u->st.connect_failures++;
	if (u->bev != NULL) {
		bufferevent_free(u->bev);
		u->bev = NULL;
	}
	event_del(u->hb);
	event_del(u->timer);
	u->state = UPSTREAM_WAIT;
	u->st.connected = 0;
	/* Jitter into [d/2, d] so that agents do not reconnect in step. */
	upstream_timer_ms(u->timer,
			  d / 2 + (unsigned)rand_r(&u->seed) % (d / 2 + 1));
	u->backoff_ms = d * 2 > UPSTREAM_BACKOFF_MAX_MS
				? UPSTREAM_BACKOFF_MAX_MS
				: d * 2;
}

/* evbuffer cleanup of a frame from msg_frame_new(). */
static void
upstream_buf_free(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

static int
upstream_write(struct upstream *u, C4__MsgType type, void *body)
{
	C4__Envelope env;
	uint8_t *buf;
	size_t n;
	int rc;

	msg_init_seq(&env, type, body, ++u->seq);
	buf = msg_frame_new(&env, &n);
	if (buf == NULL)
		return -1;
	/* the evbuffer takes the frame as it is: no second copy */
	rc = evbuffer_add_reference(bufferevent_get_output(u->bev), buf, n,
				    upstream_buf_free, NULL);
	if (rc < 0)
		free(buf);
	return rc;
}

static void
upstream_frame_free(struct upstream_frame *f)
{
	free(f->buf);
	free(f);
}

/* Drops the oldest batch of the FIFO, counting its records. */
static void
upstream_drop_head(struct upstream *u)
{
	struct upstream_frame *f = STAILQ_FIRST(&u->fifo);

	STAILQ_REMOVE_HEAD(&u->fifo, entry);
	u->st.frames_buffered--;
	u->st.bytes_buffered -= f->len;
	u->st.frames_dropped++;
	u->st.records_dropped += f->records;
	u->pending_dropped += f->records + f->carried;
	upstream_frame_free(f);
}

/* Hands FIFO frames to the socket while it takes them (UPSTREAM_OUT_HIGH). */
static void
upstream_pump(struct upstream *u)
{
	struct evbuffer *out;
	struct upstream_frame *f;

	if (u->state != UPSTREAM_READY)
		return;
	out = bufferevent_get_output(u->bev);
	while ((f = STAILQ_FIRST(&u->fifo)) != NULL &&
	       evbuffer_get_length(out) < UPSTREAM_OUT_HIGH) {
		if (f->len > FRAME_HDR_LEN + (size_t)u->max_frame) {
			log_warnx("master %s: a batch of %zu bytes is above "
				  "its max_frame %u; dropped",
				  u->address, f->len, u->max_frame);
			upstream_drop_head(u);
			continue;
		}
		if (evbuffer_add(out, f->buf, f->len) < 0)
			return;
		STAILQ_REMOVE_HEAD(&u->fifo, entry);
		u->st.frames_buffered--;
		u->st.bytes_buffered -= f->len;
		u->st.frames_forwarded++;
		u->st.bytes_forwarded += f->len;
		upstream_frame_free(f);
	}
}

static void
upstream_hb_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;

	(void)fd;
	(void)what;
	hb.has_sent_ns = 1;
	hb.sent_ns = clock_ns(CLOCK_MONOTONIC);
	if (u->state == UPSTREAM_READY)
		upstream_write(u, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
}

/* The master's hello reply: the session is up. */
static int
upstream_hello_reply(struct upstream *u, const C4__HelloReply *r)
{
	struct timeval hb, idle;

	if (r->has_role && r->role != C4__ROLE__ROLE_MASTER) {
		log_warnx("master %s: answered as %s, not a master", u->address,
			  msg_role_name(r->role));
		return -1;
	}
	if (u->job != NULL && r->job_id != NULL &&
	    strcmp(r->job_id, u->job) != 0) {
		log_warnx("master %s serves job %s, not %s", u->address,
			  r->job_id, u->job);
		return -1;
	}
	u->max_frame = hello_reply_max_frame(r);
	u->hb_ms = r->has_heartbeat_interval_ms && r->heartbeat_interval_ms
			   ? r->heartbeat_interval_ms
			   : 5000;
	event_del(u->timer);
	u->state = UPSTREAM_READY;
	u->backoff_ms = UPSTREAM_BACKOFF_MIN_MS;
	u->st.connected = 1;
	if (u->st.sessions++ > 0)
		u->st.reconnects++;
	log_info("master %s (job %s): session %llu up", u->address,
		 upstream_job(u), (unsigned long long)r->session_id);
	hb.tv_sec = u->hb_ms / 1000;
	hb.tv_usec = (u->hb_ms % 1000) * 1000;
	event_add(u->hb, &hb);
	/* A master that answers no heartbeat for a while is gone. */
	idle.tv_sec = (u->hb_ms * UPSTREAM_SILENT_BEATS) / 1000;
	idle.tv_usec = ((u->hb_ms * UPSTREAM_SILENT_BEATS) % 1000) * 1000;
	bufferevent_set_timeouts(u->bev, &idle, NULL);
	/* Registrations first, then what was buffered, in order. */
	if (u->ready != NULL)
		u->ready(u, u->arg);
	upstream_pump(u);
	return 0;
}

/* One message from the master; -1 when the session must end. */
static int
upstream_handle(struct upstream *u, const C4__Envelope *env)
{
	switch (env->type) {
	case C4__MSG_TYPE__MSG_HELLO_REPLY:
		if (u->state != UPSTREAM_HELLO) {
			log_warnx("master %s: a second hello reply",
				  u->address);
			return -1;
		}
		return upstream_hello_reply(u, env->hello_reply);
	case C4__MSG_TYPE__MSG_ERROR:
		u->st.errors++;
		log_warnx("master %s (job %s): error %d: %s", u->address,
			  upstream_job(u), env->error->code,
			  env->error->text ? env->error->text : "");
		return env->error->fatal ? -1 : 0;
	case C4__MSG_TYPE__MSG_GOODBYE:
		return -1;
	default:
		if (u->state != UPSTREAM_READY) {
			log_warnx("master %s: %s before the hello reply",
				  u->address, msg_type_name(env->type));
			return -1;
		}
		if (env->type != C4__MSG_TYPE__MSG_HEARTBEAT &&
		    u->on_msg != NULL)
			return u->on_msg(u, env, u->msg_arg);
		return 0; /* heartbeat echoes; events are not for agents */
	}
}

static void
upstream_read_cb(struct bufferevent *bev, void *arg)
{
	struct upstream *u = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (unsigned handled = 0; handled < FRAME_PER_CALLBACK; handled++) {
		uint8_t hdr[FRAME_HDR_LEN], *body;
		struct msg_err err;
		C4__Envelope *env;
		uint32_t len;
		int rc;

		if (evbuffer_get_length(in) < FRAME_HDR_LEN)
			return;
		evbuffer_copyout(in, hdr, FRAME_HDR_LEN);
		if (frame_peek(hdr, FRAME_HDR_LEN, UPSTREAM_READ_MAX, &len) ==
		    FRAME_TOO_BIG) {
			log_warnx("master %s: frame of %u bytes; closing",
				  u->address, len);
			upstream_down(u, "oversized frame");
			return;
		}
		if (evbuffer_get_length(in) < FRAME_HDR_LEN + (size_t)len)
			return;
		body = evbuffer_pullup(in, (ev_ssize_t)(FRAME_HDR_LEN + len));
		env = msg_unpack(body + FRAME_HDR_LEN, len, &err);
		evbuffer_drain(in, FRAME_HDR_LEN + len);
		if (env == NULL) {
			log_warnx("master %s: %s; closing", u->address,
				  err.text);
			upstream_down(u, "malformed message");
			return;
		}
		rc = upstream_handle(u, env);
		msg_free(env);
		if (rc < 0) {
			upstream_down(u, "closed after the master's answer");
			return;
		}
	}
	/* More than FRAME_PER_CALLBACK from a master: serve the rest later. */
	if (evbuffer_get_length(in) >= FRAME_HDR_LEN)
		bufferevent_trigger(bev, EV_READ, BEV_TRIG_DEFER_CALLBACKS);
}

static void
upstream_write_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	upstream_pump(arg);
}

/* Why the session failed: the TLS reason if there is one, else errno's. */
static const char *
upstream_error(struct upstream *u)
{
	static char why[300];
	unsigned long e, last = 0;
	SSL *ssl = u->tls != NULL ? bufferevent_openssl_get_ssl(u->bev) : NULL;
	long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;

	while (ssl != NULL && (e = bufferevent_get_openssl_error(u->bev)) != 0)
		last = e;
	ERR_clear_error();
	if (v != X509_V_OK) {
		snprintf(why, sizeof(why), "TLS: master certificate: %s",
			 X509_verify_cert_error_string(v));
		return why;
	}
	if (last != 0) {
		ERR_error_string_n(last, why, sizeof(why));
		return why;
	}
	return evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR());
}

static void
upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream *u = arg;
	C4__Hello h;
	struct timeval tv = {UPSTREAM_HELLO_TIMEOUT_MS / 1000,
			     (UPSTREAM_HELLO_TIMEOUT_MS % 1000) * 1000};

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		hello_init(&h, C4__ROLE__ROLE_AGENT, u->job, u->node, u->secret,
			   (uint32_t)getpid());
		if (upstream_write(u, C4__MSG_TYPE__MSG_HELLO, &h) < 0) {
			upstream_down(u, "cannot queue the hello");
			return;
		}
		u->state = UPSTREAM_HELLO;
		/* The hello reply must come within the bound. */
		event_del(u->timer);
		event_add(u->timer, &tv);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		upstream_down(u, "master silent");
	else if (what & BEV_EVENT_EOF)
		upstream_down(u, "closed by the master");
	else
		upstream_down(u, upstream_error(u));
}

static void
upstream_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	(void)fd;
	(void)what;
	if (u->state == UPSTREAM_WAIT)
		upstream_connect(u);
	else if (u->state != UPSTREAM_READY)
		upstream_down(u, "no hello reply in time");
}

/* A bufferevent for the next session: TLS over TCP when configured. */
static struct bufferevent *
upstream_bev_new(struct upstream *u)
{
	char err[512];
	SSL *ssl;

	if (u->tls == NULL || u->addr.family == AF_UNIX)
		return bufferevent_socket_new(u->base, -1,
					      BEV_OPT_CLOSE_ON_FREE);
	ssl = tls_client_new(u->tls, u->addr.host, err, sizeof(err));
	if (ssl == NULL) {
		log_warnx("master %s: %s", u->address, err);
		return NULL;
	}
	return srv_tls_bev(u->base, -1, ssl, 0);
}

/* Starts a non-blocking connect; failures come back through upstream_down(). */
static void
upstream_connect(struct upstream *u)
{
	int rc;

	u->bev = upstream_bev_new(u);
	if (u->bev == NULL) {
		upstream_down(u, "out of memory");
		return;
	}
	bufferevent_setcb(u->bev, upstream_read_cb, upstream_write_cb,
			  upstream_event_cb, u);
	bufferevent_setwatermark(u->bev, EV_WRITE, UPSTREAM_OUT_HIGH / 2, 0);
	bufferevent_enable(u->bev, EV_READ | EV_WRITE);
	u->state = UPSTREAM_CONNECTING;
	/* Connecting and resolving share the hello's bound. */
	upstream_timer_ms(u->timer, UPSTREAM_HELLO_TIMEOUT_MS);
	if (u->addr.family == AF_UNIX) {
		struct sockaddr_un sa;

		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		memcpy(sa.sun_path, u->addr.path, sizeof(u->addr.path));
		rc = bufferevent_socket_connect(u->bev, (struct sockaddr *)&sa,
						sizeof(sa));
	} else {
		rc = bufferevent_socket_connect_hostname(
			u->bev, u->dns, AF_UNSPEC, u->addr.host, u->addr.port);
	}
	/* An immediate failure has already called upstream_event_cb
	 * (upstream_down). */
	if (rc < 0 && u->state == UPSTREAM_CONNECTING)
		upstream_down(u, "connect failed");
}

struct upstream *
upstream_new(struct event_base *base, struct evdns_base *dns,
	     const struct agent_master_conf *m, const char *node,
	     size_t buffer_limit, upstream_ready_fn ready, void *arg)
{
	struct upstream *u = calloc(1, sizeof(*u));
	char err[256];

	if (u == NULL)
		return NULL;
	u->base = base;
	u->dns = dns;
	STAILQ_INIT(&u->fifo);
	u->job = m->job != NULL ? strdup(m->job) : NULL;
	u->address = strdup(m->address);
	u->secret = m->secret != NULL ? strdup(m->secret) : NULL;
	u->node = strdup(node);
	u->limit = buffer_limit;
	u->ready = ready;
	u->arg = arg;
	u->backoff_ms = UPSTREAM_BACKOFF_MIN_MS;
	u->max_frame = FRAME_MAX_DEFAULT;
	u->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)u;
	u->timer = evtimer_new(base, upstream_timer_cb, u);
	u->hb = event_new(base, -1, EV_PERSIST, upstream_hb_cb, u);
	if ((m->job != NULL && u->job == NULL) || u->address == NULL ||
	    (m->secret != NULL && u->secret == NULL) || u->node == NULL ||
	    u->timer == NULL || u->hb == NULL ||
	    net_addr_parse(m->address, &u->addr, err, sizeof(err)) < 0) {
		upstream_free(u);
		return NULL;
	}
	if (tls_enabled(&m->tls, 0) && u->addr.family != AF_UNIX) {
		u->tls = tls_ctx_new(&m->tls, 0, err, sizeof(err));
		if (u->tls == NULL) {
			log_warnx("master %s: tls: %s", m->address, err);
			upstream_free(u);
			return NULL;
		}
	} else if (m->insecure) {
		srv_tls_warn_plain(m->address, 0, "master");
	}
	upstream_connect(u);
	return u;
}

void
upstream_free(struct upstream *u)
{
	struct upstream_frame *f;

	if (u == NULL)
		return;
	if (u->bev != NULL)
		bufferevent_free(u->bev);
	if (u->timer != NULL)
		event_free(u->timer);
	if (u->hb != NULL)
		event_free(u->hb);
	while ((f = STAILQ_FIRST(&u->fifo)) != NULL) {
		STAILQ_REMOVE_HEAD(&u->fifo, entry);
		upstream_frame_free(f);
	}
	SSL_CTX_free(u->tls);
	free(u->job);
	free(u->address);
	free(u->secret);
	free(u->node);
	free(u);
}

void
upstream_send_batch(struct upstream *u, uint8_t *frame, size_t len,
		    uint64_t records, uint64_t carried)
{
	struct upstream_frame *f;

	if (len > u->limit) {
		log_warnx("master %s: a batch of %zu bytes is above "
			  "buffer_limit; dropped",
			  u->address, len);
		u->st.frames_dropped++;
		u->st.records_dropped += records;
		u->pending_dropped += records + carried;
		free(frame);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		u->st.frames_dropped++;
		u->st.records_dropped += records;
		u->pending_dropped += records + carried;
		free(frame);
		return;
	}
	while (!STAILQ_EMPTY(&u->fifo) && u->st.bytes_buffered + len > u->limit)
		upstream_drop_head(u);
	f->buf = frame;
	f->len = len;
	f->records = records;
	f->carried = carried;
	STAILQ_INSERT_TAIL(&u->fifo, f, entry);
	u->st.frames_buffered++;
	u->st.bytes_buffered += len;
	upstream_pump(u);
}

void
upstream_send_now(struct upstream *u, const uint8_t *frame, size_t len)
{
	if (u->state != UPSTREAM_READY)
		return;
	evbuffer_add(bufferevent_get_output(u->bev), frame, len);
}

uint64_t
upstream_take_dropped(struct upstream *u)
{
	uint64_t n = u->pending_dropped;

	u->pending_dropped = 0;
	return n;
}

void
upstream_set_handler(struct upstream *u, upstream_msg_fn fn, void *arg)
{
	u->on_msg = fn;
	u->msg_arg = arg;
}

int
upstream_send(struct upstream *u, C4__MsgType type, void *body)
{
	if (u->state != UPSTREAM_READY)
		return -1;
	return upstream_write(u, type, body);
}

int
upstream_is_ready(const struct upstream *u)
{
	return u->state == UPSTREAM_READY;
}

const char *
upstream_address(const struct upstream *u)
{
	return u->address;
}

const struct upstream_stats *
upstream_get_stats(const struct upstream *u)
{
	return &u->st;
}
