/*
 * srv.c - accept, authenticate and serve framed sessions on a libevent loop.
 */
#define LOG_SUBSYS "srv"

#include "clock.h"
#include "srv.h"
#include "srv_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "arena.h"
#include "auth.h"
#include "c4_build.h"
#include "fnv.h"
#include "guard.h"
#include "log.h"
#include "net.h"
#include "srv_tls.h"

static void *
srv_pb_alloc(void *data, size_t size)
{
	return arena_alloc_raw(data, size);
}

/* Arena memory goes all at once, with arena_reset(). */
static void
srv_pb_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

/* What a session's credential proved: its token and its peer rules. */
static uint64_t
srv_secret_hash(const struct auth_credential *cred)
{
	return auth_hash(cred);
}

struct srv *
srv_new(struct event_base *base, const struct srv_params *p,
	const struct srv_ops *ops, void *arg)
{
	struct srv *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->base = base;
	s->p = *p;
	s->p.daemon = strdup(p->daemon);
	s->p.node = strdup(p->node ? p->node : "");
	s->p.job_id = p->job_id ? strdup(p->job_id) : NULL;
	if (s->p.daemon == NULL || s->p.node == NULL ||
	    (p->job_id != NULL && s->p.job_id == NULL)) {
		free((char *)s->p.daemon);
		free((char *)s->p.node);
		free((char *)s->p.job_id);
		free(s);
		return NULL;
	}
	s->ops = *ops;
	s->arg = arg;
	TAILQ_INIT(&s->conns);
	TAILQ_INIT(&s->unauth);
	s->guard = guard_new();
	if (s->guard == NULL) {
		free((char *)s->p.daemon);
		free((char *)s->p.node);
		free((char *)s->p.job_id);
		free(s);
		return NULL;
	}
	if (srv_tls_reload(s) < 0) {
		guard_free(s->guard);
		free((char *)s->p.daemon);
		free((char *)s->p.node);
		free((char *)s->p.job_id);
		free(s);
		return NULL;
	}
	arena_init(&s->decode);
	s->pb_alloc.alloc = srv_pb_alloc;
	s->pb_alloc.free = srv_pb_free;
	s->pb_alloc.allocator_data = &s->decode;
	/* Session ids differ across restarts: start from the clock. */
	s->next_session = clock_ns(CLOCK_REALTIME) << 8;
	clock_gettime(CLOCK_MONOTONIC, &s->started);
	return s;
}

/* Does the session's credential still exist, unchanged, in creds? */
static int
srv_cred_valid(const struct srv_conn *c, const struct cfg_list *creds)
{
	const struct auth_credential *cred = auth_find(creds, c->cred_name);

	return cred != NULL && srv_secret_hash(cred) == c->secret_hash &&
	       auth_allows(cred, (int)c->role, c->job);
}

size_t
srv_set_conf(struct srv *s, const struct srv_conf *conf,
	     const struct cfg_list *creds)
{
	struct srv_conn *c;
	size_t closed = 0;

	s->p.conf = conf;
	s->p.creds = creds;
	srv_tls_reload(s);
	TAILQ_FOREACH(c, &s->conns, entry)
	{
		if (c->state != SRV_READY)
			continue;
		if (!srv_cred_valid(c, creds)) {
			log_debug("%s: session %llu: credential '%s' revoked",
				  c->peer, (unsigned long long)c->session_id,
				  c->cred_name);
			s->stats.revoked++;
			closed++;
			srv_send_error(c, C4__ERROR_CODE__ERR_AUTH, 1, 0,
				       "credential revoked by reload");
			continue;
		}
		/* A new max_frame must be readable on sessions open. */
		bufferevent_setwatermark(c->bev, EV_READ, 0,
					 FRAME_HDR_LEN +
						 (size_t)conf->max_frame);
	}
	if (closed > 0)
		log_warnx("reload: closed %zu sessions whose credential was "
			  "removed or changed",
			  closed);
	return closed;
}

const struct srv_stats *
srv_get_stats(const struct srv *s)
{
	return &s->stats;
}

