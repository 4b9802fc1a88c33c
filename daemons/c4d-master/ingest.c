/*
 * ingest.c - telemetry to detection engine records, analysis per interval,
 * engine events to c4.Event.
 */
#define LOG_SUBSYS "ingest"

#include "ingest.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "c4matrix.h"
#include "flight.h"
#include "log.h"
#include "sketch.h"
#include "u64map.h"

static uint64_t
ing_strhash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}
#include "vec.h"

/* ---- state -----------------------------------------------------------------
 */

struct ing_window {
	uint64_t interval_id;
	struct c4m_coll *coll;
	size_t ncoll, ccoll;
	struct c4m_conn *conn;
	size_t nconn, cconn;
	struct c4m_wait *wait;
	size_t nwait, cwait;
};

struct ing_host {
	char *name;
	uint64_t gpus[4]; /* bit g: GPU g runs a rank (first 256 GPUs) */
	char **nics;	  /* NIC names; a rank's nic is an index into these */
	size_t nnics;
	struct ing_window q[INGEST_QUEUE_MAX];
	unsigned head, nq;
	int heard; /* a message since the last tick */
};

struct ing_comm {
	uint64_t hash;
	uint32_t nranks;
	uint32_t nknown;
	struct c4m_rank_loc *map;
	uint8_t *known;
	char *name;
	int added;   /* handed to the engine */
	int retired; /* destroyed by the job */
};

struct ing_event {
	uint64_t cid;  /* the engine's id (0: adopted, not seen yet) */
	uint64_t skey; /* stable across restarts: kind and suspects' names */
	char id[48];   /* public id */
	uint64_t revision;
	uint64_t first_seen_ns;
	uint64_t adopted_at; /* tick of adoption; 0 if not adopted */
	C4__EventKind kind;
	int live; /* open */
};

struct ingest {
	char *job;
	struct ingest_params p;
	ingest_publish_fn publish;
	void *arg;
	struct matrix *m;
	struct flight *fl; /* one-way delivery times of connections */
	struct ingest_stats st;
	uint64_t tick;
	uint64_t data_ticks; /* ticks in which some host reported */

	struct ing_host *hosts;
	size_t nhosts, chosts;
	struct u64map host_map; /* name hash -> first index (chained by scan) */

	struct ing_comm *comms;
	size_t ncomms, ccomms;
	struct u64map comm_map;

	struct ing_event *events;
	size_t nevents, cevents;

	/* The job-wide input of one tick, reused. */
	struct c4m_coll *coll;
	size_t ncoll, ccoll;
	struct c4m_conn *conn;
	size_t nconn, cconn;
	struct c4m_wait *wait;
	size_t nwait, cwait;
	uint32_t *heard;
	size_t cheard;
	/* Connections of the last analysed interval, for the matrix view. */
	struct c4m_conn *last;
	size_t nlast, clast;
	uint64_t hot_comm; /* of the newest open communication event */
};

/* ---- hosts -----------------------------------------------------------------
 */

static struct ing_host *
ing_host_find(struct ingest *g, const char *name, int create, uint32_t *id)
{
	uint64_t h = ing_strhash(name);
	uint32_t i;

	/* Distinct names with equal hashes are told apart by probing h+1. */
	for (;; h = h * 31 + 7) {
		if (u64map_get(&g->host_map, h, &i) < 0)
			break;
		if (strcmp(g->hosts[i].name, name) == 0) {
			*id = i;
			return &g->hosts[i];
		}
	}
	if (!create || g->nhosts >= INGEST_HOSTS_MAX)
		return NULL;
	if (vec_reserve((void **)&g->hosts, &g->chosts, g->nhosts + 1,
			sizeof(*g->hosts)) < 0)
		return NULL;
	i = (uint32_t)g->nhosts;
	memset(&g->hosts[i], 0, sizeof(g->hosts[i]));
	g->hosts[i].name = strdup(name);
	if (g->hosts[i].name == NULL || u64map_put(&g->host_map, h, i) < 0) {
		free(g->hosts[i].name);
		return NULL;
	}
	g->nhosts++;
	g->st.hosts = g->nhosts;
	*id = i;
	return &g->hosts[i];
}

