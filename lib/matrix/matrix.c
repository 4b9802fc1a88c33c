/*
 * matrix.c: the engine's front door. Registers communicators (and through
 * them hosts, devices and endpoints), runs the detectors once per interval
 * and hands back the events that the persistence layer decided to emit.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix_int.h"

/* Fill p with the defaults of matrix.h (documented in detection.md). */
void
matrix_params_default(struct matrix_params *p)
{
	p->persist_k = MATRIX_DEF_PERSIST_K;
	p->persist_n = MATRIX_DEF_PERSIST_N;
	p->resolve_n = MATRIX_DEF_RESOLVE_N;
	p->weak_k = MATRIX_DEF_WEAK_K;
	p->weak_n = MATRIX_DEF_WEAK_N;
	p->z_strong = MATRIX_DEF_Z_STRONG;
	p->cusum_k = MATRIX_DEF_CUSUM_K;
	p->cusum_h = MATRIX_DEF_CUSUM_H;
	p->min_slowdown = MATRIX_DEF_MIN_SLOWDOWN;
	p->cold_slowdown = MATRIX_DEF_COLD_SLOWDOWN;
	p->z_min = MATRIX_DEF_Z_MIN;
	p->cold_z_min = MATRIX_DEF_COLD_Z_MIN;
	p->sigma_floor = MATRIX_DEF_SIGMA_FLOOR;
	p->base_alpha = MATRIX_DEF_BASE_ALPHA;
	p->warm_intervals = MATRIX_DEF_WARM_INTERVALS;
	p->min_chunks = MATRIX_DEF_MIN_CHUNKS;
	p->min_class = MATRIX_DEF_MIN_CLASS;
	p->min_group = MATRIX_DEF_MIN_GROUP;
	p->row_min_hot = MATRIX_DEF_ROW_MIN_HOT;
	p->row_frac = MATRIX_DEF_ROW_FRAC;
	p->cold_frac = MATRIX_DEF_COLD_FRAC;
	p->elev_frac = MATRIX_DEF_ELEV_FRAC;
	p->hang_timeout = MATRIX_DEF_HANG_TIMEOUT;
	p->node_timeout = MATRIX_DEF_NODE_TIMEOUT;
	p->update_delta = MATRIX_DEF_UPDATE_DELTA;
	stall_params_default(p);
	p->resolve_max = MATRIX_DEF_RESOLVE_MAX;
	p->host_min_devs = MATRIX_DEF_HOST_MIN_DEVS;
	p->storm_frac = MATRIX_DEF_STORM_FRAC;
	p->storm_min_hosts = MATRIX_DEF_STORM_MIN;
	p->storm_window = MATRIX_DEF_STORM_WINDOW;
	p->isolate_conf = MATRIX_DEF_ISOLATE_CONF;
	p->isolate_slowdown = MATRIX_DEF_ISOLATE_SLOW;
	p->creep_max = MATRIX_DEF_CREEP_MAX;
	p->tail_min = MATRIX_DEF_TAIL_MIN;
	p->bp_frac = MATRIX_DEF_BP_FRAC;
	p->tail_run = MATRIX_DEF_TAIL_RUN;
	p->flap_k = MATRIX_DEF_FLAP_K;
	p->flap_n = MATRIX_DEF_FLAP_N;
	p->pair_max = MATRIX_DEF_PAIR_MAX;
	p->spike_decay = MATRIX_DEF_SPIKE_DECAY;
	p->link_grace = MATRIX_DEF_LINK_GRACE;
}

