/*
 * fixture.h - hand-built agent messages and a recording publisher for the
 * unit tests of the master's detection pipeline (hosts, telemetry, events,
 * views).  A job of N ranks, one per host: rank r runs on host "node-r",
 * GPU r % 8, NIC "mlx5_r", port 1.
 */
#ifndef C4D_TEST_FIXTURE_H
#define C4D_TEST_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"
#include "tmain.h"

#define FX_RANKS_MAX 8
#define FX_SEEN_MAX  64

/* One communicator registration; every pointer points into the struct. */
struct fx_comm {
	C4__CommRegister m;
	C4__RankInfo rank[FX_RANKS_MAX];
	C4__RankInfo *ranks[FX_RANKS_MAX];
	char host[FX_RANKS_MAX][16];
	char nic[FX_RANKS_MAX][16];
};

/* Registers ranks first..first+n-1 of a communicator of nranks. */
static inline const C4__CommRegister *
fx_comm(struct fx_comm *c, uint64_t hash, uint32_t nranks, uint32_t first,
	uint32_t n)
{
	ck_assert_uint_le(first + n, FX_RANKS_MAX);
	memset(c, 0, sizeof(*c));
	c4__comm_register__init(&c->m);
	c->m.comm_hash = hash;
	c->m.nranks = nranks;
	c->m.name = (char *)"fx";
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = first + i;
		C4__RankInfo *o = &c->rank[i];

		c4__rank_info__init(o);
		snprintf(c->host[i], sizeof(c->host[i]), "node-%u", r);
		snprintf(c->nic[i], sizeof(c->nic[i]), "mlx5_%u", r);
		o->rank = r;
		o->host = c->host[i];
		o->has_gpu = 1;
		o->gpu = r % 8;
		o->nic = c->nic[i];
		o->has_nic_port = 1;
		o->nic_port = 1;
		c->ranks[i] = o;
	}
	c->m.n_ranks = n;
	c->m.ranks = c->ranks;
	return &c->m;
}

/* A batch with nothing in it but its sender: the agent is alive. */
static inline const C4__TelemetryBatch *
fx_heartbeat(C4__TelemetryBatch *b, const char *host, uint64_t interval)
{
	c4__telemetry_batch__init(b);
	b->host = (char *)host;
	b->interval_id = interval;
	return b;
}

/* What a publish callback saw, in order. */
struct fx_seen {
	size_t n;
	C4__EventState state[FX_SEEN_MAX];
	C4__EventKind kind[FX_SEEN_MAX];
	uint64_t revision[FX_SEEN_MAX];
	char id[FX_SEEN_MAX][64];
	char host[FX_SEEN_MAX][32]; /* the first suspect's, or "" */
};

static inline void
fx_record(void *arg, const C4__Event *ev)
{
	struct fx_seen *s = arg;

	ck_assert_uint_lt(s->n, FX_SEEN_MAX);
	s->state[s->n] = ev->state;
	s->kind[s->n] = ev->kind;
	s->revision[s->n] = ev->revision;
	snprintf(s->id[s->n], sizeof(s->id[0]), "%s", ev->id);
	snprintf(s->host[s->n], sizeof(s->host[0]), "%s",
		 ev->n_suspects > 0 && ev->suspects[0]->host
			 ? ev->suspects[0]->host
			 : "");
	s->n++;
}

/* Runs the n tests of one suite; the exit status of a test program. */
static inline int
fx_main(const char *name, const TTest *const *tests, size_t n)
{
	return tmain_run(name, tests, n);
}

#endif
