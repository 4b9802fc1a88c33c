/*
 * http.c - a daemon's HTTP endpoints on its event loop (evhttp): GET
 * /healthz and GET /metrics (Prometheus text format 0.0.4), the content
 * from the daemon's callbacks.  Anything else is 404, other methods 405.
 * Requests are small by construction: headers and bodies beyond
 * HTTP_MAX_HEADERS / HTTP_MAX_BODY are refused by evhttp before they are
 * buffered.
 */
#define LOG_SUBSYS "http"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "http.h"
#include "log.h"
#include "net.h"
#include "srv.h"

struct http {
	struct evhttp *eh;
	http_metrics_fn metrics;
	http_health_fn health;
	void *arg;
};

void
http_metric_head(struct evbuffer *b, const char *name, const char *help,
		 int gauge)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
			    gauge ? "gauge" : "counter");
}

/*
 * Writes v into buf as a Prometheus label value: backslash, double quote
 * and newline escaped; cut (never mid-escape) if buf is too small.
 */
void
http_label_escape(char *buf, size_t len, const char *v)
{
	size_t n = 0;

	if (len == 0)
		return;
	for (; v != NULL && *v != '\0'; v++) {
		const char *esc = *v == '\\'   ? "\\\\"
				  : *v == '"'  ? "\\\""
				  : *v == '\n' ? "\\n"
					       : NULL;
		size_t k = esc ? 2 : 1;

		if (n + k >= len)
			break;
		if (esc != NULL)
			memcpy(buf + n, esc, 2);
		else
			buf[n] = *v;
		n += k;
	}
	buf[n] = '\0';
}

/* labels is "" or the inside of {}, values escaped by http_label_escape. */
void
http_metric_value(struct evbuffer *b, const char *name, const char *labels,
		  uint64_t v)
{
	if (labels != NULL && labels[0] != '\0')
		evbuffer_add_printf(b, "%s{%s} %llu\n", name, labels,
				    (unsigned long long)v);
	else
		evbuffer_add_printf(b, "%s %llu\n", name,
				    (unsigned long long)v);
}

void
http_metric(struct evbuffer *b, const char *name, const char *help, int gauge,
	    const char *labels, uint64_t v)
{
	http_metric_head(b, name, help, gauge);
	http_metric_value(b, name, labels, v);
}

void
http_metric_double(struct evbuffer *b, const char *name, const char *labels,
		   double v)
{
	if (labels != NULL && labels[0] != '\0')
		evbuffer_add_printf(b, "%s{%s} %.9g\n", name, labels, v);
	else
		evbuffer_add_printf(b, "%s %.9g\n", name, v);
}

void
http_metrics_srv(struct evbuffer *b, const struct srv *srv, const char *labels)
{
	const struct srv_stats *s = srv_get_stats(srv);

#define HTTP_SRV_METRIC(n, h)                                                  \
	http_metric(b, "c4_srv_" #n "_total", h, 0, labels, s->n);
	SRV_COUNTERS(HTTP_SRV_METRIC)
#undef HTTP_SRV_METRIC
	http_metric(b, "c4_srv_conns_active", "sessions open now", 1, labels,
		    s->conns_active);
}

void
http_hist_add(struct http_hist *h, double v)
{
	h->count++;
	h->sum += v;
	for (size_t i = 0; i < HTTP_HIST_BUCKETS; i++)
		if (v <= http_hist_bounds[i])
			h->le[i]++;
}

const double http_hist_bounds[HTTP_HIST_BUCKETS] = {
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001,	 0.0025,   0.005,   0.01,   0.025,   0.1,
};

void
http_metric_hist(struct evbuffer *b, const char *name, const char *help,
		 const char *labels, const struct http_hist *h)
{
	char n[256], l[1024];
	const char *sep = labels != NULL && labels[0] != '\0' ? "," : "";

	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name,
			    help, name);
	snprintf(n, sizeof(n), "%s_bucket", name);
	for (size_t i = 0; i < HTTP_HIST_BUCKETS; i++) {
		snprintf(l, sizeof(l), "%s%sle=\"%g\"", labels ? labels : "",
			 sep, http_hist_bounds[i]);
		http_metric_value(b, n, l, h->le[i]);
	}
	snprintf(l, sizeof(l), "%s%sle=\"+Inf\"", labels ? labels : "", sep);
	http_metric_value(b, n, l, h->count);
	snprintf(n, sizeof(n), "%s_sum", name);
	http_metric_double(b, n, labels, h->sum);
	snprintf(n, sizeof(n), "%s_count", name);
	http_metric_value(b, n, labels, h->count);
}

