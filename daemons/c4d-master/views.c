/*
 * views.c - the operators' views of the pipeline: the job's summary, where
 * each rank runs and the delay matrix of the last interval.
 */
#include "views.h"

#include <math.h>
#include <stdlib.h>

int
views_job(const struct views_src *s, const char *job, uint32_t agents,
	  uint32_t open_events, struct arena *a, C4__AdminReply *r)
{
	C4__JobInfo *j = arena_alloc(a, sizeof(*j));
	C4__JobInfo **v = arena_alloc(a, sizeof(*v));

	if (j == NULL || v == NULL)
		return -1;
	c4__job_info__init(j);
	j->job_id = (char *)job;
	j->has_agents = j->has_ranks = j->has_comms = 1;
	j->has_last_interval = j->has_open_events = 1;
	j->agents = agents;
	j->ranks = hosts_ranks_known(s->hosts);
	j->comms = (uint32_t)s->tele->ncomms;
	j->last_interval = s->interval;
	j->open_events = open_events;
	v[0] = j;
	r->jobs = v;
	r->n_jobs = 1;
	return 0;
}

/*
 * The communicator to show when none is named: the one the newest open
 * communication event is about, else the one with most network cells.
 */
static uint64_t
views_default_comm(const struct views_src *s)
{
	const struct telemetry *t = s->tele;
	uint64_t hot = events_hot_comm(s->events), best = 0;
	size_t bestn = 0;

	if (hot != 0)
		return hot;
	for (size_t i = 0; i < t->ncomms; i++) {
		size_t n = 0;

		for (size_t j = 0; j < s->nlast; j++)
			n += s->last[j].comm == t->comms[i].hash &&
			     s->last[j].transport == MATRIX_TR_NET;
		if (n > bestn || (bestn == 0 && i == 0)) {
			bestn = n;
			best = t->comms[i].hash;
		}
	}
	return best;
}

int
views_ranks(const struct views_src *s, uint64_t comm, struct arena *a,
	    C4__AdminReply *r)
{
	const struct telemetry_comm *c;

	if (comm == 0)
		comm = views_default_comm(s);
	c = telemetry_comm_find(s->tele, comm);
	if (c == NULL)
		return 0;
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
		o->host = (char *)hosts_name(s->hosts, c->map[i].host);
		o->gpu = c->map[i].gpu;
		o->nic = (char *)hosts_nic_name(s->hosts, c->map[i].host,
						c->map[i].nic);
		o->nic_port = c->map[i].port;
		r->ranks[r->n_ranks++] = o;
	}
	return 0;
}

static int
views_cmp_double(const void *a, const void *b)
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
views_matrix(const struct views_src *s, uint64_t comm, struct arena *a,
	     C4__AdminReply *r)
{
	double *vals[MATRIX_TR_COUNT] = {NULL}, med[MATRIX_TR_COUNT] = {0};
	size_t nv[MATRIX_TR_COUNT] = {0};
	size_t n = 0;

	if (comm == 0)
		comm = views_default_comm(s);
	for (size_t i = 0; i < s->nlast; i++)
		n += s->last[i].comm == comm;
	if (n > INGEST_MATRIX_CELLS)
		n = INGEST_MATRIX_CELLS;
	r->cells = arena_calloc(a, n ? n : 1, sizeof(*r->cells));
	for (int t = 0; t < MATRIX_TR_COUNT; t++)
		vals[t] = arena_calloc(a, n ? n : 1, sizeof(double));
	if (r->cells == NULL)
		return -1;
	for (size_t i = 0; i < s->nlast; i++) {
		const struct matrix_conn *c = &s->last[i];
		double per_byte;

		if (c->comm != comm || c->bytes == 0 || c->chunks == 0 ||
		    c->transport >= MATRIX_TR_COUNT ||
		    vals[c->transport] == NULL || nv[c->transport] >= n)
			continue;
		per_byte = c->xfer.p50 * 1e3 /
			   ((double)c->bytes / (double)c->chunks);
		vals[c->transport][nv[c->transport]++] = per_byte;
	}
	for (int t = 0; t < MATRIX_TR_COUNT; t++) {
		if (nv[t] == 0)
			continue;
		qsort(vals[t], nv[t], sizeof(double), views_cmp_double);
		med[t] = vals[t][nv[t] / 2];
	}
	for (size_t i = 0; i < s->nlast && r->n_cells < n; i++) {
		const struct matrix_conn *c = &s->last[i];
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
			c->transport < MATRIX_TR_COUNT ? med[c->transport] : 0;
		o->score = o->baseline > 0 && per_byte > 0
				   ? log(per_byte / o->baseline)
				   : 0;
		o->transport = c->transport == MATRIX_TR_NET
				       ? C4__TRANSPORT_CLASS__TRANSPORT_NET
				       : C4__TRANSPORT_CLASS__TRANSPORT_NVLINK;
		/* Hot: more than 1.5x its class median. */
		o->hot = o->score > log(1.5);
		r->cells[r->n_cells++] = o;
	}
	return 0;
}