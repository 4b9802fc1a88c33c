/*
 * c4client.c - the CCL client library: a bounded queue filled by the
 * caller's threads and a sender thread that owns the agent session.
 *
 * Locking: one mutex guards the queue, the registrations, the counters and
 * the closing flag.  The caller's threads hold it only to link or unlink
 * queue items and copy counters; every socket call happens on the sender
 * thread without it.  A non-blocking pipe wakes the sender thread.
 */
#include "c4client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "c4_build.h"
#include "clock.h"
#include "msg.h"

#define C4CLIENT_RANKS_MAX    65536u /* ranks of one comm this process owns */
#define C4CLIENT_SILENT_BEATS 3	     /* heartbeats without a word: reconnect */

_Static_assert(
	(int)C4CLIENT_ALLREDUCE == (int)C4__COLL_FUNC__COLL_ALLREDUCE &&
		(int)C4CLIENT_SENDRECV == (int)C4__COLL_FUNC__COLL_SENDRECV &&
		(int)C4CLIENT_ALGO_PAT == (int)C4__ALGORITHM__ALGO_PAT &&
		(int)C4CLIENT_PROTO_SIMPLE == (int)C4__PROTOCOL__PROTO_SIMPLE &&
		(int)C4CLIENT_NET == (int)C4__TRANSPORT_CLASS__TRANSPORT_NET,
	"c4client enums follow c4d.proto");

struct c4client_item {
	struct c4client_item *next;
	uint8_t *frame;
	size_t len;
	uint64_t records; /* summaries inside, for the drop count */
};

struct c4client_reg {
	uint64_t hash;
	uint32_t nranks;
	char *name;
	C4__RankInfo *ranks; /* strings owned */
	size_t n;
	int sent; /* on the current session */
};

struct c4client {
	pthread_t thread;
	pthread_mutex_t mu;
	int wake[2]; /* pipe: [0] polled by the sender thread */
	char *path, *job, *token, *node;
	size_t limit;

	/* Guarded by mu. */
	struct c4client_item *head, *tail;
	struct c4client_item *ctrl, *ctrl_tail; /* never dropped */
	struct c4client_reg *regs;
	size_t nregs;
	uint64_t pending_dropped; /* records lost, not yet told */
	uint64_t seq, interval;
	int closing;
	struct timespec close_by;
	struct c4client_stats st;

	/* Sender thread only. */
	int fd;
	struct frame_buf in;
	uint32_t hb_ms;
	uint32_t max_frame; /* the agent's, from its hello reply */
	uint64_t sessions;
	unsigned backoff_ms;
	unsigned seed;
};

static uint64_t
c4client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t
c4client_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- building messages (caller's thread) --------------------------------- */

/* Allocations made while building one message, freed together. */
struct c4client_pool {
	void **p;
	size_t n, cap;
	int failed;
};

static void *
c4client_pool_track(struct c4client_pool *pl, void *p)
{
	if (p == NULL) {
		pl->failed = 1;
		return NULL;
	}
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 64;
		void **v = realloc(pl->p, cap * sizeof(*v));

		if (v == NULL) {
			free(p);
			pl->failed = 1;
			return NULL;
		}
		pl->p = v;
		pl->cap = cap;
	}
	pl->p[pl->n++] = p;
	return p;
}

static void *
c4client_pool_alloc(struct c4client_pool *pl, size_t n, size_t size)
{
	if (n == 0)
		return NULL;
	return c4client_pool_track(pl, calloc(n, size));
}

static void
c4client_pool_free(struct c4client_pool *pl)
{
	for (size_t i = 0; i < pl->n; i++)
		free(pl->p[i]);
	free(pl->p);
}

/* A DurationStats for sketch s, or NULL when s is NULL or empty. */
static C4__DurationStats *
c4client_dur(struct c4client_pool *pl, const struct sketch *s)
{
	C4__DurationStats *d;
	C4__QuantileSketch *q;

	if (s == NULL || s->total == 0)
		return NULL;
	d = c4client_pool_alloc(pl, 1, sizeof(*d));
	q = c4client_pool_alloc(pl, 1, sizeof(*q));
	if (d == NULL || q == NULL)
		return NULL;
	if (sketch_to_pb(s, d, q) < 0) {
		pl->failed = 1;
		return NULL;
	}
	if (q->index != NULL) {
		c4client_pool_track(pl, q->index);
		c4client_pool_track(pl, q->count);
	}
	return d;
}

/* Packs env into a newly allocated frame. */
static uint8_t *
c4client_pack(const C4__Envelope *env, size_t *len)
{
	uint8_t *buf;

	*len = msg_frame_size(env);
	buf = malloc(*len);
	if (buf != NULL)
		msg_pack_frame(env, buf);
	return buf;
}

