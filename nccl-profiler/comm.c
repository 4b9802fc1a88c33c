/*
 * comm.c - a communicator's state: allocation and release (comm.h).
 */
#include "comm.h"

#include <stdlib.h>

#include "consumer.h"
#include "core.h"

void
comm_free(struct prof_comm *c)
{
	if (c == NULL)
		return;
	consumer_free(&c->cons, c->nranks);
	pool_free(&c->pool);
	free(c->child);
	free(c->colls);
	free(c);
}

struct prof_comm *
comm_new(uint64_t hash, int nnodes, int nranks, int rank)
{
	struct prof_comm *c = calloc(1, sizeof(*c));
	uint32_t n = PROF_COLLS_DEFAULT;

	if (c == NULL)
		return NULL;
	c->hash = hash;
	c->rank = rank;
	c->nranks = nranks;
	c->nnodes = nnodes;
	while (n < prof_core.cfg.colls_cap)
		n <<= 1;
	c->ncolls = n;
	c->colls = calloc(n, sizeof(*c->colls));
	c->child = calloc(prof_core.cfg.pool_cap, sizeof(*c->child));
	if (c->colls == NULL || c->child == NULL ||
	    consumer_init(&c->cons, nranks) < 0 ||
	    pool_init(&c->pool, prof_core.cfg.pool_cap) < 0) {
		comm_free(c);
		return NULL;
	}
	return c;
}
