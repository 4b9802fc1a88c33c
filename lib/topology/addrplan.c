/*
 * addrplan.c: switch interface addresses and cable names (see addrplan.h).
 */
#include <stdio.h>
#include <string.h>

#include "addrplan.h"
#include "errbuf.h"

/* Addresses the plan of t uses, from the base of switch_net. */
static uint64_t
addrplan_need(const struct topo *t)
{
	return 2 * (uint64_t)t->nlinks + 2 * (uint64_t)t->nports;
}

/* Addresses switch_net holds. */
static uint64_t
addrplan_size(const struct topo *t)
{
	return (uint64_t)1 << (32 - t->swnet_prefix);
}

uint32_t
addrplan_if_addr(const struct topo *t, enum addrplan_ifkind kind, uint32_t id)
{
	uint64_t off;

	switch (kind) {
	case ADDRPLAN_IF_CABLE_LEAF:
	case ADDRPLAN_IF_CABLE_SPINE:
		if (id >= t->nlinks)
			return 0;
		off = 2 * (uint64_t)id + (kind == ADDRPLAN_IF_CABLE_SPINE);
		break;
	case ADDRPLAN_IF_LEAF_PORT:
		if (id >= t->nports)
			return 0;
		off = 2 * (uint64_t)t->nlinks + 2 * (uint64_t)id;
		break;
	default:
		return 0;
	}
	if (off >= addrplan_size(t))
		return 0;
	return t->swnet_base + (uint32_t)off;
}

enum addrplan_ifkind
addrplan_if_lookup(const struct topo *t, uint32_t addr, uint32_t *id)
{
	uint64_t off, cables = 2 * (uint64_t)t->nlinks;

	if (addr < t->swnet_base)
		return ADDRPLAN_IF_NONE;
	off = addr - t->swnet_base;
	if (off >= addrplan_size(t) || off >= addrplan_need(t))
		return ADDRPLAN_IF_NONE;
	if (off < cables) {
		if (id != NULL)
			*id = (uint32_t)(off / 2);
		return off & 1 ? ADDRPLAN_IF_CABLE_SPINE
			       : ADDRPLAN_IF_CABLE_LEAF;
	}
	off -= cables;
	if (off & 1)
		return ADDRPLAN_IF_NONE; /* the unused half of a port's /31 */
	if (id != NULL)
		*id = (uint32_t)(off / 2);
	return ADDRPLAN_IF_LEAF_PORT;
}

void
addrplan_link_name(const struct topo *t, uint32_t link, char *buf, size_t len)
{
	const struct topo_link *l;
	const struct topo_bundle *b;

	if (link >= t->nlinks) {
		snprintf(buf, len, "?");
		return;
	}
	l = &t->links[link];
	b = &t->bundles[l->bundle];
	if (b->count == 1)
		snprintf(buf, len, "%s-%s", t->leaves[l->leaf].name,
			 t->spines[l->spine].name);
	else
		snprintf(buf, len, "%s-%s.%u", t->leaves[l->leaf].name,
			 t->spines[l->spine].name, link - b->first_link);
}

uint32_t
addrplan_link_lookup(const struct topo *t, const char *name)
{
	char buf[3 * TOPO_NAME_MAX];

	for (uint32_t i = 0; i < t->nlinks; i++) {
		addrplan_link_name(t, i, buf, sizeof(buf));
		if (strcmp(buf, name) == 0)
			return i;
	}
	return TOPO_NONE;
}

int
addrplan_cidr_parse(const char *s, uint32_t *base, uint8_t *prefix)
{
	char ip[16];
	const char *slash = strchr(s, '/');
	unsigned long len = 0;
	uint32_t a, mask;
	int digits = 0;

	if (slash == NULL || (size_t)(slash - s) >= sizeof(ip))
		return -1;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	if (topo_ip_parse(ip, &a) < 0)
		return -1;
	for (s = slash + 1; *s >= '0' && *s <= '9' && digits < 3; s++) {
		len = len * 10 + (unsigned long)(*s - '0');
		digits++;
	}
	if (digits == 0 || *s != '\0' || len > 32)
		return -1;
	mask = len == 0 ? 0 : UINT32_MAX << (32 - len);
	if ((a & ~mask) != 0)
		return -1;
	*base = a;
	*prefix = (uint8_t)len;
	return 0;
}

int
addrplan_set_switch_net(struct topo *t, uint32_t base, uint8_t prefix,
			char *err, size_t errlen)
{
	if (t->final) {
		errbuf_set(err, errlen, "topology is final");
		return -1;
	}
	if (prefix > 32 ||
	    (prefix < 32 && (base & (UINT32_MAX >> prefix)) != 0)) {
		errbuf_set(err, errlen,
			   "switch_net: host bits set below the prefix");
		return -1;
	}
	t->swnet_base = base;
	t->swnet_prefix = prefix;
	return 0;
}

int
addrplan_check(const struct topo *t, char *err, size_t errlen)
{
	char net[16], ip[16];
	uint64_t need = addrplan_need(t);

	topo_ip_format(t->swnet_base, net, sizeof(net));
	if (t->swnet_base == 0) {
		errbuf_set(err, errlen,
			   "switch_net %s/%u: must not start at 0.0.0.0", net,
			   t->swnet_prefix);
		return -1;
	}
	if (need > addrplan_size(t)) {
		errbuf_set(err, errlen,
			   "switch_net %s/%u: %llu addresses needed for %u "
			   "cables and %u NIC ports, %llu available",
			   net, t->swnet_prefix, (unsigned long long)need,
			   t->nlinks, t->nports,
			   (unsigned long long)addrplan_size(t));
		return -1;
	}
	for (uint32_t i = 0; i < t->nports; i++) {
		const struct topo_port *p = &t->ports[i];

		if (p->ip < t->swnet_base ||
		    (uint64_t)(p->ip - t->swnet_base) >= need)
			continue;
		topo_ip_format(p->ip, ip, sizeof(ip));
		errbuf_set(err, errlen,
			   "switch_net %s/%u: NIC %s/%s IP %s is a switch "
			   "interface address of the plan",
			   net, t->swnet_prefix,
			   t->hosts[t->nics[p->nic].host].name,
			   t->nics[p->nic].name, ip);
		return -1;
	}
	return 0;
}