static void
c4client_colls(struct c4client_pool *pl, C4__TelemetryBatch *b,
	       const struct c4client_report *r)
{
	C4__RankCollSummary *cs =
		c4client_pool_alloc(pl, r->ncolls, sizeof(*cs));

	b->colls = c4client_pool_alloc(pl, r->ncolls, sizeof(*b->colls));
	if (cs == NULL || b->colls == NULL)
		return;
	b->n_colls = r->ncolls;
	for (size_t i = 0; i < r->ncolls; i++) {
		const struct c4client_coll *in = &r->colls[i];
		C4__RankCollSummary *o = &cs[i];
		C4__OpStats *ops;

		c4__rank_coll_summary__init(o);
		b->colls[i] = o;
		o->has_comm_hash = o->has_rank = 1;
		o->comm_hash = in->comm_hash;
		o->rank = in->rank;
		o->has_first_seq_entered = o->has_last_seq_entered = 1;
		o->first_seq_entered = in->first_seq_entered;
		o->last_seq_entered = in->last_seq_entered;
		o->has_first_seq_completed = o->has_last_seq_completed = 1;
		o->first_seq_completed = in->first_seq_completed;
		o->last_seq_completed = in->last_seq_completed;
		o->has_idle = 1;
		o->idle = in->idle != 0;
		o->has_first_start_ns = in->first_start_ns != 0;
		o->first_start_ns = in->first_start_ns;
		if (in->nops == 0 || in->ops == NULL)
			continue;
		ops = c4client_pool_alloc(pl, in->nops, sizeof(*ops));
		o->ops = c4client_pool_alloc(pl, in->nops, sizeof(*o->ops));
		if (ops == NULL || o->ops == NULL)
			return;
		o->n_ops = in->nops;
		for (size_t k = 0; k < in->nops; k++) {
			const struct c4client_op *op = &in->ops[k];

			c4__op_stats__init(&ops[k]);
			o->ops[k] = &ops[k];
			ops[k].has_func = ops[k].has_count = 1;
			ops[k].func = (C4__CollFunc)op->func;
			ops[k].count = op->count;
			ops[k].has_bytes = 1;
			ops[k].bytes = op->bytes;
			ops[k].has_algorithm = op->algorithm != 0;
			ops[k].algorithm = (C4__Algorithm)op->algorithm;
			ops[k].has_protocol = op->protocol != 0;
			ops[k].protocol = (C4__Protocol)op->protocol;
			ops[k].has_channels = op->channels != 0;
			ops[k].channels = op->channels;
			ops[k].kernel_time = c4client_dur(pl, op->kernel_time);
			ops[k].gap_time = c4client_dur(pl, op->gap_time);
			ops[k].enqueue_time =
				c4client_dur(pl, op->enqueue_time);
		}
	}
}

static void
c4client_conns(struct c4client_pool *pl, C4__TelemetryBatch *b,
	       const struct c4client_report *r)
{
	C4__ConnSummary *cs = c4client_pool_alloc(pl, r->nconns, sizeof(*cs));

	b->conns = c4client_pool_alloc(pl, r->nconns, sizeof(*b->conns));
	if (cs == NULL || b->conns == NULL)
		return;
	b->n_conns = r->nconns;
	for (size_t i = 0; i < r->nconns; i++) {
		const struct c4client_conn *in = &r->conns[i];
		C4__ConnSummary *o = &cs[i];

		c4__conn_summary__init(o);
		b->conns[i] = o;
		o->has_comm_hash = o->has_src_rank = o->has_dst_rank = 1;
		o->comm_hash = in->comm_hash;
		o->src_rank = in->src_rank;
		o->dst_rank = in->dst_rank;
		o->has_channel_mask = 1;
		o->channel_mask = in->channel_mask;
		o->has_transport = in->transport != 0;
		o->transport = (C4__TransportClass)in->transport;
		o->has_algorithm = in->algorithm != 0;
		o->algorithm = (C4__Algorithm)in->algorithm;
		o->has_bytes = o->has_chunks = o->has_pending_chunks = 1;
		o->bytes = in->bytes;
		o->chunks = in->chunks;
		o->pending_chunks = in->pending_chunks;
		o->has_stalled_ns = in->stalled_ns != 0;
		o->stalled_ns = in->stalled_ns;
		o->transfer_time = c4client_dur(pl, in->transfer_time);
		o->has_receiver = in->receiver != 0;
		o->receiver = in->receiver != 0;
		if (in->ntimed > 0 && in->timed_seq != NULL &&
		    in->timed_chunks != NULL && in->timed_mean_ns != NULL) {
			/* Packed before the report returns: no copy needed. */
			o->n_timed_seq = o->n_timed_chunks =
				o->n_timed_mean_ns = in->ntimed;
			o->timed_seq = (uint64_t *)in->timed_seq;
			o->timed_chunks = (uint32_t *)in->timed_chunks;
			o->timed_mean_ns = (uint64_t *)in->timed_mean_ns;
		}
	}
}

