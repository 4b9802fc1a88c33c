/*
 * fab.c: benchmark fabrics and ring jobs (see fab.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "fab.h"

uint32_t
fab_ip(uint32_t host, uint32_t nic, uint32_t side, bool bonded)
{
	return (10u << 24) + host * 64 + nic * 2 + (bonded ? 0 : side);
}

struct topo *
fab_build(const struct fab_cfg *c, char *err, size_t errlen)
{
	struct topo *t = topo_new();
	char name[TOPO_NAME_MAX];
	uint32_t i, j;

	if (t == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < c->leaf_pairs * 2; i++) {
		snprintf(name, sizeof(name), "leaf%u", i);
		if (topo_add_leaf(t, name, 0, 0, err, errlen) == TOPO_NONE)
			goto fail;
	}
	for (i = 0; i < c->spines; i++) {
		snprintf(name, sizeof(name), "spine%u", i);
		if (topo_add_spine(t, name, 0, 0, err, errlen) == TOPO_NONE)
			goto fail;
	}
	for (i = 0; i < c->leaf_pairs * 2; i++)
		for (j = 0; j < c->spines; j++)
			if (topo_add_links(t, i, j, c->link_mult, c->link_gbps,
					   err, errlen) == TOPO_NONE)
				goto fail;
	for (i = 0; i < c->hosts; i++) {
		uint32_t pair = i % c->leaf_pairs, h;

		snprintf(name, sizeof(name), "host%u", i);
		h = topo_add_host(t, name, err, errlen);
		if (h == TOPO_NONE)
			goto fail;
		for (j = 0; j < c->nics; j++) {
			snprintf(name, sizeof(name), "nic%u", j);
			if (topo_add_nic(t, h, name, 2 * pair,
					 fab_ip(i, j, TOPO_LEFT, c->bonded),
					 2 * pair + 1,
					 fab_ip(i, j, TOPO_RIGHT, c->bonded),
					 c->port_gbps, err,
					 errlen) == TOPO_NONE)
				goto fail;
		}
	}
	if (topo_finalize(t, err, errlen) < 0)
		goto fail;
	return t;
fail:
	topo_free(t);
	return NULL;
}

static int
fab_push(struct fab_conns *o, uint32_t job, uint32_t s, uint32_t d)
{
	if (o->n == o->cap) {
		size_t ncap = o->cap == 0 ? 256 : o->cap * 2;
		struct fab_conn *nv = realloc(o->v, ncap * sizeof(*nv));

		if (nv == NULL)
			return -1;
		o->v = nv;
		o->cap = ncap;
	}
	o->v[o->n].job = job;
	o->v[o->n].src_nic = s;
	o->v[o->n].dst_nic = d;
	o->n++;
	return 0;
}

int
fab_ring(const struct topo *t, uint32_t job, const uint32_t *hosts, uint32_t n,
	 uint32_t rails, struct fab_conns *out)
{
	uint32_t r, i;

	for (r = 0; r < rails; r++) {
		for (i = 0; i < n; i++) {
			const struct topo_host *a = &t->hosts[hosts[i]];
			const struct topo_host *b =
				&t->hosts[hosts[(i + 1) % n]];

			if (r >= a->nic_count || r >= b->nic_count)
				continue;
			if (fab_push(out, job, a->first_nic + r,
				     b->first_nic + r) < 0)
				return -1;
		}
	}
	return 0;
}
