/*
 * events.c - engine events to c4.Event: public ids, revisions, the
 * operator's summary and action, adoption across restarts.
 */
#define LOG_SUBSYS "ingest"

#include "events.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fnv.h"
#include "log.h"
#include "vec.h"

struct events_refresh_arg {
	struct events *evs;
	uint64_t now_ns;
};

void
events_init(struct events *evs, const char *job, const struct hosts *hosts,
	    struct ingest_stats *st, ingest_publish_fn publish, void *arg)
{
	memset(evs, 0, sizeof(*evs));
	evs->job = job;
	evs->hosts = hosts;
	evs->st = st;
	evs->publish = publish;
	evs->arg = arg;
}

static struct events_entry *
events_find(struct events *evs, uint64_t cid)
{
	for (size_t i = 0; i < evs->n; i++)
		if (evs->v[i].cid == cid && cid != 0)
			return &evs->v[i];
	return NULL;
}

/* An adopted event (not yet seen by this run's engine) with key skey. */
static struct events_entry *
events_adopted(struct events *evs, uint64_t skey)
{
	for (size_t i = 0; i < evs->n; i++)
		if (evs->v[i].cid == 0 && evs->v[i].skey == skey)
			return &evs->v[i];
	return NULL;
}

/*
 * A key for "the same anomaly" that survives a restart: the engine's own
 * id hashes its host numbers, which follow the order hosts first report;
 * this one hashes the kind and each suspect's role, host and NIC names,
 * GPU and port.
 */
static uint64_t
events_stable_key(const struct events *evs, const struct matrix_event *e)
{
	uint64_t h = FNV1A64_INIT;

	h = fnv1a64(h, &e->kind, sizeof(e->kind));
	for (unsigned i = 0; i < e->nsuspects; i++) {
		const struct matrix_suspect *s = &e->suspects[i];
		const char *host = hosts_name(evs->hosts, s->host);
		const char *nic = hosts_nic_name(evs->hosts, s->host, s->nic);
		const char *phost = hosts_name(evs->hosts, s->peer_host);
		const char *pnic =
			hosts_nic_name(evs->hosts, s->peer_host, s->peer_nic);

		h = fnv1a64(h, &s->role, sizeof(s->role));
		h = fnv1a64(h, host, strlen(host) + 1);
		h = fnv1a64(h, nic, strlen(nic) + 1);
		h = fnv1a64(h, &s->gpu, sizeof(s->gpu));
		h = fnv1a64(h, &s->port, sizeof(s->port));
		h = fnv1a64(h, phost, strlen(phost) + 1);
		h = fnv1a64(h, pnic, strlen(pnic) + 1);
		h = fnv1a64(h, &s->peer_gpu, sizeof(s->peer_gpu));
	}
	return h;
}

static void
events_drop(struct events *evs, struct events_entry *e)
{
	size_t i = (size_t)(e - evs->v);

	free(e->target);
	evs->v[i] = evs->v[--evs->n];
}

static struct events_entry *
events_add(struct events *evs, uint64_t cid)
{
	struct events_entry *e;

	if (vec_reserve((void **)&evs->v, &evs->cap, evs->n + 1,
			sizeof(*evs->v)) < 0)
		return NULL;
	e = &evs->v[evs->n++];
	memset(e, 0, sizeof(*e));
	e->cid = cid;
	return e;
}

static C4__EventKind
events_kind(unsigned k)
{
	static const C4__EventKind map[MATRIX_EV_COUNT] = {
		[MATRIX_EV_COMM_SLOW_LINK] =
			C4__EVENT_KIND__EVENT_COMM_SLOW_CONN,
		[MATRIX_EV_COMM_SLOW_TX] = C4__EVENT_KIND__EVENT_COMM_SLOW_TX,
		[MATRIX_EV_COMM_SLOW_RX] = C4__EVENT_KIND__EVENT_COMM_SLOW_RX,
		[MATRIX_EV_COMM_SLOW_AMBIG] =
			C4__EVENT_KIND__EVENT_COMM_SLOW_AMBIGUOUS,
		[MATRIX_EV_NONCOMM_SLOW] = C4__EVENT_KIND__EVENT_NONCOMM_SLOW,
		[MATRIX_EV_COMM_HANG] = C4__EVENT_KIND__EVENT_COMM_HANG,
		[MATRIX_EV_NONCOMM_HANG] = C4__EVENT_KIND__EVENT_NONCOMM_HANG,
		[MATRIX_EV_NODE_LOST] = C4__EVENT_KIND__EVENT_NODE_LOST,
		[MATRIX_EV_HOST_SLOW] = C4__EVENT_KIND__EVENT_HOST_SLOW,
		[MATRIX_EV_JOB_STALL] = C4__EVENT_KIND__EVENT_JOB_STALL,
	};

	return k < MATRIX_EV_COUNT ? map[k] : C4__EVENT_KIND__EVENT_UNSPECIFIED;
}