/* ---- sending ----------------------------------------------------------------
 */

/* Frames below this size are copied into the output buffer. */
#define SRV_COPY_MAX 4096

/* evbuffer cleanup of a frame from msg_frame_new(). */
static void
srv_frame_free(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

int
srv_send(struct srv_conn *c, C4__MsgType type, void *body, uint64_t reply_to)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	C4__Envelope env;
	uint8_t *buf;
	size_t n;
	int rc;

	if (c->state == SRV_CLOSING)
		return -1;
	msg_init_seq(&env, type, body, ++c->seq);
	if (reply_to != 0) {
		env.has_reply_to = 1;
		env.reply_to = reply_to;
	}
	buf = msg_frame_new(&env, &n);
	if (buf == NULL)
		return -1;
	if (srv_flow_over_cap(c, evbuffer_get_length(out), n) < 0) {
		free(buf);
		return -1;
	}
	/*
	 * A large frame is taken as it is (no second copy); a small one is
	 * copied into the buffer's chains, since a chain per frame costs far
	 * more than its bytes, which is all max_output* count.
	 */
	if (n < SRV_COPY_MAX) {
		rc = evbuffer_add(out, buf, n);
		free(buf);
	} else {
		rc = evbuffer_add_reference(out, buf, n, srv_frame_free, NULL);
		if (rc < 0)
			free(buf);
	}
	if (rc < 0)
		return -1;
	c->srv->stats.frames_out++;
	c->srv->stats.bytes_out += n;
	return 0;
}

static void
srv_linger_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	srv_conn_free(arg);
}

static void
srv_flushed_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	srv_conn_free(arg);
}

void
srv_conn_close(struct srv_conn *c, const char *why)
{
	struct timeval tv = {SRV_CLOSE_LINGER_MS / 1000,
			     (SRV_CLOSE_LINGER_MS % 1000) * 1000};

	if (c->state == SRV_CLOSING)
		return;
	log_debug("%s: closing session: %s", c->peer, why);
	c->state = SRV_CLOSING;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		/* Defer: the caller may still be using c on this stack. */
		event_del(c->timer);
		event_assign(c->timer, c->srv->base, -1, 0, srv_linger_cb, c);
		event_active(c->timer, 0, 0);
		return;
	}
	bufferevent_setcb(c->bev, NULL, srv_flushed_cb, NULL, c);
	event_del(c->timer);
	event_assign(c->timer, c->srv->base, -1, 0, srv_linger_cb, c);
	event_add(c->timer, &tv);
}

void
srv_send_error(struct srv_conn *c, C4__ErrorCode code, int fatal,
	       uint64_t ref_seq, const char *text)
{
	C4__Error e = C4__ERROR__INIT;

	e.has_code = 1;
	e.code = code;
	e.text = (char *)text;
	e.has_fatal = 1;
	e.fatal = fatal != 0;
	if (ref_seq != 0) {
		e.has_ref_seq = 1;
		e.ref_seq = ref_seq;
	}
	srv_send(c, C4__MSG_TYPE__MSG_ERROR, &e, ref_seq);
	if (fatal)
		srv_conn_close(c, text);
}

/* Counts a rejected input by its error code, logs, answers and closes. */
void
srv_conn_reject(struct srv_conn *c, const struct msg_err *err)
{
	struct srv_stats *st = &c->srv->stats;

	switch (err->code) {
	case C4__ERROR_CODE__ERR_TOO_LARGE:
		st->too_large++;
		break;
	case C4__ERROR_CODE__ERR_BAD_VERSION:
		st->bad_version++;
		break;
	case C4__ERROR_CODE__ERR_AUTH:
		st->auth_failed++;
		break;
	case C4__ERROR_CODE__ERR_ROLE:
		st->out_of_role++;
		break;
	case C4__ERROR_CODE__ERR_STATE:
		st->bad_state++;
		break;
	case C4__ERROR_CODE__ERR_LIMIT:
		break; /* counted where the limit is */
	default:
		st->malformed++;
		break;
	}
	if (c->unauth)
		srv_flow_warn(c->srv, c->src, "%s: %s; closing the connection",
			      c->peer, err->text);
	else
		log_warnx("%s: %s; closing the session", c->peer, err->text);
	srv_send_error(c, err->code, 1, 0, err->text);
}