static void
c4client_waits(struct c4client_pool *pl, C4__TelemetryBatch *b,
	       const struct c4client_report *r)
{
	C4__WaitSummary *ws = c4client_pool_alloc(pl, r->nwaits, sizeof(*ws));

	b->waits = c4client_pool_alloc(pl, r->nwaits, sizeof(*b->waits));
	if (ws == NULL || b->waits == NULL)
		return;
	b->n_waits = r->nwaits;
	for (size_t i = 0; i < r->nwaits; i++) {
		const struct c4client_wait *in = &r->waits[i];
		C4__WaitSummary *o = &ws[i];

		c4__wait_summary__init(o);
		b->waits[i] = o;
		o->has_comm_hash = o->has_rank = 1;
		o->comm_hash = in->comm_hash;
		o->rank = in->rank;
		o->recv_wait = c4client_dur(pl, in->recv_wait);
		o->send_peer_wait = c4client_dur(pl, in->send_peer_wait);
		o->send_gpu_wait = c4client_dur(pl, in->send_gpu_wait);
		o->recv_gpu_wait = c4client_dur(pl, in->recv_gpu_wait);
		o->has_steps = 1;
		o->steps = in->steps;
	}
}

static void
c4client_progress(struct c4client_pool *pl, C4__TelemetryBatch *b,
		  const struct c4client_report *r)
{
	C4__Progress *ps = c4client_pool_alloc(pl, r->nprogress, sizeof(*ps));

	b->progress =
		c4client_pool_alloc(pl, r->nprogress, sizeof(*b->progress));
	if (ps == NULL || b->progress == NULL)
		return;
	b->n_progress = r->nprogress;
	for (size_t i = 0; i < r->nprogress; i++) {
		const struct c4client_progress *in = &r->progress[i];
		C4__Progress *o = &ps[i];

		c4__progress__init(o);
		b->progress[i] = o;
		o->has_comm_hash = o->has_rank = 1;
		o->comm_hash = in->comm_hash;
		o->rank = in->rank;
		o->has_last_seq_entered = o->has_last_seq_completed = 1;
		o->last_seq_entered = in->last_seq_entered;
		o->last_seq_completed = in->last_seq_completed;
		o->has_last_change_ns = 1;
		o->last_change_ns = in->last_change_ns;
		o->has_inflight_func = in->inflight_func != 0;
		o->inflight_func = (C4__CollFunc)in->inflight_func;
		o->has_completed_at_enqueue = in->completed_at_enqueue != 0;
		o->completed_at_enqueue = in->completed_at_enqueue != 0;
		if (in->nstuck > 0 && in->stuck_peers != NULL) {
			o->n_stuck_peers = in->nstuck;
			o->stuck_peers = (uint32_t *)in->stuck_peers;
		}
	}
}

/* ---- the queue ------------------------------------------------------------
 */

static void
c4client_wake(struct c4client *c)
{
	char b = 1;

	/* Non-blocking: a full pipe already means "wake up". */
	if (write(c->wake[1], &b, 1) < 0 && errno != EAGAIN)
		return;
}

/* Drops the oldest queued summary; mu held. */
static void
c4client_drop_head(struct c4client *c)
{
	struct c4client_item *it = c->head;

	c->head = it->next;
	if (c->head == NULL)
		c->tail = NULL;
	c->st.queue_bytes -= it->len;
	c->st.queue_reports--;
	c->st.reports_dropped++;
	c->st.records_dropped += it->records;
	c->pending_dropped += it->records;
	free(it->frame);
	free(it);
}

int
c4client_report(struct c4client *c, const struct c4client_report *r)
{
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	struct c4client_pool pl = {NULL, 0, 0, 0};
	struct c4client_item *it = NULL;
	uint64_t records;
	C4__Envelope env;
	int rc = -1;

	if (c == NULL || r == NULL)
		return -1;
	records = r->ncolls + r->nconns + r->nwaits + r->nprogress;
	if ((r->ncolls && !r->colls) || (r->nconns && !r->conns) ||
	    (r->nwaits && !r->waits) || (r->nprogress && !r->progress))
		goto out;
	b.job_id = c->job;
	b.host = c->node;
	b.has_interval_id = b.has_interval_start_ns = 1;
	b.interval_start_ns = r->interval_start_ns ? r->interval_start_ns
						   : c4client_realtime_ns();
	b.has_interval_ms = r->interval_ms != 0;
	b.interval_ms = r->interval_ms;
	c4client_colls(&pl, &b, r);
	c4client_conns(&pl, &b, r);
	c4client_waits(&pl, &b, r);
	c4client_progress(&pl, &b, r);
	if (pl.failed)
		goto out;
	it = calloc(1, sizeof(*it));
	if (it == NULL)
		goto out;
	msg_init(&env, C4__MSG_TYPE__MSG_TELEMETRY, &b);
	pthread_mutex_lock(&c->mu);
	env.has_seq = 1;
	env.seq = ++c->seq;
	b.interval_id = r->interval_id ? r->interval_id : ++c->interval;
	pthread_mutex_unlock(&c->mu);
	it->frame = c4client_pack(&env, &it->len);
	it->records = records;
	if (it->frame == NULL)
		goto out;

	pthread_mutex_lock(&c->mu);
	if (c->closing || it->len > c->limit) {
		pthread_mutex_unlock(&c->mu);
		goto out;
	}
	while (c->head != NULL && c->st.queue_bytes + it->len > c->limit)
		c4client_drop_head(c);
	if (c->tail != NULL)
		c->tail->next = it;
	else
		c->head = it;
	c->tail = it;
	c->st.queue_bytes += it->len;
	c->st.queue_reports++;
	c->st.reports_queued++;
	pthread_mutex_unlock(&c->mu);
	it = NULL;
	c4client_wake(c);
	rc = 0;
out:
	if (rc < 0) {
		pthread_mutex_lock(&c->mu);
		c->st.reports_dropped++;
		c->st.records_dropped += records;
		c->pending_dropped += records;
		pthread_mutex_unlock(&c->mu);
	}
	if (it != NULL) {
		free(it->frame);
		free(it);
	}
	c4client_pool_free(&pl);
	return rc;
}