static C4__SuspectRole
events_role(unsigned r)
{
	switch (r) {
	case MATRIX_ROLE_TX:
		return C4__SUSPECT_ROLE__SUSPECT_TX;
	case MATRIX_ROLE_RX:
		return C4__SUSPECT_ROLE__SUSPECT_RX;
	case MATRIX_ROLE_LINK:
		return C4__SUSPECT_ROLE__SUSPECT_LINK;
	case MATRIX_ROLE_HOST:
		return C4__SUSPECT_ROLE__SUSPECT_HOST;
	default:
		return C4__SUSPECT_ROLE__SUSPECT_RANK;
	}
}

static C4__EventDomain
events_domain(unsigned d)
{
	static const C4__EventDomain map[MATRIX_DOM_COUNT] = {
		[MATRIX_DOM_LINK] = C4__EVENT_DOMAIN__DOMAIN_LINK,
		[MATRIX_DOM_NIC_PORT] = C4__EVENT_DOMAIN__DOMAIN_NIC_PORT,
		[MATRIX_DOM_NIC] = C4__EVENT_DOMAIN__DOMAIN_NIC,
		[MATRIX_DOM_GPU] = C4__EVENT_DOMAIN__DOMAIN_GPU,
		[MATRIX_DOM_HOST] = C4__EVENT_DOMAIN__DOMAIN_HOST,
		[MATRIX_DOM_JOB] = C4__EVENT_DOMAIN__DOMAIN_JOB,
	};

	return d < MATRIX_DOM_COUNT ? map[d]
				    : C4__EVENT_DOMAIN__DOMAIN_UNSPECIFIED;
}

static C4__Action
events_action_type(unsigned a)
{
	static const C4__Action map[MATRIX_ACT_COUNT] = {
		[MATRIX_ACT_OBSERVE] = C4__ACTION__ACTION_OBSERVE,
		[MATRIX_ACT_ISOLATE_HOST] = C4__ACTION__ACTION_ISOLATE_HOST,
		[MATRIX_ACT_ISOLATE_NIC] = C4__ACTION__ACTION_ISOLATE_NIC,
		[MATRIX_ACT_CHECK_LINK] = C4__ACTION__ACTION_CHECK_LINK,
		[MATRIX_ACT_CHECK_JOB] = C4__ACTION__ACTION_CHECK_JOB,
	};

	return a < MATRIX_ACT_COUNT ? map[a] : C4__ACTION__ACTION_UNSPECIFIED;
}

static C4__EvidenceBasis
events_basis(unsigned b)
{
	static const C4__EvidenceBasis map[MATRIX_BASIS_COUNT] = {
		[MATRIX_BASIS_MEDIAN] = C4__EVIDENCE_BASIS__BASIS_MEDIAN,
		[MATRIX_BASIS_TAIL] = C4__EVIDENCE_BASIS__BASIS_TAIL,
		[MATRIX_BASIS_KERNEL] = C4__EVIDENCE_BASIS__BASIS_KERNEL,
		[MATRIX_BASIS_WAIT] = C4__EVIDENCE_BASIS__BASIS_WAIT,
		[MATRIX_BASIS_PROGRESS] = C4__EVIDENCE_BASIS__BASIS_PROGRESS,
		[MATRIX_BASIS_HEARTBEAT] = C4__EVIDENCE_BASIS__BASIS_HEARTBEAT,
	};

	return b < MATRIX_BASIS_COUNT ? map[b]
				      : C4__EVIDENCE_BASIS__BASIS_UNSPECIFIED;
}

