/*
 * domain.c: the final pass over an interval's events, between the
 * persistence layer's lifecycle (persist_finish) and the caller.
 *
 * A controller acts on events unattended, so what it reads must be one
 * event per fault domain, never a storm, never an isolation on weak
 * evidence.  This pass decides centrally, whatever detector found what:
 *
 * - Every event gets its fault domain (link, NIC port, NIC, GPU, host,
 *   job) and evidence basis; an event of a slow kind below z_min or
 *   min_slowdown is not published (counted in m->ndropped) until its
 *   evidence meets the contract.
 * - Concurrent anomalies of host_min_devs or more devices (GPUs, NIC
 *   ports) of one host become one host-slow event; members that open
 *   later are folded in as UPDATED of it; it resolves when every member
 *   has.  A member folded before its OPEN was published is never
 *   published (nor its RESOLVED); one published before the host event
 *   keeps its own lifecycle.
 * - When more than storm_frac of the job's hosts (and at least
 *   storm_min_hosts) would be blamed within storm_window intervals, the
 *   blaming events become one job-stall event (action check_job): those
 *   not yet published never are, those published get an UPDATED with
 *   action observe.
 * - The action follows the domain and the evidence: isolation only for
 *   a single host, GPU or NIC, with confidence >= isolate_conf, not
 *   ambiguous and (slow kinds) slowdown >= isolate_slowdown; an action
 *   that changes is published as UPDATED.
 */
#include <math.h>
#include <string.h>

#include "matrix_int.h"

/* Is kind judged on a slowdown, its score a robust z? */
static int
domain_slow_kind(unsigned kind)
{
	switch (kind) {
	case MATRIX_EV_COMM_SLOW_LINK:
	case MATRIX_EV_COMM_SLOW_TX:
	case MATRIX_EV_COMM_SLOW_RX:
	case MATRIX_EV_COMM_SLOW_AMBIG:
	case MATRIX_EV_NONCOMM_SLOW:
	case MATRIX_EV_HOST_SLOW:
		return 1;
	}
	return 0;
}

/* Does kind name one device of a host, a member of a host event? */
static int
domain_member_kind(unsigned kind)
{
	return kind == MATRIX_EV_COMM_SLOW_TX ||
	       kind == MATRIX_EV_COMM_SLOW_RX ||
	       kind == MATRIX_EV_NONCOMM_SLOW || kind == MATRIX_EV_NONCOMM_HANG;
}

/*
 * Set e's fault domain from its kind and first suspect, and its evidence
 * basis where the detector left the default: a rank's lateness is seen in
 * waits, hangs in progress markers, a lost node in missing heartbeats.
 * Host and job events are the pass's own and keep theirs.
 */
void
domain_classify(struct matrix_event *e)
{
	switch (e->kind) {
	case MATRIX_EV_COMM_SLOW_TX:
	case MATRIX_EV_COMM_SLOW_RX:
		e->domain = e->nsuspects > 0 && e->suspects[0].transport !=
							MATRIX_TR_NET
				    ? MATRIX_DOM_GPU
				    : MATRIX_DOM_NIC_PORT;
		break;
	case MATRIX_EV_NONCOMM_SLOW:
		e->domain = MATRIX_DOM_GPU;
		if (e->evidence.basis == MATRIX_BASIS_MEDIAN)
			e->evidence.basis = MATRIX_BASIS_WAIT;
		break;
	case MATRIX_EV_NONCOMM_HANG:
		e->domain = MATRIX_DOM_GPU;
		e->evidence.basis = MATRIX_BASIS_PROGRESS;
		break;
	case MATRIX_EV_COMM_HANG:
		e->domain = MATRIX_DOM_LINK;
		e->evidence.basis = MATRIX_BASIS_PROGRESS;
		break;
	case MATRIX_EV_NODE_LOST:
		e->domain = MATRIX_DOM_HOST;
		e->evidence.basis = MATRIX_BASIS_HEARTBEAT;
		break;
	case MATRIX_EV_HOST_SLOW:
	case MATRIX_EV_JOB_STALL:
		break;
	default:
		e->domain = MATRIX_DOM_LINK;
		break;
	}
}