/* ---- registrations
 * ----------------------------------------------------------- */

static void
c4client_rank_free(C4__RankInfo *r)
{
	free(r->host);
	free(r->gpu_uuid);
	free(r->nic);
}

static void
c4client_reg_free(struct c4client_reg *g)
{
	for (size_t i = 0; i < g->n; i++)
		c4client_rank_free(&g->ranks[i]);
	free(g->ranks);
	free(g->name);
}

static char *
c4client_strdup(const char *s, int *failed)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*failed = 1;
	return d;
}

/* Fills a RankInfo with copies; host defaults to the node name. */
static int
c4client_rank_copy(struct c4client *c, C4__RankInfo *o,
		   const struct c4client_rank *in)
{
	int failed = 0;

	c4__rank_info__init(o);
	o->has_rank = 1;
	o->rank = in->rank;
	o->host = c4client_strdup(in->host ? in->host : c->node, &failed);
	o->has_gpu = 1;
	o->gpu = in->gpu;
	o->gpu_uuid = c4client_strdup(in->gpu_uuid, &failed);
	o->nic = c4client_strdup(in->nic, &failed);
	o->has_nic_port = in->nic_port != 0;
	o->nic_port = in->nic_port;
	o->has_local_rank = 1;
	o->local_rank = in->local_rank;
	o->has_pid = 1;
	o->pid = (uint32_t)getpid();
	if (failed) {
		c4client_rank_free(o);
		return -1;
	}
	return 0;
}

int
c4client_register(struct c4client *c, const struct c4client_comm *m)
{
	struct c4client_reg *g = NULL;
	C4__RankInfo *nr;
	int rc = -1;

	if (c == NULL || m == NULL || m->nranks == 0 ||
	    m->nranks > MSG_RANKS_MAX || m->nlocal > C4CLIENT_RANKS_MAX ||
	    (m->nlocal > 0 && m->ranks == NULL))
		return -1;
	/*
	 * What the agent would refuse must never reach it: a refused message
	 * ends the session, and the registration would be sent again after
	 * every reconnect.
	 */
	if (m->name != NULL && strlen(m->name) > MSG_ID_MAX)
		return -1;
	for (size_t i = 0; i < m->nlocal; i++) {
		const struct c4client_rank *r = &m->ranks[i];

		if (r->rank >= m->nranks ||
		    (r->host != NULL && strlen(r->host) > MSG_ID_MAX) ||
		    (r->gpu_uuid != NULL && strlen(r->gpu_uuid) > MSG_ID_MAX) ||
		    (r->nic != NULL && strlen(r->nic) > MSG_ID_MAX))
			return -1;
	}
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregs; i++)
		if (c->regs[i].hash == m->comm_hash)
			g = &c->regs[i];
	if (g == NULL) {
		struct c4client_reg *v =
			realloc(c->regs, (c->nregs + 1) * sizeof(*v));

		if (v == NULL)
			goto out;
		c->regs = v;
		g = &v[c->nregs++];
		memset(g, 0, sizeof(*g));
		g->hash = m->comm_hash;
	}
	g->nranks = m->nranks;
	if (m->name != NULL && (g->name == NULL || strcmp(g->name, m->name))) {
		free(g->name);
		g->name = strdup(m->name);
	}
	for (size_t i = 0; i < m->nlocal; i++) {
		size_t k;

		for (k = 0; k < g->n; k++)
			if (g->ranks[k].rank == m->ranks[i].rank)
				break;
		if (k == g->n) {
			if (g->n == C4CLIENT_RANKS_MAX)
				goto out;
			nr = realloc(g->ranks, (g->n + 1) * sizeof(*nr));
			if (nr == NULL)
				goto out;
			g->ranks = nr;
			if (c4client_rank_copy(c, &g->ranks[g->n],
					       &m->ranks[i]) < 0)
				goto out;
			g->n++;
		} else {
			C4__RankInfo tmp;

			if (c4client_rank_copy(c, &tmp, &m->ranks[i]) < 0)
				goto out;
			c4client_rank_free(&g->ranks[k]);
			g->ranks[k] = tmp;
		}
	}
	g->sent = 0;
	rc = 0;
out:
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		c4client_wake(c);
	return rc;
}