static C4__TransportClass
events_transport(unsigned t)
{
	static const C4__TransportClass map[MATRIX_TR_COUNT] = {
		[MATRIX_TR_NVLINK] = C4__TRANSPORT_CLASS__TRANSPORT_NVLINK,
		[MATRIX_TR_PCIE] = C4__TRANSPORT_CLASS__TRANSPORT_PCIE,
		[MATRIX_TR_SHM] = C4__TRANSPORT_CLASS__TRANSPORT_SHM,
		[MATRIX_TR_NET] = C4__TRANSPORT_CLASS__TRANSPORT_NET,
	};

	return t < MATRIX_TR_COUNT ? map[t]
				   : C4__TRANSPORT_CLASS__TRANSPORT_UNSPECIFIED;
}

/* A suspect about a transfer path (not a rank or a whole host). */
static int
events_on_path(const struct matrix_suspect *s)
{
	return s->role == MATRIX_ROLE_TX || s->role == MATRIX_ROLE_RX ||
	       s->role == MATRIX_ROLE_LINK;
}

/* Within a host: NVLink, PCIe or shared memory; no NIC involved. */
static int
events_intra(const struct matrix_suspect *s)
{
	return events_on_path(s) && s->transport != MATRIX_TR_NET;
}

/* How an operator calls a suspect's transport, with a trailing space. */
static const char *
events_tr_word(const struct matrix_suspect *s)
{
	if (!events_intra(s))
		return "";
	return s->transport == MATRIX_TR_NVLINK ? "NVLink "
	       : s->transport == MATRIX_TR_PCIE ? "PCIe "
						: "shared-memory ";
}

/* The link suspect of e, else its first suspect, else NULL. */
static const struct matrix_suspect *
events_link_suspect(const struct matrix_event *e)
{
	for (unsigned i = 0; i < e->nsuspects; i++)
		if (e->suspects[i].role == MATRIX_ROLE_LINK)
			return &e->suspects[i];
	return e->nsuspects ? &e->suspects[0] : NULL;
}

/*
 * The two ends of s as "A -> B": host, NIC and port over the network;
 * host and GPU within a host (the receiving host only when it differs).
 */
static char *
events_ends(struct events *evs, const struct matrix_suspect *s, struct arena *a)
{
	const char *h, *ph;

	if (s == NULL)
		return arena_printf(a, "?");
	h = hosts_name(evs->hosts, s->host);
	ph = hosts_name(evs->hosts, s->peer_host);
	if (events_intra(s))
		return arena_printf(a, "%s GPU %u -> %s%sGPU %u", h, s->gpu,
				    s->peer_host != s->host ? ph : "",
				    s->peer_host != s->host ? " " : "",
				    s->peer_gpu);
	return arena_printf(
		a, "%s %s port %u -> %s %s port %u", h,
		hosts_nic_name(evs->hosts, s->host, s->nic), s->port, ph,
		hosts_nic_name(evs->hosts, s->peer_host, s->peer_nic),
		s->peer_port);
}

/* One side of a transfer: "node-3 mlx5_0 port 1" or "node-3 GPU 2". */
static char *
events_side(struct events *evs, const struct matrix_suspect *s, struct arena *a)
{
	const char *h = hosts_name(evs->hosts, s->host);

	if (events_intra(s))
		return arena_printf(a, "%s GPU %u", h, s->gpu);
	return arena_printf(a, "%s %s port %u", h,
			    hosts_nic_name(evs->hosts, s->host, s->nic),
			    s->port);
}

/* The GPUs of bit mask gpus as "0, 1, 5" (at most 64). */
static char *
events_gpu_list(uint64_t gpus, struct arena *a)
{
	char buf[64 * 4] = "";
	size_t n = 0;

	for (unsigned g = 0; g < 64 && n < sizeof(buf); g++)
		if (gpus & (UINT64_C(1) << g))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%u",
					      n ? ", " : "", g);
	return arena_printf(a, "%s", buf);
}