/*
 * The action for e: isolation only for a single host or GPU (isolate
 * host) or NIC port or NIC (isolate NIC), with confidence >= isolate_conf,
 * not ambiguous and, for slow kinds, slowdown >= isolate_slowdown; a link
 * is checked, the job is checked; everything else is observed.
 */
unsigned
domain_action(const struct matrix *m, const struct matrix_event *e)
{
	const struct matrix_params *p = &m->p;
	int sure = !e->ambiguous && e->confidence >= p->isolate_conf &&
		   (!domain_slow_kind(e->kind) ||
		    e->slowdown >= p->isolate_slowdown);

	switch (e->domain) {
	case MATRIX_DOM_LINK:
		return e->ambiguous ? MATRIX_ACT_OBSERVE
				    : MATRIX_ACT_CHECK_LINK;
	case MATRIX_DOM_NIC_PORT:
	case MATRIX_DOM_NIC:
		return sure ? MATRIX_ACT_ISOLATE_NIC : MATRIX_ACT_OBSERVE;
	case MATRIX_DOM_GPU:
	case MATRIX_DOM_HOST:
		return sure ? MATRIX_ACT_ISOLATE_HOST : MATRIX_ACT_OBSERVE;
	case MATRIX_DOM_JOB:
		return MATRIX_ACT_CHECK_JOB;
	}
	return MATRIX_ACT_OBSERVE;
}

/*
 * The action of open track t, judged on the slowdown last published: it
 * moves by update_delta at a time, so a slowdown that hovers about
 * isolate_slowdown does not flip the action every interval.
 */
static unsigned
domain_track_action(const struct matrix *m, const struct track *t)
{
	struct matrix_event e = t->ev;

	if (t->reported_slowdown > 0)
		e.slowdown = t->reported_slowdown;
	return domain_action(m, &e);
}

/*
 * Does e meet the contract: a slow kind at min_slowdown, and at z_min or
 * on accumulated evidence (CUSUM at cusum_h)?
 */
static int
domain_valid(const struct matrix *m, const struct matrix_event *e)
{
	if (!domain_slow_kind(e->kind))
		return 1;
	return (e->score >= m->p.z_min || e->evidence.accumulated) &&
	       e->slowdown >= m->p.min_slowdown;
}

static int
domain_isolates(unsigned action)
{
	return action == MATRIX_ACT_ISOLATE_HOST ||
	       action == MATRIX_ACT_ISOLATE_NIC;
}

/* The host event of host, created when make is set; NULL otherwise. */
static struct dgrp *
domain_group(struct matrix *m, uint32_t host, int make)
{
	struct dgrp *g;
	uint32_t idx;

	if (u64map_get(&m->grp_map, host, &idx) == 0)
		return &m->grp[idx];
	if (!make)
		return NULL;
	if (mem_grow((void **)&m->grp, &m->cgrp, m->ngrp + 1, sizeof(*m->grp)) <
		    0 ||
	    mem_map_put(&m->grp_map, host, m->ngrp) < 0)
		return NULL;
	g = &m->grp[m->ngrp++];
	memset(g, 0, sizeof(*g));
	g->host = host;
	g->live = 1;
	g->key = persist_key(MATRIX_EV_HOST_SLOW, host, 0);
	return g;
}

/* Is t an open member a host event may hold: published or due? */
static int
domain_member(const struct track *t)
{
	return t->open && t->live && !t->storm &&
	       domain_member_kind(t->ev.kind) && t->ev.nsuspects > 0 &&
	       (t->pub || t->pend || t->grp);
}