int
srv_reply_counter(C4__AdminReply *r, const char *name, uint64_t value,
		  const char *help, int gauge)
{
	C4__Counter **v, *k;

	v = realloc(r->counters, (r->n_counters + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	r->counters = v;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -1;
	c4__counter__init(k);
	k->name = strdup(name);
	k->help = help ? strdup(help) : NULL;
	k->has_value = 1;
	k->value = value;
	k->has_gauge = 1;
	k->gauge = gauge != 0;
	v[r->n_counters++] = k;
	return 0;
}

static void
srv_reply_free(C4__AdminReply *r)
{
	for (size_t i = 0; i < r->n_counters; i++) {
		free(r->counters[i]->name);
		free(r->counters[i]->help);
		free(r->counters[i]);
	}
	free(r->counters);
	r->counters = NULL;
	r->n_counters = 0;
}

static void
srv_answer_status(struct srv_conn *c, const C4__Envelope *env)
{
	struct srv *s = c->srv;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	r.has_op = 1;
	r.op = C4__ADMIN_OP__ADMIN_STATUS;
	r.daemon = (char *)s->p.daemon;
	r.software_version = (char *)C4_VERSION;
	r.node_name = (char *)s->p.node;
	r.has_uptime_ms = 1;
	r.uptime_ms = (uint64_t)((now.tv_sec - s->started.tv_sec) * 1000 +
				 (now.tv_nsec - s->started.tv_nsec) / 1000000);
#define SRV_STAT_COUNTER(n, h) srv_reply_counter(&r, #n, s->stats.n, h, 0);
	SRV_COUNTERS(SRV_STAT_COUNTER)
#undef SRV_STAT_COUNTER
	srv_reply_counter(&r, "conns_active", s->stats.conns_active,
			  "connections open now", 1);
	srv_reply_counter(&r, "conns_unauth", s->stats.conns_unauth,
			  "connections awaiting their hello now", 1);
	srv_reply_counter(&r, "output_queued", s->stats.output_queued,
			  "bytes queued for all peers now", 1);
	srv_reply_counter(&r, "auth_sources", guard_sources(s->guard),
			  "addresses remembered for admission and throttling",
			  1);
	if (s->ops.on_status != NULL)
		s->ops.on_status(s, &r, s->arg);
	srv_send(c, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, env->seq);
	srv_reply_free(&r);
}

/* ---- the session state machine
 * ----------------------------------------------- */

/*
 * The credential a hello proves: by the session's verified client
 * certificate, by its token, or none; unix peers' ids are checked too.
 */
static const struct auth_credential *
srv_hello_cred(const struct srv_conn *c, const C4__Hello *h)
{
	struct auth_peer p = {NULL, c->has_ucred, c->uid, c->gid};

	if (c->ssl != NULL && c->tls_up)
		p.tls = c->ssl;
	return auth_match_peer(c->srv->p.creds, &p,
			       h->has_credential ? h->credential.data : NULL,
			       h->has_credential ? h->credential.len : 0);
}

static int
srv_handle_hello(struct srv_conn *c, const C4__Envelope *env,
		 struct msg_err *err)
{
	struct srv *s = c->srv;
	const C4__Hello *h = env->hello;
	const struct auth_credential *cred;
	C4__HelloReply r = C4__HELLO_REPLY__INIT;

	/*
	 * A hello always travels in a version-1 envelope; the peer's range
	 * (absent bounds mean 1) must include a version this side speaks.
	 */
	if ((h->has_min_version ? h->min_version : 1) > C4_PROTO_VERSION ||
	    (h->has_max_version ? h->max_version : 1) < C4_PROTO_VERSION) {
		err->code = C4__ERROR_CODE__ERR_BAD_VERSION;
		snprintf(err->text, sizeof(err->text),
			 "hello: protocol versions %u..%u not supported (this "
			 "side speaks %u)",
			 h->has_min_version ? h->min_version : 1,
			 h->has_max_version ? h->max_version : 1,
			 C4_PROTO_VERSION);
		return -1;
	}
	cred = srv_hello_cred(c, h);
	if (cred == NULL) {
		err->code = C4__ERROR_CODE__ERR_AUTH;
		snprintf(err->text, sizeof(err->text),
			 "hello from %s (%s): unknown credential",
			 h->node_name ? h->node_name : "?",
			 msg_role_name(h->role));
		return -1;
	}
	if (!auth_allows(cred, (int)h->role, h->job_id)) {
		err->code = C4__ERROR_CODE__ERR_AUTH;
		snprintf(err->text, sizeof(err->text),
			 "hello from %s: credential '%s' may not act as %s%s%s",
			 h->node_name ? h->node_name : "?", cred->name,
			 msg_role_name(h->role), h->job_id ? " for job " : "",
			 h->job_id ? h->job_id : "");
		return -1;
	}
	if (s->nauth >= (uint64_t)s->p.conf->max_connections) {
		s->stats.conns_refused++;
		err->code = C4__ERROR_CODE__ERR_LIMIT;
		snprintf(err->text, sizeof(err->text),
			 "hello refused: %llu sessions open (max_connections)",
			 (unsigned long long)s->nauth);
		return -1;
	}
	c->role = h->role;
	c->cred_name = strdup(cred->name);
	c->job = h->job_id ? strdup(h->job_id) : NULL;
	c->node = h->node_name ? strdup(h->node_name) : NULL;
	if (s->ops.on_hello != NULL && s->ops.on_hello(c, h, err, s->arg) < 0) {
		if (err->code == C4__ERROR_CODE__ERR_UNSPECIFIED)
			err->code = C4__ERROR_CODE__ERR_AUTH;
		return -1;
	}
	c->state = SRV_READY;
	c->session_id = ++s->next_session;
	c->secret_hash = srv_secret_hash(cred);
	event_del(c->timer);
	srv_flow_unauth_done(c);
	s->nauth++;
	bufferevent_setwatermark(c->bev, EV_READ, 0,
				 FRAME_HDR_LEN + (size_t)s->p.conf->max_frame);
	s->stats.hello_ok++;
	log_info("%s: session %llu: %s %s%s%s authenticated as '%s'", c->peer,
		 (unsigned long long)c->session_id, msg_role_name(c->role),
		 c->node ? c->node : "?", c->job ? " job " : "",
		 c->job ? c->job : "", cred->name);

	r.has_role = 1;
	r.role = s->p.role;
	r.daemon = (char *)s->p.daemon;
	r.software_version = (char *)C4_VERSION;
	r.has_session_id = 1;
	r.session_id = c->session_id;
	r.has_heartbeat_interval_ms = 1;
	r.heartbeat_interval_ms = (uint32_t)s->p.conf->heartbeat;
	r.has_max_frame = 1;
	r.max_frame = (uint32_t)s->p.conf->max_frame;
	r.has_server_time_ns = 1;
	r.server_time_ns = clock_ns(CLOCK_REALTIME);
	r.job_id = (char *)s->p.job_id;
	r.has_version = 1;
	r.version = C4_PROTO_VERSION;
	srv_send(c, C4__MSG_TYPE__MSG_HELLO_REPLY, &r, env->seq);
	return 0;
}

/* Handles one decoded envelope; returns -1 if the session is now closing. */
static int
srv_dispatch(struct srv_conn *c, const C4__Envelope *env)
{
	struct srv *s = c->srv;
	struct msg_err err = {C4__ERROR_CODE__ERR_UNSPECIFIED, ""};

	if (c->state == SRV_AWAIT_HELLO) {
		if (env->type != C4__MSG_TYPE__MSG_HELLO) {
			err.code = C4__ERROR_CODE__ERR_STATE;
			snprintf(err.text, sizeof(err.text), "%s before hello",
				 msg_type_name(env->type));
			srv_conn_reject(c, &err);
			return -1;
		}
		if (srv_handle_hello(c, env, &err) < 0) {
			srv_flow_hello_failed(c, &err);
			return -1;
		}
		return 0;
	}
	if (env->type == C4__MSG_TYPE__MSG_HELLO) {
		err.code = C4__ERROR_CODE__ERR_STATE;
		snprintf(err.text, sizeof(err.text),
			 "second hello on a session");
		srv_conn_reject(c, &err);
		return -1;
	}
	if (!msg_role_may_send(c->role, env->type) ||
	    msg_from_server_only(env->type)) {
		err.code = C4__ERROR_CODE__ERR_ROLE;
		snprintf(err.text, sizeof(err.text), "a %s may not send %s",
			 msg_role_name(c->role), msg_type_name(env->type));
		srv_conn_reject(c, &err);
		return -1;
	}
	switch (env->type) {
	case C4__MSG_TYPE__MSG_HEARTBEAT:
		if (!env->heartbeat->echo) {
			C4__Heartbeat hb = *env->heartbeat;

			hb.has_echo = 1;
			hb.echo = 1;
			s->stats.heartbeats++;
			srv_send(c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb, env->seq);
		}
		return 0;
	case C4__MSG_TYPE__MSG_GOODBYE:
		srv_conn_close(c, "goodbye");
		return -1;
	case C4__MSG_TYPE__MSG_ERROR:
		log_warnx("%s: peer reports error %d: %s", c->peer,
			  env->error->code,
			  env->error->text ? env->error->text : "");
		if (env->error->fatal) {
			srv_conn_close(c, "peer error");
			return -1;
		}
		return 0;
	case C4__MSG_TYPE__MSG_ADMIN_REQUEST:
		if (env->admin_request->op == C4__ADMIN_OP__ADMIN_STATUS) {
			srv_answer_status(c, env);
			return 0;
		}
		break;
	default:
		break;
	}
	if (s->ops.on_message == NULL ||
	    s->ops.on_message(c, env, &err, s->arg) < 0) {
		if (c->state == SRV_CLOSING)
			return -1;
		if (err.code == C4__ERROR_CODE__ERR_UNSPECIFIED) {
			err.code = C4__ERROR_CODE__ERR_INVALID;
			snprintf(err.text, sizeof(err.text),
				 "%s is not served by %s",
				 msg_type_name(env->type), s->p.daemon);
		}
		s->stats.invalid++;
		log_info("%s: refused %s: %s", c->peer,
			 msg_type_name(env->type), err.text);
		srv_send_error(c, err.code, 0, env->seq, err.text);
	}
	return c->state == SRV_CLOSING ? -1 : 0;
}

/* Releases a decoded envelope, by arena reset when decoding used one. */
static void
srv_release(struct srv *s, C4__Envelope *env)
{
	if (s->p.arena_decode)
		arena_reset(&s->decode);
	else
		msg_free(env);
}

static void
srv_more_cb(evutil_socket_t fd, short what, void *arg)
{
	struct srv_conn *c = arg;

	(void)fd;
	(void)what;
	if (c->paused) {
		if (srv_flow_full(c))
			return;
		c->paused = 0;
		c->srv->npaused--;
		bufferevent_enable(c->bev, EV_READ);
	}
	srv_conn_read_cb(c->bev, c);
}

static void
srv_frame_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct srv_conn *c = arg;

	(void)fd;
	(void)what;
	c->srv->stats.frame_timeout++;
	log_warnx("%s: frame not completed within %lld ms; closing", c->peer,
		  (long long)c->srv->p.conf->frame_timeout);
	srv_send_error(c, C4__ERROR_CODE__ERR_TIMEOUT, 1, 0,
		       "frame not completed in time");
}

/*
 * Decodes and dispatches the frame at the head of in (len bytes of body
 * are there).  Returns -1 when the session is now closing.
 */
static int
srv_one_frame(struct srv_conn *c, struct evbuffer *in, uint32_t len)
{
	struct srv *s = c->srv;
	struct msg_err err = {C4__ERROR_CODE__ERR_UNSPECIFIED, ""};
	C4__Envelope *env;
	uint8_t *body;
	int rc;

	body = evbuffer_pullup(in, (ev_ssize_t)(FRAME_HDR_LEN + len));
	env = msg_unpack_alloc(body + FRAME_HDR_LEN, len, &err,
			       s->p.arena_decode ? &s->pb_alloc : NULL);
	evbuffer_drain(in, FRAME_HDR_LEN + len);
	s->stats.frames_in++;
	s->stats.bytes_in += FRAME_HDR_LEN + len;
	if (env == NULL) {
		/* A failed decode may have left arena memory. */
		if (s->p.arena_decode)
			arena_reset(&s->decode);
		srv_conn_reject(c, &err);
		return -1;
	}
	rc = srv_dispatch(c, env);
	srv_release(s, env);
	return rc;
}

/*
 * Drains complete frames, at most FRAME_PER_CALLBACK per call so that one
 * busy peer cannot starve the others; the rest is handled on the next loop
 * turn.  Before the hello a frame may be at most SRV_HELLO_FRAME_MAX; a
 * session whose output is over its low mark stops here until it drains.
 */
void
srv_conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct srv_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint32_t max = (uint32_t)c->srv->p.conf->max_frame;
	unsigned handled = 0;

	if (c->state == SRV_AWAIT_HELLO && max > SRV_HELLO_FRAME_MAX)
		max = SRV_HELLO_FRAME_MAX;
	while (c->state == SRV_AWAIT_HELLO || c->state == SRV_READY) {
		size_t avail = evbuffer_get_length(in);
		uint8_t hdr[FRAME_HDR_LEN];
		struct msg_err err = {C4__ERROR_CODE__ERR_UNSPECIFIED, ""};
		uint32_t len = 0;

		if (c->state == SRV_READY && srv_flow_full(c)) {
			srv_flow_pause(c);
			return;
		}
		if (handled == FRAME_PER_CALLBACK) {
			if (avail >= FRAME_HDR_LEN)
				event_active(c->more_ev, 0, 0);
			return;
		}
		if (avail < FRAME_HDR_LEN) {
			srv_flow_deadline(c, avail, handled);
			return;
		}
		evbuffer_copyout(in, hdr, FRAME_HDR_LEN);
		if (frame_peek(hdr, FRAME_HDR_LEN, max, &len) ==
		    FRAME_TOO_BIG) {
			err.code = C4__ERROR_CODE__ERR_TOO_LARGE;
			snprintf(err.text, sizeof(err.text),
				 "frame of %u bytes above max_frame %u", len,
				 max);
			srv_conn_reject(c, &err);
			return;
		}
		if (avail < FRAME_HDR_LEN + (size_t)len) {
			srv_flow_deadline(c, avail, handled);
			return;
		}
		if (c->state == SRV_AWAIT_HELLO && !srv_flow_hello_turn(c))
			return;
		handled++;
		if (srv_one_frame(c, in, len) < 0)
			return;
		if (c->state == SRV_READY)
			max = (uint32_t)c->srv->p.conf->max_frame;
	}
}