/* Summaries of the kinds about transfers: sides, links, ambiguity. */
static char *
events_summary_comm(struct events *evs, const struct matrix_event *e,
		    const struct matrix_suspect *s, struct arena *a)
{
	int rx = e->kind == MATRIX_EV_COMM_SLOW_RX;

	switch (e->kind) {
	case MATRIX_EV_COMM_SLOW_RX:
	case MATRIX_EV_COMM_SLOW_TX:
		return arena_printf(a,
				    "%s%s side of %s is slow (%.2fx): "
				    "transfers %s rank %u",
				    events_tr_word(s),
				    rx ? "receive" : "transmit",
				    events_side(evs, s, a), e->slowdown,
				    rx ? "into" : "from", s->rank);
	case MATRIX_EV_COMM_SLOW_LINK:
		s = events_link_suspect(e);
		return arena_printf(a, "%sconnection %s is slow (%.2fx)",
				    events_tr_word(s), events_ends(evs, s, a),
				    e->slowdown);
	default:
		s = events_link_suspect(e);
		return arena_printf(
			a,
			"%stransfers %s are slow (%.2fx); the traffic "
			"pattern cannot tell the transmit side, the link "
			"and the receiver apart",
			events_tr_word(s), events_ends(evs, s, a), e->slowdown);
	}
}

/* One sentence an operator reads first. */
static char *
events_summary(struct events *evs, const struct matrix_event *e,
	       struct arena *a)
{
	const struct matrix_suspect *s = e->nsuspects ? &e->suspects[0] : NULL;
	const char *host = s ? hosts_name(evs->hosts, s->host) : "?";

	if (s != NULL && e->kind <= MATRIX_EV_COMM_SLOW_AMBIG)
		return events_summary_comm(evs, e, s, a);
	switch (e->kind) {
	case MATRIX_EV_NONCOMM_SLOW:
		return arena_printf(
			a,
			"rank %u on %s GPU %u is late to its "
			"collectives (%.2fx): compute or input, not "
			"the network",
			s ? s->rank : 0, host, s ? s->gpu : 0, e->slowdown);
	case MATRIX_EV_COMM_HANG:
		return arena_printf(a,
				    "communication hang at op %" PRIu64
				    ": connection from rank %u (%s) stopped "
				    "moving data",
				    e->hang_seq, s ? s->rank : 0, host);
	case MATRIX_EV_NONCOMM_HANG:
		return arena_printf(a,
				    "hang at op %" PRIu64
				    ": rank %u on %s GPU %u never entered it",
				    e->hang_seq, s ? s->rank : 0, host,
				    s ? s->gpu : 0);
	case MATRIX_EV_NODE_LOST:
		return arena_printf(a, "no data from host %s", host);
	case MATRIX_EV_HOST_SLOW:
		return arena_printf(
			a,
			"host %s is slow (%.2fx): GPUs %s are slow "
			"together, the host rather than one device",
			hosts_name(evs->hosts, s ? s->host : e->isolate_host),
			e->slowdown, events_gpu_list(e->evidence.gpus, a));
	case MATRIX_EV_JOB_STALL:
		return arena_printf(a,
				    "the whole job is stalled or slow "
				    "(%.2fx): %u hosts would be blamed, no "
				    "single culprit",
				    e->slowdown, e->evidence.hosts_blamed);
	case MATRIX_EV_COUNT: /* events_expire(): no engine detail */
		return arena_printf(a, "not confirmed after the master "
				       "restarted: resolved");
	default:
		return arena_printf(a, "anomaly of kind %u", e->kind);
	}
}

/* The NIC of s as "host/nic". */
static char *
events_nic(struct events *evs, const struct matrix_suspect *s, struct arena *a)
{
	return arena_printf(a, "%s/%s", hosts_name(evs->hosts, s->host),
			    hosts_nic_name(evs->hosts, s->host, s->nic));
}

/*
 * What the action applies to, for a controller: the host to isolate, the
 * NIC as "host/nic", a link as "A->B" with each end "host/nic" (network)
 * or "host/gpuN" (within a host); NULL for observe and check_job.
 */