/* 1 when p is usable (windows fit the history, thresholds sane). */
static int
matrix_params_ok(const struct matrix_params *p)
{
	if (p->persist_n < 1 || p->persist_n > MATRIX_HIST_MAX ||
	    p->persist_k < 1 || p->persist_k > p->persist_n)
		return 0;
	if (p->resolve_n < 1 || p->resolve_n > MATRIX_HIST_MAX)
		return 0;
	if (p->weak_n < 1 || p->weak_n > MATRIX_HIST_MAX || p->weak_k < 1 ||
	    p->weak_k > p->weak_n)
		return 0;
	if (!(p->min_slowdown > 1.0) || !(p->cold_slowdown >= 1.0) ||
	    !(p->sigma_floor > 0) || !(p->base_alpha > 0) ||
	    !(p->base_alpha <= 1) || p->hang_timeout < 1 ||
	    p->node_timeout < 1 || p->row_min_hot < 1 || !(p->elev_frac > 0) ||
	    !(p->elev_frac <= 1))
		return 0;
	/* a member is compared with at least one other (wait.c) */
	if (p->min_group < 2)
		return 0;
	if (!stall_params_ok(p))
		return 0;
	/* the final pass (domain.c); clean runs count to 255 */
	if (p->resolve_max < p->resolve_n || p->resolve_max > 64 ||
	    p->host_min_devs < 1 || !(p->storm_frac >= 0) ||
	    !(p->storm_frac <= 1) || p->storm_min_hosts < 1 ||
	    p->storm_window < 1 || !(p->isolate_conf >= 0) ||
	    !(p->isolate_conf <= 1) || !(p->isolate_slowdown >= 1.0))
		return 0;
	/* cell.c: creep below the effect floor, tails that grow, a share */
	if (!(p->creep_max >= 0) || !(p->creep_max < log(p->min_slowdown)) ||
	    !(p->tail_min > 1.0) || !(p->bp_frac > 0) || !(p->bp_frac < 1) ||
	    p->tail_run < 1 || p->tail_run > MATRIX_HIST_MAX)
		return 0;
	/* persist.c: intermittent evidence (a filtered track counts one more)
	 */
	if (p->flap_n < 2 || p->flap_n > MATRIX_HIST_MAX || p->flap_k < 2 ||
	    p->flap_k > p->flap_n)
		return 0;
	/* spike.c: a rate, a decay */
	if (!(p->pair_max >= 0) || !(p->spike_decay >= 0) ||
	    !(p->spike_decay < 1))
		return 0;
	/* hang.c: a grace that still ends */
	if (p->link_grace > 1000)
		return 0;
	return 1;
}

/*
 * Create an engine with parameters p (NULL: defaults). Returns NULL when p
 * is invalid or memory runs out.
 */
struct matrix *
matrix_new(const struct matrix_params *p)
{
	struct matrix *m;

	m = mem_calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	if (p != NULL)
		m->p = *p;
	else
		matrix_params_default(&m->p);
	if (!matrix_params_ok(&m->p)) {
		matrix_free(m);
		return NULL;
	}
	m->lmin = (float)log(m->p.min_slowdown);
	m->lcold = (float)log(m->p.cold_slowdown);
	m->lelev = (float)(m->p.elev_frac * log(m->p.min_slowdown));
	m->last_ci = NO_IDX;
	/* weight 1/(n+1) until it falls to base_alpha: a running mean start */
	for (m->inv_len = 0; m->inv_len < MATRIX_INV_MAX; m->inv_len++) {
		float a = 1.0f / (float)(m->inv_len + 1);

		if (a <= (float)m->p.base_alpha)
			break;
		m->inv[m->inv_len] = a;
	}
	return m;
}