static int
ing_host_nic(struct ing_host *h, const char *nic, uint16_t *idx)
{
	char **v;

	if (nic == NULL || nic[0] == '\0')
		nic = "-";
	for (size_t i = 0; i < h->nnics; i++) {
		if (strcmp(h->nics[i], nic) == 0) {
			*idx = (uint16_t)i;
			return 0;
		}
	}
	if (h->nnics >= UINT16_MAX)
		return -1;
	v = realloc(h->nics, (h->nnics + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	h->nics = v;
	h->nics[h->nnics] = strdup(nic);
	if (h->nics[h->nnics] == NULL)
		return -1;
	*idx = (uint16_t)h->nnics++;
	return 0;
}

static void
ing_window_clear(struct ing_window *w)
{
	w->ncoll = w->nconn = w->nwait = 0;
}

static void
ing_window_free(struct ing_window *w)
{
	free(w->coll);
	free(w->conn);
	free(w->wait);
	memset(w, 0, sizeof(*w));
}

/* ---- registration
 * -------------------------------------------------------------- */

int
ingest_register(struct ingest *g, const C4__CommRegister *m,
		struct msg_err *err)
{
	struct ing_comm *c;
	uint32_t ci;

	if (m->has_destroyed && m->destroyed) {
		/*
		 * The job destroyed the communicator: its ranks go quiet on
		 * purpose, which must not read as a hang or a lost node.
		 */
		if (u64map_get(&g->comm_map, m->comm_hash, &ci) == 0 &&
		    g->comms[ci].added && !g->comms[ci].retired) {
			matrix_comm_retire(g->m, m->comm_hash);
			g->comms[ci].retired = 1;
			log_info("communicator %016" PRIx64 " destroyed",
				 m->comm_hash);
		}
		g->st.registrations++;
		return 0;
	}
	if (u64map_get(&g->comm_map, m->comm_hash, &ci) == 0) {
		c = &g->comms[ci];
		if (c->nranks != m->nranks) {
			err->code = C4__ERROR_CODE__ERR_INVALID;
			snprintf(err->text, sizeof(err->text),
				 "communicator %016" PRIx64
				 " registered with %u ranks, now %u",
				 m->comm_hash, c->nranks, m->nranks);
			return -1;
		}
	} else {
		if (vec_reserve((void **)&g->comms, &g->ccomms, g->ncomms + 1,
				sizeof(*g->comms)) < 0)
			return -1;
		ci = (uint32_t)g->ncomms;
		c = &g->comms[ci];
		memset(c, 0, sizeof(*c));
		c->hash = m->comm_hash;
		c->nranks = m->nranks;
		c->map = calloc(m->nranks, sizeof(*c->map));
		c->known = calloc(m->nranks, 1);
		c->name = m->name ? strdup(m->name) : NULL;
		if (c->map == NULL || c->known == NULL ||
		    u64map_put(&g->comm_map, m->comm_hash, ci) < 0) {
			free(c->map);
			free(c->known);
			free(c->name);
			return -1;
		}
		g->ncomms++;
		g->st.comms = g->ncomms;
	}
	g->st.registrations++;
	for (size_t i = 0; i < m->n_ranks; i++) {
		const C4__RankInfo *r = m->ranks[i];
		struct c4m_rank_loc loc;
		struct ing_host *h;
		uint32_t hid;

		h = ing_host_find(g, r->host, 1, &hid);
		if (h == NULL)
			return -1;
		memset(&loc, 0, sizeof(loc));
		loc.host = hid;
		loc.gpu = (uint16_t)(r->has_gpu ? r->gpu : r->local_rank);
		if (ing_host_nic(h, r->nic, &loc.nic) < 0)
			return -1;
		loc.port = (uint8_t)(r->has_nic_port ? r->nic_port : 1);
		if (loc.gpu < 256)
			h->gpus[loc.gpu / 64] |= 1ull << (loc.gpu % 64);
		if (c->added) {
			/* The engine's map is fixed once complete. */
			continue;
		}
		c->map[r->rank] = loc;
		if (!c->known[r->rank]) {
			c->known[r->rank] = 1;
			c->nknown++;
		}
	}
	if (c->retired) {
		/* Registered again after a destroy: the engine judges anew. */
		c->retired = 0;
		matrix_comm_add(g->m, c->hash, c->nranks, c->map);
	}
	if (!c->added && c->nknown == c->nranks) {
		if (matrix_comm_add(g->m, c->hash, c->nranks, c->map) < 0) {
			err->code = C4__ERROR_CODE__ERR_INVALID;
			snprintf(err->text, sizeof(err->text),
				 "communicator %016" PRIx64
				 ": the detection engine refused it",
				 c->hash);
			return -1;
		}
		c->added = 1;
		log_info("communicator %016" PRIx64 " (%s, %u ranks) complete",
			 c->hash, c->name ? c->name : "-", c->nranks);
	}
	return 0;
}

/* ---- telemetry
 * --------------------------------------------------------------- */

/* Wire duration stats (ns) to engine stats (us). */
static void
ing_stats(const C4__DurationStats *d, struct c4m_stats *o)
{
	static const double qs[3] = {0.50, 0.90, 0.99};
	double q[3];

	memset(o, 0, sizeof(*o));
	if (d == NULL || d->count == 0)
		return;
	o->count = d->count;
	o->sum = (double)d->sum_ns / 1e3;
	o->min = (double)d->min_ns / 1e3;
	o->max = (double)d->max_ns / 1e3;

	if (d->sketch != NULL && d->sketch->n_index > 0 &&
	    sketch_pb_quantiles(d, qs, 3, q) == 0) {
		o->p50 = q[0] / 1e3;
		o->p90 = q[1] / 1e3;
		o->p99 = q[2] / 1e3;
		/* floored above 0, which means "not given" */
		if (d->count >= C4M_WSUM_MIN)
			o->wsum = fmax(o->sum - sketch_pb_excess(d, q[2]) / 1e3,
				       1e-6);
	} else {
		o->p50 = o->p90 = o->p99 = o->sum / (double)o->count;
	}
}

static uint8_t
ing_algo(C4__Algorithm a, C4__CollFunc f)
{
	if (f == C4__COLL_FUNC__COLL_SENDRECV ||
	    f == C4__COLL_FUNC__COLL_ALLTOALL)
		return C4M_ALGO_P2P;
	switch (a) {
	case C4__ALGORITHM__ALGO_RING:
		return C4M_ALGO_RING;
	case C4__ALGORITHM__ALGO_TREE:
	case C4__ALGORITHM__ALGO_NVLS_TREE:
		return C4M_ALGO_TREE;
	case C4__ALGORITHM__ALGO_P2P:
		return C4M_ALGO_P2P;
	default:
		return C4M_ALGO_OTHER;
	}
}

static uint8_t
ing_transport(C4__TransportClass t)
{
	switch (t) {
	case C4__TRANSPORT_CLASS__TRANSPORT_NVLINK:
		return C4M_TR_NVLINK;
	case C4__TRANSPORT_CLASS__TRANSPORT_PCIE:
		return C4M_TR_PCIE;
	case C4__TRANSPORT_CLASS__TRANSPORT_SHM:
		return C4M_TR_SHM;
	default:
		return C4M_TR_NET;
	}
}

/*
 * The cumulative markers of (comm, rank): a RankCollSummary's sequence
 * numbers are those entered and completed within the interval (0 when
 * none), a Progress entry's the newest ever; the engine wants the latter.
 */
static const C4__Progress *
ing_progress_of(const C4__TelemetryBatch *b, uint64_t comm, uint32_t rank)
{
	for (size_t i = 0; i < b->n_progress; i++)
		if (b->progress[i]->comm_hash == comm &&
		    b->progress[i]->rank == rank)
			return b->progress[i];
	return NULL;
}

static int
ing_window_coll(struct ing_window *w, const C4__RankCollSummary *c,
		const C4__OpStats *op, const C4__Progress *p)
{
	struct c4m_coll *o;

	if (vec_reserve((void **)&w->coll, &w->ccoll, w->ncoll + 1,
			sizeof(*w->coll)) < 0)
		return -1;
	o = &w->coll[w->ncoll++];
	memset(o, 0, sizeof(*o));
	o->comm = c->comm_hash;
	o->rank = c->rank;
	o->seq_enter_first = c->first_seq_entered;
	o->seq_enter = c->last_seq_entered;
	o->seq_done_first = c->first_seq_completed;
	o->seq_done = c->last_seq_completed;
	if (p != NULL) {
		o->seq_enter = p->last_seq_entered;
		o->seq_done = p->last_seq_completed;
		o->done_at_enqueue =
			p->has_completed_at_enqueue && p->completed_at_enqueue;
		o->carried = p->has_carried && p->carried;
		o->stuck = p->n_stuck_peers > 0;
	}
	o->t_first_ns = (int64_t)c->first_start_ns;
	if (op != NULL) {
		o->op = (uint8_t)op->func;
		o->algo = ing_algo(op->algorithm, op->func);
		o->proto = (uint8_t)op->protocol;
		o->nops = (uint32_t)op->count;
		o->bytes = op->bytes;
		ing_stats(op->kernel_time, &o->kernel);
		ing_stats(op->gap_time, &o->gap);
	}
	return 0;
}

/* 1 when comm is a registered 2-rank communicator (see ing_flight). */
static int
ing_pair(const struct ingest *g, uint64_t comm)
{
	uint32_t ci;

	return u64map_get(&g->comm_map, comm, &ci) == 0 &&
	       g->comms[ci].nranks == 2;
}

/*
 * The one-way timing a connection summary carries goes to the flight
 * matcher at once (its other end may be on another host), for the 2-rank
 * communicators that use it.  Returns 1 for a summary that carries
 * nothing else (the receiver's, or a sender's without traffic this
 * interval), 0 otherwise, -1 without memory.
 */
static int
ing_timing(struct ingest *g, const C4__ConnSummary *c)
{
	int only =
		c->receiver || (c->bytes == 0 && c->chunks == 0 &&
				c->pending_chunks == 0 && c->n_timed_seq > 0);

	if (c->n_timed_seq == 0 || !ing_pair(g, c->comm_hash))
		return only;
	if (c->n_timed_chunks != c->n_timed_seq ||
	    c->n_timed_mean_ns != c->n_timed_seq) {
		g->st.timing_refused++;
		return only;
	}
	if (flight_add(g->fl, c->comm_hash, c->src_rank, c->dst_rank,
		       c->receiver, c->timed_seq, c->timed_chunks,
		       c->timed_mean_ns, c->n_timed_seq) < 0)
		return -1;
	return only;
}

/* Fills a window from one batch; the records are checked by the engine. */
static int
ing_window_fill(struct ingest *g, struct ing_window *w,
		const C4__TelemetryBatch *b)
{
	ing_window_clear(w);
	w->interval_id = b->interval_id;
	for (size_t i = 0; i < b->n_colls; i++) {
		const C4__RankCollSummary *c = b->colls[i];
		const C4__Progress *p =
			ing_progress_of(b, c->comm_hash, c->rank);

		if (c->n_ops == 0 && ing_window_coll(w, c, NULL, p) < 0)
			return -1;
		for (size_t j = 0; j < c->n_ops; j++)
			if (ing_window_coll(w, c, c->ops[j], p) < 0)
				return -1;
	}
	/* Progress markers of ranks with no collective summary. */
	for (size_t i = 0; i < b->n_progress; i++) {
		const C4__Progress *p = b->progress[i];
		C4__RankCollSummary c = C4__RANK_COLL_SUMMARY__INIT;
		int dup = 0;

		for (size_t j = 0; j < b->n_colls && !dup; j++)
			dup = b->colls[j]->comm_hash == p->comm_hash &&
			      b->colls[j]->rank == p->rank;
		if (dup)
			continue;
		c.comm_hash = p->comm_hash;
		c.rank = p->rank;
		if (ing_window_coll(w, &c, NULL, p) < 0)
			return -1;
	}
	if (vec_reserve((void **)&w->conn, &w->cconn, b->n_conns,
			sizeof(*w->conn)) < 0 ||
	    vec_reserve((void **)&w->wait, &w->cwait, b->n_waits,
			sizeof(*w->wait)) < 0)
		return -1;
	for (size_t i = 0; i < b->n_conns; i++) {
		const C4__ConnSummary *c = b->conns[i];
		struct c4m_conn *o;
		int only = ing_timing(g, c);

		if (only < 0)
			return -1;
		if (only)
			continue;
		o = &w->conn[w->nconn++];
		memset(o, 0, sizeof(*o));
		o->comm = c->comm_hash;
		o->src = c->src_rank;
		o->dst = c->dst_rank;
		o->channels = c->channel_mask;
		o->transport = ing_transport(c->transport);
		o->algo =
			ing_algo(c->algorithm, C4__COLL_FUNC__COLL_UNSPECIFIED);
		o->bytes = c->bytes;
		o->chunks = c->chunks;
		o->pending = c->pending_chunks;
		ing_stats(c->transfer_time, &o->xfer);
	}
	for (size_t i = 0; i < b->n_waits; i++) {
		const C4__WaitSummary *s = b->waits[i];
		struct c4m_wait *o = &w->wait[w->nwait++];

		memset(o, 0, sizeof(*o));
		o->comm = s->comm_hash;
		o->rank = s->rank;
		o->nsteps = s->steps;
		o->recv_wait_us =
			s->recv_wait ? (double)s->recv_wait->sum_ns / 1e3 : 0;
		o->send_peer_wait_us =
			s->send_peer_wait
				? (double)s->send_peer_wait->sum_ns / 1e3
				: 0;
		o->send_gpu_wait_us =
			s->send_gpu_wait
				? (double)s->send_gpu_wait->sum_ns / 1e3
				: 0;
	}
	return 0;
}

int
ingest_telemetry(struct ingest *g, const char *node,
		 const C4__TelemetryBatch *b, struct msg_err *err)
{
	const char *name = b->host && b->host[0] ? b->host : node;
	struct ing_window *w;
	struct ing_host *h;
	uint32_t hid;

	if (name == NULL || name[0] == '\0') {
		err->code = C4__ERROR_CODE__ERR_INVALID;
		snprintf(err->text, sizeof(err->text),
			 "telemetry without a host name");
		return -1;
	}
	h = ing_host_find(g, name, 1, &hid);
	if (h == NULL)
		return -1;
	h->heard = 1;
	if (h->nq == INGEST_QUEUE_MAX) {
		/* The oldest window goes: newer data matters more. */
		h->head = (h->head + 1) % INGEST_QUEUE_MAX;
		h->nq--;
		g->st.windows_dropped++;
	}
	w = &h->q[(h->head + h->nq) % INGEST_QUEUE_MAX];
	if (ing_window_fill(g, w, b) < 0) {
		ing_window_clear(w);
		return -1;
	}
	h->nq++;
	g->st.batches++;
	g->st.records += b->n_colls + b->n_conns + b->n_waits + b->n_progress;
	return 0;
}

/* ---- events
 * ------------------------------------------------------------------ */

static struct ing_event *
ing_event_find(struct ingest *g, uint64_t cid)
{
	for (size_t i = 0; i < g->nevents; i++)
		if (g->events[i].cid == cid && cid != 0 && g->events[i].live)
			return &g->events[i];
	return NULL;
}

/* An adopted event (not yet seen by this run's engine) with key skey. */
static struct ing_event *
ing_event_adopted(struct ingest *g, uint64_t skey)
{
	for (size_t i = 0; i < g->nevents; i++)
		if (g->events[i].live && g->events[i].cid == 0 &&
		    g->events[i].skey == skey)
			return &g->events[i];
	return NULL;
}

static const char *ing_host_name(const struct ingest *g, uint32_t id);
static const char *ing_nic_name(const struct ingest *g, uint32_t host,
				uint16_t nic);

static uint64_t
ing_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/*
 * A key for "the same anomaly" that survives a restart: the engine's own
 * id hashes its host numbers, which follow the order hosts first report;
 * this one hashes the kind and each suspect's role, host and NIC names,
 * GPU and port.
 */
static uint64_t
ing_stable_key(const struct ingest *g, const struct c4m_event *e)
{
	uint64_t h = 1469598103934665603ull;

	h = ing_fnv(h, &e->kind, sizeof(e->kind));
	for (unsigned i = 0; i < e->nsuspects; i++) {
		const struct c4m_suspect *s = &e->suspects[i];
		const char *host = ing_host_name(g, s->host);
		const char *nic = ing_nic_name(g, s->host, s->nic);
		const char *phost = ing_host_name(g, s->peer_host);
		const char *pnic = ing_nic_name(g, s->peer_host, s->peer_nic);

		h = ing_fnv(h, &s->role, sizeof(s->role));
		h = ing_fnv(h, host, strlen(host) + 1);
		h = ing_fnv(h, nic, strlen(nic) + 1);
		h = ing_fnv(h, &s->gpu, sizeof(s->gpu));
		h = ing_fnv(h, &s->port, sizeof(s->port));
		h = ing_fnv(h, phost, strlen(phost) + 1);
		h = ing_fnv(h, pnic, strlen(pnic) + 1);
		h = ing_fnv(h, &s->peer_gpu, sizeof(s->peer_gpu));
	}
	return h;
}

static void
ing_event_drop(struct ingest *g, struct ing_event *e)
{
	size_t i = (size_t)(e - g->events);

	g->events[i] = g->events[--g->nevents];
}

static struct ing_event *
ing_event_new(struct ingest *g, uint64_t cid)
{
	struct ing_event *e;

	if (vec_reserve((void **)&g->events, &g->cevents, g->nevents + 1,
			sizeof(*g->events)) < 0)
		return NULL;
	e = &g->events[g->nevents++];
	memset(e, 0, sizeof(*e));
	e->cid = cid;
	e->live = 1;
	return e;
}

static C4__EventKind
ing_kind(unsigned k)
{
	static const C4__EventKind map[C4M_EV_COUNT] = {
		[C4M_EV_COMM_SLOW_LINK] = C4__EVENT_KIND__EVENT_COMM_SLOW_CONN,
		[C4M_EV_COMM_SLOW_TX] = C4__EVENT_KIND__EVENT_COMM_SLOW_TX,
		[C4M_EV_COMM_SLOW_RX] = C4__EVENT_KIND__EVENT_COMM_SLOW_RX,
		[C4M_EV_COMM_SLOW_AMBIG] =
			C4__EVENT_KIND__EVENT_COMM_SLOW_AMBIGUOUS,
		[C4M_EV_NONCOMM_SLOW] = C4__EVENT_KIND__EVENT_NONCOMM_SLOW,
		[C4M_EV_COMM_HANG] = C4__EVENT_KIND__EVENT_COMM_HANG,
		[C4M_EV_NONCOMM_HANG] = C4__EVENT_KIND__EVENT_NONCOMM_HANG,
		[C4M_EV_NODE_LOST] = C4__EVENT_KIND__EVENT_NODE_LOST,
	};

	return k < C4M_EV_COUNT ? map[k] : C4__EVENT_KIND__EVENT_UNSPECIFIED;
}

static C4__SuspectRole
ing_role(unsigned r)
{
	switch (r) {
	case C4M_ROLE_TX:
		return C4__SUSPECT_ROLE__SUSPECT_TX;
	case C4M_ROLE_RX:
		return C4__SUSPECT_ROLE__SUSPECT_RX;
	case C4M_ROLE_LINK:
		return C4__SUSPECT_ROLE__SUSPECT_LINK;
	case C4M_ROLE_HOST:
		return C4__SUSPECT_ROLE__SUSPECT_HOST;
	default:
		return C4__SUSPECT_ROLE__SUSPECT_RANK;
	}
}

static const char *
ing_host_name(const struct ingest *g, uint32_t id)
{
	return id < g->nhosts ? g->hosts[id].name : "?";
}

static const char *
ing_nic_name(const struct ingest *g, uint32_t host, uint16_t nic)
{
	if (host >= g->nhosts || nic >= g->hosts[host].nnics)
		return "?";
	return g->hosts[host].nics[nic];
}

/* One sentence an operator reads first. */
static char *
ing_summary(struct ingest *g, const struct c4m_event *e, struct arena *a)
{
	const struct c4m_suspect *s = e->nsuspects ? &e->suspects[0] : NULL;
	const char *host = s ? ing_host_name(g, s->host) : "?";
	const char *nic = s ? ing_nic_name(g, s->host, s->nic) : "?";

	switch (e->kind) {
	case C4M_EV_COMM_SLOW_RX:
		return arena_printf(a,
				    "receive side of %s %s port %u is slow "
				    "(%.2fx): transfers into rank %u",
				    host, nic, s ? s->port : 0, e->slowdown,
				    s ? s->rank : 0);
	case C4M_EV_COMM_SLOW_TX:
		return arena_printf(a,
				    "transmit side of %s %s port %u is slow "
				    "(%.2fx): transfers from rank %u",
				    host, nic, s ? s->port : 0, e->slowdown,
				    s ? s->rank : 0);
	case C4M_EV_COMM_SLOW_LINK:
		return arena_printf(
			a, "connection %s %s -> %s %s is slow (%.2fx)", host,
			nic, s ? ing_host_name(g, s->peer_host) : "?",
			s ? ing_nic_name(g, s->peer_host, s->peer_nic) : "?",
			e->slowdown);
	case C4M_EV_COMM_SLOW_AMBIG:
		return arena_printf(
			a,
			"transfers from %s %s are slow (%.2fx); the "
			"traffic pattern cannot tell its transmit "
			"side, the link and the receiver apart",
			host, nic, e->slowdown);
	case C4M_EV_NONCOMM_SLOW:
		return arena_printf(
			a,
			"rank %u on %s GPU %u is late to its "
			"collectives (%.2fx): compute or input, not "
			"the network",
			s ? s->rank : 0, host, s ? s->gpu : 0, e->slowdown);
	case C4M_EV_COMM_HANG:
		return arena_printf(a,
				    "communication hang at op %" PRIu64
				    ": connection from rank %u (%s) stopped "
				    "moving data",
				    e->hang_seq, s ? s->rank : 0, host);
	case C4M_EV_NONCOMM_HANG:
		return arena_printf(a,
				    "hang at op %" PRIu64
				    ": rank %u on %s GPU %u never entered it",
				    e->hang_seq, s ? s->rank : 0, host,
				    s ? s->gpu : 0);
	case C4M_EV_NODE_LOST:
		return arena_printf(a, "no data from host %s", host);
	default:
		return arena_printf(a, "anomaly of kind %u", e->kind);
	}
}

static char *
ing_action(struct ingest *g, const struct c4m_event *e, struct arena *a)
{
	const struct c4m_suspect *s = e->nsuspects ? &e->suspects[0] : NULL;

	switch (e->action) {
	case C4M_ACT_ISOLATE_HOST:
		return arena_printf(a, "isolate host %s",
				    ing_host_name(g, e->isolate_host));
	case C4M_ACT_CHECK_LINK:
		return arena_printf(
			a, "check the path %s %s -> %s %s",
			s ? ing_host_name(g, s->host) : "?",
			s ? ing_nic_name(g, s->host, s->nic) : "?",
			s ? ing_host_name(g, s->peer_host) : "?",
			s ? ing_nic_name(g, s->peer_host, s->peer_nic) : "?");
	case C4M_ACT_INVESTIGATE:
		return arena_printf(a, "investigate the suspects");
	default:
		return NULL;
	}
}

/* Builds and publishes the c4.Event for one engine event. */
static void
ing_publish(struct ingest *g, const struct c4m_event *e, struct ing_event *t,
	    C4__EventState state, uint64_t now_ns)
{
	C4__Event ev = C4__EVENT__INIT;
	struct arena a;

	arena_init(&a);
	ev.id = t->id;
	ev.job_id = g->job;
	ev.has_kind = ev.has_state = 1;
	ev.kind = ing_kind(e->kind);
	ev.state = state;
	ev.has_revision = 1;
	ev.revision = ++t->revision;
	ev.has_confidence = ev.has_slowdown = ev.has_score = 1;
	ev.confidence = e->confidence;
	ev.slowdown = e->slowdown;
	ev.score = e->score;
	ev.has_first_interval = ev.has_last_interval = 1;
	ev.first_interval = e->first_interval;
	ev.last_interval = e->last_interval;
	ev.has_first_seen_ns = ev.has_last_seen_ns = 1;
	ev.first_seen_ns = t->first_seen_ns;
	ev.last_seen_ns = now_ns;
	ev.has_comm_hash = 1;
	ev.comm_hash = e->comm;
	ev.summary = ing_summary(g, e, &a);
	ev.action = ing_action(g, e, &a);
	ev.suspects = arena_calloc(&a, e->nsuspects ? e->nsuspects : 1,
				   sizeof(*ev.suspects));
	for (unsigned i = 0; ev.suspects && i < e->nsuspects; i++) {
		const struct c4m_suspect *s = &e->suspects[i];
		C4__Suspect *o = arena_alloc(&a, sizeof(*o));

		if (o == NULL)
			break;
		c4__suspect__init(o);
		o->has_role = o->has_rank = o->has_gpu = 1;
		o->has_nic_port = o->has_peer_rank = 1;
		o->role = ing_role(s->role);
		o->rank = s->rank;
		o->host = (char *)ing_host_name(g, s->host);
		o->gpu = s->gpu;
		o->nic = (char *)ing_nic_name(g, s->host, s->nic);
		o->nic_port = s->port;
		o->peer_rank = s->peer_rank;
		ev.suspects[ev.n_suspects++] = o;
	}
	ev.cells =
		arena_calloc(&a, e->ncells ? e->ncells : 1, sizeof(*ev.cells));
	for (unsigned i = 0; ev.cells && i < e->ncells; i++) {
		C4__EvidenceCell *o = arena_alloc(&a, sizeof(*o));

		if (o == NULL)
			break;
		c4__evidence_cell__init(o);
		o->has_src_rank = o->has_dst_rank = o->has_value = 1;
		o->has_score = o->has_baseline = 1;
		o->src_rank = e->cells[i].src;
		o->dst_rank = e->cells[i].dst;
		o->value = e->cells[i].ratio;
		o->baseline = 1.0;
		o->score = e->cells[i].z;
		ev.cells[ev.n_cells++] = o;
	}
	log_info("event %s %s: %s", t->id,
		 state == C4__EVENT_STATE__EVENT_OPEN	   ? "open"
		 : state == C4__EVENT_STATE__EVENT_UPDATED ? "updated"
							   : "resolved",
		 ev.summary ? ev.summary : "");
	g->publish(g->arg, &ev);
	arena_free(&a);
	if (state == C4__EVENT_STATE__EVENT_OPEN)
		g->st.events_open++;
	else if (state == C4__EVENT_STATE__EVENT_UPDATED)
		g->st.events_updated++;
	else
		g->st.events_resolved++;
}

static void
ing_on_event(struct ingest *g, const struct c4m_event *e, uint64_t now_ns)
{
	struct ing_event *t = ing_event_find(g, e->id);

	if (e->state == C4M_ST_OPEN) {
		uint64_t skey = ing_stable_key(g, e);

		if (t == NULL)
			t = ing_event_adopted(g, skey);
		if (t != NULL) {
			/* Adopted after a restart: continue, no second open. */
			t->cid = e->id;
			t->adopted_at = 0;
			ing_publish(g, e, t, C4__EVENT_STATE__EVENT_UPDATED,
				    now_ns);
			return;
		}
		t = ing_event_new(g, e->id);
		if (t == NULL)
			return;
		t->skey = skey;
		t->first_seen_ns = now_ns;
		t->kind = ing_kind(e->kind);
		if (e->kind <= C4M_EV_COMM_SLOW_AMBIG ||
		    e->kind == C4M_EV_COMM_HANG)
			g->hot_comm = e->comm;
		snprintf(t->id, sizeof(t->id), "%016" PRIx64 "-%" PRIu64, skey,
			 now_ns / 1000000);
		ing_publish(g, e, t, C4__EVENT_STATE__EVENT_OPEN, now_ns);
		return;
	}
	if (t == NULL)
		return; /* never opened here (e.g. resolved before a restart) */
	if (e->state == C4M_ST_UPDATED) {
		t->adopted_at = 0;
		ing_publish(g, e, t, C4__EVENT_STATE__EVENT_UPDATED, now_ns);
		return;
	}
	ing_publish(g, e, t, C4__EVENT_STATE__EVENT_RESOLVED, now_ns);
	ing_event_drop(g, t);
}

/* Adopted events the engine did not confirm in time are resolved. */
static void
ing_expire_adopted(struct ingest *g, uint64_t now_ns)
{
	for (size_t i = 0; i < g->nevents;) {
		struct ing_event *t = &g->events[i];

		if (t->adopted_at != 0 &&
		    g->data_ticks >= t->adopted_at + INGEST_ADOPT_GRACE) {
			struct c4m_event e;

			memset(&e, 0, sizeof(e));
			e.id = t->cid;
			e.kind = C4M_EV_COUNT; /* summary: no engine detail */
			e.first_interval = e.last_interval = g->tick;
			e.slowdown = 1.0;
			ing_publish(g, &e, t, C4__EVENT_STATE__EVENT_RESOLVED,
				    now_ns);
			ing_event_drop(g, t);
			continue;
		}
		i++;
	}
}

int
ingest_adopt(struct ingest *g, const C4__Event *ev)
{
	struct ing_event *t;
	uint64_t skey;
	char *end;

	if (ev->id == NULL || strlen(ev->id) < 17 || ev->id[16] != '-')
		return -1;
	skey = strtoull(ev->id, &end, 16);
	if (end != ev->id + 16 || ing_event_adopted(g, skey) != NULL)
		return -1;
	t = ing_event_new(g, 0);
	if (t == NULL)
		return -1;
	t->skey = skey;
	snprintf(t->id, sizeof(t->id), "%s", ev->id);
	t->revision = ev->revision;
	t->first_seen_ns = ev->first_seen_ns;
	t->kind = ev->kind;
	/* Counted in intervals with data: agents may take a while back. */
	t->adopted_at = g->data_ticks + 1;
	return 0;
}

/* ---- the tick
 * ------------------------------------------------------------------ */

static int
ing_append(void **dst, size_t *n, size_t *cap, const void *src, size_t k,
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

static uint64_t
ing_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * In a 2-rank communicator a chunk's transfer time is what its sender saw
 * (SendWait) plus the queueing on the path that both ends' timings show
 * (flight.h): a transport that calls a chunk sent once a socket buffer
 * took it hides the second from the first, and a pair has no other
 * connection to be compared with.  Larger communicators keep SendWait
 * alone: there the queueing also stretches the connections whose
 * acknowledgements share the slow path, and the delay matrix, which finds
 * the slow one by comparing connections, took far longer to settle on it
 * (docs/nccl.md, 7.1); their timings are not kept.
 */
static void
ing_flight(struct ingest *g)
{
	struct flight_stats fs;
	double ex;

	for (size_t i = 0; i < g->nconn; i++) {
		struct c4m_conn *o = &g->conn[i];

		if (!ing_pair(g, o->comm) ||
		    flight_take(g->fl, o->comm, o->src, o->dst, &ex) <= 0 ||
		    o->xfer.count == 0 || !(ex > 0))
			continue;
		ex /= 1e3; /* us, as the stats */
		o->xfer.sum += ex * (double)o->xfer.count;
		o->xfer.min += ex;
		o->xfer.max += ex;
		o->xfer.p50 += ex;
		o->xfer.p90 += ex;
		o->xfer.p99 += ex;
	}
	flight_get_stats(g->fl, &fs);
	g->st.flights_matched = fs.matched;
	g->st.flights_unmatched = fs.unmatched + fs.mismatch;
}

int
ingest_tick(struct ingest *g, uint64_t now_ns)
{
	const struct c4m_event *ev;
	struct c4m_input in;
	size_t nev = 0, nheard = 0;
	uint64_t t0 = ing_mono_us(), dt;

	g->tick++;
	g->ncoll = g->nconn = g->nwait = 0;
	if (vec_reserve((void **)&g->heard, &g->cheard,
			g->nhosts ? g->nhosts : 1, sizeof(*g->heard)) < 0)
		return -1;
	for (size_t i = 0; i < g->nhosts; i++) {
		struct ing_host *h = &g->hosts[i];

		if (h->nq > 0) {
			struct ing_window *w = &h->q[h->head];

			if (ing_append((void **)&g->coll, &g->ncoll, &g->ccoll,
				       w->coll, w->ncoll,
				       sizeof(*g->coll)) < 0 ||
			    ing_append((void **)&g->conn, &g->nconn, &g->cconn,
				       w->conn, w->nconn,
				       sizeof(*g->conn)) < 0 ||
			    ing_append((void **)&g->wait, &g->nwait, &g->cwait,
				       w->wait, w->nwait, sizeof(*g->wait)) < 0)
				return -1;
			h->head = (h->head + 1) % INGEST_QUEUE_MAX;
			h->nq--;
			h->heard = 1;
		}
		if (h->heard)
			g->heard[nheard++] = (uint32_t)i;
		/* A host with windows still queued counts as heard next time.
		 */
		h->heard = h->nq > 0;
	}
	if (nheard > 0)
		g->data_ticks++;
	ing_flight(g);
	memset(&in, 0, sizeof(in));
	in.interval = g->tick;
	in.coll = g->coll;
	in.ncoll = g->ncoll;
	in.conn = g->conn;
	in.nconn = g->nconn;
	in.wait = g->wait;
	in.nwait = g->nwait;
	in.hosts = g->heard;
	in.nhosts = nheard;
	if (matrix_analyze(g->m, &in, &ev, &nev) < 0) {
		g->st.bad_records++;
		log_warnx("interval %" PRIu64 ": the detection engine refused "
			  "its input",
			  g->tick);
		nev = 0;
	}
	for (size_t i = 0; i < nev; i++)
		ing_on_event(g, &ev[i], now_ns);
	ing_expire_adopted(g, now_ns);
	/* Keep this interval's connections for the matrix view. */
	g->nlast = 0;
	if (ing_append((void **)&g->last, &g->nlast, &g->clast, g->conn,
		       g->nconn, sizeof(*g->conn)) < 0)
		g->nlast = 0;
	dt = ing_mono_us() - t0;
	g->st.ticks++;
	g->st.analysis_us_last = dt;
	if (dt > g->st.analysis_us_max)
		g->st.analysis_us_max = dt;
	g->st.comms_incomplete = 0;
	for (size_t i = 0; i < g->ncomms; i++)
		g->st.comms_incomplete += !g->comms[i].added;
	return 0;
}

/* ---- lifetime
 * ----------------------------------------------------------------- */

struct ingest *
ingest_new(const char *job, const struct ingest_params *p,
	   ingest_publish_fn publish, void *arg)
{
	struct ingest *g = calloc(1, sizeof(*g));
	struct c4m_params mp;

	if (g == NULL)
		return NULL;
	g->job = strdup(job);
	g->p = *p;
	g->publish = publish;
	g->arg = arg;
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
	g->fl = flight_new();
	if (g->job == NULL || g->m == NULL || g->fl == NULL) {
		ingest_free(g);
		return NULL;
	}
	return g;
}

void
ingest_free(struct ingest *g)
{
	if (g == NULL)
		return;
	matrix_free(g->m);
	flight_free(g->fl);
	for (size_t i = 0; i < g->nhosts; i++) {
		struct ing_host *h = &g->hosts[i];

		for (size_t j = 0; j < h->nnics; j++)
			free(h->nics[j]);
		free(h->nics);
		for (unsigned j = 0; j < INGEST_QUEUE_MAX; j++)
			ing_window_free(&h->q[j]);
		free(h->name);
	}
	free(g->hosts);
	u64map_free(&g->host_map);
	for (size_t i = 0; i < g->ncomms; i++) {
		free(g->comms[i].map);
		free(g->comms[i].known);
		free(g->comms[i].name);
	}
	free(g->comms);
	u64map_free(&g->comm_map);
	free(g->events);
	free(g->coll);
	free(g->conn);
	free(g->wait);
	free(g->heard);
	free(g->last);
	free(g->job);
	free(g);
}

const struct ingest_stats *
ingest_get_stats(const struct ingest *g)
{
	return &g->st;
}

uint64_t
ingest_interval(const struct ingest *g)
{
	return g->tick;
}

/* Ranks of the job: GPUs known to run one (a rank in several comms once). */
uint32_t
ingest_ranks_known(const struct ingest *g)
{
	uint32_t n = 0;

	for (size_t i = 0; i < g->nhosts; i++)
		for (int w = 0; w < 4; w++)
			n += (uint32_t)__builtin_popcountll(
				g->hosts[i].gpus[w]);
	return n;
}

/* ---- admin views
 * --------------------------------------------------------------- */

/*
 * The communicator to show when none is named: the one the newest open
 * communication event is about, else the one with most network cells.
 */
static uint64_t
ing_default_comm(const struct ingest *g)
{
	uint64_t best = 0;
	size_t bestn = 0;

	for (size_t i = 0; i < g->nevents; i++)
		if (g->events[i].live && g->hot_comm != 0)
			return g->hot_comm;
	for (size_t i = 0; i < g->ncomms; i++) {
		size_t n = 0;

		for (size_t j = 0; j < g->nlast; j++)
			n += g->last[j].comm == g->comms[i].hash &&
			     g->last[j].transport == C4M_TR_NET;
		if (n > bestn || (bestn == 0 && i == 0)) {
			bestn = n;
			best = g->comms[i].hash;
		}
	}
	return best;
}

int
ingest_reply_ranks(const struct ingest *g, uint64_t comm, struct arena *a,
		   C4__AdminReply *r)
{
	uint32_t ci;
	const struct ing_comm *c;

	if (comm == 0)
		comm = ing_default_comm(g);
	if (u64map_get(&g->comm_map, comm, &ci) < 0)
		return 0;
	c = &g->comms[ci];
	r->ranks =
		arena_calloc(a, c->nranks ? c->nranks : 1, sizeof(*r->ranks));
	if (r->ranks == NULL)
		return -1;
	for (uint32_t i = 0; i < c->nranks && i < INGEST_RANKS_REPLY; i++) {
		C4__RankInfo *o;

		if (!c->known[i])
			continue;
		o = arena_alloc(a, sizeof(*o));
		if (o == NULL)
			return -1;
		c4__rank_info__init(o);
		o->has_rank = o->has_gpu = o->has_nic_port = 1;
		o->rank = i;
		o->host = (char *)ing_host_name(g, c->map[i].host);
		o->gpu = c->map[i].gpu;
		o->nic = (char *)ing_nic_name(g, c->map[i].host, c->map[i].nic);
		o->nic_port = c->map[i].port;
		r->ranks[r->n_ranks++] = o;
	}
	return 0;
}

static int
ing_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The delay matrix of one communicator as of the last interval: per
 * connection the median transfer time per byte, scored against the median
 * of connections of the same transport (log ratio).
 */
int
ingest_reply_matrix(const struct ingest *g, uint64_t comm, struct arena *a,
		    C4__AdminReply *r)
{
	double *vals[C4M_TR_COUNT] = {NULL}, med[C4M_TR_COUNT] = {0};
	size_t nv[C4M_TR_COUNT] = {0};
	size_t n = 0;

	if (comm == 0)
		comm = ing_default_comm(g);
	for (size_t i = 0; i < g->nlast; i++)
		n += g->last[i].comm == comm;
	if (n > INGEST_MATRIX_CELLS)
		n = INGEST_MATRIX_CELLS;
	r->cells = arena_calloc(a, n ? n : 1, sizeof(*r->cells));
	for (int t = 0; t < C4M_TR_COUNT; t++)
		vals[t] = arena_calloc(a, n ? n : 1, sizeof(double));
	if (r->cells == NULL)
		return -1;
	for (size_t i = 0; i < g->nlast; i++) {
		const struct c4m_conn *c = &g->last[i];
		double per_byte;

		if (c->comm != comm || c->bytes == 0 || c->chunks == 0 ||
		    c->transport >= C4M_TR_COUNT ||
		    vals[c->transport] == NULL || nv[c->transport] >= n)
			continue;
		per_byte = c->xfer.p50 * 1e3 /
			   ((double)c->bytes / (double)c->chunks);
		vals[c->transport][nv[c->transport]++] = per_byte;
	}
	for (int t = 0; t < C4M_TR_COUNT; t++) {
		if (nv[t] == 0)
			continue;
		qsort(vals[t], nv[t], sizeof(double), ing_cmp_double);
		med[t] = vals[t][nv[t] / 2];
	}
	for (size_t i = 0; i < g->nlast && r->n_cells < n; i++) {
		const struct c4m_conn *c = &g->last[i];
		C4__MatrixCell *o;
		double per_byte = 0;

		if (c->comm != comm)
			continue;
		if (c->bytes > 0 && c->chunks > 0)
			per_byte = c->xfer.p50 * 1e3 /
				   ((double)c->bytes / (double)c->chunks);
		o = arena_alloc(a, sizeof(*o));
		if (o == NULL)
			return -1;
		c4__matrix_cell__init(o);
		o->has_comm_hash = o->has_src_rank = o->has_dst_rank = 1;
		o->has_value = o->has_baseline = o->has_score = 1;
		o->has_transport = o->has_hot = 1;
		o->comm_hash = c->comm;
		o->src_rank = c->src;
		o->dst_rank = c->dst;
		o->value = per_byte;
		o->baseline =
			c->transport < C4M_TR_COUNT ? med[c->transport] : 0;
		o->score = o->baseline > 0 && per_byte > 0
				   ? log(per_byte / o->baseline)
				   : 0;
		o->transport = c->transport == C4M_TR_NET
				       ? C4__TRANSPORT_CLASS__TRANSPORT_NET
				       : C4__TRANSPORT_CLASS__TRANSPORT_NVLINK;
		/* Hot: more than 1.5x its class median. */
		o->hot = o->score > log(1.5);
		r->cells[r->n_cells++] = o;
	}
	return 0;
}