static void
srv_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct srv_conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		c->tls_up = 1; /* the TLS handshake completed */
		return;
	}
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_WRITING)) {
		/* Its replies could not be written for idle_timeout. */
		c->srv->stats.output_stalled++;
		log_warnx("%s: read none of its %zu queued bytes for %lld ms; "
			  "closing",
			  c->peer, c->out_len,
			  (long long)c->srv->p.conf->idle_timeout);
		srv_conn_free(c);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		c->srv->stats.idle_timeout++;
		log_warnx("%s: silent for %lld ms; closing", c->peer,
			  (long long)c->srv->p.conf->idle_timeout);
		srv_send_error(c, C4__ERROR_CODE__ERR_TIMEOUT, 1, 0,
			       "idle timeout");
		return;
	}
	if (c->ssl != NULL && !c->tls_up)
		srv_tls_failed(c);
	else if (what & BEV_EVENT_ERROR)
		log_debug("%s: %s", c->peer,
			  evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	srv_conn_free(c);
}

static void
srv_hello_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct srv_conn *c = arg;

	(void)fd;
	(void)what;
	c->srv->stats.hello_timeout++;
	srv_flow_warn(c->srv, c->src, "%s: no hello within %lld ms; closing",
		      c->peer, (long long)c->srv->p.conf->hello_timeout);
	srv_send_error(c, C4__ERROR_CODE__ERR_TIMEOUT, 1, 0,
		       "no hello in time");
}

