/*
 * path.c: path enumeration and path predicates.
 */
#include <stdio.h>

#include "path.h"

long
path_enum(const struct topo *t, uint32_t src_port, uint32_t dst_port,
	  struct path *out, size_t max)
{
	const struct topo_leaf *sl;
	uint32_t dleaf, i, j;
	long n = 0;

	if (!t->final || src_port >= t->nports || dst_port >= t->nports ||
	    src_port == dst_port)
		return -1;
	dleaf = t->ports[dst_port].leaf;
	if (t->ports[src_port].leaf == dleaf) {
		if (max > 0) {
			out[0].src_port = src_port;
			out[0].dst_port = dst_port;
			out[0].up = out[0].down = TOPO_NONE;
		}
		return 1;
	}
	sl = &t->leaves[t->ports[src_port].leaf];
	for (i = 0; i < sl->link_count; i++) {
		uint32_t up = t->leaf_links[sl->link_first + i];
		uint32_t pos, cnt;

		topo_spine_to_leaf(t, t->links[up].spine, dleaf, &pos, &cnt);
		for (j = 0; j < cnt; j++) {
			if ((size_t)n < max) {
				out[n].src_port = src_port;
				out[n].dst_port = dst_port;
				out[n].up = up;
				out[n].down = t->spine_links[pos + j];
			}
			n++;
		}
	}
	return n;
}

bool
path_healthy(const struct topo *t, const struct path *p)
{
	if (!t->ports[p->src_port].up || !t->ports[p->dst_port].up)
		return false;
	if (p->up != TOPO_NONE && !t->links[p->up].up)
		return false;
	if (p->down != TOPO_NONE && !t->links[p->down].up)
		return false;
	return true;
}

bool
path_uses_link(const struct path *p, uint32_t link)
{
	return p->up == link || p->down == link;
}

uint32_t
path_spine(const struct topo *t, const struct path *p)
{
	return p->up == TOPO_NONE ? TOPO_NONE : t->links[p->up].spine;
}

bool
path_equal(const struct path *a, const struct path *b)
{
	return a->src_port == b->src_port && a->dst_port == b->dst_port &&
	       a->up == b->up && a->down == b->down;
}

void
path_format(const struct topo *t, const struct path *p, char *buf, size_t len)
{
	const struct topo_port *s = &t->ports[p->src_port];
	const struct topo_port *d = &t->ports[p->dst_port];
	const char *side = "LR";

	if (p->up == TOPO_NONE) {
		snprintf(buf, len, "%s/%s:%c %s %s/%s:%c",
			 t->hosts[t->nics[s->nic].host].name,
			 t->nics[s->nic].name, side[s->side],
			 t->leaves[s->leaf].name,
			 t->hosts[t->nics[d->nic].host].name,
			 t->nics[d->nic].name, side[d->side]);
		return;
	}
	snprintf(buf, len, "%s/%s:%c %s>%s>%s %s/%s:%c",
		 t->hosts[t->nics[s->nic].host].name, t->nics[s->nic].name,
		 side[s->side], t->leaves[s->leaf].name,
		 t->spines[t->links[p->up].spine].name, t->leaves[d->leaf].name,
		 t->hosts[t->nics[d->nic].host].name, t->nics[d->nic].name,
		 side[d->side]);
}