/* Free the engine and everything it holds; NULL is fine. */
void
matrix_free(struct matrix *m)
{
	uint32_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->ncomms; i++) {
		mem_free(m->comms[i].dev);
		mem_free(m->comms[i].rs);
	}
	mem_free(m->comms);
	mem_free(m->hosts);
	mem_free(m->devs);
	mem_free(m->eps);
	mem_free(m->cells);
	mem_free(m->cbase);
	mem_free(m->work);
	mem_free(m->links);
	mem_free(m->lwork);
	mem_free(m->lhot);
	mem_map_free(&m->link_map);
	mem_free(m->scratch);
	mem_free(m->cls);
	mem_free(m->clwork);
	mem_free(m->hint);
	mem_free(m->out);
	mem_free(m->stuck);
	persist_free(m);
	domain_free(m);
	mem_map_free(&m->comm_map);
	mem_map_free(&m->host_map);
	mem_map_free(&m->dev_map);
	mem_map_free(&m->ep_map);
	mem_map_free(&m->cell_map);
	mem_map_free(&m->cls_map);
	mem_map_free(&m->trk_map);
	mem_free(m);
}

/* Find or create host; *idx gets its index. Returns 0 or -1. */
static int
matrix_host_get(struct matrix *m, uint32_t host, uint32_t *idx)
{
	struct host *h;

	if (u64map_get(&m->host_map, host, idx) == 0)
		return 0;
	if (mem_grow((void **)&m->hosts, &m->chosts, m->nhosts + 1,
		     sizeof(*m->hosts)) < 0)
		return -1;
	if (mem_map_put(&m->host_map, host, m->nhosts) < 0)
		return -1;
	h = &m->hosts[m->nhosts];
	memset(h, 0, sizeof(*h));
	h->host = host;
	h->dev = NO_IDX;
	h->added = m->nanalyzed;
	*idx = m->nhosts++;
	return 0;
}

/* Find or create the endpoint of physical key. Returns 0 or -1. */
static int
matrix_ep_get(struct matrix *m, uint64_t key, uint32_t dev, int net,
	      uint32_t *idx)
{
	struct ep *e;

	if (u64map_get(&m->ep_map, key, idx) == 0)
		return 0;
	if (mem_grow((void **)&m->eps, &m->ceps, m->neps + 1, sizeof(*m->eps)) <
	    0)
		return -1;
	if (mem_map_put(&m->ep_map, key, m->neps) < 0)
		return -1;
	e = &m->eps[m->neps];
	memset(e, 0, sizeof(*e));
	e->pkey = key;
	e->dev = dev;
	e->net = (uint8_t)net;
	*idx = m->neps++;
	return 0;
}

/* Find or create the device (host, gpu) with its two endpoints. */
static int
matrix_dev_get(struct matrix *m, const struct matrix_rank_loc *loc,
	       uint64_t comm, uint32_t rank, uint32_t *idx)
{
	uint64_t key = ((uint64_t)loc->host << 16) | loc->gpu;
	uint64_t nkey;
	struct dev *d;
	uint32_t hidx, di;

	if (u64map_get(&m->dev_map, key, idx) == 0)
		return 0;
	if (matrix_host_get(m, loc->host, &hidx) < 0)
		return -1;
	if (mem_grow((void **)&m->devs, &m->cdevs, m->ndevs + 1,
		     sizeof(*m->devs)) < 0)
		return -1;
	if (mem_map_put(&m->dev_map, key, m->ndevs) < 0)
		return -1;
	di = m->ndevs++;
	d = &m->devs[di];
	memset(d, 0, sizeof(*d));
	d->host = loc->host;
	d->hidx = hidx;
	d->gpu = loc->gpu;
	d->nic = loc->nic;
	d->port = loc->port;
	d->ref_comm = comm;
	d->ref_rank = rank;
	d->blk_iv = UINT64_MAX;
	if (m->hosts[hidx].dev == NO_IDX)
		m->hosts[hidx].dev = di;
	nkey = EP_NET_FLAG | ((uint64_t)loc->host << 24) |
	       ((uint64_t)loc->nic << 8) | loc->port;
	if (matrix_ep_get(m, nkey, di, 1, &m->devs[di].ep_net) < 0 ||
	    matrix_ep_get(m, key, di, 0, &m->devs[di].ep_gpu) < 0)
		return -1;
	*idx = di;
	return 0;
}

