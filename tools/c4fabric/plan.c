/*
 * plan.c: what c4fabric configures, as ip and tc batch text (see
 * c4fabric.h). Everything here is a function of the topology and the
 * options, so that "link up" can recompute a switch's routes later.
 *
 * Interfaces: cable L is "cL" at both ends (leaf and spine namespaces);
 * NIC port P is "pP" on its leaf and plan_host_if() on its host.
 * Nexthop objects: cable L is id L + 1 in both of its switches; groups are
 * FAB_GROUP_BASE + k, k counting distinct member sets in one switch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "c4fabric.h"
#include "mix.h"

static const char *
plan_node_name(const struct topo *t, enum fab_node kind, uint32_t id)
{
	switch (kind) {
	case FAB_HOST:
		return t->hosts[id].name;
	case FAB_LEAF:
		return t->leaves[id].name;
	default:
		return t->spines[id].name;
	}
}

void
plan_ns(const struct fab *f, enum fab_node kind, uint32_t id, char *buf,
	size_t len)
{
	snprintf(buf, len, "%s%s", f->prefix, plan_node_name(f->t, kind, id));
}

void
plan_host_if(const struct topo *t, uint32_t port, char *buf, size_t len)
{
	const struct topo_port *p = &t->ports[port];
	const char *nic = t->nics[p->nic].name;

	if (strlen(nic) + 2 < FAB_IFNAME_MAX && strchr(nic, '/') == NULL &&
	    strchr(nic, ' ') == NULL)
		snprintf(buf, len, "%s-%c", nic,
			 p->side == TOPO_LEFT ? 'l' : 'r');
	else
		snprintf(buf, len, "p%u", port);
}

static void
plan_ip(uint32_t ip, char *buf)
{
	topo_ip_format(ip, buf, 16);
}

uint32_t
plan_seed(const struct fab *f, enum fab_node kind, uint32_t id)
{
	uint64_t x = (uint64_t)f->seed << 32 ^ (uint64_t)kind << 24 ^ id;

	/* splitmix64: neighbouring switches get unrelated seeds */
	x = splitmix64(&x);
	return (uint32_t)x != 0 ? (uint32_t)x : 1;
}

void
plan_netns_add(const struct fab *f, struct fab_buf *b)
{
	char ns[FAB_NS_MAX];
	uint32_t i;

	for (i = 0; i < f->t->nhosts; i++) {
		plan_ns(f, FAB_HOST, i, ns, sizeof(ns));
		buf_printf(b, "netns add %s\n", ns);
	}
	for (i = 0; i < f->t->nleaves; i++) {
		plan_ns(f, FAB_LEAF, i, ns, sizeof(ns));
		buf_printf(b, "netns add %s\n", ns);
	}
	for (i = 0; i < f->t->nspines; i++) {
		plan_ns(f, FAB_SPINE, i, ns, sizeof(ns));
		buf_printf(b, "netns add %s\n", ns);
	}
}

void
plan_veths(const struct fab *f, struct fab_buf *b)
{
	const struct topo *t = f->t;
	char a[FAB_NS_MAX], z[FAB_NS_MAX], hif[FAB_IFNAME_MAX];
	uint32_t i;

	for (i = 0; i < t->nlinks; i++) {
		plan_ns(f, FAB_LEAF, t->links[i].leaf, a, sizeof(a));
		plan_ns(f, FAB_SPINE, t->links[i].spine, z, sizeof(z));
		buf_printf(b,
			   "link add c%u netns %s type veth peer name c%u "
			   "netns %s\n",
			   i, a, i, z);
	}
	for (i = 0; i < t->nports; i++) {
		plan_ns(f, FAB_LEAF, t->ports[i].leaf, a, sizeof(a));
		plan_ns(f, FAB_HOST, t->nics[t->ports[i].nic].host, z,
			sizeof(z));
		plan_host_if(t, i, hif, sizeof(hif));
		buf_printf(b,
			   "link add p%u netns %s type veth peer name %s "
			   "netns %s\n",
			   i, a, hif, z);
	}
}

void
plan_switch_ifs(const struct fab *f, enum fab_node kind, uint32_t id,
		struct fab_buf *b)
{
	const struct topo *t = f->t;
	char ip[16];
	uint32_t i, first, count;
	const uint32_t *links;

