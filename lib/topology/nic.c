/*
 * nic.c - NICs and NIC ports by name (see nic.h).
 */
#include <stdio.h>
#include <string.h>

#include "nic.h"

/*
 * The NIC of host (hlen bytes of it, not terminated) named nic (nlen
 * bytes); TOPO_NONE if none.
 */
static uint32_t
nic_find(const struct topo *t, const char *host, size_t hlen, const char *nic,
	 size_t nlen)
{
	char name[TOPO_NAME_MAX];
	uint32_t h;

	if (hlen >= sizeof(name) || nlen >= TOPO_NAME_MAX)
		return TOPO_NONE;
	memcpy(name, host, hlen);
	name[hlen] = '\0';
	h = topo_host_by_name(t, name);
	if (h == TOPO_NONE)
		return TOPO_NONE;
	for (uint32_t i = 0; i < t->hosts[h].nic_count; i++) {
		uint32_t n = t->hosts[h].first_nic + i;

		if (strlen(t->nics[n].name) == nlen &&
		    memcmp(t->nics[n].name, nic, nlen) == 0)
			return n;
	}
	return TOPO_NONE;
}

uint32_t
nic_lookup(const struct topo *t, const char *s)
{
	const char *slash = strchr(s, '/');
	uint32_t ip;

	if (slash == NULL)
		return topo_ip_parse(s, &ip) == 0 ? topo_nic_by_ip(t, ip)
						  : TOPO_NONE;
	return nic_find(t, s, (size_t)(slash - s), slash + 1,
			strlen(slash + 1));
}

uint32_t
nic_port_lookup(const struct topo *t, const char *s)
{
	const char *a = strchr(s, '/'), *b = a ? strchr(a + 1, '/') : NULL;
	uint32_t n;

	if (b == NULL)
		return TOPO_NONE;
	n = nic_find(t, s, (size_t)(a - s), a + 1, (size_t)(b - a - 1));
	if (n == TOPO_NONE)
		return TOPO_NONE;
	if (strcmp(b + 1, "left") == 0)
		return t->nics[n].port[TOPO_LEFT];
	if (strcmp(b + 1, "right") == 0)
		return t->nics[n].port[TOPO_RIGHT];
	return TOPO_NONE;
}

void
nic_name(const struct topo *t, uint32_t port, char *buf, size_t len)
{
	const struct topo_nic *n;

	if (port >= t->nports) {
		snprintf(buf, len, "?");
		return;
	}
	n = &t->nics[t->ports[port].nic];
	snprintf(buf, len, "%s/%s", t->hosts[n->host].name, n->name);
}
