/*
 * cli.c - blocking client sessions.
 */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"
#include "hello.h"
#include "net.h"

#include <openssl/err.h>

/*
 * Reads what is there without blocking, for up to c->spin_us; returns the
 * bytes read into chunk, 0 when nothing came in time, -1 on an error or
 * the end of the stream (errno 0 then).
 */
static ssize_t
cli_spin_read(struct cli *c, uint8_t *chunk, size_t len)
{
	struct timespec t0, t;

	if (c->spin_us <= 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ssize_t r = recv(c->fd, chunk, len, MSG_DONTWAIT);

		if (r > 0)
			return r;
		if (r == 0) {
			errno = 0;
			return -1;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000L +
			    (t.tv_nsec - t0.tv_nsec) / 1000 >
		    c->spin_us)
			return 0;
		sched_yield();
	}
}

/*
 * Reads what the TLS session has, waiting up to c->timeout_ms for the
 * socket (the socket's receive timeout bounds a record begun).  Returns
 * the bytes read, or 0 (end of stream) / -1 (errno) as read() does, with
 * c->err set on a timeout.
 */
static ssize_t
cli_tls_read(struct cli *c, uint8_t *chunk, size_t len)
{
	struct pollfd pfd = {c->fd, POLLIN, 0};
	int r, e;

	for (;;) {
		if (SSL_pending(c->ssl) == 0) {
			int pr = poll(&pfd, 1, c->timeout_ms);

			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0) {
				errno = ETIMEDOUT;
				return -1;
			}
		}
		r = SSL_read(c->ssl, chunk,
			     len > INT32_MAX ? INT32_MAX : (int)len);
		if (r > 0)
			return r;
		e = SSL_get_error(c->ssl, r);
		ERR_clear_error();
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			continue;
		if (e == SSL_ERROR_ZERO_RETURN ||
		    (e == SSL_ERROR_SYSCALL && errno == 0))
			return 0;
		if (e == SSL_ERROR_SSL)
			errno = EPROTO; /* an alert: the server refused us */
		return -1;
	}
}

/* Starts TLS on c->fd as h->tls asks; 0, or -1 with c->err set. */
static int
cli_tls_start(struct cli *c, const struct net_addr *a,
	      const struct cli_hello *h)
{
	struct timeval tv = {c->timeout_ms / 1000,
			     (c->timeout_ms % 1000) * 1000};
	char err[512];

	if (h->tls == NULL || !tls_enabled(h->tls, 0) || a->family == AF_UNIX)
		return 0;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c->tls_ctx = tls_ctx_new(h->tls, 0, err, sizeof(err));
	if (c->tls_ctx != NULL)
		c->ssl = tls_client_new(c->tls_ctx, a->host, err, sizeof(err));
	if (c->ssl != NULL &&
	    tls_connect_fd(c->ssl, c->fd, err, sizeof(err)) == 0)
		return 0;
	snprintf(c->err, sizeof(c->err), "%s", err);
	return -1;
}

/* Frees the TLS session and context of c, if any. */
static void
cli_tls_free(struct cli *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->tls_ctx);
	c->ssl = NULL;
	c->tls_ctx = NULL;
}