/* A CommRegister frame for g; mu held. */
static uint8_t *
c4client_reg_frame(struct c4client *c, const struct c4client_reg *g,
		   int destroyed, size_t *len)
{
	C4__CommRegister m = C4__COMM_REGISTER__INIT;
	C4__RankInfo **rp = NULL;
	C4__Envelope env;
	uint8_t *buf;

	m.job_id = c->job;
	m.has_comm_hash = m.has_nranks = 1;
	m.comm_hash = g->hash;
	m.nranks = g->nranks;
	m.name = g->name;
	if (destroyed) {
		m.has_destroyed = 1;
		m.destroyed = 1;
	} else if (g->n > 0) {
		rp = malloc(g->n * sizeof(*rp));
		if (rp == NULL)
			return NULL;
		for (size_t i = 0; i < g->n; i++)
			rp[i] = &g->ranks[i];
		m.ranks = rp;
		m.n_ranks = g->n;
	}
	msg_init(&env, C4__MSG_TYPE__MSG_COMM_REGISTER, &m);
	env.has_seq = 1;
	env.seq = ++c->seq;
	buf = c4client_pack(&env, len);
	free(rp);
	return buf;
}

int
c4client_deregister(struct c4client *c, uint64_t comm_hash)
{
	struct c4client_item *it;
	int rc = -1;

	if (c == NULL)
		return -1;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregs; i++) {
		if (c->regs[i].hash != comm_hash)
			continue;
		it = calloc(1, sizeof(*it));
		if (it == NULL)
			break;
		it->frame = c4client_reg_frame(c, &c->regs[i], 1, &it->len);
		if (it->frame == NULL) {
			free(it);
			break;
		}
		/* Told only if the session is up; a new session never hears
		 * of the comm again, which says the same. */
		if (c->ctrl_tail != NULL)
			c->ctrl_tail->next = it;
		else
			c->ctrl = it;
		c->ctrl_tail = it;
		c4client_reg_free(&c->regs[i]);
		c->regs[i] = c->regs[--c->nregs];
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		c4client_wake(c);
	return rc;
}

/* ---- the sender thread
 * --------------------------------------------------------- */

/* Keeps why the session failed, for c4client_stats(). */
static void
c4client_set_error(struct c4client *c, const char *what, const char *why)
{
	pthread_mutex_lock(&c->mu);
	snprintf(c->st.last_error, sizeof(c->st.last_error), "%.40s: %.80s",
		 what, why);
	pthread_mutex_unlock(&c->mu);
}

static void
c4client_disconnect(struct c4client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	frame_buf_free(&c->in);
	frame_buf_init(&c->in);
	pthread_mutex_lock(&c->mu);
	c->st.connected = 0;
	for (size_t i = 0; i < c->nregs; i++)
		c->regs[i].sent = 0;
	/* Deregistrations are moot on a new session. */
	while (c->ctrl != NULL) {
		struct c4client_item *it = c->ctrl;

		c->ctrl = it->next;
		free(it->frame);
		free(it);
	}
	c->ctrl_tail = NULL;
	pthread_mutex_unlock(&c->mu);
}