/* Count member t into g's evidence for this interval. */
static void
domain_join(struct dgrp *g, const struct track *t)
{
	const struct matrix_event *e = &t->ev;
	const struct matrix_suspect *s = &e->suspects[0];
	uint8_t i;

	if (g->nmem == 0) {
		g->ev.nsuspects = 1;
		g->ev.score = 0;
		g->ev.confidence = 0;
		g->ev.ncells_total = 0;
		g->nic = s->nic;
		g->nic_only = 1;
		g->ev.comm = e->comm;
		g->ev.evidence.basis = e->evidence.basis;
	}
	g->nmem++;
	g->gpus |= 1ull << (s->gpu & 63);
	g->sum_r += log(e->slowdown > 0 ? e->slowdown : 1.0);
	if (e->domain != MATRIX_DOM_NIC_PORT || s->nic != g->nic)
		g->nic_only = 0;
	if (e->score > g->ev.score)
		g->ev.score = e->score;
	if (e->confidence > g->ev.confidence)
		g->ev.confidence = e->confidence;
	if (e->last_interval > g->ev.last_interval)
		g->ev.last_interval = e->last_interval;
	if (!g->open && (g->ev.first_interval == 0 ||
			 e->first_interval < g->ev.first_interval))
		g->ev.first_interval = e->first_interval;
	g->ev.ncells_total += e->ncells_total;
	if (e->evidence.hot_intervals > g->ev.evidence.hot_intervals)
		g->ev.evidence.hot_intervals = e->evidence.hot_intervals;
	g->ev.evidence.window = e->evidence.window;
	for (i = 1; i < g->ev.nsuspects; i++)
		if (g->ev.suspects[i].gpu == s->gpu &&
		    g->ev.suspects[i].role == s->role)
			return;
	if (g->ev.nsuspects < MATRIX_MAX_SUSPECTS)
		g->ev.suspects[g->ev.nsuspects++] = *s;
}

/* Fill g's event from this interval's members (domain_join). */
static void
domain_group_event(struct matrix *m, struct dgrp *g)
{
	struct matrix_event *e = &g->ev;
	uint32_t hidx;

	e->id = g->key;
	e->kind = MATRIX_EV_HOST_SLOW;
	e->ambiguous = 0;
	e->hang_seq = 0;
	e->isolate_host = g->host;
	e->slowdown = exp(g->sum_r / (double)g->nmem);
	e->domain = g->nic_only && persist_popcount(g->gpus) > 1
			    ? MATRIX_DOM_NIC
			    : MATRIX_DOM_HOST;
	e->evidence.gpus = g->gpus;
	e->evidence.nmembers = g->nfolded;
	memset(&e->suspects[0], 0, sizeof(e->suspects[0]));
	if (u64map_get(&m->host_map, g->host, &hidx) == 0 &&
	    m->hosts[hidx].dev != NO_IDX)
		matrix_suspect_dev(m, &e->suspects[0], m->hosts[hidx].dev,
				   MATRIX_ROLE_HOST);
	e->suspects[0].role = MATRIX_ROLE_HOST;
	e->suspects[0].host = e->suspects[0].peer_host = g->host;
	if (e->domain == MATRIX_DOM_NIC)
		e->suspects[0].nic = e->suspects[0].peer_nic = g->nic;
	e->action = (uint8_t)domain_action(m, e);
}

/*
 * Count every open member into its host's event, open the host events
 * that reach host_min_devs devices and fold members into open ones: a
 * member not yet published never will be.  Returns 0 or -1.
 */
static int
domain_hosts(struct matrix *m)
{
	uint32_t i;

	for (i = 0; i < m->ngrp; i++) {
		struct dgrp *g = &m->grp[i];

		g->nmem = 0;
		g->gpus = 0;
		g->sum_r = 0;
		if (!g->open)
			g->ev.first_interval = 0;
	}
	for (i = 0; i < m->ntrk; i++) {
		struct track *t = &m->trk[i];
		struct dgrp *g;

		if (!domain_member(t))
			continue;
		g = domain_group(m, t->ev.suspects[0].host, 1);
		if (g == NULL)
			return -1;
		domain_join(g, t);
	}
	for (i = 0; i < m->ngrp; i++) {
		struct dgrp *g = &m->grp[i];

		if (!g->open && g->nmem > 0 &&
		    persist_popcount(g->gpus) >= m->p.host_min_devs)
			g->open = 2; /* opens this interval */
	}
	for (i = 0; i < m->ntrk; i++) {
		struct track *t = &m->trk[i];
		struct dgrp *g;

		if (!domain_member(t) || t->grp != 0)
			continue;
		g = domain_group(m, t->ev.suspects[0].host, 0);
		if (g == NULL || !g->open)
			continue;
		t->grp = g->key;
		t->pend = 0;
		g->nfolded++;
	}
	return 0;
}

