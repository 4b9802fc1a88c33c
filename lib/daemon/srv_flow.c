/*
 * srv_flow.c - flow control of the server core: admission of connections
 * awaiting their hello, output accounting and back-pressure, frame
 * deadlines and rate-limited warnings about strangers.
 */
#define LOG_SUBSYS "srv"

/* Waiting connections looked at for one eviction. */
#define SRV_EVICT_SCAN 64

#include "srv_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>

#include "clock.h"
#include "log.h"

int64_t
srv_flow_now(void)
{
	return (int64_t)(clock_ns(CLOCK_MONOTONIC) / 1000000u);
}

struct timeval
srv_flow_tv(int64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000),
			     (suseconds_t)((ms % 1000) * 1000)};

	return tv;
}

void
srv_flow_limits(const struct srv_conf *c, struct guard_limits *l)
{
	l->per_source = c->max_unauth_per_source;
	l->fail_free = c->auth_fail_free;
	l->delay_ms = c->auth_fail_delay;
	l->delay_max_ms = c->auth_fail_delay_max;
	l->forget_ms = c->auth_fail_forget;
	l->log_interval_ms = c->log_interval;
}

/*
 * Logs a warning about a peer that has not authenticated, at most one
 * line per source address per log_interval, naming how many were left
 * out since the last one; the rest are counted in log_suppressed.
 */
void __attribute__((format(printf, 3, 4)))
srv_flow_warn(struct srv *s, uint64_t src, const char *fmt, ...)
{
	struct guard_limits lim;
	uint64_t suppressed;
	char line[512];
	va_list ap;

	srv_flow_limits(s->p.conf, &lim);
	if (!guard_log(s->guard, src, &lim, srv_flow_now(), &suppressed)) {
		s->stats.log_suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (suppressed > 0)
		log_warnx("%s (%llu more from this address since the last "
			  "line)",
			  line, (unsigned long long)suppressed);
	else
		log_warnx("%s", line);
}

/* The connection no longer counts as awaiting its hello. */
void
srv_flow_unauth_done(struct srv_conn *c)
{
	struct srv *s = c->srv;

	if (!c->unauth)
		return;
	c->unauth = 0;
	TAILQ_REMOVE(&s->unauth, c, uentry);
	s->stats.conns_unauth--;
	guard_done(s->guard, c->src);
}

/*
 * Would n more bytes take the session past max_output, or all sessions
 * past max_output_total?  Then the session is closed (it is the one
 * whose queue grows) and -1 returned; else 0.
 */
int
srv_flow_over_cap(struct srv_conn *c, size_t queued, size_t n)
{
	struct srv *s = c->srv;
	const struct srv_conf *conf = s->p.conf;

	if (queued + n > (size_t)conf->max_output) {
		s->stats.outbuf_overflow++;
		log_warnx("%s: peer is not reading its replies (%zu bytes "
			  "queued, max_output %lld); closing",
			  c->peer, queued, (long long)conf->max_output);
		srv_conn_close(c, "output overflow");
		return -1;
	}
	if (s->stats.output_queued + n > (uint64_t)conf->max_output_total) {
		s->stats.output_total_overflow++;
		log_warnx("%s: output queued for all peers at max_output_total "
			  "(%lld bytes); closing this session (%zu queued)",
			  c->peer, (long long)conf->max_output_total, queued);
		srv_conn_close(c, "total output overflow");
		return -1;
	}
	return 0;
}

/*
 * Should the session stop reading?  When its own queue is above
 * output_low, or it has output queued while all queues together are above
 * half of max_output_total.
 */
int
srv_flow_full(const struct srv_conn *c)
{
	const struct srv_conf *conf = c->srv->p.conf;

	return c->out_len > (size_t)conf->output_low ||
	       (c->out_len > 0 && c->srv->stats.output_queued >
					  (uint64_t)conf->max_output_total / 2);
}

void
srv_flow_pause(struct srv_conn *c)
{
	if (c->paused)
		return;
	c->paused = 1;
	c->srv->npaused++;
	c->srv->stats.output_paused++;
	bufferevent_disable(c->bev, EV_READ);
	/* Not the peer's fault that its frame waits. */
	event_del(c->frame_ev);
}

/*
 * Keeps srv.stats.output_queued equal to the sum of the sessions' output
 * buffers, and wakes paused sessions once their output drained (through
 * more_ev: this runs inside libevent's buffer code).
 */
void
srv_flow_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
		void *arg)
{
	struct srv_conn *c = arg;
	struct srv *s = c->srv;
	uint64_t half = (uint64_t)s->p.conf->max_output_total / 2;
	uint64_t before = s->stats.output_queued;
	size_t len = evbuffer_get_length(buf);
	struct srv_conn *o;

	s->stats.output_queued = before - c->out_len + len;
	c->out_len = len;
	if (info->n_deleted == 0 || s->npaused == 0)
		return;
	if (c->paused && !srv_flow_full(c))
		event_active(c->more_ev, 0, 0);
	if (before > half && s->stats.output_queued <= half)
		TAILQ_FOREACH(o, &s->conns, entry)
	if (o->paused && !srv_flow_full(o))
		event_active(o->more_ev, 0, 0);
}