/* Counts c's ranks in (add) or out of (!add) their hosts' members. */
static void
matrix_comm_members(struct matrix *m, const struct comm *c, int add)
{
	for (uint32_t r = 0; r < c->nranks; r++) {
		struct host *h = &m->hosts[m->devs[c->dev[r]].hidx];

		if (add)
			h->members++;
		else if (h->members > 0)
			h->members--;
	}
}

/*
 * Retire communicator comm: the job destroyed it (ncclCommDestroy), so its
 * ranks stop reporting on purpose.  From the next interval it is neither
 * analysed nor judged for hangs, and a host whose every rank belongs to
 * retired communicators is no longer expected to report (a job that ends
 * is not a lost node).  Events already open stay as they are.  Returns 0,
 * or -1 if comm is unknown.
 */
int
matrix_comm_retire(struct matrix *m, uint64_t comm)
{
	struct comm *c;
	uint32_t idx;

	if (m == NULL || u64map_get(&m->comm_map, comm, &idx) < 0)
		return -1;
	c = &m->comms[idx];
	if (!c->retired) {
		c->retired = 1;
		matrix_comm_members(m, c, 0);
	}
	m->last_ci = NO_IDX; /* the lookup cache may hold it */
	return 0;
}

/*
 * Register communicator comm with nranks members placed by map[rank].
 * Registering the same hash again with the same size is accepted and
 * ignored. Returns 0, or -1 on bad arguments or memory exhaustion.
 */
int
matrix_comm_add(struct matrix *m, uint64_t comm, uint32_t nranks,
		const struct matrix_rank_loc *map)
{
	struct comm *c;
	uint32_t idx, r;

	if (m == NULL || map == NULL || nranks == 0 ||
	    nranks > MATRIX_MAX_RANKS)
		return -1;
	if (u64map_get(&m->comm_map, comm, &idx) == 0) {
		c = &m->comms[idx];
		if (c->nranks != nranks)
			return -1;
		if (c->retired) {
			/* The same communicator again: judge it afresh. */
			c->retired = 0;
			c->any_done = 0;
			c->stall = 0;
			matrix_comm_members(m, c, 1);
		}
		return 0;
	}
	if (m->ncomms >= MATRIX_MAX_COMMS)
		return -1;
	if (mem_grow((void **)&m->comms, &m->ccomms, m->ncomms + 1,
		     sizeof(*m->comms)) < 0)
		return -1;
	c = &m->comms[m->ncomms];
	memset(c, 0, sizeof(*c));
	c->hash = comm;
	c->nranks = nranks;
	c->dev = mem_alloc((size_t)nranks * sizeof(*c->dev));
	c->rs = mem_calloc(nranks, sizeof(*c->rs));
	if (c->dev == NULL || c->rs == NULL)
		goto fail;
	for (r = 0; r < nranks; r++)
		if (matrix_dev_get(m, &map[r], comm, r, &c->dev[r]) < 0)
			goto fail;
	if (mem_map_put(&m->comm_map, comm, m->ncomms) < 0)
		goto fail;
	c->local = 1;
	for (r = 1; r < nranks; r++)
		if (map[r].host != map[0].host)
			c->local = 0;
	m->ncomms++;
	matrix_comm_members(m, c, 1);
	return 0;
fail:
	mem_free(c->dev);
	mem_free(c->rs);
	memset(c, 0, sizeof(*c));
	return -1;
}

/* comm_map lookup with a one-entry cache (summaries come grouped). */
int
matrix_comm_find(struct matrix *m, uint64_t comm, uint32_t *ci)
{
	if (m->last_ci != NO_IDX && m->last_comm == comm) {
		*ci = m->last_ci;
		return 0;
	}
	if (u64map_get(&m->comm_map, comm, ci) < 0 || m->comms[*ci].retired)
		return -1;
	m->last_comm = comm;
	m->last_ci = *ci;
	return 0;
}

