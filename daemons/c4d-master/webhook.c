/*
 * webhook.c - delivery of the outbox to the configured webhooks as
 * CloudEvents 1.0 (structured mode, application/cloudevents+json).
 *
 * Each webhook has one sender on the daemon's loop that works through its
 * outbox rows strictly in order: read the oldest undelivered row, POST it,
 * and only after a 2xx mark it delivered and read the next.  A failure, an
 * error status or a timeout retries the same row after an exponential
 * backoff with jitter (WEBHOOK_BACKOFF_MIN_MS doubling up to max_backoff),
 * so the order is kept and nothing is skipped.  The CloudEvent id is
 * "<event id>/<revision>", stored with the row: every retry, also after a
 * restart, carries the same id and body, so receivers de-duplicate on it.
 */
#define LOG_SUBSYS "webhook"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "master.h"
#include "srv_tls.h"
#include "token.h"

enum webhook_phase {
	WH_IDLE,    /* nothing known to send */
	WH_READING, /* an outbox read is queued */
	WH_SENDING, /* a request is in flight */
	WH_WAITING, /* backing off before a retry */
};

struct webhook {
	struct webhook_set *set;
	char *name;
	int64_t timeout, max_backoff; /* ms */
	char *token;
	char host[256];
	int port;
	char *path;   /* path and query */
	SSL_CTX *tls; /* https: verifies the receiver; NULL for http */
	struct evhttp_connection *conn;
	struct event *timer;
	enum webhook_phase phase;
	int kicked; /* rows were queued while reading */
	/* the row being delivered */
	uint64_t seq;
	char *ce_id;
	char *payload;
	size_t len;
	int64_t backoff_ms;
	struct webhook_stats stats;
	uint64_t oldest_ns;
};

struct webhook_set {
	struct event_base *base;
	struct evdns_base *dns;
	struct store *store;
	struct webhook *v;
	const char **names;
	size_t n;
	int closing;
	unsigned seed; /* jitter */
};

static const struct cfg_field webhook_fields[] = {
	{"name", CFG_STR, offsetof(struct webhook_conf, name), CFG_REQUIRED, 0,
	 0, NULL, NULL, "the webhook's name in metrics and the outbox"},
	{"url", CFG_STR, offsetof(struct webhook_conf, url), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "http:// or https://host:port/path events are POSTed to"},
	{"timeout", CFG_DURATION, offsetof(struct webhook_conf, timeout), 0,
	 100, 600000, "10s", NULL, "time allowed for one delivery"},
	{"max_backoff", CFG_DURATION,
	 offsetof(struct webhook_conf, max_backoff), 0, 100, 3600000, "60s",
	 NULL, "longest wait between retries"},
	{"token", CFG_STR, offsetof(struct webhook_conf, token), CFG_SECRET, 0,
	 0, NULL, NULL, "sent as Authorization: Bearer"},
	{"token_file", CFG_STR, offsetof(struct webhook_conf, token_file), 0, 0,
	 0, NULL, NULL, "file whose first line is the token"},
	SRV_TLS_FIELD(offsetof(struct webhook_conf, tls)),
	{NULL, CFG_POS, offsetof(struct webhook_conf, pos), 0, 0, 0, NULL, NULL,
	 NULL},
};