/*
 * Arms the frame deadline while a frame is incomplete: from its first
 * byte (restarted when a frame was completed in this call), removed when
 * nothing is pending.  Before the hello the hello deadline rules.
 */
void
srv_flow_deadline(struct srv_conn *c, size_t avail, unsigned handled)
{
	struct timeval tv;

	if (c->state != SRV_READY || c->paused || avail == 0) {
		event_del(c->frame_ev);
		return;
	}
	if (handled == 0 && event_pending(c->frame_ev, EV_TIMEOUT, NULL))
		return;
	tv = srv_flow_tv(c->srv->p.conf->frame_timeout);
	event_add(c->frame_ev, &tv);
}

/* Bytes the peer of c sent that the server has not read yet. */
static int
srv_flow_pending(struct srv_conn *c)
{
	int n = 0;

	if (ioctl(bufferevent_getfd(c->bev), FIONREAD, &n) < 0)
		return 0;
	return n;
}

/*
 * Closes the oldest connections awaiting their hello until the budget has
 * room, skipping those the server has not had a chance to read: accepted
 * in this turn of the event loop, or with bytes waiting in the socket (a
 * hello about to be read).  At most SRV_EVICT_SCAN are looked at.
 */
static void
srv_flow_evict(struct srv *s)
{
	uint64_t older = s->stats.conns_unauth > s->admit_n
				 ? s->stats.conns_unauth - s->admit_n
				 : 0;
	struct srv_conn *old = TAILQ_FIRST(&s->unauth), *next;

	for (int k = 0;
	     old != NULL && k < SRV_EVICT_SCAN && (uint64_t)k < older &&
	     s->stats.conns_unauth >= (uint64_t)s->p.conf->max_unauth;
	     k++, old = next) {
		next = TAILQ_NEXT(old, uentry);
		if (srv_flow_pending(old) > 0)
			continue;
		s->stats.unauth_evicted++;
		srv_flow_warn(s, old->src,
			      "%s: closed to make room: %lld connections await "
			      "their hello",
			      old->peer, (long long)s->p.conf->max_unauth);
		srv_conn_free(old);
	}
}

static void
srv_flow_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct srv *s = arg;

	(void)fd;
	(void)what;
	s->accept_paused = 0;
	for (size_t i = 0; i < s->nlisteners; i++)
		evconnlistener_enable(s->listeners[i]);
}

/*
 * Half the budget was admitted in this turn of the event loop: no more
 * accepts until the next turn, so that what was accepted is read (its
 * hello served) before newer connections may close it.
 */
static void
srv_flow_pause_accept(struct srv *s)
{
	struct timeval zero = {0, 0};

	if (s->accept_paused)
		return;
	if (event_base_once(s->base, -1, EV_TIMEOUT, srv_flow_resume_cb, s,
			    &zero) < 0)
		return;
	s->accept_paused = 1;
	for (size_t i = 0; i < s->nlisteners; i++)
		evconnlistener_disable(s->listeners[i]);
}

/*
 * Admits a new connection against the budgets of connections awaiting
 * their hello: 0, or -1 when its source has max_unauthenticated_per_source
 * waiting already.  When all sources together have max_unauthenticated
 * waiting, the oldest waiting connection is closed to make room, so that
 * a peer that sends its hello at once always gets in: connections the
 * server has not had a chance to read are never closed for a newer one
 * (srv_flow_evict); when they fill the budget, the new connection is
 * refused instead.  At most half the budget is accepted per turn of the
 * event loop (srv_flow_pause_accept).
 */
