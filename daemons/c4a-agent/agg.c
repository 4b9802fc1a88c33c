/*
 * agg.c - per-job state of the agent: merged communicator
 * registrations, the records of the current interval, and the last known
 * progress markers of every rank of the node.
 *
 * No I/O and no event loop here, so that the merge logic has unit tests of
 * its own.
 */
#include "clock.h"
#include "agent.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct agg_rank {
	uint64_t comm;
	uint32_t rank;
	uint64_t entered, completed, change_ns;
	int seen; /* sent a Progress this interval */
};

struct agg_comm {
	uint64_t hash;
	C4__CommRegister *m; /* merged, owned (protobuf-c unpacked) */
};

struct agg {
	char *job, *host;
	struct agg_comm *comms;
	size_t ncomms;
	struct agg_rank *ranks; /* sorted by (comm, rank) */
	size_t nranks, capranks;
	C4__TelemetryBatch **held; /* copies of this interval's batches */
	size_t nheld, capheld;
	uint64_t records; /* in held */
	uint64_t bytes;	  /* their encoded size */
	uint64_t dropped; /* to report in the next batch */
	struct agg_stats st;
};

static void
agg_msg_free(void *msg)
{
	if (msg != NULL)
		protobuf_c_message_free_unpacked(msg, NULL);
}

static uint8_t *
agg_frame(C4__MsgType type, void *body, size_t *len)
{
	C4__Envelope env;

	msg_init(&env, type, body);
	return msg_frame_new(&env, len);
}

struct agg *
agg_new(const char *job, const char *host)
{
	struct agg *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->job = strdup(job);
	a->host = strdup(host);
	if (a->job == NULL || a->host == NULL) {
		agg_free(a);
		return NULL;
	}
	return a;
}

static void
agg_drop_held(struct agg *a)
{
	for (size_t i = 0; i < a->nheld; i++)
		agg_msg_free(a->held[i]);
	a->nheld = 0;
	a->records = 0;
	a->bytes = 0;
}

void
agg_free(struct agg *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < a->ncomms; i++)
		agg_msg_free(a->comms[i].m);
	free(a->comms);
	free(a->ranks);
	agg_drop_held(a);
	free(a->held);
	free(a->job);
	free(a->host);
	free(a);
}