/* Splits an http:// or https:// URL; 0, or -1 with a reason. */
static int
webhook_parse_url(const char *url, char *host, size_t hostlen, int *port,
		  int *https, char **path, char *err, size_t errlen)
{
	struct evhttp_uri *u = evhttp_uri_parse(url);
	const char *scheme, *h, *p, *q;
	int rc = -1;

	if (u == NULL || strlen(url) > WEBHOOK_URL_MAX) {
		snprintf(err, errlen, "'%s' is not a URL", url);
		goto out;
	}
	scheme = evhttp_uri_get_scheme(u);
	*https = scheme != NULL && strcasecmp(scheme, "https") == 0;
	if (scheme == NULL || (!*https && strcasecmp(scheme, "http") != 0)) {
		snprintf(err, errlen, "'%s' is not an http:// or https:// URL",
			 url);
		goto out;
	}
	h = evhttp_uri_get_host(u);
	if (h == NULL || h[0] == '\0' || strlen(h) >= hostlen) {
		snprintf(err, errlen, "'%s' has no host", url);
		goto out;
	}
	/* evhttp keeps IPv6 brackets in the host; connecting needs none. */
	if (h[0] == '[')
		snprintf(host, hostlen, "%.*s", (int)strlen(h) - 2, h + 1);
	else
		snprintf(host, hostlen, "%s", h);
	*port = evhttp_uri_get_port(u);
	if (*port <= 0)
		*port = *https ? 443 : 80;
	p = evhttp_uri_get_path(u);
	q = evhttp_uri_get_query(u);
	if (path != NULL) {
		if (asprintf(path, "%s%s%s", p && p[0] ? p : "/", q ? "?" : "",
			     q ? q : "") < 0) {
			*path = NULL;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	if (u != NULL)
		evhttp_uri_free(u);
	return rc;
}

static void
webhook_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct webhook_conf *c = obj;
	char host[256], err[256];
	int port, https = 0;

	(void)at;
	if (c->url != NULL &&
	    webhook_parse_url(c->url, host, sizeof(host), &port, &https, NULL,
			      err, sizeof(err)) < 0)
		cfg_diag_add(d, c->pos, "webhook %s: %s",
			     c->name ? c->name : "?", err);
	if (!https && (c->tls.ca != NULL || c->tls.cert != NULL))
		cfg_diag_add(d, c->pos, "webhook %s: tls needs an https:// url",
			     c->name ? c->name : "?");
	if (c->token != NULL && c->token_file != NULL)
		cfg_diag_add(d, c->pos,
			     "webhook %s: token and token_file exclude each "
			     "other",
			     c->name ? c->name : "?");
}

const struct cfg_schema webhook_conf_schema = {
	"webhook", sizeof(struct webhook_conf), webhook_fields,
	CFG_NFIELDS(webhook_fields), webhook_validate};

/* ---- the CloudEvent ----------------------------------------------------- */

/*
 * The body of ev as a CloudEvent; time_ns is the transition's time.  The
 * id comes second so that simple consumers find it first.
 */
char *
webhook_cloudevent(const char *job, const C4__Event *ev, uint64_t time_ns,
		   size_t *len)
{
	char id[C4D_EVENT_ID_MAX + 32], src[300], type[64], when[64];
	struct json j;
	struct tm tm;
	time_t secs = (time_t)(time_ns / 1000000000u);
	char *buf = NULL;
	size_t n = 0;
	FILE *fp;

	snprintf(id, sizeof(id), "%s/%llu", ev->id ? ev->id : "",
		 (unsigned long long)ev->revision);
	snprintf(src, sizeof(src), "c4d-master/%s", job);
	snprintf(type, sizeof(type), "io.c4.event.%s",
		 evjson_state_name(ev->state));
	gmtime_r(&secs, &tm);
	n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, ".%09lluZ",
		 (unsigned long long)(time_ns % 1000000000u));
	n = 0;
	fp = open_memstream(&buf, &n);
	if (fp == NULL)
		return NULL;
	json_init(&j, fp);
	json_obj_begin(&j);
	json_key(&j, "specversion");
	json_str(&j, "1.0");
	json_key(&j, "id");
	json_str(&j, id);
	json_key(&j, "source");
	json_str(&j, src);
	json_key(&j, "type");
	json_str(&j, type);
	json_key(&j, "subject");
	json_str(&j, ev->id);
	json_key(&j, "time");
	json_str(&j, when);
	json_key(&j, "datacontenttype");
	json_str(&j, "application/json");
	json_key(&j, "data");
	evjson_write(&j, ev);
	json_obj_end(&j);
	if (fclose(fp) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/* ---- one sender --------------------------------------------------------- */

static void webhook_read(struct webhook *w);

/* Tries again after the shortest backoff (the store or memory failed). */
static void
webhook_later(struct webhook *w)
{
	struct timeval tv = {0, WEBHOOK_BACKOFF_MIN_MS * 1000};

	w->phase = WH_WAITING;
	evtimer_add(w->timer, &tv);
}

static void
webhook_drop_row(struct webhook *w)
{
	free(w->ce_id);
	free(w->payload);
	w->ce_id = w->payload = NULL;
}

/* The same row again after a growing, jittered delay. */
static void
webhook_retry(struct webhook *w, const char *why)
{
	int64_t max = w->max_backoff, delay;
	struct timeval tv;

	w->stats.failed++;
	if (w->backoff_ms == 0)
		w->backoff_ms = WEBHOOK_BACKOFF_MIN_MS;
	else if (w->backoff_ms < max)
		w->backoff_ms =
			w->backoff_ms * 2 > max ? max : w->backoff_ms * 2;
	if (w->backoff_ms > max)
		w->backoff_ms = max;
	/* Between half and all of the backoff, so senders do not align. */
	delay = w->backoff_ms / 2 +
		(int64_t)(rand_r(&w->set->seed) % (w->backoff_ms / 2 + 1));
	log_warnx("%s: %s not delivered (%s); retry in %lld ms", w->name,
		  w->ce_id, why, (long long)delay);
	store_outbox_failed(w->set->store, w->seq,
			    clock_ns(CLOCK_REALTIME) +
				    (uint64_t)delay * 1000000u);
	w->phase = WH_WAITING;
	tv.tv_sec = delay / 1000;
	tv.tv_usec = (delay % 1000) * 1000;
	evtimer_add(w->timer, &tv);
}

static void
webhook_response_cb(struct evhttp_request *req, void *arg)
{
	struct webhook *w = arg;
	int code = req ? evhttp_request_get_response_code(req) : 0;
	char why[64];

	if (w->set->closing || w->phase != WH_SENDING)
		return;
	if (w->tls != NULL)
		w->conn =
			NULL; /* freed on completion: the next gets a new TLS */
	if (code >= 200 && code < 300) {
		log_debug("%s: delivered %s (%d)", w->name, w->ce_id, code);
		w->stats.delivered++;
		w->backoff_ms = 0;
		store_mark_delivered(w->set->store, w->seq);
		webhook_drop_row(w);
		webhook_read(w);
		return;
	}
	if (code == 0)
		snprintf(why, sizeof(why), "no answer");
	else
		snprintf(why, sizeof(why), "HTTP %d", code);
	webhook_retry(w, why);
}

/* A connection to the receiver: TLS 1.3 verifying its name for https. */
static struct evhttp_connection *
webhook_conn_new(struct webhook *w)
{
	struct bufferevent *bev;
	char err[512];
	SSL *ssl;

	if (w->tls == NULL)
		return evhttp_connection_base_new(w->set->base, w->set->dns,
						  w->host,
						  (unsigned short)w->port);
	ssl = tls_client_new(w->tls, w->host, err, sizeof(err));
	if (ssl == NULL) {
		log_warnx("%s: %s", w->name, err);
		return NULL;
	}
	bev = srv_tls_bev(w->set->base, -1, ssl, 0);
	if (bev == NULL)
		return NULL;
	return evhttp_connection_base_bufferevent_new(w->set->base, w->set->dns,
						      bev, w->host,
						      (unsigned short)w->port);
}

static void
webhook_send(struct webhook *w)
{
	struct evhttp_request *req;
	struct evkeyvalq *h;
	char hostport[300], auth[WEBHOOK_TOKEN_MAX + 16];

	if (w->conn == NULL) {
		w->conn = webhook_conn_new(w);
		if (w->conn == NULL) {
			webhook_retry(w, "cannot create a connection");
			return;
		}
		evhttp_connection_set_retries(w->conn, 0);
		/* The answer is only a status; a flood of bytes is a failure.
		 */
		evhttp_connection_set_max_headers_size(w->conn,
						       WEBHOOK_RESP_HEADERS);
		evhttp_connection_set_max_body_size(w->conn, WEBHOOK_RESP_BODY);
		{
			struct timeval tv = {w->timeout / 1000,
					     (w->timeout % 1000) * 1000};

			evhttp_connection_set_timeout_tv(w->conn, &tv);
		}
	}
	req = evhttp_request_new(webhook_response_cb, w);
	if (req == NULL) {
		webhook_retry(w, "out of memory");
		return;
	}
	h = evhttp_request_get_output_headers(req);
	snprintf(hostport, sizeof(hostport), "%s:%d", w->host, w->port);
	evhttp_add_header(h, "Host", hostport);
	evhttp_add_header(h, "Content-Type", "application/cloudevents+json");
	evhttp_add_header(h, "Connection", "keep-alive");
	if (w->token != NULL) {
		snprintf(auth, sizeof(auth), "Bearer %s", w->token);
		evhttp_add_header(h, "Authorization", auth);
	}
	evbuffer_add(evhttp_request_get_output_buffer(req), w->payload, w->len);
	w->phase = WH_SENDING;
	if (evhttp_make_request(w->conn, req, EVHTTP_REQ_POST, w->path) < 0) {
		/* evhttp_make_request frees req on failure. */
		evhttp_connection_free(w->conn);
		w->conn = NULL;
		webhook_retry(w, "request not sent");
		return;
	}
	/* A TLS session is not reconnected by evhttp: one per request. */
	if (w->tls != NULL)
		evhttp_connection_free_on_completion(w->conn);
}

static void
webhook_next_cb(int rc, const struct store_row *row, uint64_t pending,
		uint64_t oldest_ns, void *arg)
{
	struct webhook *w = arg;

	if (w->set->closing)
		return;
	if (rc < 0) {
		/* The store logged why; look again after a backoff. */
		w->phase = WH_WAITING;
		w->stats.failed++;
		webhook_later(w);
		return;
	}
	w->stats.pending = pending;
	w->oldest_ns = pending ? oldest_ns : 0;
	if (row == NULL) {
		w->phase = WH_IDLE;
		if (w->kicked)
			webhook_read(w);
		return;
	}
	w->seq = row->seq;
	w->ce_id = strdup(row->ce_id);
	w->payload = malloc(row->len + 1);
	if (w->ce_id == NULL || w->payload == NULL) {
		webhook_drop_row(w);
		w->phase = WH_WAITING;
		webhook_later(w);
		return;
	}
	memcpy(w->payload, row->payload, row->len);
	w->payload[row->len] = '\0';
	w->len = row->len;
	webhook_send(w);
}

static void
webhook_read(struct webhook *w)
{
	w->kicked = 0;
	w->phase = WH_READING;
	if (store_outbox_next(w->set->store, w->name, webhook_next_cb, w) < 0) {
		w->phase = WH_WAITING;
		webhook_later(w);
	}
}

static void
webhook_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct webhook *w = arg;

	(void)fd;
	(void)what;
	if (w->payload != NULL)
		webhook_send(w);
	else
		webhook_read(w);
}

/* ---- the set ------------------------------------------------------------ */

static char *
webhook_read_token(const char *path, char *err, size_t errlen)
{
	char why[256];
	char *tok = token_read(path, WEBHOOK_TOKEN_MAX + 1, why, sizeof(why));

	if (tok == NULL) {
		snprintf(err, errlen, "%s: %s", path, why);
		return NULL;
	}
	if (tok[0] == '\0' || strlen(tok) > WEBHOOK_TOKEN_MAX) {
		snprintf(err, errlen, "%s: no token of 1..%d bytes", path,
			 WEBHOOK_TOKEN_MAX);
		free(tok);
		return NULL;
	}
	return tok;
}

/*
 * Creates one sender per configured webhook (copying what it needs of
 * confs, so a reload may free them) and starts each on its outbox, so rows left
 * undelivered by an earlier run go out first.  Returns 0, or -1 with err
 * filled.
 */
int
webhook_new(struct webhook_set **out, struct event_base *base, struct store *st,
	    const char *job, const struct cfg_list *confs, char *err,
	    size_t errlen)
{
	struct webhook_set *s = calloc(1, sizeof(*s));
	const struct webhook_conf *cv = confs->items;

	(void)job;
	*out = NULL;
	if (s == NULL)
		goto nomem;
	s->base = base;
	s->store = st;
	s->seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	if (confs->n > 0) {
		s->v = calloc(confs->n, sizeof(*s->v));
		s->names = calloc(confs->n, sizeof(char *));
		if (s->v == NULL || s->names == NULL)
			goto nomem;
		s->dns =
			evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
		if (s->dns == NULL)
			s->dns = evdns_base_new(base, 0);
	}
	for (size_t i = 0; i < confs->n; i++) {
		struct webhook *w = &s->v[i];
		int https = 0;

		w->set = s;
		w->name = strdup(cv[i].name);
		if (w->name == NULL)
			goto nomem;
		w->timeout = cv[i].timeout;
		w->max_backoff = cv[i].max_backoff;
		w->stats.name = w->name;
		s->names[i] = w->name;
		s->n++;
		if (webhook_parse_url(cv[i].url, w->host, sizeof(w->host),
				      &w->port, &https, &w->path, err,
				      errlen) < 0)
			goto fail;
		if (https &&
		    (w->tls = tls_ctx_new(&cv[i].tls, 0, err, errlen)) == NULL)
			goto fail;
		if (cv[i].token_file != NULL) {
			w->token = webhook_read_token(cv[i].token_file, err,
						      errlen);
			if (w->token == NULL)
				goto fail;
		} else if (cv[i].token != NULL) {
			w->token = strdup(cv[i].token);
			if (w->token == NULL)
				goto nomem;
		}
		w->timer = evtimer_new(base, webhook_timer_cb, w);
		if (w->timer == NULL)
			goto nomem;
	}
	for (size_t i = 0; i < s->n; i++)
		webhook_read(&s->v[i]);
	*out = s;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	webhook_free(s);
	return -1;
}

const char *const *
webhook_names(const struct webhook_set *s, size_t *n)
{
	*n = s->n;
	return s->names;
}

void
webhook_kick(struct webhook_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct webhook *w = &s->v[i];

		if (w->phase == WH_IDLE)
			webhook_read(w);
		else
			w->kicked = 1;
	}
}