static void
http_reply_text(struct evhttp_request *req, int code, const char *reason,
		const char *ctype, struct evbuffer *body)
{
	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type", ctype);
	evhttp_send_reply(req, code, reason, body);
}

static void
http_request_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	const char *uri = evhttp_request_get_uri(req);
	struct evbuffer *b = evbuffer_new();
	char path[64], why[256] = "";
	size_t n;

	if (b == NULL) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	/* The path without a query string. */
	n = strcspn(uri ? uri : "", "?");
	snprintf(path, sizeof(path), "%.*s", (int)(n < 63 ? n : 63),
		 uri ? uri : "");
	if (n > 63 ||
	    (strcmp(path, "/healthz") != 0 && strcmp(path, "/metrics") != 0)) {
		evbuffer_add_printf(b, "not found\n");
		http_reply_text(req, HTTP_NOTFOUND, "Not Found", "text/plain",
				b);
	} else if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
		   evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
				  "Allow", "GET, HEAD");
		evbuffer_add_printf(b, "method not allowed\n");
		http_reply_text(req, 405, "Method Not Allowed", "text/plain",
				b);
	} else if (strcmp(path, "/healthz") == 0) {
		if (h->health(why, sizeof(why), h->arg)) {
			evbuffer_add_printf(b, "ok\n");
			http_reply_text(req, HTTP_OK, "OK", "text/plain", b);
		} else {
			evbuffer_add_printf(b, "unhealthy: %s\n", why);
			http_reply_text(req, HTTP_SERVUNAVAIL,
					"Service Unavailable", "text/plain", b);
		}
	} else {
		h->metrics(b, h->arg);
		http_reply_text(req, HTTP_OK, "OK",
				"text/plain; version=0.0.4; charset=utf-8", b);
	}
	evbuffer_free(b);
}

/*
 * Listens on listen (host:port; port 0 picks one) and serves the two
 * endpoints through metrics and health.  The bound address goes to
 * bound.  Returns 0, or -1 with err filled.
 */
int
http_open(struct http **out, struct event_base *base, const char *listen,
	  http_metrics_fn metrics, http_health_fn health, void *arg,
	  char *bound, size_t boundlen, char *err, size_t errlen)
{
	struct http *h = calloc(1, sizeof(*h));
	struct net_addr a;
	int fd;

	*out = NULL;
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	h->metrics = metrics;
	h->health = health;
	h->arg = arg;
	if (net_addr_parse(listen, &a, err, errlen) < 0)
		goto fail;
	if (a.family == AF_UNIX) {
		snprintf(err, errlen, "%s", HTTP_LISTEN_MSG);
		goto fail;
	}
	fd = net_listen(&a, 128, 0, bound, boundlen, err, errlen);
	if (fd < 0)
		goto fail;
	h->eh = evhttp_new(base);
	if (h->eh == NULL || evhttp_accept_socket(h->eh, fd) < 0) {
		evutil_closesocket(fd);
		snprintf(err, errlen, "cannot serve HTTP on %s", listen);
		goto fail;
	}
	evhttp_set_max_headers_size(h->eh, HTTP_MAX_HEADERS);
	evhttp_set_max_body_size(h->eh, HTTP_MAX_BODY);
	evhttp_set_timeout(h->eh, HTTP_TIMEOUT_S);
	evhttp_set_allowed_methods(
		h->eh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
			       EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
			       EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(h->eh, http_request_cb, h);
	log_info("serving /metrics and /healthz on http://%s", bound);
	*out = h;
	return 0;
fail:
	http_free(h);
	return -1;
}

void
http_free(struct http *h)
{
	if (h == NULL)
		return;
	if (h->eh != NULL)
		evhttp_free(h->eh);
	free(h);
}

static const struct cfg_field http_conf_fields[] = {
	{"listen", CFG_ADDR, offsetof(struct http_conf, listen), 0, 0, 0, NULL,
	 NULL, "host:port serving /metrics and /healthz"},
};
const struct cfg_schema http_conf_schema = {
	"http", sizeof(struct http_conf), http_conf_fields,
	CFG_NFIELDS(http_conf_fields), NULL};

void
http_conf_validate(const struct http_conf *c, struct cfg_pos at,
		   struct cfg_diag *d)
{
	if (c->listen != NULL && strncmp(c->listen, "unix:", 5) == 0)
		cfg_diag_add(d, at, "%s", HTTP_LISTEN_MSG);
}