static char *
events_target(struct events *evs, const struct matrix_event *e, struct arena *a)
{
	const struct matrix_suspect *s = events_link_suspect(e);

	switch (e->action) {
	case MATRIX_ACT_ISOLATE_HOST:
		return arena_printf(a, "%s",
				    hosts_name(evs->hosts, e->isolate_host));
	case MATRIX_ACT_ISOLATE_NIC:
		return e->nsuspects ? events_nic(evs, &e->suspects[0], a)
				    : NULL;
	case MATRIX_ACT_CHECK_LINK:
		if (s == NULL)
			return NULL;
		if (events_intra(s))
			return arena_printf(
				a, "%s/gpu%u->%s/gpu%u",
				hosts_name(evs->hosts, s->host), s->gpu,
				hosts_name(evs->hosts, s->peer_host),
				s->peer_gpu);
		return arena_printf(
			a, "%s/%s->%s/%s", hosts_name(evs->hosts, s->host),
			hosts_nic_name(evs->hosts, s->host, s->nic),
			hosts_name(evs->hosts, s->peer_host),
			hosts_nic_name(evs->hosts, s->peer_host, s->peer_nic));
	default:
		return NULL;
	}
}

/* The action as a sentence (the typed action is Event.action_type). */
static char *
events_action(struct events *evs, const struct matrix_event *e, struct arena *a)
{
	const struct matrix_suspect *s = events_link_suspect(e);

	switch (e->action) {
	case MATRIX_ACT_ISOLATE_HOST:
		return arena_printf(a, "isolate host %s",
				    hosts_name(evs->hosts, e->isolate_host));
	case MATRIX_ACT_ISOLATE_NIC:
		return e->nsuspects
			       ? arena_printf(
					 a, "take NIC %s out of service",
					 events_nic(evs, &e->suspects[0], a))
			       : NULL;
	case MATRIX_ACT_CHECK_LINK:
		return s ? arena_printf(a, "check the %spath %s",
					events_tr_word(s),
					events_ends(evs, s, a))
			 : NULL;
	case MATRIX_ACT_CHECK_JOB:
		return arena_printf(a, "check the job: no single host or "
				       "device explains it");
	case MATRIX_ACT_OBSERVE:
		return arena_printf(a, "keep watching: the evidence does not "
				       "single out one component yet");
	default:
		return NULL;
	}
}

/* The suspects of e as c4.Suspects, both ends of a link named. */
static void
events_fill_suspects(struct events *evs, const struct matrix_event *e,
		     C4__Event *ev, struct arena *a)
{
	ev->suspects = arena_calloc(a, e->nsuspects ? e->nsuspects : 1,
				    sizeof(*ev->suspects));
	for (unsigned i = 0; ev->suspects && i < e->nsuspects; i++) {
		const struct matrix_suspect *s = &e->suspects[i];
		C4__Suspect *o = arena_alloc(a, sizeof(*o));
		int intra = events_intra(s);

		if (o == NULL)
			break;
		c4__suspect__init(o);
		o->has_role = o->has_rank = o->has_gpu = o->has_peer_rank = 1;
		o->role = events_role(s->role);
		o->rank = s->rank;
		o->host = (char *)hosts_name(evs->hosts, s->host);
		o->gpu = s->gpu;
		o->peer_rank = s->peer_rank;
		if (!intra) { /* a NIC is involved */
			o->nic = (char *)hosts_nic_name(evs->hosts, s->host,
							s->nic);
			o->has_nic_port = 1;
			o->nic_port = s->port;
		}
		if (events_on_path(s)) {
			o->has_transport = 1;
			o->transport = events_transport(s->transport);
		}
		if (s->role == MATRIX_ROLE_LINK || s->peer_rank != s->rank ||
		    s->peer_host != s->host || s->peer_gpu != s->gpu) {
			o->peer_host =
				(char *)hosts_name(evs->hosts, s->peer_host);
			o->has_peer_gpu = 1;
			o->peer_gpu = s->peer_gpu;
			if (!intra) {
				o->peer_nic = (char *)hosts_nic_name(
					evs->hosts, s->peer_host, s->peer_nic);
				o->has_peer_nic_port = 1;
				o->peer_nic_port = s->peer_port;
			}
		}
		ev->suspects[ev->n_suspects++] = o;
	}
}

static void
events_fill_cells(const struct matrix_event *e, C4__Event *ev, struct arena *a)
{
	ev->cells =
		arena_calloc(a, e->ncells ? e->ncells : 1, sizeof(*ev->cells));
	for (unsigned i = 0; ev->cells && i < e->ncells; i++) {
		C4__EvidenceCell *o = arena_alloc(a, sizeof(*o));

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
		ev->cells[ev->n_cells++] = o;
	}
}