/* Writes all of buf; the socket's send timeout bounds each call. */
static int
c4client_write(struct c4client *c, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
c4client_send_msg(struct c4client *c, C4__MsgType type, void *body)
{
	C4__Envelope env;
	uint8_t *buf;
	size_t len;
	int rc;

	msg_init(&env, type, body);
	pthread_mutex_lock(&c->mu);
	env.has_seq = 1;
	env.seq = ++c->seq;
	pthread_mutex_unlock(&c->mu);
	buf = c4client_pack(&env, &len);
	if (buf == NULL)
		return -1;
	rc = c4client_write(c, buf, len);
	free(buf);
	return rc;
}

/*
 * Waits up to timeout_ms for the next message from the agent.  Returns it
 * (msg_free() it), or NULL on timeout (*closed 0) or when the session is
 * unusable (*closed 1).
 */
static C4__Envelope *
c4client_recv(struct c4client *c, int timeout_ms, int *closed)
{
	uint64_t until = c4client_now_ms() + (uint64_t)timeout_ms;

	*closed = 0;
	for (;;) {
		const uint8_t *body;
		uint32_t blen;
		enum frame_status fs;
		struct msg_err err;
		struct pollfd p = {c->fd, POLLIN, 0};
		uint8_t buf[4096];
		uint64_t now;
		ssize_t n;
		int pr;

		fs = frame_buf_next(&c->in, FRAME_MAX_LIMIT, &body, &blen);
		if (fs == FRAME_READY) {
			C4__Envelope *env = msg_unpack(body, blen, &err);

			if (env == NULL) {
				c4client_set_error(c, "agent sent", err.text);
				*closed = 1;
			}
			return env;
		}
		if (fs == FRAME_TOO_BIG) {
			*closed = 1;
			return NULL;
		}
		now = c4client_now_ms();
		pr = poll(&p, 1, now >= until ? 0 : (int)(until - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			*closed = 1;
			return NULL;
		}
		if (pr == 0)
			return NULL;
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0 || frame_buf_append(&c->in, buf, (size_t)n) < 0) {
			*closed = 1;
			return NULL;
		}
	}
}

/* Handles a message from the agent; -1 when the session must end. */
static int
c4client_handle(struct c4client *c, const C4__Envelope *env)
{
	if (env->type == C4__MSG_TYPE__MSG_ERROR) {
		pthread_mutex_lock(&c->mu);
		c->st.errors++;
		snprintf(c->st.last_error, sizeof(c->st.last_error), "%s",
			 env->error->text ? env->error->text : "error");
		pthread_mutex_unlock(&c->mu);
		return env->error->fatal ? -1 : 0;
	}
	if (env->type == C4__MSG_TYPE__MSG_GOODBYE)
		return -1;
	return 0; /* heartbeat echoes and anything newer */
}

/* Connects and says hello; 0 with c->fd open, or -1. */
static int
c4client_connect(struct c4client *c)
{
	struct sockaddr_un sa;
	struct timeval tv = {C4CLIENT_IO_TIMEOUT_MS / 1000,
			     (C4CLIENT_IO_TIMEOUT_MS % 1000) * 1000};
	C4__Hello h = C4__HELLO__INIT;
	C4__Envelope *env;
	int closed;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		c4client_set_error(c, "connect", strerror(errno));
		goto fail;
	}
	h.has_role = 1;
	h.role = C4__ROLE__ROLE_CCL_CLIENT;
	h.software_version = (char *)C4_VERSION;
	h.job_id = c->job;
	h.node_name = c->node;
	h.has_credential = 1;
	h.credential.data = (uint8_t *)c->token;
	h.credential.len = strlen(c->token);
	h.has_min_version = h.has_max_version = 1;
	h.min_version = h.max_version = C4_PROTO_VERSION;
	h.has_pid = 1;
	h.pid = (uint32_t)getpid();
	if (c4client_send_msg(c, C4__MSG_TYPE__MSG_HELLO, &h) < 0)
		goto fail;
	env = c4client_recv(c, C4CLIENT_HELLO_TIMEOUT_MS, &closed);
	if (env == NULL)
		goto fail;
	if (env->type != C4__MSG_TYPE__MSG_HELLO_REPLY) {
		c4client_handle(c, env);
		msg_free(env);
		goto fail;
	}
	c->hb_ms = env->hello_reply->has_heartbeat_interval_ms
			   ? env->hello_reply->heartbeat_interval_ms
			   : 5000;
	if (c->hb_ms < 100)
		c->hb_ms = 100;
	c->max_frame =
		env->hello_reply->has_max_frame &&
				env->hello_reply->max_frame >= FRAME_MAX_MIN
			? env->hello_reply->max_frame
			: FRAME_MAX_DEFAULT;
	msg_free(env);
	pthread_mutex_lock(&c->mu);
	c->st.connected = 1;
	if (c->sessions++ > 0)
		c->st.reconnects++;
	c->st.last_error[0] = '\0';
	pthread_mutex_unlock(&c->mu);
	return 0;
fail:
	c4client_disconnect(c);
	return -1;
}

/*
 * Takes the next thing to send: an unsent registration, a control
 * message, or the oldest summary (with the drop count folded in).  NULL
 * when there is nothing.  *records gets the summaries in it, *folded the
 * drop count folded into it.
 */
static uint8_t *
c4client_next(struct c4client *c, size_t *len, uint64_t *records,
	      int *is_report, uint64_t *folded)
{
	struct c4client_item *it;
	uint64_t dropped;
	uint8_t *buf = NULL;

	*records = 0;
	*is_report = 0;
	*folded = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregs; i++) {
		if (!c->regs[i].sent) {
			buf = c4client_reg_frame(c, &c->regs[i], 0, len);
			if (buf != NULL) {
				c->regs[i].sent = 1;
				c->st.registers_sent++;
			}
			pthread_mutex_unlock(&c->mu);
			return buf;
		}
	}
	if ((it = c->ctrl) != NULL) {
		c->ctrl = it->next;
		if (c->ctrl == NULL)
			c->ctrl_tail = NULL;
	} else if ((it = c->head) != NULL) {
		c->head = it->next;
		if (c->head == NULL)
			c->tail = NULL;
		c->st.queue_bytes -= it->len;
		c->st.queue_reports--;
		*is_report = 1;
	}
	dropped = *is_report ? c->pending_dropped : 0;
	c->pending_dropped -= dropped;
	pthread_mutex_unlock(&c->mu);
	if (it == NULL)
		return NULL;
	buf = it->frame;
	*len = it->len;
	*records = it->records;
	free(it);
	if (dropped > 0) {
		/* Rare: re-encode with the count of what was lost before. */
		struct msg_err err;
		C4__Envelope *env = msg_unpack(buf + FRAME_HDR_LEN,
					       *len - FRAME_HDR_LEN, &err);
		uint8_t *nb = NULL;

		if (env != NULL) {
			env->telemetry->has_dropped_records = 1;
			env->telemetry->dropped_records += dropped;
			nb = c4client_pack(env, len);
			msg_free(env);
		}
		if (nb == NULL) {
			pthread_mutex_lock(&c->mu);
			c->pending_dropped += dropped;
			pthread_mutex_unlock(&c->mu);
		} else {
			free(buf);
			buf = nb;
			*folded = dropped;
		}
	}
	return buf;
}

