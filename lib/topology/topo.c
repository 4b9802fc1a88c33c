/*
 * topo.c: the fabric model: builder, validation, indices, health.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "mix.h"
#include "tmap.h"
#include "topo.h"
#include "errbuf.h"

/*
 * Grows *arr (elements of size sz, capacity *cap) to hold n + 1 elements.
 * Returns 0 or -1 when out of memory; *arr is unchanged on failure.
 */
static int
topo_reserve(void **arr, uint32_t *cap, uint32_t n, size_t sz)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap == 0 ? 16 : *cap * 2;
	p = realloc(*arr, (size_t)ncap * sz);
	if (p == NULL)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

struct topo *
topo_new(void)
{
	struct topo *t = calloc(1, sizeof(struct topo));

	if (t != NULL) {
		t->swnet_base = TOPO_SWITCH_NET_DEFAULT_BASE;
		t->swnet_prefix = TOPO_SWITCH_NET_DEFAULT_PREFIX;
	}
	return t;
}

void
topo_free(struct topo *t)
{
	if (t == NULL)
		return;
	free(t->leaves);
	free(t->spines);
	free(t->links);
	free(t->bundles);
	free(t->hosts);
	free(t->nics);
	free(t->ports);
	free(t->leaf_links);
	free(t->spine_links);
	free(t->ip_slots);
	free(t);
}

/* Checks a name argument; returns 0 or -1 with a message. */
static int
topo_name_ok(const char *what, const char *name, char *err, size_t errlen)
{
	size_t n;

	if (name == NULL || name[0] == '\0') {
		errbuf_set(err, errlen, "%s: empty name", what);
		return -1;
	}
	n = strlen(name);
	if (n >= TOPO_NAME_MAX) {
		errbuf_set(err, errlen, "%s '%.16s...': name longer than %d",
			   what, name, TOPO_NAME_MAX - 1);
		return -1;
	}
	return 0;
}

static int
topo_mutable(const struct topo *t, char *err, size_t errlen)
{
	if (t->final) {
		errbuf_set(err, errlen, "topology is final");
		return -1;
	}
	return 0;
}

uint32_t
topo_add_leaf(struct topo *t, const char *name, uint32_t pod, uint32_t plane,
	      char *err, size_t errlen)
{
	struct topo_leaf *l;

	if (topo_mutable(t, err, errlen) < 0 ||
	    topo_name_ok("leaf", name, err, errlen) < 0)
		return TOPO_NONE;
	if (t->nleaves >= TOPO_MAX_LEAVES) {
		errbuf_set(err, errlen, "more than %u leaves", TOPO_MAX_LEAVES);
		return TOPO_NONE;
	}
	if (topo_reserve((void **)&t->leaves, &t->cap_leaves, t->nleaves,
			 sizeof(*t->leaves)) < 0) {
		errbuf_set(err, errlen, "out of memory");
		return TOPO_NONE;
	}
	l = &t->leaves[t->nleaves];
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->pod = pod;
	l->plane = plane;
	return t->nleaves++;
}

uint32_t
topo_add_spine(struct topo *t, const char *name, uint32_t pod, uint32_t plane,
	       char *err, size_t errlen)
{
	struct topo_spine *s;

	if (topo_mutable(t, err, errlen) < 0 ||
	    topo_name_ok("spine", name, err, errlen) < 0)
		return TOPO_NONE;
	if (t->nspines >= TOPO_MAX_SPINES) {
		errbuf_set(err, errlen, "more than %u spines", TOPO_MAX_SPINES);
		return TOPO_NONE;
	}
	if (topo_reserve((void **)&t->spines, &t->cap_spines, t->nspines,
			 sizeof(*t->spines)) < 0) {
		errbuf_set(err, errlen, "out of memory");
		return TOPO_NONE;
	}
	s = &t->spines[t->nspines];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->pod = pod;
	s->plane = plane;
	return t->nspines++;
}

static int
topo_gbps_ok(double gbps, char *err, size_t errlen)
{
	if (!(gbps > 0.0) || gbps > TOPO_MAX_GBPS) {
		errbuf_set(err, errlen,
			   "capacity %g Gbit/s out of range (0, %g]", gbps,
			   TOPO_MAX_GBPS);
		return -1;
	}
	return 0;
}