void
srv_conn_free(struct srv_conn *c)
{
	struct srv *s = c->srv;

	if (c->state == SRV_READY || c->state == SRV_CLOSING) {
		if (s->ops.on_close != NULL && c->session_id != 0)
			s->ops.on_close(c, s->arg);
	}
	if (c->session_id != 0)
		s->nauth--;
	if (c->paused)
		s->npaused--;
	srv_flow_unauth_done(c);
	TAILQ_REMOVE(&s->conns, c, entry);
	s->stats.conns_active--;
	evbuffer_remove_cb(bufferevent_get_output(c->bev), srv_flow_out_cb, c);
	s->stats.output_queued -= c->out_len;
	bufferevent_free(c->bev);
	event_free(c->timer);
	event_free(c->more_ev);
	event_free(c->frame_ev);
	free(c->job);
	free(c->node);
	free(c->cred_name);
	free(c);
}

static struct srv_conn *
srv_conn_new(struct srv *s, evutil_socket_t fd, int family, uint64_t src,
	     const char *peer)
{
	struct srv_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->srv = s;
	c->src = src;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->bev = srv_tls_bev_new(s, fd, family);
	if (c->bev != NULL && s->tls_ctx != NULL && family != AF_UNIX)
		c->ssl = bufferevent_openssl_get_ssl(c->bev);
	c->timer = evtimer_new(s->base, srv_hello_timeout_cb, c);
	c->more_ev = event_new(s->base, -1, 0, srv_more_cb, c);
	c->frame_ev = evtimer_new(s->base, srv_frame_timeout_cb, c);
	if (c->bev == NULL || c->timer == NULL || c->more_ev == NULL ||
	    c->frame_ev == NULL ||
	    evbuffer_add_cb(bufferevent_get_output(c->bev), srv_flow_out_cb,
			    c) == NULL) {
		if (c->bev)
			bufferevent_free(c->bev);
		else
			close(fd);
		if (c->timer)
			event_free(c->timer);
		if (c->more_ev)
			event_free(c->more_ev);
		if (c->frame_ev)
			event_free(c->frame_ev);
		free(c);
		return NULL;
	}
	return c;
}

