/*
 * http.h - /metrics (Prometheus text format 0.0.4) and /healthz on a
 * daemon's event loop; the daemon supplies the content through callbacks
 * and writes it with the helpers below.  Config: an "http:" section with
 * "listen: host:port" (HTTP_CONF_FIELD).
 */
#ifndef C4_HTTP_H
#define C4_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "cfg.h"

#define HTTP_MAX_HEADERS  8192 /* bytes of request headers */
#define HTTP_MAX_BODY	  1024 /* GET requests carry none */
#define HTTP_TIMEOUT_S	  10
#define HTTP_HIST_BUCKETS 12 /* http_hist_bounds */
#define HTTP_LISTEN_MSG	  "http.listen must be host:port"

struct http;
struct evbuffer;
struct srv;

struct http_conf {
	char *listen; /* host:port, or NULL: no HTTP endpoints */
};
extern const struct cfg_schema http_conf_schema;
#define HTTP_CONF_FIELD(off)                                                   \
	{                                                                      \
		"http", CFG_SECTION, (off), 0, 0, 0, NULL, &http_conf_schema,  \
			"metrics and health endpoints"                         \
	}
/* Adds an error when listen is a unix socket. */
void http_conf_validate(const struct http_conf *c, struct cfg_pos at,
			struct cfg_diag *d);

/* Writes the Prometheus text. */
typedef void (*http_metrics_fn)(struct evbuffer *out, void *arg);
/* Returns 1 when healthy, 0 otherwise (with a reason). */
typedef int (*http_health_fn)(char *why, size_t len, void *arg);

/*
 * Listens on listen (host:port; port 0 picks one) and serves the two
 * endpoints through metrics and health.  The bound address goes to
 * bound.  Returns 0, or -1 with err filled.
 */
int http_open(struct http **out, struct event_base *base, const char *listen,
	      http_metrics_fn metrics, http_health_fn health, void *arg,
	      char *bound, size_t boundlen, char *err, size_t errlen);
/* Closes the listener and frees h; NULL is allowed. */
void http_free(struct http *h);

/* Prometheus helpers: "# HELP" and "# TYPE" once per name, then samples. */
void http_metric_head(struct evbuffer *b, const char *name, const char *help,
		      int gauge);
/*
 * Appends one sample line of name.  labels: "" or NULL, or the inside of
 * {} with escaped values.  http_metric_value() writes v as an integer,
 * http_metric_double() with 9 significant digits.  Strings stay the
 * caller's; out of memory, the evbuffer silently misses the line.
 */
void http_metric_value(struct evbuffer *b, const char *name, const char *labels,
		       uint64_t v);
void http_metric_double(struct evbuffer *b, const char *name,
			const char *labels, double v);
/* Head and one sample. */
void http_metric(struct evbuffer *b, const char *name, const char *help,
		 int gauge, const char *labels, uint64_t v);
/* Escapes a label value (backslash, quote, newline) into buf. */
void http_label_escape(char *buf, size_t len, const char *v);
/* The server core's counters (c4_srv_*_total, c4_srv_conns_active). */
void http_metrics_srv(struct evbuffer *b, const struct srv *srv,
		      const char *labels);

/* A histogram of seconds with fixed buckets (10 us to 100 ms). */
struct http_hist {
	uint64_t le[HTTP_HIST_BUCKETS]; /* cumulative: values <= bound */
	uint64_t count;
	double sum;
};
extern const double http_hist_bounds[HTTP_HIST_BUCKETS];
/*
 * Counts v (seconds) in every bucket whose bound is >= v, and in count and
 * sum.  Not atomic: one thread updates a histogram.
 */
void http_hist_add(struct http_hist *h, double v);
/*
 * Appends h as a Prometheus histogram: HELP and TYPE, one cumulative
 * _bucket line per bound plus +Inf, then _sum and _count.  labels as for
 * http_metric_value(); does not change h.
 */
void http_metric_hist(struct evbuffer *b, const char *name, const char *help,
		      const char *labels, const struct http_hist *h);

#endif