size_t
webhook_count(const struct webhook_set *s)
{
	return s->n;
}

void
webhook_get_stats(const struct webhook_set *s, size_t i,
		  struct webhook_stats *out)
{
	const struct webhook *w = &s->v[i];

	*out = w->stats;
	out->oldest_age_ms = 0;
	if (w->oldest_ns != 0) {
		uint64_t now = clock_ns(CLOCK_REALTIME);

		if (now > w->oldest_ns)
			out->oldest_age_ms = (now - w->oldest_ns) / 1000000u;
	}
}

/*
 * Stops every sender: requests in flight are abandoned (their rows stay
 * undelivered and go out again after the next start).
 */
void
webhook_free(struct webhook_set *s)
{
	if (s == NULL)
		return;
	s->closing = 1;
	for (size_t i = 0; i < s->n; i++) {
		struct webhook *w = &s->v[i];

		if (s->store != NULL)
			store_forget(s->store, w);
		if (w->conn != NULL)
			evhttp_connection_free(w->conn);
		if (w->timer != NULL)
			event_free(w->timer);
		webhook_drop_row(w);
		SSL_CTX_free(w->tls);
		free(w->token);
		free(w->path);
		free(w->name);
	}
	if (s->dns != NULL)
		evdns_base_free(s->dns, 0);
	free(s->v);
	free(s->names);
	free(s);
}