static void
srv_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
	      int salen, void *arg)
{
	struct srv *s = arg;
	struct srv_conn *c;
	struct timeval hello, idle;
	char peer[SRV_PEER_MAX];
	uint64_t src = guard_key(sa, (socklen_t)salen);
	int one = 1;

	(void)l;
	if (sa->sa_family == AF_UNIX)
		snprintf(peer, sizeof(peer), "unix-peer");
	else
		net_sockaddr_format(sa, (socklen_t)salen, peer, sizeof(peer));
	if (srv_flow_admit(s, src, peer) < 0) {
		close(fd);
		return;
	}
	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = srv_conn_new(s, fd, sa->sa_family, src, peer);
	if (c == NULL) {
		guard_done(s->guard, src);
		return;
	}
	if (sa->sa_family == AF_UNIX) {
		struct ucred uc;
		socklen_t ulen = sizeof(uc);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ulen) == 0) {
			c->has_ucred = 1;
			c->uid = uc.uid;
			c->gid = uc.gid;
		}
	}
	TAILQ_INSERT_TAIL(&s->conns, c, entry);
	TAILQ_INSERT_TAIL(&s->unauth, c, uentry);
	c->unauth = 1;
	s->stats.conns_accepted++;
	s->stats.conns_active++;
	s->stats.conns_unauth++;
	/* Before the hello, read no more than a hello may be. */
	bufferevent_setwatermark(c->bev, EV_READ, 0,
				 FRAME_HDR_LEN + SRV_HELLO_FRAME_MAX);
	bufferevent_setcb(c->bev, srv_conn_read_cb, NULL, srv_event_cb, c);
	hello = srv_flow_tv(s->p.conf->hello_timeout);
	idle = srv_flow_tv(s->p.conf->idle_timeout);
	/* Idle: nothing read; stalled: queued replies not taken. */
	bufferevent_set_timeouts(c->bev, &idle, &idle);
	evtimer_add(c->timer, &hello);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	log_debug("%s: connected", c->peer);
}