	buf_printf(b, "link set lo up\n");
	if (kind == FAB_LEAF) {
		first = t->leaves[id].link_first;
		count = t->leaves[id].link_count;
		links = t->leaf_links;
	} else {
		first = t->spines[id].link_first;
		count = t->spines[id].link_count;
		links = t->spine_links;
	}
	for (i = first; i < first + count; i++) {
		uint32_t l = links[i];

		plan_ip(addrplan_if_addr(t,
					 kind == FAB_LEAF
						 ? ADDRPLAN_IF_CABLE_LEAF
						 : ADDRPLAN_IF_CABLE_SPINE,
					 l),
			ip);
		buf_printf(b, "addr add %s/31 dev c%u\nlink set c%u up\n", ip,
			   l, l);
	}
	if (kind != FAB_LEAF)
		return;
	for (i = 0; i < t->nports; i++) {
		if (t->ports[i].leaf != id)
			continue;
		plan_ip(addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, i), ip);
		buf_printf(b, "addr add %s/31 dev p%u\nlink set p%u up\n", ip,
			   i, i);
	}
}

/* The member sets of one switch's groups, in order of first use. */
struct plan_groups {
	uint32_t *mem; /* ngroups runs of ... */
	uint32_t *off; /* start of group k in mem; off[ngroups] = end */
	uint32_t n, cap_mem, cap_off, used;
};

/* Group index of members m[0..n), adding it when new. */
static uint32_t
plan_group(struct plan_groups *g, const uint32_t *m, uint32_t n)
{
	uint32_t k;

	for (k = 0; k < g->n; k++)
		if (g->off[k + 1] - g->off[k] == n &&
		    memcmp(g->mem + g->off[k], m, n * sizeof(*m)) == 0)
			return k;
	if (g->used + n > g->cap_mem) {
		g->cap_mem = (g->used + n) * 2 + 16;
		g->mem = realloc(g->mem, g->cap_mem * sizeof(*g->mem));
	}
	if (g->n + 2 > g->cap_off) {
		g->cap_off = g->n * 2 + 16;
		g->off = realloc(g->off, g->cap_off * sizeof(*g->off));
	}
	if (g->mem == NULL || g->off == NULL) {
		fprintf(stderr, "c4fabric: out of memory\n");
		exit(1);
	}
	memcpy(g->mem + g->used, m, n * sizeof(*m));
	g->off[g->n] = g->used;
	g->used += n;
	g->off[++g->n] = g->used;
	return k;
}

/* Does leaf l hold a port with ip? (its port id in *port) */
static bool
plan_leaf_has(const struct topo *t, uint32_t l, uint32_t ip, uint32_t *port)
{
	uint32_t nic = topo_nic_by_ip(t, ip), s;

	for (s = 0; s < TOPO_SIDES; s++) {
		uint32_t p = t->nics[nic].port[s];

		if (t->ports[p].ip == ip && t->ports[p].leaf == l) {
			*port = p;
			return true;
		}
	}
	return false;
}

/* Does spine s have a cable to a leaf holding ip? */
static bool
plan_spine_reaches(const struct topo *t, uint32_t s, uint32_t ip)
{
	uint32_t i, dummy;

	for (i = 0; i < t->spines[s].link_count; i++) {
		uint32_t l = t->spine_links[t->spines[s].link_first + i];

		if (plan_leaf_has(t, t->links[l].leaf, ip, &dummy))
			return true;
	}
	return false;
}

/*
 * ECMP members (cables, live ones only) of switch id towards ip, into m;
 * returns their count. A leaf uses its cables to every spine that reaches
 * a leaf holding ip; a spine its cables to the leaves holding ip.
 */
static uint32_t
plan_members(const struct topo *t, enum fab_node kind, uint32_t id, uint32_t ip,
	     const bool *live, uint32_t *m)
{
	uint32_t i, n = 0, dummy;

	if (kind == FAB_LEAF) {
		for (i = 0; i < t->leaves[id].link_count; i++) {
			uint32_t l =
				t->leaf_links[t->leaves[id].link_first + i];

			if (live[l] &&
			    plan_spine_reaches(t, t->links[l].spine, ip))
				m[n++] = l;
		}
		return n;
	}
	for (i = 0; i < t->spines[id].link_count; i++) {
		uint32_t l = t->spine_links[t->spines[id].link_first + i];

		if (live[l] && plan_leaf_has(t, t->links[l].leaf, ip, &dummy))
			m[n++] = l;
	}
	return n;
}

