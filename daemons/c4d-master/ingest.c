/*
 * ingest.c - the detection pipeline: owns the hosts, telemetry, events and
 * the engine, and runs one analysis per interval.
 */
#define LOG_SUBSYS "ingest"

#include "ingest.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "clock.h"
#include "events.h"
#include "hosts.h"
#include "log.h"
#include "telemetry.h"
#include "vec.h"
#include "views.h"

struct ingest {
	char *job;
	struct matrix *m;
	struct ingest_stats st;
	uint64_t tick;
	uint64_t data_ticks; /* ticks in which some host reported */
	struct hosts hosts;
	struct telemetry tele;
	struct events events;

	struct hosts_window input; /* the job-wide input of one tick, reused */
	uint32_t *heard;
	size_t cheard;
	uint32_t *linked; /* hosts whose agent's session is open */
	size_t clinked, nlinked;
	/* Connections of the last analysed interval, for the matrix view. */
	struct matrix_conn *last;
	size_t nlast, clast;
};

/* ---- lifetime ---------------------------------------------------------- */

struct ingest *
ingest_new(const char *job, const struct ingest_params *p,
	   ingest_publish_fn publish, void *arg)
{
	struct ingest *g = calloc(1, sizeof(*g));
	struct matrix_params mp;

	if (g == NULL)
		return NULL;
	g->job = strdup(job);
	matrix_params_default(&mp);
	if (p->hang_intervals > 0)
		mp.hang_timeout = p->hang_intervals;
	if (p->node_intervals > 0)
		mp.node_timeout = p->node_intervals;
	if (p->persist_k > 0)
		mp.persist_k = p->persist_k;
	if (p->persist_n > 0)
		mp.persist_n = p->persist_n;
	if (p->min_slowdown > 0)
		mp.min_slowdown = p->min_slowdown;
	g->m = matrix_new(&mp);
	events_init(&g->events, g->job, &g->hosts, &g->st, publish, arg);
	if (telemetry_init(&g->tele, &g->hosts, g->m, &g->st) < 0 ||
	    g->job == NULL || g->m == NULL) {
		ingest_free(g);
		return NULL;
	}
	telemetry_set_limits(&g->tele, p->max_comms, p->max_comms_per_session);
	return g;
}

void
ingest_set_touch(struct ingest *g, ingest_touch_fn touch)
{
	g->events.touch = touch;
}

void
ingest_free(struct ingest *g)
{
	if (g == NULL)
		return;
	matrix_free(g->m);
	telemetry_free(&g->tele);
	events_free(&g->events);
	hosts_free(&g->hosts);
	free(g->input.coll);
	free(g->input.conn);
	free(g->input.wait);
	free(g->heard);
	free(g->linked);
	free(g->last);
	free(g->job);
	free(g);
}

/* ---- what agents send -------------------------------------------------- */

int
ingest_register(struct ingest *g, const C4__CommRegister *m, const void *link,
		struct msg_err *err)
{
	return telemetry_register(&g->tele, m, link, err);
}

void
ingest_set_limits(struct ingest *g, uint64_t max_comms,
		  uint64_t max_comms_per_session)
{
	telemetry_set_limits(&g->tele, max_comms, max_comms_per_session);
}

int
ingest_telemetry(struct ingest *g, const char *node,
		 const C4__TelemetryBatch *b, const void *link,
		 struct msg_err *err)
{
	return telemetry_batch(&g->tele, node, b, link, err);
}

void
ingest_unlink(struct ingest *g, const void *link)
{
	hosts_unlink(&g->hosts, link);
	telemetry_unlink(&g->tele, link);
}

int
ingest_adopt(struct ingest *g, const C4__Event *ev)
{
	return events_adopt(&g->events, ev, g->data_ticks);
}

/* ---- the tick ---------------------------------------------------------- */

static int
ingest_append(void **dst, size_t *n, size_t *cap, const void *src, size_t k,
	      size_t sz)
{
	if (k == 0)
		return 0;
	if (vec_reserve(dst, cap, *n + k, sz) < 0)
		return -1;
	memcpy((char *)*dst + *n * sz, src, k * sz);
	*n += k;
	return 0;
}