static void
srv_accept_error_cb(struct evconnlistener *l, void *arg)
{
	(void)l;
	(void)arg;
	/* EMFILE and friends: keep listening; the next accept may work. */
	log_warn("accept");
}

int
srv_listen(struct srv *s, const char *addr, unsigned mode, char *bound,
	   size_t boundlen)
{
	struct evconnlistener *l;
	struct net_addr a;
	char err[256];
	int fd;

	if (s->nlisteners == SRV_LISTENERS_MAX) {
		log_warnx("%s: too many listeners", addr);
		return -1;
	}
	if (net_addr_parse(addr, &a, err, sizeof(err)) < 0) {
		log_warnx("%s: %s", addr, err);
		return -1;
	}
	fd = net_listen(&a, 128, mode, bound, boundlen, err, sizeof(err));
	if (fd < 0) {
		log_warnx("listen %s: %s", addr, err);
		return -1;
	}
	l = evconnlistener_new(s->base, srv_accept_cb, s,
			       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
			       -1, fd);
	if (l == NULL) {
		close(fd);
		return -1;
	}
	evconnlistener_set_error_cb(l, srv_accept_error_cb);
	if (a.family != AF_UNIX && s->p.conf->insecure)
		srv_tls_warn_plain(addr, s->tls_ctx != NULL, "listen");
	else if (a.family != AF_UNIX && s->tls_ctx != NULL)
		log_info("listen %s: TLS 1.3%s", addr,
			 s->p.conf->tls.ca != NULL
				 ? ", client certificates required"
				 : "");
	s->unix_paths[s->nlisteners] =
		a.family == AF_UNIX ? strdup(a.path) : NULL;
	s->listeners[s->nlisteners++] = l;
	return 0;
}