uint32_t
topo_add_links(struct topo *t, uint32_t leaf, uint32_t spine, uint32_t mult,
	       double gbps, char *err, size_t errlen)
{
	uint32_t i, first, b;

	if (topo_mutable(t, err, errlen) < 0)
		return TOPO_NONE;
	if (leaf >= t->nleaves || spine >= t->nspines) {
		errbuf_set(err, errlen, "link: no such leaf or spine");
		return TOPO_NONE;
	}
	if (mult == 0 || mult > TOPO_MAX_LINK_MULT) {
		errbuf_set(err, errlen,
			   "link %s-%s: multiplicity %u not in 1..%u",
			   t->leaves[leaf].name, t->spines[spine].name, mult,
			   TOPO_MAX_LINK_MULT);
		return TOPO_NONE;
	}
	if (topo_gbps_ok(gbps, err, errlen) < 0)
		return TOPO_NONE;
	if (t->nlinks + mult > TOPO_MAX_LINKS) {
		errbuf_set(err, errlen, "more than %u links", TOPO_MAX_LINKS);
		return TOPO_NONE;
	}
	first = t->nlinks;
	for (i = 0; i < mult; i++) {
		if (topo_reserve((void **)&t->links, &t->cap_links, t->nlinks,
				 sizeof(*t->links)) < 0) {
			errbuf_set(err, errlen, "out of memory");
			t->nlinks = first;
			return TOPO_NONE;
		}
		t->links[t->nlinks].leaf = leaf;
		t->links[t->nlinks].spine = spine;
		t->links[t->nlinks].bundle = t->nbundles;
		t->links[t->nlinks].gbps = gbps;
		t->links[t->nlinks].up = true;
		t->nlinks++;
	}
	b = t->nbundles;
	{
		struct topo_bundle *nb;

		nb = realloc(t->bundles, (size_t)(b + 1) * sizeof(*nb));
		if (nb == NULL) {
			errbuf_set(err, errlen, "out of memory");
			t->nlinks = first;
			return TOPO_NONE;
		}
		t->bundles = nb;
	}
	t->bundles[b].leaf = leaf;
	t->bundles[b].spine = spine;
	t->bundles[b].first_link = first;
	t->bundles[b].count = mult;
	t->nbundles++;
	return first;
}

uint32_t
topo_add_host(struct topo *t, const char *name, char *err, size_t errlen)
{
	struct topo_host *h;

	if (topo_mutable(t, err, errlen) < 0 ||
	    topo_name_ok("host", name, err, errlen) < 0)
		return TOPO_NONE;
	if (t->nhosts >= TOPO_MAX_HOSTS) {
		errbuf_set(err, errlen, "more than %u hosts", TOPO_MAX_HOSTS);
		return TOPO_NONE;
	}
	if (topo_reserve((void **)&t->hosts, &t->cap_hosts, t->nhosts,
			 sizeof(*t->hosts)) < 0) {
		errbuf_set(err, errlen, "out of memory");
		return TOPO_NONE;
	}
	h = &t->hosts[t->nhosts];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->first_nic = t->nnics;
	return t->nhosts++;
}

uint32_t
topo_add_nic(struct topo *t, uint32_t host, const char *name,
	     uint32_t leaf_left, uint32_t ip_left, uint32_t leaf_right,
	     uint32_t ip_right, double gbps, char *err, size_t errlen)
{
	struct topo_nic *n;
	struct topo_port *p;
	uint32_t id, s;

	if (topo_mutable(t, err, errlen) < 0 ||
	    topo_name_ok("nic", name, err, errlen) < 0)
		return TOPO_NONE;
	if (host >= t->nhosts || host != t->nhosts - 1) {
		errbuf_set(err, errlen,
			   "nic %s: host %u is not the last one added", name,
			   host);
		return TOPO_NONE;
	}
	if (t->hosts[host].nic_count >= TOPO_MAX_NICS_PER_HOST) {
		errbuf_set(err, errlen, "host %s: more than %u NICs",
			   t->hosts[host].name, TOPO_MAX_NICS_PER_HOST);
		return TOPO_NONE;
	}
	if (leaf_left >= t->nleaves || leaf_right >= t->nleaves) {
		errbuf_set(err, errlen, "nic %s: no such leaf", name);
		return TOPO_NONE;
	}
	if (topo_gbps_ok(gbps, err, errlen) < 0)
		return TOPO_NONE;
	if (topo_reserve((void **)&t->nics, &t->cap_nics, t->nnics,
			 sizeof(*t->nics)) < 0) {
		errbuf_set(err, errlen, "out of memory");
		return TOPO_NONE;
	}
	p = realloc(t->ports, ((size_t)t->nports + 2) * sizeof(*p));
	if (p == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return TOPO_NONE;
	}
	t->ports = p;
	id = t->nnics;
	n = &t->nics[id];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->host = host;
	n->bonded = ip_left == ip_right;
	for (s = 0; s < TOPO_SIDES; s++) {
		p = &t->ports[t->nports];
		p->nic = id;
		p->side = (uint8_t)s;
		p->leaf = s == TOPO_LEFT ? leaf_left : leaf_right;
		p->ip = s == TOPO_LEFT ? ip_left : ip_right;
		p->gbps = gbps;
		p->up = true;
		n->port[s] = t->nports++;
	}
	t->hosts[host].nic_count++;
	t->nnics++;
	return id;
}