int
cli_send_raw(struct cli *c, const void *p, size_t n)
{
	if ((c->ssl != NULL ? tls_send_all(c->ssl, p, n)
			    : net_send_all(c->fd, p, n)) < 0) {
		errbuf_set(c->err, sizeof(c->err), "send: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
cli_send(struct cli *c, C4__MsgType type, void *body, uint64_t *seq)
{
	C4__Envelope env;
	uint8_t *buf;
	size_t n;
	int rc;

	msg_init_seq(&env, type, body, ++c->seq);
	buf = msg_frame_new(&env, &n);
	if (buf == NULL) {
		errbuf_set(c->err, sizeof(c->err), "out of memory");
		return -1;
	}
	rc = cli_send_raw(c, buf, n);
	free(buf);
	if (seq != NULL)
		*seq = env.seq;
	return rc;
}

C4__Envelope *
cli_recv(struct cli *c)
{
	for (;;) {
		const uint8_t *body;
		uint32_t len;
		enum frame_status st;
		struct pollfd pfd = {c->fd, POLLIN, 0};
		uint8_t chunk[65536];
		ssize_t r;
		int pr;

		st = frame_buf_next(&c->in, c->max_frame, &body, &len);
		if (st == FRAME_READY) {
			struct msg_err err;
			C4__Envelope *env = msg_unpack(body, len, &err);

			if (env == NULL)
				snprintf(c->err, sizeof(c->err),
					 "bad reply: %s", err.text);
			return env;
		}
		if (st == FRAME_TOO_BIG) {
			snprintf(c->err, sizeof(c->err),
				 "reply frame of %u bytes above %u", len,
				 c->max_frame);
			return NULL;
		}
		if (c->ssl != NULL) {
			r = cli_tls_read(c, chunk, sizeof(chunk));
			goto got;
		}
		r = cli_spin_read(c, chunk, sizeof(chunk));
		if (r != 0)
			goto got;
		pr = poll(&pfd, 1, c->timeout_ms);
		if (pr == 0) {
			snprintf(c->err, sizeof(c->err),
				 "no answer within %d ms", c->timeout_ms);
			return NULL;
		}
		if (pr < 0 && errno == EINTR)
			continue;
		r = pr < 0 ? -1 : read(c->fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
	got:
		if (r <= 0) {
			snprintf(c->err, sizeof(c->err), "%s",
				 r == 0 ? "connection closed by the daemon"
					: strerror(errno));
			return NULL;
		}
		if (frame_buf_append(&c->in, chunk, (size_t)r) < 0) {
			snprintf(c->err, sizeof(c->err), "out of memory");
			return NULL;
		}
	}
}

C4__Envelope *
cli_call(struct cli *c, C4__MsgType type, void *body)
{
	uint64_t seq;

	if (cli_send(c, type, body, &seq) < 0)
		return NULL;
	for (;;) {
		C4__Envelope *env = cli_recv(c);

		if (env == NULL)
			return NULL;
		if (env->type == C4__MSG_TYPE__MSG_ERROR &&
		    (!env->error->has_ref_seq || env->error->ref_seq == seq)) {
			snprintf(c->err, sizeof(c->err), "%s",
				 env->error->text ? env->error->text
						  : "error without text");
			msg_free(env);
			return NULL;
		}
		if (env->has_reply_to && env->reply_to == seq)
			return env;
		msg_free(env); /* not ours: a heartbeat, a stream item */
	}
}

int
cli_connect(struct cli *c, const char *addr, const struct cli_hello *h,
	    int timeout_ms)
{
	C4__Hello hello;
	struct net_addr a;
	char err[256];
	C4__Envelope *env;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	c->max_frame = FRAME_MAX_LIMIT;
	frame_buf_init(&c->in);
	if (net_addr_parse(addr, &a, err, sizeof(err)) < 0) {
		snprintf(c->err, sizeof(c->err), "%s: %s", addr, err);
		return -1;
	}
	c->fd = net_connect(&a, timeout_ms, err, sizeof(err));
	if (c->fd < 0) {
		snprintf(c->err, sizeof(c->err), "%s", err);
		return -1;
	}
	c->connected = 1;
	if (cli_tls_start(c, &a, h) < 0)
		goto fail;
	hello_init(&hello, h->role, h->job_id, h->node_name, h->credential, 0);
	env = cli_call(c, C4__MSG_TYPE__MSG_HELLO, &hello);
	if (env == NULL)
		goto fail;
	if (env->type != C4__MSG_TYPE__MSG_HELLO_REPLY) {
		snprintf(c->err, sizeof(c->err),
			 "expected a hello reply, got %s",
			 msg_type_name(env->type));
		msg_free(env);
		goto fail;
	}
	c->hello_env = env;
	c->hello = env->hello_reply;
	return 0;
fail:
	cli_tls_free(c);
	close(c->fd);
	c->fd = -1;
	c->connected = 0;
	frame_buf_free(&c->in);
	return -1;
}

void
cli_close(struct cli *c)
{
	if (c->connected && c->fd >= 0) {
		C4__Goodbye g = C4__GOODBYE__INIT;

		g.reason = (char *)"done";
		cli_send(c, C4__MSG_TYPE__MSG_GOODBYE, &g, NULL);
		if (c->ssl != NULL)
			SSL_shutdown(c->ssl);
		cli_tls_free(c);
		close(c->fd);
	}
	c->fd = -1;
	c->connected = 0;
	msg_free(c->hello_env);
	c->hello_env = NULL;
	c->hello = NULL;
	frame_buf_free(&c->in);
}