/*
 * Mark the hosts of events about to be published with an isolation as
 * blamed now, and count the hosts blamed within storm_window intervals
 * (none counted when nothing is blamed now).  Returns that count.
 */
static uint32_t
domain_blame(struct matrix *m)
{
	uint64_t now = m->iv + 1;
	uint32_t i, n = 0, any = 0, hidx;

	for (i = 0; i < m->ntrk; i++) {
		const struct track *t = &m->trk[i];

		if (t->pend && domain_isolates(t->ev.action) &&
		    u64map_get(&m->host_map, t->ev.isolate_host, &hidx) == 0) {
			m->blamed[hidx] = now;
			any = 1;
		}
	}
	for (i = 0; i < m->ngrp; i++) {
		const struct dgrp *g = &m->grp[i];

		if (g->open == 2 && domain_isolates(g->ev.action) &&
		    u64map_get(&m->host_map, g->host, &hidx) == 0) {
			m->blamed[hidx] = now;
			any = 1;
		}
	}
	if (!any)
		return 0;
	for (i = 0; i < m->nhosts; i++)
		if (m->blamed[i] != 0 && m->blamed[i] + m->p.storm_window > now)
			n++;
	return n;
}

/* Is this a storm: n blamed hosts of the job's live ones? */
static int
domain_storm(const struct matrix *m, uint32_t n)
{
	uint32_t i, live = 0;

	if (n < m->p.storm_min_hosts)
		return 0;
	for (i = 0; i < m->nhosts; i++)
		if (m->hosts[i].members > 0)
			live++;
	return (double)n > m->p.storm_frac * (double)live;
}

/* Add host's suspect to the job event while there is room. */
static void
domain_job_suspect(struct matrix *m, const struct matrix_suspect *s)
{
	struct matrix_event *e = &m->job.ev;
	uint8_t i;

	for (i = 0; i < e->nsuspects; i++)
		if (e->suspects[i].host == s->host)
			return;
	if (e->nsuspects == 0)
		e->isolate_host = s->host; /* named, never isolated */
	if (e->nsuspects < MATRIX_MAX_SUSPECTS) {
		e->suspects[e->nsuspects] = *s;
		e->suspects[e->nsuspects].role = MATRIX_ROLE_HOST;
		e->nsuspects++;
	}
}

/*
 * Fold every isolating event blamed within the window into the job event:
 * those due now are never published, those published are retracted
 * (action observe, published as UPDATED by domain_actions()).
 */
static void
domain_fold_storm(struct matrix *m)
{
	uint64_t now = m->iv + 1;
	uint32_t i, hidx;

	for (i = 0; i < m->ntrk; i++) {
		struct track *t = &m->trk[i];

		if (t->storm || !t->open || !t->live || t->grp != 0 ||
		    !(t->pend || t->pub) || !domain_isolates(t->ev.action))
			continue;
		if (u64map_get(&m->host_map, t->ev.isolate_host, &hidx) < 0 ||
		    m->blamed[hidx] + m->p.storm_window <= now)
			continue;
		t->storm = 1;
		t->pend = 0;
		t->ev.action = MATRIX_ACT_OBSERVE;
		m->job.nfolded++;
		if (t->ev.nsuspects > 0)
			domain_job_suspect(m, &t->ev.suspects[0]);
	}
	for (i = 0; i < m->ngrp; i++) {
		struct dgrp *g = &m->grp[i];

		if (g->storm || !g->open || !domain_isolates(g->ev.action))
			continue;
		if (u64map_get(&m->host_map, g->host, &hidx) < 0 ||
		    m->blamed[hidx] + m->p.storm_window <= now)
			continue;
		g->storm = 1;
		g->ev.action = MATRIX_ACT_OBSERVE;
		m->job.nfolded++;
		domain_job_suspect(m, &g->ev.suspects[0]);
	}
}

/*
 * The storm guard: open (or feed) the job event when too many hosts are
 * blamed at once, count its open members, resolve it when none is left.
 * Returns 0 or -1.
 */