/* ---- finalize ------------------------------------------------------------ */

static const struct topo *topo_sort_ctx;

static int
topo_cmp_leaf_links(const void *a, const void *b)
{
	const struct topo_link *la =
		&topo_sort_ctx->links[*(const uint32_t *)a];
	const struct topo_link *lb =
		&topo_sort_ctx->links[*(const uint32_t *)b];

	if (la->leaf != lb->leaf)
		return la->leaf < lb->leaf ? -1 : 1;
	if (la->spine != lb->spine)
		return la->spine < lb->spine ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int
topo_cmp_spine_links(const void *a, const void *b)
{
	const struct topo_link *la =
		&topo_sort_ctx->links[*(const uint32_t *)a];
	const struct topo_link *lb =
		&topo_sort_ctx->links[*(const uint32_t *)b];

	if (la->spine != lb->spine)
		return la->spine < lb->spine ? -1 : 1;
	if (la->leaf != lb->leaf)
		return la->leaf < lb->leaf ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint64_t
topo_ip_hash(uint32_t ip)
{
	return mix64(ip);
}

/*
 * Builds the IP index (open addressing, key = IP, value = first port with
 * that IP). Returns 0, -1 with a message on a duplicate IP across NICs.
 */
static int
topo_build_ip_index(struct topo *t, char *err, size_t errlen)
{
	uint32_t cap = 16, i, mask;

	while (cap < t->nports * 2 + 2)
		cap *= 2;
	t->ip_slots = malloc((size_t)cap * sizeof(uint32_t));
	if (t->ip_slots == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < cap; i++)
		t->ip_slots[i] = TOPO_NONE;
	t->ip_cap = cap;
	mask = cap - 1;
	for (i = 0; i < t->nports; i++) {
		const struct topo_port *p = &t->ports[i];
		uint32_t j = (uint32_t)topo_ip_hash(p->ip) & mask;
		char ip[16];

		for (; t->ip_slots[j] != TOPO_NONE; j = (j + 1) & mask) {
			const struct topo_port *q = &t->ports[t->ip_slots[j]];

			if (q->ip != p->ip)
				continue;
			if (q->nic == p->nic)
				break; /* bonded: keep the left port */
			topo_ip_format(p->ip, ip, sizeof(ip));
			errbuf_set(err, errlen,
				   "nic %s: IP %s already used by nic %s",
				   t->nics[p->nic].name, ip,
				   t->nics[q->nic].name);
			return -1;
		}
		if (t->ip_slots[j] == TOPO_NONE)
			t->ip_slots[j] = i;
	}
	return 0;
}

struct topo_names {
	const char *(*name)(const struct topo *t, uint32_t i);
	const struct topo *t;
	const char *key;
};

static bool
topo_names_eq(const void *arg, uint32_t slot)
{
	const struct topo_names *n = arg;

	return strcmp(n->name(n->t, slot), n->key) == 0;
}

static uint64_t
topo_names_rehash(const void *arg, uint32_t slot)
{
	const struct topo_names *n = arg;

	return tmap_str(n->name(n->t, slot));
}

static const char *
topo_leaf_name(const struct topo *t, uint32_t i)
{
	return t->leaves[i].name;
}

static const char *
topo_spine_name(const struct topo *t, uint32_t i)
{
	return t->spines[i].name;
}

static const char *
topo_host_name(const struct topo *t, uint32_t i)
{
	return t->hosts[i].name;
}

/* Checks that the count names given by fn are unique; 0 or -1 + message. */
static int
topo_unique(const struct topo *t, const char *what,
	    const char *(*fn)(const struct topo *, uint32_t), uint32_t count,
	    char *err, size_t errlen)
{
	struct tmap m = {0};
	struct topo_names n = {fn, t, NULL};
	uint32_t i;
	int rc = -1;

	for (i = 0; i < count; i++) {
		n.key = fn(t, i);
		if (tmap_find(&m, tmap_str(n.key), topo_names_eq, &n) !=
		    TMAP_EMPTY) {
			errbuf_set(err, errlen, "duplicate %s name '%s'", what,
				   n.key);
			goto out;
		}
		if (tmap_insert(&m, tmap_str(n.key), i, topo_names_rehash, &n) <
		    0) {
			errbuf_set(err, errlen, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	tmap_free(&m);
	return rc;
}

int
topo_finalize(struct topo *t, char *err, size_t errlen)
{
	uint32_t i, pods = 0, planes = 0;

	if (t->final)
		return 0;
	if (t->nleaves == 0 || t->nnics == 0) {
		errbuf_set(err, errlen, "topology has no leaves or no NICs");
		return -1;
	}
	if (topo_unique(t, "leaf", topo_leaf_name, t->nleaves, err, errlen) <
		    0 ||
	    topo_unique(t, "spine", topo_spine_name, t->nspines, err, errlen) <
		    0 ||
	    topo_unique(t, "host", topo_host_name, t->nhosts, err, errlen) < 0)
		return -1;
	for (i = 0; i < t->nlinks; i++) {
		const struct topo_leaf *l = &t->leaves[t->links[i].leaf];
		const struct topo_spine *s = &t->spines[t->links[i].spine];

		if (l->pod != s->pod || l->plane != s->plane) {
			errbuf_set(err, errlen,
				   "link %s-%s joins pod/plane %u/%u to %u/%u",
				   l->name, s->name, l->pod, l->plane, s->pod,
				   s->plane);
			return -1;
		}
	}
	for (i = 0; i < t->nnics; i++) {
		const struct topo_nic *n = &t->nics[i];
		uint32_t ll = t->ports[n->port[TOPO_LEFT]].leaf;
		uint32_t lr = t->ports[n->port[TOPO_RIGHT]].leaf;

		if (ll == lr) {
			errbuf_set(
				err, errlen,
				"nic %s/%s: left and right ports both on leaf "
				"%s",
				t->hosts[n->host].name, n->name,
				t->leaves[ll].name);
			return -1;
		}
	}
	for (i = 0; i < t->nhosts; i++) {
		if (t->hosts[i].nic_count == 0) {
			errbuf_set(err, errlen, "host %s has no NICs",
				   t->hosts[i].name);
			return -1;
		}
	}
	if (addrplan_check(t, err, errlen) < 0)
		return -1;
	if (topo_build_ip_index(t, err, errlen) < 0)
		goto fail;
	t->leaf_links = malloc(((size_t)t->nlinks + 1) * sizeof(uint32_t));
	t->spine_links = malloc(((size_t)t->nlinks + 1) * sizeof(uint32_t));
	if (t->leaf_links == NULL || t->spine_links == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < t->nlinks; i++)
		t->leaf_links[i] = t->spine_links[i] = i;
	topo_sort_ctx = t;
	qsort(t->leaf_links, t->nlinks, sizeof(uint32_t), topo_cmp_leaf_links);
	qsort(t->spine_links, t->nlinks, sizeof(uint32_t),
	      topo_cmp_spine_links);
	topo_sort_ctx = NULL;
	for (i = 1; i < t->nlinks; i++) {
		const struct topo_link *a = &t->links[t->leaf_links[i - 1]];
		const struct topo_link *b = &t->links[t->leaf_links[i]];

		if (a->leaf == b->leaf && a->spine == b->spine &&
		    a->bundle != b->bundle) {
			errbuf_set(
				err, errlen,
				"link %s-%s declared twice (use multiplicity)",
				t->leaves[a->leaf].name,
				t->spines[a->spine].name);
			goto fail;
		}
	}
	for (i = 0; i < t->nleaves; i++)
		t->leaves[i].link_first = t->leaves[i].link_count = 0;
	for (i = 0; i < t->nspines; i++)
		t->spines[i].link_first = t->spines[i].link_count = 0;
	for (i = t->nlinks; i-- > 0;) {
		struct topo_leaf *l =
			&t->leaves[t->links[t->leaf_links[i]].leaf];
		struct topo_spine *s =
			&t->spines[t->links[t->spine_links[i]].spine];

		l->link_first = i;
		l->link_count++;
		s->link_first = i;
		s->link_count++;
	}
	for (i = 0; i < t->nleaves; i++) {
		if (t->leaves[i].pod + 1 > pods)
			pods = t->leaves[i].pod + 1;
		if (t->leaves[i].plane + 1 > planes)
			planes = t->leaves[i].plane + 1;
	}
	t->npods = pods;
	t->nplanes = planes;
	t->final = true;
	return 0;
fail:
	free(t->ip_slots);
	free(t->leaf_links);
	free(t->spine_links);
	t->ip_slots = t->leaf_links = t->spine_links = NULL;
	t->ip_cap = 0;
	return -1;
}

/* ---- lookups --------------------------------------------------------------
 */

uint32_t
topo_port_by_ip(const struct topo *t, uint32_t ip, uint8_t side)
{
	uint32_t mask, j;

	if (t->ip_cap == 0)
		return TOPO_NONE;
	mask = t->ip_cap - 1;
	for (j = (uint32_t)topo_ip_hash(ip) & mask; t->ip_slots[j] != TOPO_NONE;
	     j = (j + 1) & mask) {
		uint32_t p = t->ip_slots[j];
		const struct topo_nic *n;

		if (t->ports[p].ip != ip)
			continue;
		n = &t->nics[t->ports[p].nic];
		if (side >= TOPO_SIDES)
			return p;
		if (t->ports[n->port[side]].ip != ip)
			return TOPO_NONE; /* unbonded: ip is the other side */
		return n->port[side];
	}
	return TOPO_NONE;
}

uint32_t
topo_nic_by_ip(const struct topo *t, uint32_t ip)
{
	uint32_t p = topo_port_by_ip(t, ip, TOPO_SIDE_ANY);

	return p == TOPO_NONE ? TOPO_NONE : t->ports[p].nic;
}

uint32_t
topo_leaf_by_name(const struct topo *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nleaves; i++)
		if (strcmp(t->leaves[i].name, name) == 0)
			return i;
	return TOPO_NONE;
}

uint32_t
topo_spine_by_name(const struct topo *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nspines; i++)
		if (strcmp(t->spines[i].name, name) == 0)
			return i;
	return TOPO_NONE;
}

uint32_t
topo_host_by_name(const struct topo *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nhosts; i++)
		if (strcmp(t->hosts[i].name, name) == 0)
			return i;
	return TOPO_NONE;
}

void
topo_bundle_links(const struct topo *t, uint32_t leaf, uint32_t spine,
		  uint32_t *first, uint32_t *count)
{
	const struct topo_leaf *l = &t->leaves[leaf];
	uint32_t lo = l->link_first, hi = l->link_first + l->link_count;

	*first = 0;
	*count = 0;
	/* leaf_links is sorted by spine within the leaf: binary search */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->links[t->leaf_links[mid]].spine < spine)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < l->link_first + l->link_count &&
	    t->links[t->leaf_links[lo]].spine == spine) {
		const struct topo_bundle *b =
			&t->bundles[t->links[t->leaf_links[lo]].bundle];

		*first = b->first_link;
		*count = b->count;
	}
}