int
srv_flow_admit(struct srv *s, uint64_t src, const char *peer)
{
	struct guard_limits lim;
	struct timeval now;

	srv_flow_limits(s->p.conf, &lim);
	if (guard_open(s->guard, src, &lim, srv_flow_now()) < 0) {
		s->stats.unauth_refused++;
		srv_flow_warn(s, src,
			      "%s: refused: %lld connections from this address "
			      "await their hello",
			      peer, (long long)lim.per_source);
		return -1;
	}
	event_base_gettimeofday_cached(s->base, &now);
	if (timercmp(&now, &s->admit_tv, !=)) {
		s->admit_tv = now;
		s->admit_n = 0;
	}
	srv_flow_evict(s);
	if (s->stats.conns_unauth >= (uint64_t)s->p.conf->max_unauth) {
		guard_done(s->guard, src);
		s->stats.unauth_refused++;
		srv_flow_warn(
			s, src,
			"%s: refused: %lld connections not read yet await "
			"their hello",
			peer, (long long)s->p.conf->max_unauth);
		return -1;
	}
	if (++s->admit_n >= (uint64_t)(s->p.conf->max_unauth + 1) / 2)
		srv_flow_pause_accept(s);
	return 0;
}

static void
srv_flow_held_cb(evutil_socket_t fd, short what, void *arg)
{
	struct srv_conn *c = arg;

	(void)fd;
	(void)what;
	c->state = SRV_AWAIT_HELLO;
	srv_conn_reject(c, &c->held);
}

/*
 * A hello was refused.  A refused credential counts against the source
 * (guard_failed); past auth_fail_free failures the answer is held back
 * for the source's delay, so that a guesser learns nothing sooner.
 */
void
srv_flow_hello_failed(struct srv_conn *c, const struct msg_err *err)
{
	struct srv *s = c->srv;
	struct guard_limits lim;
	struct timeval tv;
	int64_t delay = 0;

	if (err->code == C4__ERROR_CODE__ERR_AUTH) {
		srv_flow_limits(s->p.conf, &lim);
		delay = guard_failed(s->guard, c->src, &lim, srv_flow_now());
	}
	if (delay <= 0) {
		srv_conn_reject(c, err);
		return;
	}
	c->state = SRV_HELD;
	c->held = *err;
	bufferevent_disable(c->bev, EV_READ);
	event_del(c->timer);
	event_assign(c->timer, s->base, -1, 0, srv_flow_held_cb, c);
	tv = srv_flow_tv(delay);
	event_add(c->timer, &tv);
}

static void
srv_flow_turn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct srv_conn *c = arg;

	(void)fd;
	(void)what;
	bufferevent_enable(c->bev, EV_READ);
	srv_conn_read_cb(c->bev, c);
}

/*
 * A complete hello waits: may it be checked now?  1 when it may; 0 when
 * it waits for its source's turn (reading stops until then) or was
 * refused unchecked.
 */
int
srv_flow_hello_turn(struct srv_conn *c)
{
	struct srv *s = c->srv;
	struct guard_limits lim;
	struct msg_err err = {C4__ERROR_CODE__ERR_AUTH, ""};
	struct timeval tv;
	int64_t wait;

	if (c->turn)
		return 1;
	c->turn = 1;
	srv_flow_limits(s->p.conf, &lim);
	wait = guard_turn(s->guard, c->src, &lim, srv_flow_now());
	if (wait == 0)
		return 1;
	if (wait < 0) {
		s->stats.auth_throttled++;
		snprintf(err.text, sizeof(err.text),
			 "too many failed logins from this address; hello "
			 "refused unchecked");
		srv_conn_reject(c, &err);
		return 0;
	}
	s->stats.auth_delayed++;
	bufferevent_disable(c->bev, EV_READ);
	event_del(c->timer);
	event_assign(c->timer, s->base, -1, 0, srv_flow_turn_cb, c);
	tv = srv_flow_tv(wait);
	event_add(c->timer, &tv);
	return 0;
}