static int
domain_job(struct matrix *m)
{
	struct dgrp *j = &m->job;
	uint32_t n = domain_blame(m), i, before = j->nfolded, open = 0;

	if (j->open || (n > 0 && domain_storm(m, n))) {
		if (!j->open) {
			memset(j, 0, sizeof(*j));
			j->key = persist_key(MATRIX_EV_JOB_STALL, 0, 0);
			j->ev.id = j->key;
			j->ev.kind = MATRIX_EV_JOB_STALL;
			j->ev.domain = MATRIX_DOM_JOB;
			j->ev.action = MATRIX_ACT_CHECK_JOB;
			j->ev.ambiguous = 1;
			j->ev.slowdown = 1.0;
			j->ev.confidence = 0.5;
			j->ev.evidence.basis = MATRIX_BASIS_PROGRESS;
			j->ev.evidence.window = (uint8_t)m->p.storm_window;
			j->ev.first_interval = m->iv;
		}
		domain_fold_storm(m);
	}
	if (!j->open && j->nfolded == 0)
		return 0;
	for (i = 0; i < m->ntrk; i++)
		if (m->trk[i].storm && m->trk[i].open && m->trk[i].live)
			open++;
	for (i = 0; i < m->ngrp; i++)
		if (m->grp[i].storm && m->grp[i].open && m->grp[i].nmem > 0)
			open++;
	if (n > j->ev.evidence.hosts_blamed)
		j->ev.evidence.hosts_blamed = n;
	j->ev.evidence.nmembers = j->nfolded;
	j->ev.score = j->ev.evidence.hosts_blamed;
	if (open > 0)
		j->ev.last_interval = m->iv;
	if (!j->open) {
		j->open = 1;
		j->ev.evidence.z_open = (float)j->ev.score;
		j->ev.evidence.slowdown_open = 1.0f;
		return persist_emit_event(m, &j->ev, MATRIX_ST_OPEN);
	}
	if (open == 0) {
		j->open = 0;
		j->nfolded = 0;
		return persist_emit_event(m, &j->ev, MATRIX_ST_RESOLVED);
	}
	if (j->nfolded > before)
		return persist_emit_event(m, &j->ev, MATRIX_ST_UPDATED);
	return 0;
}

/*
 * Publish, update and resolve the host events (one folded into the job
 * event before its OPEN never is); forget the ones that never opened or
 * resolved.  Returns 0 or -1.
 */
static int
domain_groups_emit(struct matrix *m)
{
	uint32_t i, j;

	for (i = 0; i < m->ngrp; i++) {
		struct dgrp *g = &m->grp[i];
		unsigned st = MATRIX_EV_COUNT;

		if (g->open == 2) {
			g->open = 1;
			g->ev.evidence.z_open = (float)g->ev.score;
			g->ev.evidence.slowdown_open = (float)g->ev.slowdown;
			g->pub = !g->storm;
			st = g->pub ? MATRIX_ST_OPEN : MATRIX_EV_COUNT;
		} else if (g->open && g->nmem == 0) {
			g->live = 0;
			st = g->pub ? MATRIX_ST_RESOLVED : MATRIX_EV_COUNT;
		} else if (g->open && g->pub &&
			   (g->nfolded != g->nrep || g->act != g->ev.action ||
			    fabs(g->ev.slowdown / g->reported_slowdown - 1.0) >=
				    m->p.update_delta)) {
			st = MATRIX_ST_UPDATED;
		} else if (!g->open && g->nmem == 0) {
			g->live = 0;
		}
		if (g->open) {
			g->nrep = g->nfolded;
			g->act = g->ev.action;
			if (st != MATRIX_EV_COUNT)
				g->reported_slowdown = g->ev.slowdown;
		}
		if (st == MATRIX_EV_COUNT)
			continue;
		if (persist_emit_event(m, &g->ev, st) < 0)
			return -1;
		g->ev.state = (uint8_t)st;
	}
	for (i = j = 0; i < m->ngrp; i++) {
		if (!m->grp[i].live) {
			u64map_del(&m->grp_map, m->grp[i].host);
			continue;
		}
		if (i != j) {
			m->grp[j] = m->grp[i];
			if (mem_map_put(&m->grp_map, m->grp[j].host, j) < 0)
				return -1;
		}
		j++;
	}
	m->ngrp = j;
	return 0;
}