/* The evidence that opened e; NULL without memory. */
static C4__Evidence *
events_evidence(const struct matrix_evidence *x, struct arena *a)
{
	C4__Evidence *o = arena_alloc(a, sizeof(*o));
	uint32_t *gpus = arena_calloc(a, 64, sizeof(*gpus));

	if (o == NULL || gpus == NULL)
		return NULL;
	c4__evidence__init(o);
	o->has_basis = o->has_z_open = o->has_slowdown_open = 1;
	o->has_hot_intervals = o->has_window = 1;
	o->has_members = o->has_hosts_blamed = o->has_accumulated = 1;
	o->accumulated = x->accumulated != 0;
	o->basis = events_basis(x->basis);
	o->z_open = x->z_open;
	o->slowdown_open = x->slowdown_open;
	o->hot_intervals = x->hot_intervals;
	o->window = x->window;
	o->members = x->nmembers;
	o->hosts_blamed = x->hosts_blamed;
	o->member_gpus = gpus;
	for (unsigned g = 0; g < 64; g++)
		if (x->gpus & (UINT64_C(1) << g))
			gpus[o->n_member_gpus++] = g;
	return o;
}

/*
 * Fills what a controller acts on: domain, typed action, target and the
 * evidence.  An event the engine did not report (kind out of range: an
 * adopted one resolved unconfirmed) repeats what t kept of it.
 */
static void
events_fill_verdict(struct events *evs, const struct matrix_event *e,
		    struct events_entry *t, C4__Event *ev, struct arena *a)
{
	ev->has_domain = ev->has_action_type = 1;
	if (e->kind >= MATRIX_EV_COUNT) {
		ev->domain = t->domain;
		ev->action_type = t->action_type;
		ev->target = t->target;
		return;
	}
	ev->domain = events_domain(e->domain);
	ev->action_type = events_action_type(e->action);
	ev->target = events_target(evs, e, a);
	ev->action = events_action(evs, e, a);
	ev->evidence = events_evidence(&e->evidence, a);
	t->domain = ev->domain;
	t->action_type = ev->action_type;
	free(t->target);
	t->target = ev->target ? strdup(ev->target) : NULL;
}

/* Builds and publishes the c4.Event for one engine event. */
static void
events_publish(struct events *evs, const struct matrix_event *e,
	       struct events_entry *t, C4__EventState state, uint64_t now_ns)
{
	C4__Event ev = C4__EVENT__INIT;
	struct arena a;

	arena_init(&a);
	ev.id = t->id;
	ev.job_id = (char *)evs->job;
	ev.has_kind = ev.has_state = 1;
	ev.kind = e->kind < MATRIX_EV_COUNT ? events_kind(e->kind) : t->kind;
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
	ev.summary = events_summary(evs, e, &a);
	events_fill_verdict(evs, e, t, &ev, &a);
	events_fill_suspects(evs, e, &ev, &a);
	events_fill_cells(e, &ev, &a);
	t->last_interval = e->last_interval;
	log_info("event %s %s: %s", t->id,
		 state == C4__EVENT_STATE__EVENT_OPEN	   ? "open"
		 : state == C4__EVENT_STATE__EVENT_UPDATED ? "updated"
							   : "resolved",
		 ev.summary ? ev.summary : "");
	evs->publish(evs->arg, &ev);
	arena_free(&a);
	if (state == C4__EVENT_STATE__EVENT_OPEN)
		evs->st->events_open++;
	else if (state == C4__EVENT_STATE__EVENT_UPDATED)
		evs->st->events_updated++;
	else
		evs->st->events_resolved++;
}

