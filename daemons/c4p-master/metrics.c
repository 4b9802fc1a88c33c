/*
 * metrics.c - the c4p-master's /metrics and /healthz (lib/daemon/http.c
 * serves them on the loop when the configuration has "http: listen:").
 *
 * /metrics: the server core's session counters; every C4P counter of
 * `c4ctl status` as c4p_<name>_total; the allocation gauges (QPs and
 * requests live, stranded QPs, jobs, catalog entries); path request errors
 * by code; the store's commits and its commit latency (a histogram of
 * BEGIN to COMMIT on the writer thread); and per cable (labels leaf, spine,
 * link) its health and its load in each direction (QP weight sum).
 * /healthz: 503 once a store write failed (the daemon is stopping then).
 */
#define LOG_SUBSYS "c4p-metrics"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "addrplan.h"
#include "jobs.h"
#include "metrics.h"
#include "store.h"
#include "log.h"

#define METRICS_LABELS_MAX 512

void
metrics_path_error(struct c4p *p, C4__ErrorCode code)
{
	p->st.path_errors++;
	if ((unsigned)code < C4P_ERROR_CODES)
		p->errors_by_code[code]++;
}

/* Pass 2..4 of metrics_links for cable i: state, weight, loss bounds. */
static void
metrics_link_health(struct evbuffer *b, const struct c4p *p, uint32_t i,
		    int pass, char *lab, size_t len, size_t n)
{
	const struct catalog_link *cl = catalog_link(p->cat, i);
	const char *bn[3] = {"estimate", "lower", "upper"};
	double v[3];

	if (pass == 2) {
		http_metric_value(b, "c4p_link_state", lab, cl->state);
		return;
	}
	if (pass == 3) {
		http_metric_double(b, "c4p_link_weight", lab, cl->weight);
		return;
	}
	v[0] = cl->loss;
	v[1] = cl->loss_lo;
	v[2] = cl->loss_hi;
	for (int k = 0; k < 3; k++) {
		snprintf(lab + n, len - n, ",bound=\"%s\"", bn[k]);
		http_metric_double(b, "c4p_link_loss", lab, v[k]);
	}
	lab[n] = '\0';
}

/* Per cable: health, its load per direction, its state and loss. */
static void
metrics_links(struct evbuffer *b, const struct c4p *p, const char *base)
{
	const struct topo *t = p->topo;
	char lab[METRICS_LABELS_MAX], name[3 * TOPO_NAME_MAX];
	char leaf[2 * TOPO_NAME_MAX], spine[2 * TOPO_NAME_MAX];
	char link[6 * TOPO_NAME_MAX];

	static const char *const heads[][2] = {
		{"c4p_link_state",
		 "as probes judge it: 0 up, 1 degraded, 2 down"},
		{"c4p_link_weight",
		 "share of its capacity placement counts (degraded < 1)"},
		{"c4p_link_loss", "probe loss estimate of the worse direction "
				  "(bound: estimate, lower, upper)"},
	};

	for (int pass = 0; pass < 5; pass++) {
		if (pass >= 2)
			http_metric_head(b, heads[pass - 2][0],
					 heads[pass - 2][1], 1);
		else if (pass == 0)
			http_metric_head(b, "c4p_link_up",
					 "1 while the cable is healthy", 1);
		else
			http_metric_head(b, "c4p_link_load",
					 "QP weight on the cable per direction "
					 "(up: leaf to spine)",
					 1);
		for (uint32_t i = 0; i < t->nlinks; i++) {
			const struct topo_link *l = &t->links[i];
			uint64_t up = 0, down = 0;
			int n;

			http_label_escape(leaf, sizeof(leaf),
					  t->leaves[l->leaf].name);
			http_label_escape(spine, sizeof(spine),
					  t->spines[l->spine].name);
			addrplan_link_name(t, i, name, sizeof(name));
			http_label_escape(link, sizeof(link), name);
			n = snprintf(lab, sizeof(lab),
				     "%s,leaf=\"%s\",spine=\"%s\",link=\"%s\"",
				     base, leaf, spine, link);
			if (n < 0 || (size_t)n >= sizeof(lab) - 32)
				continue;
			if (pass == 0) {
				http_metric_value(b, "c4p_link_up", lab, l->up);
				continue;
			}
			if (pass >= 2) {
				metrics_link_health(b, p, i, pass, lab,
						    sizeof(lab), (size_t)n);
				continue;
			}
			alloc_link_load(p->alloc, i, &up, &down);
			snprintf(lab + n, sizeof(lab) - (size_t)n,
				 ",direction=\"up\"");
			http_metric_value(b, "c4p_link_load", lab, up);
			snprintf(lab + n, sizeof(lab) - (size_t)n,
				 ",direction=\"down\"");
			http_metric_value(b, "c4p_link_load", lab, down);
		}
	}
}