/*
 * Keep what persist_finish() emitted for published candidates, with the
 * action and domain decided now: an OPEN when the candidate is due (it
 * meets the contract and was folded nowhere), UPDATED and RESOLVED only
 * of published ones.  An OPEN that breaks the contract is counted.
 * Entries from first on (the pass's own) are kept as they are.
 */
static void
domain_filter(struct matrix *m, uint32_t first)
{
	uint32_t i, n = 0, idx;

	for (i = 0; i < m->nout; i++) {
		struct matrix_event *e = &m->out[i];
		struct track *t;
		int keep = 1;

		if (i < first && u64map_get(&m->trk_map, e->id, &idx) == 0) {
			t = &m->trk[idx];
			if (e->state == MATRIX_ST_OPEN) {
				keep = t->pend;
				if (!keep && !t->grp && !t->storm)
					m->ndropped++;
				if (keep) {
					t->pub = 1;
					t->pend = 0;
				}
			} else {
				keep = t->pub;
			}
			if (keep) {
				e->action = t->ev.action;
				e->domain = t->ev.domain;
				e->evidence = t->ev.evidence;
				t->act = t->ev.action;
			}
		}
		if (keep)
			m->out[n++] = *e;
	}
	m->nout = n;
}

/*
 * Publish candidates that became due after their OPEN (their evidence
 * now meets the contract) and the action changes of published ones.
 * Returns 0 or -1.
 */
static int
domain_tracks_emit(struct matrix *m)
{
	uint32_t i;

	for (i = 0; i < m->ntrk; i++) {
		struct track *t = &m->trk[i];
		unsigned st;

		if (t->pend) {
			t->pub = 1;
			t->pend = 0;
			st = MATRIX_ST_OPEN;
		} else if (t->pub && t->open && t->live &&
			   t->act != t->ev.action) {
			st = MATRIX_ST_UPDATED;
		} else {
			continue;
		}
		t->act = t->ev.action;
		if (persist_emit_event(m, &t->ev, st) < 0)
			return -1;
	}
	return 0;
}

/*
 * The final pass (see the top of this file).  Runs after
 * persist_finish(), before persist_compact(): resolved candidates are
 * still in m->trk.  Returns 0 or -1 on memory exhaustion.
 */
int
domain_finish(struct matrix *m)
{
	uint32_t i, first = m->nout;

	if (m->nhosts > 0 && mem_grow((void **)&m->blamed, &m->cblamed,
				      m->nhosts, sizeof(*m->blamed)) < 0)
		return -1;
	for (i = 0; i < m->ntrk; i++) {
		struct track *t = &m->trk[i];

		if (!t->open || !t->live) {
			t->pend = 0;
			continue;
		}
		t->ev.action = t->storm ? MATRIX_ACT_OBSERVE
					: (uint8_t)domain_track_action(m, t);
		t->pend = !t->pub && !t->grp && !t->storm &&
			  domain_valid(m, &t->ev);
	}
	if (domain_hosts(m) < 0)
		return -1;
	for (i = 0; i < m->ngrp; i++)
		if (m->grp[i].nmem > 0) {
			domain_group_event(m, &m->grp[i]);
			if (m->grp[i].storm)
				m->grp[i].ev.action = MATRIX_ACT_OBSERVE;
		}
	if (domain_job(m) < 0)
		return -1;
	domain_filter(m, first);
	if (domain_tracks_emit(m) < 0 || domain_groups_emit(m) < 0)
		return -1;
	return 0;
}

/* Free the pass's state (m itself stays). */
void
domain_free(struct matrix *m)
{
	mem_free(m->grp);
	m->grp = NULL;
	m->ngrp = m->cgrp = 0;
	mem_map_free(&m->grp_map);
	mem_free(m->blamed);
	m->blamed = NULL;
	m->cblamed = 0;
}