void
events_apply(struct events *evs, const struct matrix_event *e, uint64_t now_ns)
{
	struct events_entry *t = events_find(evs, e->id);

	if (e->state == MATRIX_ST_OPEN) {
		uint64_t skey = events_stable_key(evs, e);

		if (t == NULL)
			t = events_adopted(evs, skey);
		if (t != NULL) {
			/* Adopted after a restart: continue, no second open. */
			t->cid = e->id;
			t->adopted_at = 0;
			events_publish(evs, e, t,
				       C4__EVENT_STATE__EVENT_UPDATED, now_ns);
			return;
		}
		t = events_add(evs, e->id);
		if (t == NULL)
			return;
		t->skey = skey;
		t->first_seen_ns = now_ns;
		t->kind = events_kind(e->kind);
		if (e->kind <= MATRIX_EV_COMM_SLOW_AMBIG ||
		    e->kind == MATRIX_EV_COMM_HANG)
			evs->hot_comm = e->comm;
		snprintf(t->id, sizeof(t->id), "%016" PRIx64 "-%" PRIu64, skey,
			 now_ns / 1000000);
		events_publish(evs, e, t, C4__EVENT_STATE__EVENT_OPEN, now_ns);
		return;
	}
	if (t == NULL)
		return; /* never opened here (e.g. resolved before a restart) */
	if (e->state == MATRIX_ST_UPDATED) {
		t->adopted_at = 0;
		events_publish(evs, e, t, C4__EVENT_STATE__EVENT_UPDATED,
			       now_ns);
		return;
	}
	events_publish(evs, e, t, C4__EVENT_STATE__EVENT_RESOLVED, now_ns);
	events_drop(evs, t);
}

/* Adopted events the engine did not confirm in time are resolved. */
void
events_expire(struct events *evs, uint64_t data_ticks, uint64_t tick,
	      uint64_t now_ns)
{
	for (size_t i = 0; i < evs->n;) {
		struct events_entry *t = &evs->v[i];

		if (t->adopted_at != 0 &&
		    data_ticks >= t->adopted_at + INGEST_ADOPT_GRACE) {
			struct matrix_event e;

			memset(&e, 0, sizeof(e));
			e.id = t->cid;
			e.kind =
				MATRIX_EV_COUNT; /* summary: no engine detail */
			e.first_interval = e.last_interval = tick;
			e.slowdown = 1.0;
			events_publish(evs, &e, t,
				       C4__EVENT_STATE__EVENT_RESOLVED, now_ns);
			events_drop(evs, t);
			continue;
		}
		i++;
	}
}

int
events_adopt(struct events *evs, const C4__Event *ev, uint64_t data_ticks)
{
	struct events_entry *t;
	uint64_t skey;
	char *end;

	if (ev->id == NULL || strlen(ev->id) < 17 || ev->id[16] != '-')
		return -1;
	skey = strtoull(ev->id, &end, 16);
	if (end != ev->id + 16 || events_adopted(evs, skey) != NULL)
		return -1;
	t = events_add(evs, 0);
	if (t == NULL)
		return -1;
	t->skey = skey;
	snprintf(t->id, sizeof(t->id), "%s", ev->id);
	t->revision = ev->revision;
	t->first_seen_ns = ev->first_seen_ns;
	t->kind = ev->kind;
	t->domain = ev->domain;
	t->action_type = ev->action_type;
	t->last_interval = ev->last_interval;
	if (ev->target != NULL && (t->target = strdup(ev->target)) == NULL) {
		events_drop(evs, t);
		return -1;
	}
	/* Counted in intervals with data: agents may take a while back. */
	t->adopted_at = data_ticks + 1;
	return 0;
}
uint64_t
events_hot_comm(const struct events *evs)
{
	return evs->n > 0 ? evs->hot_comm : 0;
}

/* Per open engine event: its evidence went on, so it was seen later. */
static void
events_seen_cb(const struct matrix_event *e, void *arg)
{
	struct events_refresh_arg *r = arg;

	events_seen(r->evs, e, r->now_ns);
}

void
events_seen(struct events *evs, const struct matrix_event *e, uint64_t now_ns)
{
	struct events_entry *t = events_find(evs, e->id);

	if (t == NULL || e->last_interval <= t->last_interval)
		return;
	t->last_interval = e->last_interval;
	if (evs->touch != NULL)
		evs->touch(evs->arg, t->id, e->last_interval, now_ns);
}

void
events_refresh(struct events *evs, const struct matrix *m, uint64_t now_ns)
{
	struct events_refresh_arg r = {evs, now_ns};

	matrix_open_each(m, events_seen_cb, &r);
}

void
events_free(struct events *evs)
{
	for (size_t i = 0; i < evs->n; i++)
		free(evs->v[i].target);
	free(evs->v);
	evs->v = NULL;
	evs->n = evs->cap = 0;
}