/* Is the close deadline past (never, unless closing)? */
static int
c4client_past_close(struct c4client *c)
{
	struct timespec ts, by;
	int closing;

	pthread_mutex_lock(&c->mu);
	closing = c->closing;
	by = c->close_by;
	pthread_mutex_unlock(&c->mu);
	if (!closing)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec > by.tv_sec ||
	       (ts.tv_sec == by.tv_sec && ts.tv_nsec >= by.tv_nsec);
}

/*
 * Sends everything pending (when closing, only until the deadline); -1
 * when the session broke.
 */
static int
c4client_flush(struct c4client *c)
{
	for (;;) {
		uint64_t records, folded;
		int is_report;
		size_t len;
		uint8_t *buf;
		int rc;

		if (c4client_past_close(c))
			return 0;
		buf = c4client_next(c, &len, &records, &is_report, &folded);
		if (buf == NULL)
			return 0;
		/* The agent would close the session on a frame this big. */
		if (len > FRAME_HDR_LEN + (size_t)c->max_frame) {
			free(buf);
			pthread_mutex_lock(&c->mu);
			if (is_report) {
				c->st.reports_dropped++;
				c->st.records_dropped += records;
				c->pending_dropped += records + folded;
			}
			pthread_mutex_unlock(&c->mu);
			continue;
		}
		rc = c4client_write(c, buf, len);
		free(buf);
		pthread_mutex_lock(&c->mu);
		if (rc < 0 && is_report) {
			c->st.reports_dropped++;
			c->st.records_dropped += records;
			/* The count it carried must travel in a later one. */
			c->pending_dropped += records + folded;
		} else if (is_report) {
			c->st.reports_sent++;
		}
		pthread_mutex_unlock(&c->mu);
		if (rc < 0)
			return -1;
	}
}

static void
c4client_drain_wake(struct c4client *c)
{
	char buf[64];

	while (read(c->wake[0], buf, sizeof(buf)) > 0)
		;
}

/* Sleeps until woken or ms pass. */
static void
c4client_sleep(struct c4client *c, uint64_t ms)
{
	struct pollfd p = {c->wake[0], POLLIN, 0};

	if (poll(&p, 1, (int)ms) > 0)
		c4client_drain_wake(c);
}

static void *
c4client_run(void *arg)
{
	struct c4client *c = arg;
	uint64_t next_try = 0, last_hb = 0, last_heard = 0;
	int close_tried = 0;

	for (;;) {
		struct pollfd p[2];
		uint64_t now = c4client_now_ms();
		int closing, timeout;
		struct timespec close_by;

		pthread_mutex_lock(&c->mu);
		closing = c->closing;
		close_by = c->close_by;
		pthread_mutex_unlock(&c->mu);
		if (closing) {
			struct timespec ts;
			int idle;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			if (ts.tv_sec > close_by.tv_sec ||
			    (ts.tv_sec == close_by.tv_sec &&
			     ts.tv_nsec >= close_by.tv_nsec))
				break;
			pthread_mutex_lock(&c->mu);
			idle = c->head == NULL && c->ctrl == NULL;
			pthread_mutex_unlock(&c->mu);
			/*
			 * Without a session, closing makes one attempt at
			 * once so that a short-lived process still delivers
			 * what it queued; then it gives up.
			 */
			if (c->fd < 0 && (idle || close_tried))
				break;
			if (c->fd < 0) {
				close_tried = 1;
				next_try = 0;
			}
		}
		if (c->fd < 0) {
			if (now < next_try) {
				c4client_sleep(c, next_try - now);
				continue;
			}
			if (c4client_connect(c) < 0) {
				unsigned d = c->backoff_ms;

				/* Exponential backoff, jittered into
				 * [d/2, d] so clients do not herd. */
				next_try = now + d / 2 +
					   (unsigned)rand_r(&c->seed) %
						   (d / 2 + 1);
				c->backoff_ms =
					d * 2 > C4CLIENT_BACKOFF_MAX_MS
						? C4CLIENT_BACKOFF_MAX_MS
						: d * 2;
				continue;
			}
			c->backoff_ms = C4CLIENT_BACKOFF_MIN_MS;
			last_hb = last_heard = c4client_now_ms();
		}
		c4client_drain_wake(c);
		if (c4client_flush(c) < 0) {
			c4client_disconnect(c);
			continue;
		}
		if (closing) {
			int empty;

			pthread_mutex_lock(&c->mu);
			empty = c->head == NULL && c->ctrl == NULL;
			pthread_mutex_unlock(&c->mu);
			if (empty) {
				C4__Goodbye g = C4__GOODBYE__INIT;

				g.reason = (char *)"closing";
				c4client_send_msg(c, C4__MSG_TYPE__MSG_GOODBYE,
						  &g);
				break;
			}
		}
		now = c4client_now_ms();
		if (now >= last_hb + c->hb_ms) {
			C4__Heartbeat hb = C4__HEARTBEAT__INIT;

			hb.has_sent_ns = 1;
			hb.sent_ns = now * 1000000u;
			if (c4client_send_msg(c, C4__MSG_TYPE__MSG_HEARTBEAT,
					      &hb) < 0) {
				c4client_disconnect(c);
				continue;
			}
			last_hb = now;
		}
		if (now >
		    last_heard + (uint64_t)C4CLIENT_SILENT_BEATS * c->hb_ms) {
			c4client_set_error(c, "agent", "silent");
			c4client_disconnect(c);
			continue;
		}
		timeout = (int)(last_hb + c->hb_ms - now);
		if (closing)
			timeout = 10;
		p[0] = (struct pollfd){c->fd, POLLIN, 0};
		p[1] = (struct pollfd){c->wake[0], POLLIN, 0};
		if (poll(p, 2, timeout) > 0 && p[0].revents) {
			int closed = 0;
			C4__Envelope *env = c4client_recv(c, 0, &closed);

			if (env == NULL && !closed) {
				/* Bytes arrived but not yet a frame. */
				last_heard = c4client_now_ms();
				continue;
			}
			while (env != NULL) {
				int r = c4client_handle(c, env);

				msg_free(env);
				last_heard = c4client_now_ms();
				if (r < 0) {
					closed = 1;
					break;
				}
				env = c4client_recv(c, 0, &closed);
			}
			if (closed)
				c4client_disconnect(c);
		}
	}
	c4client_disconnect(c);
	return NULL;
}