void
topo_spine_to_leaf(const struct topo *t, uint32_t spine, uint32_t leaf,
		   uint32_t *pos, uint32_t *count)
{
	const struct topo_spine *s = &t->spines[spine];
	uint32_t lo = s->link_first, hi = s->link_first + s->link_count, n = 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->links[t->spine_links[mid]].leaf < leaf)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	while (lo + n < s->link_first + s->link_count &&
	       t->links[t->spine_links[lo + n]].leaf == leaf)
		n++;
	*count = n;
}

int
topo_link_set_up(struct topo *t, uint32_t link, bool up)
{
	if (link >= t->nlinks)
		return -1;
	t->links[link].up = up;
	return 0;
}

int
topo_port_set_up(struct topo *t, uint32_t port, bool up)
{
	if (port >= t->nports)
		return -1;
	t->ports[port].up = up;
	return 0;
}

uint32_t
topo_bundle_healthy(const struct topo *t, uint32_t bundle)
{
	const struct topo_bundle *b = &t->bundles[bundle];
	uint32_t i, n = 0;

	for (i = 0; i < b->count; i++)
		n += t->links[b->first_link + i].up;
	return n;
}

int
topo_ip_parse(const char *s, uint32_t *ip)
{
	uint32_t v = 0;
	int part;

	for (part = 0; part < 4; part++) {
		uint32_t oct = 0;
		int digits = 0;

		while (*s >= '0' && *s <= '9') {
			oct = oct * 10 + (uint32_t)(*s++ - '0');
			if (++digits > 3 || oct > 255)
				return -1;
		}
		if (digits == 0)
			return -1;
		v = v << 8 | oct;
		if (part < 3 && *s++ != '.')
			return -1;
	}
	if (*s != '\0')
		return -1;
	*ip = v;
	return 0;
}

void
topo_ip_format(uint32_t ip, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, ip >> 16 & 255,
		 ip >> 8 & 255, ip & 255);
}
