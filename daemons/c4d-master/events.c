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

/* One sentence an operator reads first. */
static char *
events_summary(struct events *evs, const struct matrix_event *e,
	       struct arena *a)
{
	const struct matrix_suspect *s = e->nsuspects ? &e->suspects[0] : NULL;
	const char *host = s ? hosts_name(evs->hosts, s->host) : "?";
	const char *nic = s ? hosts_nic_name(evs->hosts, s->host, s->nic) : "?";

	int rx = e->kind == MATRIX_EV_COMM_SLOW_RX;

	switch (e->kind) {
	case MATRIX_EV_COMM_SLOW_RX:
	case MATRIX_EV_COMM_SLOW_TX:
		return arena_printf(a,
				    "%s side of %s %s port %u is slow "
				    "(%.2fx): transfers %s rank %u",
				    rx ? "receive" : "transmit", host, nic,
				    s ? s->port : 0, e->slowdown,
				    rx ? "into" : "from", s ? s->rank : 0);
	case MATRIX_EV_COMM_SLOW_LINK:
		return arena_printf(
			a, "connection %s %s -> %s %s is slow (%.2fx)", host,
			nic, s ? hosts_name(evs->hosts, s->peer_host) : "?",
			s ? hosts_nic_name(evs->hosts, s->peer_host,
					   s->peer_nic)
			  : "?",
			e->slowdown);
	case MATRIX_EV_COMM_SLOW_AMBIG:
		return arena_printf(
			a,
			"transfers from %s %s are slow (%.2fx); the "
			"traffic pattern cannot tell its transmit "
			"side, the link and the receiver apart",
			host, nic, e->slowdown);
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
	default:
		return arena_printf(a, "anomaly of kind %u", e->kind);
	}
}

static char *
events_action(struct events *evs, const struct matrix_event *e, struct arena *a)
{
	const struct matrix_suspect *s = e->nsuspects ? &e->suspects[0] : NULL;

	switch (e->action) {
	case MATRIX_ACT_ISOLATE_HOST:
		return arena_printf(a, "isolate host %s",
				    hosts_name(evs->hosts, e->isolate_host));
	case MATRIX_ACT_CHECK_LINK:
		return arena_printf(
			a, "check the path %s %s -> %s %s",
			s ? hosts_name(evs->hosts, s->host) : "?",
			s ? hosts_nic_name(evs->hosts, s->host, s->nic) : "?",
			s ? hosts_name(evs->hosts, s->peer_host) : "?",
			s ? hosts_nic_name(evs->hosts, s->peer_host,
					   s->peer_nic)
			  : "?");
	case MATRIX_ACT_OBSERVE:
		return arena_printf(a, "investigate the suspects");
	default:
		return NULL;
	}
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
	ev.kind = events_kind(e->kind);
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
	ev.action = events_action(evs, e, &a);
	ev.suspects = arena_calloc(&a, e->nsuspects ? e->nsuspects : 1,
				   sizeof(*ev.suspects));
	for (unsigned i = 0; ev.suspects && i < e->nsuspects; i++) {
		const struct matrix_suspect *s = &e->suspects[i];
		C4__Suspect *o = arena_alloc(&a, sizeof(*o));

		if (o == NULL)
			break;
		c4__suspect__init(o);
		o->has_role = o->has_rank = o->has_gpu = 1;
		o->has_nic_port = o->has_peer_rank = 1;
		o->role = events_role(s->role);
		o->rank = s->rank;
		o->host = (char *)hosts_name(evs->hosts, s->host);
		o->gpu = s->gpu;
		o->nic = (char *)hosts_nic_name(evs->hosts, s->host, s->nic);
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
	/* Counted in intervals with data: agents may take a while back. */
	t->adopted_at = data_ticks + 1;
	return 0;
}
uint64_t
events_hot_comm(const struct events *evs)
{
	return evs->n > 0 ? evs->hot_comm : 0;
}

void
events_free(struct events *evs)
{
	free(evs->v);
	evs->v = NULL;
	evs->n = evs->cap = 0;
}