/* Fill suspect s for device dev in role (tx/rx/rank/host). */
void
matrix_suspect_dev(const struct matrix *m, struct matrix_suspect *s,
		   uint32_t dev, unsigned role)
{
	const struct dev *d = &m->devs[dev];

	memset(s, 0, sizeof(*s));
	s->role = (uint8_t)role;
	s->transport = MATRIX_TR_NET;
	s->comm = d->ref_comm;
	s->rank = s->peer_rank = d->ref_rank;
	s->host = s->peer_host = d->host;
	s->gpu = s->peer_gpu = d->gpu;
	s->nic = s->peer_nic = d->nic;
	s->port = s->peer_port = d->port;
}

uint64_t
matrix_rank_event(const struct matrix *m, struct matrix_event *e, unsigned kind,
		  const struct comm *c, uint32_t rank)
{
	uint32_t dev = c->dev[rank];
	const struct dev *d = &m->devs[dev];

	memset(e, 0, sizeof(*e));
	e->kind = (uint8_t)kind;
	e->comm = c->hash;
	matrix_suspect_dev(m, &e->suspects[0], dev, MATRIX_ROLE_RANK);
	e->suspects[0].comm = c->hash;
	e->suspects[0].rank = e->suspects[0].peer_rank = rank;
	e->nsuspects = 1;
	e->action = MATRIX_ACT_ISOLATE_HOST;
	e->isolate_host = d->host;
	return persist_key(kind, ((uint64_t)d->host << 16) | d->gpu, 0);
}

/*
 * Median of v[0..n) by selection (v is reordered). n must be > 0. Small
 * inputs are insertion sorted; large ones use quickselect, linear on
 * average.
 */