void
plan_routes(const struct fab *f, enum fab_node kind, uint32_t id,
	    const bool *live, uint32_t only, struct fab_buf *b)
{
	const struct topo *t = f->t;
	struct plan_groups g = {0};
	uint32_t *m, *route_group, i, k, n, p;
	uint32_t nlinks = kind == FAB_LEAF ? t->leaves[id].link_count
					   : t->spines[id].link_count;
	uint32_t first = kind == FAB_LEAF ? t->leaves[id].link_first
					  : t->spines[id].link_first;
	const uint32_t *links =
		kind == FAB_LEAF ? t->leaf_links : t->spine_links;
	char ip[16], via[16];
	bool *want;

	m = calloc(nlinks + 1, sizeof(*m));
	route_group = calloc(t->nports + 1, sizeof(*route_group));
	if (m == NULL || route_group == NULL) {
		fprintf(stderr, "c4fabric: out of memory\n");
		exit(1);
	}
	/* nexthops: one per live cable of this switch */
	for (i = first; i < first + nlinks; i++) {
		uint32_t l = links[i];

		if (!live[l] || (only != TOPO_NONE && l != only))
			continue;
		plan_ip(addrplan_if_addr(t,
					 kind == FAB_LEAF
						 ? ADDRPLAN_IF_CABLE_SPINE
						 : ADDRPLAN_IF_CABLE_LEAF,
					 l),
			via);
		buf_printf(b, "nexthop replace id %u via %s dev c%u\n", l + 1,
			   via, l);
	}
	/* one route per NIC IP (a bonded NIC's IP once, at its left port) */
	for (p = 0; p < t->nports; p++) {
		const struct topo_port *pp = &t->ports[p];
		const struct topo_nic *nic = &t->nics[pp->nic];

		route_group[p] = TOPO_NONE;
		if (pp->side == TOPO_RIGHT && nic->bonded)
			continue;
		plan_ip(pp->ip, ip);
		if (kind == FAB_LEAF && plan_leaf_has(t, id, pp->ip, &i)) {
			if (only == TOPO_NONE)
				buf_printf(b, "route replace %s/32 dev p%u\n",
					   ip, i);
			continue;
		}
		n = plan_members(t, kind, id, pp->ip, live, m);
		if (n > 0)
			route_group[p] = plan_group(&g, m, n);
	}
	want = calloc(g.n + 1, sizeof(*want));
	if (want == NULL) {
		fprintf(stderr, "c4fabric: out of memory\n");
		exit(1);
	}
	for (k = 0; k < g.n; k++) {
		const uint32_t *gm = g.mem + g.off[k];
		uint32_t gn = g.off[k + 1] - g.off[k];

		want[k] = only == TOPO_NONE;
		for (i = 0; i < gn && !want[k]; i++)
			want[k] = gm[i] == only;
		if (!want[k])
			continue;
		buf_printf(b, "nexthop replace id %u group ",
			   FAB_GROUP_BASE + k);
		for (i = 0; i < gn; i++)
			buf_printf(b, "%s%u", i ? "/" : "", gm[i] + 1);
		buf_printf(b, " type resilient buckets %u idle_timer 0\n",
			   FAB_BUCKETS);
	}
	for (p = 0; p < t->nports; p++) {
		if (route_group[p] == TOPO_NONE || !want[route_group[p]])
			continue;
		plan_ip(t->ports[p].ip, ip);
		buf_printf(b, "route replace %s/32 nhid %u\n", ip,
			   FAB_GROUP_BASE + route_group[p]);
	}
	free(want);
	free(g.mem);
	free(g.off);
	free(m);
	free(route_group);
}