/* Adds one host's window to the job-wide input (hosts_collect's take). */
static int
ingest_take(const struct hosts_window *w, void *arg)
{
	struct ingest *g = arg;

	if (ingest_append((void **)&g->input.coll, &g->input.ncoll,
			  &g->input.ccoll, w->coll, w->ncoll,
			  sizeof(*g->input.coll)) < 0 ||
	    ingest_append((void **)&g->input.conn, &g->input.nconn,
			  &g->input.cconn, w->conn, w->nconn,
			  sizeof(*g->input.conn)) < 0 ||
	    ingest_append((void **)&g->input.wait, &g->input.nwait,
			  &g->input.cwait, w->wait, w->nwait,
			  sizeof(*g->input.wait)) < 0)
		return -1;
	return 0;
}

/* Runs the engine over the tick's input; its events go to events.c. */
static void
ingest_analyze(struct ingest *g, size_t nheard, uint64_t now_ns)
{
	const struct matrix_event *ev;
	struct matrix_input in;
	size_t nev = 0;

	memset(&in, 0, sizeof(in));
	in.interval = g->tick;
	in.coll = g->input.coll;
	in.ncoll = g->input.ncoll;
	in.conn = g->input.conn;
	in.nconn = g->input.nconn;
	in.wait = g->input.wait;
	in.nwait = g->input.nwait;
	in.hosts = g->heard;
	in.nhosts = nheard;
	in.linked = g->linked;
	in.nlinked = g->nlinked;
	if (matrix_analyze(g->m, &in, &ev, &nev) < 0) {
		g->st.bad_records++;
		log_warnx("interval %" PRIu64 ": the detection engine refused "
			  "its input",
			  g->tick);
		nev = 0;
	}
	for (size_t i = 0; i < nev; i++)
		events_apply(&g->events, &ev[i], now_ns);
	events_refresh(&g->events, g->m, now_ns);
}

int
ingest_tick(struct ingest *g, uint64_t now_ns)
{
	size_t nheard = 0;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC) / 1000u, dt;

	g->tick++;
	hosts_window_clear(&g->input);
	if (hosts_collect(&g->hosts, ingest_take, g, &g->heard, &g->cheard,
			  &nheard) < 0 ||
	    hosts_linked(&g->hosts, &g->linked, &g->clinked, &g->nlinked) < 0)
		return -1;
	if (nheard > 0)
		g->data_ticks++;
	telemetry_add_flights(&g->tele, g->input.conn, g->input.nconn);
	ingest_analyze(g, nheard, now_ns);
	events_expire(&g->events, g->data_ticks, g->tick, now_ns);
	/* Keep this interval's connections for the matrix view. */
	g->nlast = 0;
	if (ingest_append((void **)&g->last, &g->nlast, &g->clast,
			  g->input.conn, g->input.nconn,
			  sizeof(*g->input.conn)) < 0)
		g->nlast = 0;
	dt = clock_ns(CLOCK_MONOTONIC) / 1000u - t0;
	g->st.ticks++;
	g->st.analysis_us_last = dt;
	if (dt > g->st.analysis_us_max)
		g->st.analysis_us_max = dt;
	g->st.comms_incomplete = telemetry_comms_incomplete(&g->tele);
	return 0;
}

/* ---- what operators see ------------------------------------------------ */

const struct ingest_stats *
ingest_get_stats(const struct ingest *g)
{
	return &g->st;
}

static void
ingest_views_src(const struct ingest *g, struct views_src *s)
{
	s->hosts = &g->hosts;
	s->tele = &g->tele;
	s->events = &g->events;
	s->last = g->last;
	s->nlast = g->nlast;
	s->interval = g->tick;
}

int
ingest_reply_job(const struct ingest *g, uint32_t agents, uint32_t open_events,
		 struct arena *a, C4__AdminReply *r)
{
	struct views_src s;

	ingest_views_src(g, &s);
	return views_job(&s, g->job, agents, open_events, a, r);
}

int
ingest_reply_ranks(const struct ingest *g, uint64_t comm, struct arena *a,
		   C4__AdminReply *r)
{
	struct views_src s;

	ingest_views_src(g, &s);
	return views_ranks(&s, comm, a, r);
}

int
ingest_reply_matrix(const struct ingest *g, uint64_t comm, struct arena *a,
		    C4__AdminReply *r)
{
	struct views_src s;

	ingest_views_src(g, &s);
	return views_matrix(&s, comm, a, r);
}