float
matrix_median(float *v, uint32_t n)
{
	uint32_t lo = 0, hi = n - 1, k = n / 2, i, j;
	float piv, t, lowmax;

	if (n <= 16) {
		/* insertion sort: cheapest for the many small groups */
		for (i = 1; i < n; i++) {
			t = v[i];
			for (j = i; j > 0 && v[j - 1] > t; j--)
				v[j] = v[j - 1];
			v[j] = t;
		}
		return (n & 1) ? v[k] : 0.5f * (v[k - 1] + v[k]);
	}
	while (lo < hi) {
		piv = v[lo + (hi - lo) / 2];
		i = lo;
		j = hi;
		while (i <= j) {
			while (v[i] < piv)
				i++;
			while (v[j] > piv)
				j--;
			if (i <= j) {
				t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	if (n & 1)
		return v[k];
	/* the lower middle is the largest element left of k */
	lowmax = v[0];
	for (i = 1; i < k; i++)
		if (v[i] > lowmax)
			lowmax = v[i];
	return 0.5f * (lowmax + v[k]);
}

/* Mark host heard (what 0) or its session open (what 1). */
static void
matrix_mark_host(struct matrix *m, uint32_t host, int what)
{
	uint32_t idx;

	if (u64map_get(&m->host_map, host, &idx) < 0)
		return;
	if (what)
		m->hosts[idx].linked = 1;
	else
		m->hosts[idx].heard = 1;
}

int
matrix_back(const struct matrix *m, uint32_t ci, uint32_t rank)
{
	return m->nback > 0 &&
	       m->hosts[m->devs[m->comms[ci].dev[rank]].hidx].back;
}

static void
matrix_mark_rank(struct matrix *m, uint64_t comm, uint32_t rank)
{
	uint32_t ci;

	if (matrix_comm_find(m, comm, &ci) < 0 || rank >= m->comms[ci].nranks)
		return;
	m->hosts[m->devs[m->comms[ci].dev[rank]].hidx].heard = 1;
}

/*
 * Analyze one interval. Intervals must increase. On success *ev points at
 * the events emitted for this interval (valid until the next call or
 * matrix_free) and *nev holds their number. Malformed summaries (unknown
 * communicator, rank out of range) are skipped. Returns 0 or -1 (bad
 * arguments or memory exhaustion; the engine stays usable).
 */
int
matrix_analyze(struct matrix *m, const struct matrix_input *in,
	       const struct matrix_event **ev, size_t *nev)
{
	size_t i;
	uint32_t h;

	if (m == NULL || in == NULL || ev == NULL || nev == NULL)
		return -1;
	if (m->nanalyzed > 0 && in->interval <= m->iv)
		return -1;
	m->iv = in->interval;
	m->nout = 0;
	for (h = 0; h < m->nhosts; h++)
		m->hosts[h].heard = m->hosts[h].linked = 0;
	for (i = 0; in->linked != NULL && i < in->nlinked; i++)
		matrix_mark_host(m, in->linked[i], 1);
	if (in->hosts != NULL) {
		for (i = 0; i < in->nhosts; i++)
			matrix_mark_host(m, in->hosts[i], 0);
	} else {
		for (i = 0; i < in->ncoll; i++)
			matrix_mark_rank(m, in->coll[i].comm, in->coll[i].rank);
		for (i = 0; i < in->nwait; i++)
			matrix_mark_rank(m, in->wait[i].comm, in->wait[i].rank);
		for (i = 0; i < in->nconn; i++)
			matrix_mark_rank(m, in->conn[i].comm, in->conn[i].src);
	}
	m->nback = 0;
	for (h = 0; h < m->nhosts; h++) {
		struct host *x = &m->hosts[h];

		/* back after a silence: its reports mix two intervals */
		x->back = x->heard && x->last_seen > 0 && x->last_seen < m->iv;
		m->nback += x->back;
		if (x->heard)
			x->last_seen = m->iv + 1;
	}
	if (wait_ingest(m, in) < 0 || cell_ingest(m, in) < 0)
		goto fail;
	if (cell_detect(m) < 0 || wait_detect(m) < 0 || hang_detect(m) < 0)
		goto fail;
	if (persist_finish(m) < 0 || domain_finish(m) < 0 ||
	    persist_compact(m) < 0)
		goto fail;
	m->nanalyzed++;
	*ev = m->out;
	*nev = m->nout;
	return 0;
fail:
	m->nanalyzed++;
	*ev = NULL;
	*nev = 0;
	return -1;
}

/* Events the final pass dropped for breaking the contract. */
uint64_t
matrix_dropped(const struct matrix *m)
{
	return m != NULL ? m->ndropped : 0;
}

/* Number of connections (cells) the engine holds state for. */
size_t
matrix_ncells(const struct matrix *m)
{
	return m->ncells;
}

/*
 * Names of event kinds, domains, actions, evidence bases, event states and
 * suspect roles: static strings, "unknown" when out of range.
 */
const char *
matrix_kind_name(unsigned kind)
{
	static const char *const names[MATRIX_EV_COUNT] = {
		"comm-slow-link",      "comm-slow-tx", "comm-slow-rx",
		"comm-slow-ambiguous", "noncomm-slow", "comm-hang",
		"noncomm-hang",	       "node-lost",    "host-slow",
		"job-stall",
	};

	return kind < MATRIX_EV_COUNT ? names[kind] : "unknown";
}

const char *
matrix_domain_name(unsigned domain)
{
	static const char *const names[MATRIX_DOM_COUNT] = {
		"link", "nic_port", "nic", "gpu", "host", "job",
	};

	return domain < MATRIX_DOM_COUNT ? names[domain] : "unknown";
}

const char *
matrix_action_name(unsigned action)
{
	static const char *const names[MATRIX_ACT_COUNT] = {
		"observe",    "isolate_host", "isolate_nic",
		"check_link", "check_job",
	};

	return action < MATRIX_ACT_COUNT ? names[action] : "unknown";
}

const char *
matrix_basis_name(unsigned basis)
{
	static const char *const names[MATRIX_BASIS_COUNT] = {
		"median", "tail", "kernel", "wait", "progress", "heartbeat",
	};

	return basis < MATRIX_BASIS_COUNT ? names[basis] : "unknown";
}

const char *
matrix_state_name(unsigned state)
{
	static const char *const names[] = {"open", "updated", "resolved"};

	return state <= MATRIX_ST_RESOLVED ? names[state] : "unknown";
}

const char *
matrix_role_name(unsigned role)
{
	static const char *const names[] = {"tx", "rx", "link", "rank", "host"};

	return role <= MATRIX_ROLE_HOST ? names[role] : "unknown";
}

/*
 * Write a one-line account of event e for an operator into buf (len
 * bytes, always terminated): what is wrong, where, the evidence and what
 * to do. Returns the length snprintf reports (>= len: truncated), or -1.
 */
int
matrix_event_describe(const struct matrix_event *e, char *buf, size_t len)
{
	const struct matrix_suspect *s = e->nsuspects ? &e->suspects[0] : NULL;
	const char *act = matrix_action_name(e->action);
	char where[96] = "";

	if (buf == NULL || len == 0)
		return -1;
	if (s != NULL && s->role == MATRIX_ROLE_LINK)
		snprintf(where, sizeof(where),
			 "host %u nic %u port %u -> host %u nic %u port %u",
			 s->host, s->nic, s->port, s->peer_host, s->peer_nic,
			 s->peer_port);
	else if (s != NULL &&
		 (s->role == MATRIX_ROLE_TX || s->role == MATRIX_ROLE_RX))
		snprintf(where, sizeof(where), "host %u nic %u port %u %s",
			 s->host, s->nic, s->port, matrix_role_name(s->role));
	else if (s != NULL && s->role == MATRIX_ROLE_HOST)
		snprintf(where, sizeof(where), "host %u", s->host);
	else if (s != NULL)
		snprintf(where, sizeof(where), "host %u gpu %u (rank %u)",
			 s->host, s->gpu, s->rank);
	switch (e->kind) {
	case MATRIX_EV_COMM_HANG:
	case MATRIX_EV_NONCOMM_HANG:
		return snprintf(buf, len,
				"%s %s: %s at op %" PRIu64
				", no progress for %.0f intervals%s; %s, "
				"host %u",
				matrix_kind_name(e->kind),
				matrix_state_name(e->state), where, e->hang_seq,
				e->score, e->ambiguous ? " (ambiguous)" : "",
				act, e->isolate_host);
	case MATRIX_EV_NODE_LOST:
		return snprintf(buf, len,
				"node-lost %s: host %u silent for %.0f "
				"intervals; %s, host %u",
				matrix_state_name(e->state), e->isolate_host,
				e->score, act, e->isolate_host);
	case MATRIX_EV_JOB_STALL:
		return snprintf(buf, len,
				"job-stall %s: %u hosts stand still or would "
				"be blamed at once, intervals %" PRIu64
				"-%" PRIu64 "; %s",
				matrix_state_name(e->state),
				e->evidence.hosts_blamed, e->first_interval,
				e->last_interval, act);
	default:
		return snprintf(
			buf, len,
			"%s %s: %s %.2fx %s (z %.1f, %u cells, %u members, "
			"intervals %" PRIu64 "-%" PRIu64
			", confidence %.2f%s); %s, host %u",
			matrix_kind_name(e->kind), matrix_state_name(e->state),
			where, e->slowdown,
			e->evidence.basis == MATRIX_BASIS_TAIL
				? "growth of its tail (p90 / p50)"
				: "slower than its baseline",
			e->score, e->ncells_total,
			e->evidence.nmembers ? e->evidence.nmembers : 1,
			e->first_interval, e->last_interval, e->confidence,
			e->ambiguous ? ", pattern ambiguous" : "", act,
			e->isolate_host);
	}
}
