/*
 * ecmp.c: the per-switch ECMP hash model and flow routing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecmp.h"
#include "errbuf.h"
#include "mix.h"
#include "tmap.h"

uint64_t
ecmp_switch_seed(const struct ecmp_model *m, unsigned kind, uint32_t id)
{
	return mix64(m->seed ^ mix64(((uint64_t)kind << 32 | id) +
				     0x9e3779b97f4a7c15ULL));
}

uint64_t
ecmp_flow(uint64_t sw_seed, const struct ecmp_flow *f)
{
	uint64_t a = (uint64_t)f->sip << 32 | f->dip;
	uint64_t b =
		(uint64_t)f->proto << 32 | (uint64_t)f->sport << 16 | f->dport;

	return mix64(sw_seed ^ mix64(a ^ mix64(b + sw_seed)));
}

void
ecmp_ctx_free(struct ecmp_ctx *c)
{
	free(c->up);
	free(c->up_grp);
	free(c->grp);
	free(c->down);
	free(c->down_port);
	memset(c, 0, sizeof(*c));
}

int
ecmp_ctx_init(struct ecmp_ctx *c, const struct topo *t,
	      const struct ecmp_model *m, uint32_t src_port, uint32_t dst_ip,
	      char *err, size_t errlen)
{
	const struct topo_leaf *sl;
	uint32_t dports[TOPO_SIDES], ndp = 0, i, j, k, sleaf;
	uint32_t dnic;

	memset(c, 0, sizeof(*c));
	if (!t->final || src_port >= t->nports) {
		errbuf_set(err, errlen, "bad source port");
		return -1;
	}
	dnic = topo_nic_by_ip(t, dst_ip);
	if (dnic == TOPO_NONE) {
		errbuf_set(err, errlen, "unknown destination IP");
		return -1;
	}
	for (i = 0; i < TOPO_SIDES; i++)
		if (t->ports[t->nics[dnic].port[i]].ip == dst_ip)
			dports[ndp++] = t->nics[dnic].port[i];
	c->t = t;
	c->src_port = src_port;
	c->sip = t->ports[src_port].ip;
	c->dip = dst_ip;
	sleaf = t->ports[src_port].leaf;
	c->leaf_seed = ecmp_switch_seed(m, 0, sleaf);
	c->direct_port = TOPO_NONE;
	for (i = 0; i < ndp; i++)
		if (t->ports[dports[i]].leaf == sleaf)
			c->direct_port = dports[i];
	sl = &t->leaves[sleaf];
	c->up = malloc(((size_t)sl->link_count + 1) * sizeof(uint32_t));
	c->up_grp = malloc(((size_t)sl->link_count + 1) * sizeof(uint32_t));
	c->grp = malloc(((size_t)sl->link_count + 1) * sizeof(*c->grp));
	c->down = malloc(((size_t)sl->link_count * TOPO_MAX_LINK_MULT * 2 + 1) *
			 sizeof(uint32_t));
	c->down_port =
		malloc(((size_t)sl->link_count * TOPO_MAX_LINK_MULT * 2 + 1) *
		       sizeof(uint32_t));
	if (c->up == NULL || c->up_grp == NULL || c->grp == NULL ||
	    c->down == NULL || c->down_port == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	/*
	 * Walk the source leaf's cables (sorted by spine): each spine with
	 * cables to a destination leaf (other than the source leaf) gets one
	 * group; all the leaf's cables to it join the uplink group.
	 */
	for (i = 0; i < sl->link_count;) {
		uint32_t spine =
			t->links[t->leaf_links[sl->link_first + i]].spine;
		uint32_t nb = 0, first = c->ndown;

		for (k = 0; k < ndp; k++) {
			uint32_t dl = t->ports[dports[k]].leaf, pos, cnt;

			if (dl == sleaf)
				continue;
			topo_spine_to_leaf(t, spine, dl, &pos, &cnt);
			for (j = 0; j < cnt; j++) {
				c->down[c->ndown] = t->spine_links[pos + j];
				c->down_port[c->ndown] = dports[k];
				c->ndown++;
			}
		}
		for (;
		     i < sl->link_count &&
		     t->links[t->leaf_links[sl->link_first + i]].spine == spine;
		     i++)
			nb++;
		if (c->ndown == first)
			continue;
		c->grp[c->ngrp].seed = ecmp_switch_seed(m, 1, spine);
		c->grp[c->ngrp].first = first;
		c->grp[c->ngrp].count = c->ndown - first;
		for (j = 0; j < nb; j++) {
			c->up[c->nup] =
				t->leaf_links[sl->link_first + i - nb + j];
			c->up_grp[c->nup] = c->ngrp;
			c->nup++;
			c->npaths += c->ndown - first;
		}
		c->ngrp++;
	}
	if (c->direct_port != TOPO_NONE)
		c->npaths = 1;
	if (c->direct_port == TOPO_NONE && c->nup == 0) {
		errbuf_set(err, errlen,
			   "no spine reaches the destination leaf");
		goto fail;
	}
	return 0;