void
plan_host_ifs(const struct fab *f, uint32_t host, struct fab_buf *b)
{
	const struct topo *t = f->t;
	const struct topo_host *h = &t->hosts[host];
	char ip[16], ifn[FAB_IFNAME_MAX];

	buf_printf(b, "link set lo up\n");
	for (uint32_t i = h->first_nic; i < h->first_nic + h->nic_count; i++) {
		for (uint32_t s = 0; s < TOPO_SIDES; s++) {
			uint32_t p = t->nics[i].port[s];

			plan_host_if(t, p, ifn, sizeof(ifn));
			plan_ip(t->ports[p].ip, ip);
			buf_printf(b, "addr add %s/32 dev %s\nlink set %s up\n",
				   ip, ifn, ifn);
		}
	}
	for (uint32_t s = 0; s < TOPO_SIDES; s++)
		buf_printf(b, "rule add fwmark %u table %u pref %u\n",
			   s == TOPO_LEFT ? FAB_MARK_LEFT : FAB_MARK_RIGHT,
			   FAB_TABLE_BASE + s, FAB_TABLE_BASE + s);
}

void
plan_host_routes(const struct fab *f, uint32_t host, struct fab_buf *b)
{
	const struct topo *t = f->t;
	const struct topo_host *h = &t->hosts[host];
	char gw[16], ifn[FAB_IFNAME_MAX], hop[96];
	struct fab_buf all = {0}, side[TOPO_SIDES] = {{0}};
	uint32_t i, s;

	for (i = h->first_nic; i < h->first_nic + h->nic_count; i++) {
		for (s = 0; s < TOPO_SIDES; s++) {
			uint32_t p = t->nics[i].port[s];

			plan_host_if(t, p, ifn, sizeof(ifn));
			plan_ip(addrplan_if_addr(t, ADDRPLAN_IF_LEAF_PORT, p),
				gw);
			snprintf(hop, sizeof(hop),
				 " nexthop via %s dev %s onlink", gw, ifn);
			buf_printf(&all, "%s", hop);
			buf_printf(&side[s], "%s", hop);
		}
	}
	/*
	 * Everything goes to the fabric: a multipath default route over all
	 * ports (an unbound sender is hashed like a bonded NIC's transmit
	 * side); a sender picks a port with SO_BINDTODEVICE, IP_PKTINFO or
	 * IP_UNICAST_IF (the route lookup then keeps only that port's
	 * nexthop), or a side with SO_MARK FAB_MARK_LEFT/RIGHT (policy rules
	 * to a per-side table).
	 */
	buf_printf(b, "route replace default%s\n", all.p);
	for (s = 0; s < TOPO_SIDES; s++)
		buf_printf(b, "route replace default table %u%s\n",
			   FAB_TABLE_BASE + s, side[s].p);
	buf_free(&all);
	buf_free(&side[0]);
	buf_free(&side[1]);
}

/* One tbf line for interface ifn at gbps of the topology. */
static void
plan_tbf(const struct fab *f, const char *ifn, double gbps, struct fab_buf *b)
{
	double kbit = gbps * f->scale * 1000.0;
	double burst = kbit * 1000.0 / 8.0 * 0.002; /* 2 ms of traffic */

	if (kbit < 8)
		kbit = 8;
	if (burst < FAB_BURST_MIN)
		burst = FAB_BURST_MIN;
	buf_printf(b,
		   "qdisc replace dev %s root handle 1: tbf rate %.0fkbit "
		   "burst %.0f latency %ums\n",
		   ifn, kbit, burst, FAB_LATENCY_MS);
}

void
plan_tc(const struct fab *f, enum fab_node kind, uint32_t id, struct fab_buf *b)
{
	const struct topo *t = f->t;
	char ifn[FAB_IFNAME_MAX];
	uint32_t i;

	for (i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->links[i];

		if ((kind == FAB_LEAF && l->leaf == id) ||
		    (kind == FAB_SPINE && l->spine == id)) {
			snprintf(ifn, sizeof(ifn), "c%u", i);
			plan_tbf(f, ifn, l->gbps, b);
		}
	}
	for (i = 0; i < t->nports; i++) {
		const struct topo_port *p = &t->ports[i];

		if (kind == FAB_LEAF && p->leaf == id) {
			snprintf(ifn, sizeof(ifn), "p%u", i);
			plan_tbf(f, ifn, p->gbps, b);
		} else if (kind == FAB_HOST && t->nics[p->nic].host == id) {
			plan_host_if(t, i, ifn, sizeof(ifn));
			plan_tbf(f, ifn, p->gbps, b);
		}
	}
}