void
srv_free(struct srv *s)
{
	struct srv_conn *c;

	if (s == NULL)
		return;
	while ((c = TAILQ_FIRST(&s->conns)) != NULL)
		srv_conn_free(c);
	for (size_t i = 0; i < s->nlisteners; i++) {
		evconnlistener_free(s->listeners[i]);
		if (s->unix_paths[i] != NULL) {
			unlink(s->unix_paths[i]);
			free(s->unix_paths[i]);
		}
	}
	arena_free(&s->decode);
	guard_free(s->guard);
	SSL_CTX_free(s->tls_ctx);
	free((char *)s->p.daemon);
	free((char *)s->p.node);
	free((char *)s->p.job_id);
	free(s);
}

C4__Role
srv_conn_role(const struct srv_conn *c)
{
	return c->role;
}

const char *
srv_conn_cred(const struct srv_conn *c)
{
	return c->session_id != 0 ? c->cred_name : NULL;
}

const char *
srv_conn_job(const struct srv_conn *c)
{
	return c->job;
}

const char *
srv_conn_node(const struct srv_conn *c)
{
	return c->node;
}

void *
srv_conn_get_data(const struct srv_conn *c)
{
	return c->data;
}

void
srv_conn_set_data(struct srv_conn *c, void *data)
{
	c->data = data;
}