fail:
	ecmp_ctx_free(c);
	return -1;
}

static bool
ecmp_down_ok(const struct ecmp_ctx *c, uint32_t i)
{
	return c->t->links[c->down[i]].up && c->t->ports[c->down_port[i]].up;
}

static bool
ecmp_grp_ok(const struct ecmp_ctx *c, uint32_t g)
{
	const struct ecmp_spine_grp *sg = &c->grp[g];
	uint32_t i;

	for (i = 0; i < sg->count; i++)
		if (ecmp_down_ok(c, sg->first + i))
			return true;
	return false;
}

static bool
ecmp_up_ok(const struct ecmp_ctx *c, uint32_t i)
{
	return c->t->links[c->up[i]].up && ecmp_grp_ok(c, c->up_grp[i]);
}

/*
 * Picks a member among n: the hashed one if ok(), else the hashed one among
 * the healthy members (a second, independent part of the hash). Returns the
 * member index relative to base, or TOPO_NONE when none is healthy.
 */
static uint32_t
ecmp_pick(const struct ecmp_ctx *c, uint64_t h, uint32_t base, uint32_t n,
	  bool use_health, bool (*ok)(const struct ecmp_ctx *, uint32_t))
{
	uint32_t k = (uint32_t)(h % n), i, healthy = 0;

	if (!use_health || ok(c, base + k))
		return k;
	for (i = 0; i < n; i++)
		healthy += ok(c, base + i);
	if (healthy == 0)
		return TOPO_NONE;
	k = (uint32_t)((h >> 32) % healthy);
	for (i = 0; i < n; i++) {
		if (!ok(c, base + i))
			continue;
		if (k-- == 0)
			return i;
	}
	return TOPO_NONE;
}

int
ecmp_ctx_route(const struct ecmp_ctx *c, uint16_t sport, bool use_health,
	       struct path *out)
{
	uint32_t ix;

	return ecmp_ctx_route_ix(c, sport, use_health, out, &ix);
}

int
ecmp_ctx_route_ix(const struct ecmp_ctx *c, uint16_t sport, bool use_health,
		  struct path *out, uint32_t *index)
{
	struct ecmp_flow f = {c->sip, c->dip, sport, HASH_ROCE_DPORT,
			      HASH_PROTO_UDP};
	const struct ecmp_spine_grp *g;
	uint32_t u, d;

	if (use_health && !c->t->ports[c->src_port].up)
		return -1;
	out->src_port = c->src_port;
	if (c->direct_port != TOPO_NONE &&
	    (!use_health || c->t->ports[c->direct_port].up)) {
		out->dst_port = c->direct_port;
		out->up = out->down = TOPO_NONE;
		*index = 0;
		return 0;
	}
	if (c->nup == 0)
		return -1;
	u = ecmp_pick(c, ecmp_flow(c->leaf_seed, &f), 0, c->nup, use_health,
		      ecmp_up_ok);
	if (u == TOPO_NONE)
		return -1;
	g = &c->grp[c->up_grp[u]];
	d = ecmp_pick(c, ecmp_flow(g->seed, &f), g->first, g->count, use_health,
		      ecmp_down_ok);
	if (d == TOPO_NONE)
		return -1;
	out->up = c->up[u];
	out->down = c->down[g->first + d];
	out->dst_port = c->down_port[g->first + d];
	*index = 1 + u * c->ndown + g->first + d;
	return 0;
}

int
ecmp_route(const struct topo *t, const struct ecmp_model *m, uint32_t src_port,
	   uint32_t dst_ip, uint16_t sport, bool use_health, struct path *out,
	   char *err, size_t errlen)
{
	struct ecmp_ctx c;
	int rc;

	if (ecmp_ctx_init(&c, t, m, src_port, dst_ip, err, errlen) < 0)
		return -1;
	rc = ecmp_ctx_route(&c, sport, use_health, out);
	if (rc < 0)
		errbuf_set(err, errlen, "no healthy path");
	ecmp_ctx_free(&c);
	return rc;
}