/* ---- life cycle
 * ---------------------------------------------------------------- */

struct c4client *
c4client_open(const struct c4client_opts *o)
{
	struct c4client *c;
	char host[256];

	if (o == NULL || o->socket_path == NULL || o->job_id == NULL ||
	    o->job_id[0] == '\0' || o->token == NULL ||
	    strlen(o->socket_path) >=
		    sizeof(((struct sockaddr_un *)0)->sun_path) ||
	    strlen(o->job_id) > MSG_ID_MAX ||
	    strlen(o->token) > MSG_CREDENTIAL_MAX ||
	    (o->node_name && strlen(o->node_name) > MSG_ID_MAX) ||
	    (o->queue_limit != 0 && o->queue_limit < C4CLIENT_QUEUE_MIN))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->fd = -1;
	c->wake[0] = c->wake[1] = -1;
	frame_buf_init(&c->in);
	if (o->node_name == NULL) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
	}
	c->path = strdup(o->socket_path);
	c->job = strdup(o->job_id);
	c->token = strdup(o->token);
	c->node = strdup(o->node_name ? o->node_name : host);
	c->limit = o->queue_limit ? o->queue_limit : C4CLIENT_QUEUE_DEFAULT;
	c->backoff_ms = C4CLIENT_BACKOFF_MIN_MS;
	c->hb_ms = 5000;
	c->max_frame = FRAME_MAX_DEFAULT;
	c->seed = (unsigned)getpid() ^ (unsigned)c4client_realtime_ns();
	if (c->path == NULL || c->job == NULL || c->token == NULL ||
	    c->node == NULL || pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		goto fail;
	if (pthread_mutex_init(&c->mu, NULL) != 0)
		goto fail;
	if (pthread_create(&c->thread, NULL, c4client_run, c) != 0) {
		pthread_mutex_destroy(&c->mu);
		goto fail;
	}
	return c;
fail:
	if (c->wake[0] >= 0) {
		close(c->wake[0]);
		close(c->wake[1]);
	}
	free(c->path);
	free(c->job);
	free(c->token);
	free(c->node);
	free(c);
	return NULL;
}

void
c4client_stats(struct c4client *c, struct c4client_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
}

void
c4client_close(struct c4client *c)
{
	struct timespec ts;

	if (c == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += C4CLIENT_CLOSE_FLUSH_MS / 1000;
	ts.tv_nsec += (C4CLIENT_CLOSE_FLUSH_MS % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->mu);
	c->closing = 1;
	c->close_by = ts;
	pthread_mutex_unlock(&c->mu);
	c4client_wake(c);
	pthread_join(c->thread, NULL);
	while (c->head != NULL)
		c4client_drop_head(c);
	for (size_t i = 0; i < c->nregs; i++)
		c4client_reg_free(&c->regs[i]);
	free(c->regs);
	pthread_mutex_destroy(&c->mu);
	close(c->wake[0]);
	close(c->wake[1]);
	frame_buf_free(&c->in);
	free(c->path);
	free(c->job);
	free(c->token);
	free(c->node);
	free(c);
}

uint64_t
c4client_next_boundary(uint64_t now_ns, uint32_t interval_ms, int first)
{
	uint64_t iv = (uint64_t)interval_ms * 1000000u;

	return first ? clock_tick_first(now_ns, iv, 0)
		     : clock_tick_next(now_ns, iv, 0);
}