/* Position of (comm, rank) in the sorted rank table. */
static size_t
agg_rank_pos(const struct agg *a, uint64_t comm, uint32_t rank)
{
	size_t lo = 0, hi = a->nranks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct agg_rank *r = &a->ranks[mid];

		if (r->comm < comm || (r->comm == comm && r->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry of (comm, rank), created if absent; NULL over the limit. */
static struct agg_rank *
agg_rank_get(struct agg *a, uint64_t comm, uint32_t rank)
{
	size_t pos = agg_rank_pos(a, comm, rank);

	if (pos < a->nranks && a->ranks[pos].comm == comm &&
	    a->ranks[pos].rank == rank)
		return &a->ranks[pos];
	if (a->nranks == AGG_RANKS_MAX)
		return NULL;
	if (a->nranks == a->capranks) {
		size_t cap = a->capranks ? a->capranks * 2 : 16;
		struct agg_rank *v = realloc(a->ranks, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		a->ranks = v;
		a->capranks = cap;
	}
	memmove(a->ranks + pos + 1, a->ranks + pos,
		(a->nranks - pos) * sizeof(*a->ranks));
	memset(&a->ranks[pos], 0, sizeof(a->ranks[pos]));
	a->ranks[pos].comm = comm;
	a->ranks[pos].rank = rank;
	a->nranks++;
	return &a->ranks[pos];
}

/* Forgets every rank of comm. */
static void
agg_rank_forget(struct agg *a, uint64_t comm)
{
	size_t lo = agg_rank_pos(a, comm, 0), hi = lo;

	while (hi < a->nranks && a->ranks[hi].comm == comm)
		hi++;
	if (hi == lo)
		return;
	memmove(a->ranks + lo, a->ranks + hi,
		(a->nranks - hi) * sizeof(*a->ranks));
	a->nranks -= hi - lo;
}

static int
agg_rank_equal(const C4__RankInfo *x, const C4__RankInfo *y)
{
	size_t nx = c4__rank_info__get_packed_size(x);
	size_t ny = c4__rank_info__get_packed_size(y);
	uint8_t *bx, *by;
	int eq = 0;

	if (nx != ny)
		return 0;
	bx = malloc(nx + 1);
	by = malloc(ny + 1);
	if (bx != NULL && by != NULL) {
		c4__rank_info__pack(x, bx);
		c4__rank_info__pack(y, by);
		eq = memcmp(bx, by, nx) == 0;
	}
	free(bx);
	free(by);
	return eq;
}

/* Sets m->job_id to job (the copy owns its strings). */
static int
agg_set_job(C4__CommRegister *m, const char *job)
{
	char *j = strdup(job);

	if (j == NULL)
		return -1;
	free(m->job_id);
	m->job_id = j;
	return 0;
}

/* Merges the rank entries of in into cur; *changed set if any differ. */
static int
agg_merge_ranks(C4__CommRegister *cur, const C4__CommRegister *in, int *changed)
{
	for (size_t i = 0; i < in->n_ranks; i++) {
		const C4__RankInfo *r = in->ranks[i];
		C4__RankInfo *cp;
		size_t k;

		for (k = 0; k < cur->n_ranks; k++)
			if (cur->ranks[k]->rank == r->rank)
				break;
		if (k < cur->n_ranks && agg_rank_equal(cur->ranks[k], r))
			continue;
		cp = msg_copy(r);
		if (cp == NULL)
			return -1;
		if (k == cur->n_ranks) {
			C4__RankInfo **v = realloc(
				cur->ranks, (cur->n_ranks + 1) * sizeof(*v));

			if (v == NULL) {
				agg_msg_free(cp);
				return -1;
			}
			cur->ranks = v;
			cur->n_ranks++;
		} else {
			agg_msg_free(cur->ranks[k]);
		}
		cur->ranks[k] = cp;
		*changed = 1;
	}
	return 0;
}

int
agg_register(struct agg *a, const C4__CommRegister *m, uint8_t **frame,
	     size_t *len)
{
	struct agg_comm *g = NULL;
	int changed = 0;
	size_t i;

	*frame = NULL;
	a->st.registrations++;
	for (i = 0; i < a->ncomms; i++)
		if (a->comms[i].hash == m->comm_hash) {
			g = &a->comms[i];
			break;
		}
	if (m->has_destroyed && m->destroyed) {
		C4__CommRegister d = C4__COMM_REGISTER__INIT;

		if (g == NULL)
			return 0;
		agg_msg_free(g->m);
		a->comms[i] = a->comms[--a->ncomms];
		agg_rank_forget(a, m->comm_hash);
		d.job_id = a->job;
		d.has_comm_hash = d.has_nranks = d.has_destroyed = 1;
		d.comm_hash = m->comm_hash;
		d.nranks = m->nranks;
		d.destroyed = 1;
		*frame = agg_frame(C4__MSG_TYPE__MSG_COMM_REGISTER, &d, len);
		return *frame ? 0 : -1;
	}
	if (g == NULL) {
		struct agg_comm *v;

		if (a->ncomms == AGG_COMMS_MAX)
			return -1;
		v = realloc(a->comms, (a->ncomms + 1) * sizeof(*v));
		if (v == NULL)
			return -1;
		a->comms = v;
		g = &v[a->ncomms];
		g->hash = m->comm_hash;
		g->m = msg_copy(m);
		if (g->m == NULL || agg_set_job(g->m, a->job) < 0) {
			agg_msg_free(g->m);
			return -1;
		}
		a->ncomms++;
		changed = 1;
	} else {
		if (g->m->nranks != m->nranks) {
			/* A comm hash names one size; keep entries that fit. */
			size_t k = 0;

			for (size_t j = 0; j < g->m->n_ranks; j++) {
				if (g->m->ranks[j]->rank < m->nranks)
					g->m->ranks[k++] = g->m->ranks[j];
				else
					agg_msg_free(g->m->ranks[j]);
			}
			g->m->n_ranks = k;
			g->m->nranks = m->nranks;
			changed = 1;
		}
		if (m->name != NULL &&
		    (g->m->name == NULL || strcmp(g->m->name, m->name) != 0)) {
			char *n = strdup(m->name);

			if (n == NULL)
				return -1;
			free(g->m->name);
			g->m->name = n;
			changed = 1;
		}
		if (agg_merge_ranks(g->m, m, &changed) < 0)
			return -1;
	}
	for (size_t j = 0; j < m->n_ranks; j++)
		if (agg_rank_get(a, m->comm_hash, m->ranks[j]->rank) == NULL)
			return -1;
	if (!changed)
		return 0;
	*frame = agg_frame(C4__MSG_TYPE__MSG_COMM_REGISTER, g->m, len);
	return *frame ? 0 : -1;
}

size_t
agg_ncomms(const struct agg *a)
{
	return a->ncomms;
}

uint8_t *
agg_comm_frame(const struct agg *a, size_t i, size_t *len)
{
	if (i >= a->ncomms)
		return NULL;
	return agg_frame(C4__MSG_TYPE__MSG_COMM_REGISTER, a->comms[i].m, len);
}

uint32_t
agg_nranks(const struct agg *a)
{
	return (uint32_t)a->nranks;
}

/* Moves a rank's markers forward; never back. */
static void
agg_rank_advance(struct agg *a, uint64_t comm, uint32_t rank, uint64_t entered,
		 uint64_t completed, uint64_t change_ns)
{
	struct agg_rank *r = agg_rank_get(a, comm, rank);

	if (r == NULL)
		return;
	if (entered > r->entered || completed > r->completed ||
	    r->change_ns == 0) {
		if (entered > r->entered)
			r->entered = entered;
		if (completed > r->completed)
			r->completed = completed;
		r->change_ns =
			change_ns ? change_ns : clock_ns(CLOCK_MONOTONIC);
	}
}

int
agg_add(struct agg *a, const C4__TelemetryBatch *b)
{
	uint64_t n = b->n_colls + b->n_conns + b->n_waits + b->n_progress;
	C4__TelemetryBatch *cp;
	size_t size;

	if (b->has_dropped_records)
		a->st.client_dropped += b->dropped_records;
	a->dropped += b->dropped_records;
	if (a->records + n > AGG_RECORDS_MAX)
		goto refuse;
	size = c4__telemetry_batch__get_packed_size(b);
	if (a->bytes + size > AGG_BYTES_MAX)
		goto refuse;
	if (a->nheld == a->capheld) {
		size_t cap = a->capheld ? a->capheld * 2 : 8;
		C4__TelemetryBatch **v = realloc(a->held, cap * sizeof(*v));

		if (v == NULL)
			goto refuse;
		a->held = v;
		a->capheld = cap;
	}
	cp = msg_copy(b);
	if (cp == NULL)
		goto refuse;
	a->held[a->nheld++] = cp;
	a->records += n;
	a->bytes += size;
	a->st.batches++;
	a->st.records += n;
	for (size_t i = 0; i < b->n_colls; i++) {
		const C4__RankCollSummary *c = b->colls[i];

		agg_rank_advance(a, c->comm_hash, c->rank, c->last_seq_entered,
				 c->last_seq_completed, 0);
	}
	for (size_t i = 0; i < b->n_progress; i++) {
		const C4__Progress *p = b->progress[i];

		agg_rank_advance(a, p->comm_hash, p->rank, p->last_seq_entered,
				 p->last_seq_completed, p->last_change_ns);
	}
	return 0;
refuse:
	a->st.records_refused += n;
	a->dropped += n;
	return -1;
}

/* Appends the pointers of n items to the merged array at *at. */
#define AGG_APPEND(dst, at, src, n)                                            \
	do {                                                                   \
		if ((n) > 0)                                                   \
			memcpy((dst) + (at), (src), (n) * sizeof(*(dst)));     \
		(at) += (n);                                                   \
	} while (0)

void
agg_parts_free(struct agg_part *parts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(parts[i].frame);
	free(parts);
}

/*
 * Cuts the merged batch out into parts of at most AGG_PART_TARGET bytes
 * (a single larger record makes a part of its own).  Records keep their
 * order; dropped_records goes in the first part only.  Returns the number
 * of parts (at least 1, an empty batch being one) or -1 on ENOMEM.
 */
static ssize_t
agg_split(const C4__TelemetryBatch *out, struct agg_part **partsp)
{
	void **arr[4] = {(void **)out->colls, (void **)out->conns,
			 (void **)out->waits, (void **)out->progress};
	size_t cnt[4] = {out->n_colls, out->n_conns, out->n_waits,
			 out->n_progress};
	size_t idx[4] = {0, 0, 0, 0};
	size_t base = 64 + strlen(out->job_id) + strlen(out->host);
	struct agg_part *parts = NULL;
	size_t nparts = 0;

	for (;;) {
		C4__TelemetryBatch p = *out;
		size_t start[4], bytes = base, taken = 0;
		struct agg_part *v;
		int done = 1;

		memcpy(start, idx, sizeof(start));
		for (int k = 0; k < 4; k++) {
			while (idx[k] < cnt[k]) {
				/* Record, its tag and length prefix. */
				size_t r = protobuf_c_message_get_packed_size(
						   arr[k][idx[k]]) +
					   8;

				if (taken > 0 && bytes + r > AGG_PART_TARGET)
					goto cut;
				bytes += r;
				taken++;
				idx[k]++;
			}
		}
	cut:
		p.colls = out->colls + start[0];
		p.n_colls = idx[0] - start[0];
		p.conns = out->conns + start[1];
		p.n_conns = idx[1] - start[1];
		p.waits = out->waits + start[2];
		p.n_waits = idx[2] - start[2];
		p.progress = out->progress + start[3];
		p.n_progress = idx[3] - start[3];
		if (nparts > 0)
			p.has_dropped_records = 0;
		v = realloc(parts, (nparts + 1) * sizeof(*v));
		if (v == NULL)
			goto fail;
		parts = v;
		parts[nparts].frame = agg_frame(C4__MSG_TYPE__MSG_TELEMETRY, &p,
						&parts[nparts].len);
		if (parts[nparts].frame == NULL)
			goto fail;
		parts[nparts].records = taken;
		parts[nparts].dropped =
			p.has_dropped_records ? p.dropped_records : 0;
		nparts++;
		for (int k = 0; k < 4; k++)
			if (idx[k] < cnt[k])
				done = 0;
		if (done)
			break;
	}
	*partsp = parts;
	return (ssize_t)nparts;
fail:
	agg_parts_free(parts, nparts);
	return -1;
}

ssize_t
agg_take(struct agg *a, uint64_t interval_id, uint64_t start_ns,
	 uint32_t interval_ms, uint64_t extra_dropped, struct agg_part **parts)
{
	C4__TelemetryBatch out = C4__TELEMETRY_BATCH__INIT;
	size_t nc = 0, nn = 0, nw = 0, np = 0, nsilent = 0;
	C4__Progress *fill = NULL;
	ssize_t n = -1;

	for (size_t i = 0; i < a->nranks; i++)
		a->ranks[i].seen = 0;
	for (size_t i = 0; i < a->nheld; i++) {
		const C4__TelemetryBatch *b = a->held[i];

		nc += b->n_colls;
		nn += b->n_conns;
		nw += b->n_waits;
		np += b->n_progress;
		for (size_t k = 0; k < b->n_progress; k++) {
			size_t pos = agg_rank_pos(a, b->progress[k]->comm_hash,
						  b->progress[k]->rank);

			if (pos < a->nranks &&
			    a->ranks[pos].comm == b->progress[k]->comm_hash &&
			    a->ranks[pos].rank == b->progress[k]->rank)
				a->ranks[pos].seen = 1;
		}
	}
	for (size_t i = 0; i < a->nranks; i++)
		nsilent += !a->ranks[i].seen;
	out.colls = calloc(nc + 1, sizeof(*out.colls));
	out.conns = calloc(nn + 1, sizeof(*out.conns));
	out.waits = calloc(nw + 1, sizeof(*out.waits));
	out.progress = calloc(np + nsilent + 1, sizeof(*out.progress));
	fill = calloc(nsilent + 1, sizeof(*fill));
	if (out.colls == NULL || out.conns == NULL || out.waits == NULL ||
	    out.progress == NULL || fill == NULL)
		goto out;
	for (size_t i = 0; i < a->nheld; i++) {
		const C4__TelemetryBatch *b = a->held[i];

		AGG_APPEND(out.colls, out.n_colls, b->colls, b->n_colls);
		AGG_APPEND(out.conns, out.n_conns, b->conns, b->n_conns);
		AGG_APPEND(out.waits, out.n_waits, b->waits, b->n_waits);
		AGG_APPEND(out.progress, out.n_progress, b->progress,
			   b->n_progress);
	}
	/* Silence is not a hang: say where every quiet rank last was. */
	for (size_t i = 0, k = 0; i < a->nranks; i++) {
		const struct agg_rank *r = &a->ranks[i];
		C4__Progress *p;

		if (r->seen)
			continue;
		p = &fill[k++];
		c4__progress__init(p);
		p->has_comm_hash = p->has_rank = 1;
		p->comm_hash = r->comm;
		p->rank = r->rank;
		p->has_last_seq_entered = p->has_last_seq_completed = 1;
		p->last_seq_entered = r->entered;
		p->last_seq_completed = r->completed;
		p->has_last_change_ns = r->change_ns != 0;
		p->last_change_ns = r->change_ns;
		p->has_carried = p->carried = 1;
		out.progress[out.n_progress++] = p;
	}
	out.job_id = a->job;
	out.host = a->host;
	out.has_interval_id = out.has_interval_start_ns = out.has_interval_ms =
		1;
	out.interval_id = interval_id;
	out.interval_start_ns = start_ns;
	out.interval_ms = interval_ms;
	out.has_dropped_records = 1;
	out.dropped_records = a->dropped + extra_dropped;
	n = agg_split(&out, parts);
	if (n > 0) {
		a->st.progress_filled += nsilent;
		a->st.parts += (uint64_t)n;
		a->dropped = 0;
	}
out:
	if (n < 0)
		a->dropped += a->records + extra_dropped;
	free(out.colls);
	free(out.conns);
	free(out.waits);
	free(out.progress);
	free(fill);
	agg_drop_held(a);
	return n;
}

const struct agg_stats *
agg_get_stats(const struct agg *a)
{
	return &a->st;
}