static void
metrics_cb(struct evbuffer *b, void *arg)
{
	struct c4p *p = arg;
	const char *base = "daemon=\"c4p-master\"";
	char lab[METRICS_LABELS_MAX];
	struct alloc_stats as;
	struct store_stats ss;

	http_metrics_srv(b, p->dmn->srv, base);
	store_get_stats(p->store, &ss);
	p->st.store_commits = ss.commits;
	p->st.store_inline_commits = ss.inline_commits;
	p->st.store_ops = ss.ops;
#define METRICS_COUNTER(n, h)                                                  \
	http_metric(b, "c4p_" #n "_total", h, 0, base, p->st.n);
	C4P_COUNTERS(METRICS_COUNTER)
#undef METRICS_COUNTER
	http_metric_head(b, "c4p_path_errors_by_code_total",
			 "path requests answered with an error, by code", 0);
	for (unsigned c = 0; c < C4P_ERROR_CODES; c++) {
		const ProtobufCEnumValue *v =
			protobuf_c_enum_descriptor_get_value(
				&c4__error_code__descriptor, (int)c);

		if (v == NULL)
			continue;
		snprintf(lab, sizeof(lab), "%s,code=\"%s\"", base, v->name);
		http_metric_value(b, "c4p_path_errors_by_code_total", lab,
				  p->errors_by_code[c]);
	}
	alloc_stats(p->alloc, &as);
	http_metric(b, "c4p_qps_live", "QPs allocated now", 1, base, as.qps);
	http_metric(b, "c4p_requests_live", "requests holding QPs now", 1, base,
		    as.requests);
	http_metric(b, "c4p_qps_stranded", "QPs without a healthy path now", 1,
		    base, as.stranded);
	http_metric(b, "c4p_qps_fallback",
		    "QPs on their other side (failover) now", 1, base,
		    as.fallback);
	http_metric(b, "c4p_qps_pending",
		    "QPs whose port the holder has not confirmed", 1, base,
		    as.pending);
	http_metric(b, "c4p_link_load_max",
		    "largest QP weight on one cable direction", 1, base,
		    as.max_link_load);
	http_metric(b, "c4p_jobs_known", "jobs seen since the store was made",
		    1, base, jobs_count(p->jobs));
	http_metric(b, "c4p_catalog_entries",
		    "catalog entries (IP pair and side)", 1, base,
		    catalog_count(p->cat));
	http_metric(b, "c4p_store_queue", "store operations not committed yet",
		    1, base, ss.ops - ss.committed);
	http_metric(b, "c4p_store_healthy", "1 while store writes succeed", 1,
		    base, !ss.failed);
	http_metric_hist(b, "c4p_store_commit_seconds",
			 "SQLite transaction time, BEGIN to COMMIT", base,
			 &ss.commit_hist);
	metrics_links(b, p, base);
}

static int
metrics_health(char *why, size_t len, void *arg)
{
	struct c4p *p = arg;
	struct store_stats ss;

	store_get_stats(p->store, &ss);
	if (!ss.failed)
		return 1;
	snprintf(why, len, "store writes are failing");
	return 0;
}

int
metrics_open(struct c4p *p, char *err, size_t errlen)
{
	p->http_bound[0] = '\0';
	if (p->conf->http.listen == NULL)
		return 0;
	return http_open(&p->http, p->dmn->base, p->conf->http.listen,
			 metrics_cb, metrics_health, p, p->http_bound,
			 sizeof(p->http_bound), err, errlen);
}

void
metrics_close(struct c4p *p)
{
	http_free(p->http);
	p->http = NULL;
}
