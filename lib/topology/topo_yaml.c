/*
 * topo_yaml.c: the fabric from YAML (see topo_yaml.h): a cfg schema for
 * the raw file, then reference checks that report every problem with its
 * position, then the builder API.
 */
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "tmap.h"
#include "topo_yaml.h"

/* ---- the raw file, as cfg loads it -------------------------------------- */

struct ty_switch {
	struct cfg_pos at;
	char *name;
	struct cfg_pos name_at;
	int64_t pod;
	int64_t plane;
};

struct ty_link {
	struct cfg_pos at;
	char *leaf;
	struct cfg_pos leaf_at;
	char *spine;
	struct cfg_pos spine_at;
	int64_t count;
	double gbps;
};

struct ty_port {
	struct cfg_pos at;
	char *leaf;
	struct cfg_pos leaf_at;
	char *ip;
	struct cfg_pos ip_at;
};

struct ty_nic {
	struct cfg_pos at;
	char *name;
	struct cfg_pos name_at;
	double gbps;
	struct ty_port left;
	struct ty_port right;
};

struct ty_host {
	struct cfg_pos at;
	char *name;
	struct cfg_pos name_at;
	struct cfg_list nics;
};

struct ty_file {
	struct cfg_pos at;
	char *switch_net;
	struct cfg_pos switch_net_at;
	struct cfg_list leaves;
	struct cfg_list spines;
	struct cfg_list links;
	struct cfg_list hosts;
};

#define TY_POD_MAX 4095

static const struct cfg_field ty_switch_fields[] = {
	{NULL, CFG_POS, offsetof(struct ty_switch, at), 0, 0, 0, NULL, NULL,
	 NULL},
	{"name", CFG_STR, offsetof(struct ty_switch, name), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "unique switch name"},
	{"name", CFG_POS, offsetof(struct ty_switch, name_at), 0, 0, 0, NULL,
	 NULL, NULL},
	{"pod", CFG_INT, offsetof(struct ty_switch, pod), 0, 0, TY_POD_MAX, "0",
	 NULL, "pod number"},
	{"plane", CFG_INT, offsetof(struct ty_switch, plane), 0, 0, TY_POD_MAX,
	 "0", NULL, "plane number"},
};

static const struct cfg_schema ty_leaf_schema = {
	"leaf", sizeof(struct ty_switch), ty_switch_fields,
	CFG_NFIELDS(ty_switch_fields), NULL};
static const struct cfg_schema ty_spine_schema = {
	"spine", sizeof(struct ty_switch), ty_switch_fields,
	CFG_NFIELDS(ty_switch_fields), NULL};

static const struct cfg_field ty_link_fields[] = {
	{NULL, CFG_POS, offsetof(struct ty_link, at), 0, 0, 0, NULL, NULL,
	 NULL},
	{"leaf", CFG_STR, offsetof(struct ty_link, leaf), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "leaf name, or * for every leaf"},
	{"leaf", CFG_POS, offsetof(struct ty_link, leaf_at), 0, 0, 0, NULL,
	 NULL, NULL},
	{"spine", CFG_STR, offsetof(struct ty_link, spine), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "spine name, or * for every spine"},
	{"spine", CFG_POS, offsetof(struct ty_link, spine_at), 0, 0, 0, NULL,
	 NULL, NULL},
	{"count", CFG_INT, offsetof(struct ty_link, count), 0, 1,
	 TOPO_MAX_LINK_MULT, "1", NULL, "parallel cables"},
	{"gbps", CFG_DOUBLE, offsetof(struct ty_link, gbps), CFG_REQUIRED, 1,
	 TOPO_MAX_GBPS, NULL, NULL, "capacity of each cable, each direction"},
};

static const struct cfg_schema ty_link_schema = {
	"link", sizeof(struct ty_link), ty_link_fields,
	CFG_NFIELDS(ty_link_fields), NULL};

static const struct cfg_field ty_port_fields[] = {
	{NULL, CFG_POS, offsetof(struct ty_port, at), 0, 0, 0, NULL, NULL,
	 NULL},
	{"leaf", CFG_STR, offsetof(struct ty_port, leaf), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "leaf the port is cabled to"},
	{"leaf", CFG_POS, offsetof(struct ty_port, leaf_at), 0, 0, 0, NULL,
	 NULL, NULL},
	{"ip", CFG_STR, offsetof(struct ty_port, ip), CFG_REQUIRED, 0, 0, NULL,
	 NULL, "IPv4 address (both ports equal: bonded)"},
	{"ip", CFG_POS, offsetof(struct ty_port, ip_at), 0, 0, 0, NULL, NULL,
	 NULL},
};

static const struct cfg_schema ty_port_schema = {
	"port", sizeof(struct ty_port), ty_port_fields,
	CFG_NFIELDS(ty_port_fields), NULL};

static const struct cfg_field ty_nic_fields[] = {
	{NULL, CFG_POS, offsetof(struct ty_nic, at), 0, 0, 0, NULL, NULL, NULL},
	{"name", CFG_STR, offsetof(struct ty_nic, name), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "NIC name, unique in its host"},
	{"name", CFG_POS, offsetof(struct ty_nic, name_at), 0, 0, 0, NULL, NULL,
	 NULL},
	{"gbps", CFG_DOUBLE, offsetof(struct ty_nic, gbps), CFG_REQUIRED, 1,
	 TOPO_MAX_GBPS, NULL, NULL, "capacity of each port"},
	{"left", CFG_SECTION, offsetof(struct ty_nic, left), CFG_REQUIRED, 0, 0,
	 NULL, &ty_port_schema, "left port"},
	{"right", CFG_SECTION, offsetof(struct ty_nic, right), CFG_REQUIRED, 0,
	 0, NULL, &ty_port_schema, "right port"},
};

static const struct cfg_schema ty_nic_schema = {
	"nic", sizeof(struct ty_nic), ty_nic_fields, CFG_NFIELDS(ty_nic_fields),
	NULL};

static const struct cfg_field ty_host_fields[] = {
	{NULL, CFG_POS, offsetof(struct ty_host, at), 0, 0, 0, NULL, NULL,
	 NULL},
	{"name", CFG_STR, offsetof(struct ty_host, name), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "unique host name"},
	{"name", CFG_POS, offsetof(struct ty_host, name_at), 0, 0, 0, NULL,
	 NULL, NULL},
	{"nics", CFG_LIST, offsetof(struct ty_host, nics), CFG_REQUIRED, 0, 0,
	 NULL, &ty_nic_schema, "the host's NICs"},
};

static const struct cfg_schema ty_host_schema = {
	"host", sizeof(struct ty_host), ty_host_fields,
	CFG_NFIELDS(ty_host_fields), NULL};

static const struct cfg_field ty_file_fields[] = {
	{NULL, CFG_POS, offsetof(struct ty_file, at), 0, 0, 0, NULL, NULL,
	 NULL},
	{"leaves", CFG_LIST, offsetof(struct ty_file, leaves), CFG_REQUIRED, 0,
	 0, NULL, &ty_leaf_schema, "leaf switches"},
	{"spines", CFG_LIST, offsetof(struct ty_file, spines), 0, 0, 0, NULL,
	 &ty_spine_schema, "spine switches"},
	{"links", CFG_LIST, offsetof(struct ty_file, links), 0, 0, 0, NULL,
	 &ty_link_schema, "leaf-spine cables"},
	{"hosts", CFG_LIST, offsetof(struct ty_file, hosts), CFG_REQUIRED, 0, 0,
	 NULL, &ty_host_schema, "hosts and their NICs"},
	{"switch_net", CFG_STR, offsetof(struct ty_file, switch_net), 0, 0, 0,
	 TOPO_SWITCH_NET_DEFAULT, NULL,
	 "IPv4 network of the switch interface addresses"},
	{"switch_net", CFG_POS, offsetof(struct ty_file, switch_net_at), 0, 0,
	 0, NULL, NULL, NULL},
};

static const struct cfg_schema ty_file_schema = {
	"topology", sizeof(struct ty_file), ty_file_fields,
	CFG_NFIELDS(ty_file_fields), NULL};

/* ---- name indices ----------------------------------------------------------
 */

/* Names of a list of items; key/pos found at fixed offsets in each item. */
struct ty_names {
	const struct cfg_list *l;
	size_t size, name_off;
	const char *key;
	struct tmap m;
};

static const char *
ty_name_at(const struct ty_names *n, uint32_t i)
{
	return *(char *const *)(const void *)((const char *)n->l->items +
					      i * n->size + n->name_off);
}

static bool
ty_names_eq(const void *arg, uint32_t slot)
{
	const struct ty_names *n = arg;
	const char *s = ty_name_at(n, slot);

	return s != NULL && strcmp(s, n->key) == 0;
}

static uint64_t
ty_names_rehash(const void *arg, uint32_t slot)
{
	const char *s = ty_name_at(arg, slot);

	return tmap_str(s != NULL ? s : "");
}

/* Index of the item named key, or TOPO_NONE. */
static uint32_t
ty_names_find(struct ty_names *n, const char *key)
{
	uint32_t s;

	if (key == NULL)
		return TOPO_NONE;
	n->key = key;
	s = tmap_find(&n->m, tmap_str(key), ty_names_eq, n);
	return s == TMAP_EMPTY ? TOPO_NONE : s;
}

/*
 * Indexes the names of list l (items of size bytes, name at name_off, its
 * position at pos_off), reporting duplicates as "duplicate <what> name".
 */
static void
ty_names_build(struct ty_names *n, const struct cfg_list *l, size_t size,
	       size_t name_off, size_t pos_off, const char *what,
	       struct cfg_diag *d)
{
	uint32_t i;

	memset(n, 0, sizeof(*n));
	n->l = l;
	n->size = size;
	n->name_off = name_off;
	for (i = 0; i < l->n; i++) {
		const char *name = ty_name_at(n, i);
		const struct cfg_pos *p =
			(const void *)((const char *)l->items + i * size +
				       pos_off);
		uint32_t prev;

		if (name == NULL)
			continue;
		if (strlen(name) == 0 || strlen(name) >= TOPO_NAME_MAX) {
			cfg_diag_add(d, *p,
				     "%s name must have 1 to %d characters",
				     what, TOPO_NAME_MAX - 1);
			continue;
		}
		prev = ty_names_find(n, name);
		if (prev != TOPO_NONE) {
			const struct cfg_pos *pp =
				(const void *)((const char *)l->items +
					       prev * size + pos_off);

			cfg_diag_add(
				d, *p,
				"duplicate %s name '%s' (first at line %u)",
				what, name, pp->line);
			continue;
		}
		if (tmap_insert(&n->m, tmap_str(name), i, ty_names_rehash, n) <
		    0)
			cfg_diag_add(d, *p, "out of memory");
	}
}

/* ---- checks and build ------------------------------------------------------
 */

struct ty_ctx {
	struct ty_file *f;
	struct cfg_diag *d;
	uint32_t swnet_base;
	uint8_t swnet_prefix;
	struct ty_names leaves, spines, hosts;
	uint32_t *bundle_line; /* [leaf * nspines + spine]: line declared */
	struct topo *t;
	char err[TOPO_ERR_MAX];
};

#define TY_ITEM(list, type, i) (&((type *)(list).items)[i])

/* Resolves a port's leaf (reporting an unknown one); TOPO_NONE if bad. */
static uint32_t
ty_port_leaf(struct ty_ctx *c, const struct ty_port *p)
{
	uint32_t l = ty_names_find(&c->leaves, p->leaf);

	if (p->leaf != NULL && l == TOPO_NONE)
		cfg_diag_add(c->d, p->leaf_at, "unknown leaf '%s'", p->leaf);
	return l;
}

struct ty_ipuse {
	uint32_t ip;
	uint32_t host, nic;
	struct cfg_pos at;
};

static int
ty_cmp_ipuse(const void *x, const void *y)
{
	const struct ty_ipuse *a = x, *b = y;

	if (a->ip != b->ip)
		return a->ip < b->ip ? -1 : 1;
	if (a->at.line != b->at.line)
		return a->at.line < b->at.line ? -1 : 1;
	return a->at.col < b->at.col ? -1 : a->at.col > b->at.col;
}

/* Checks NICs: leaves, distinct leaves, IP syntax, duplicate IPs/names. */
static void
ty_check_nics(struct ty_ctx *c)
{
	struct ty_ipuse *uses = NULL;
	size_t nuse = 0, cap = 0, i, j;
	uint32_t h, n;

	for (h = 0; h < c->f->hosts.n; h++) {
		struct ty_host *host = TY_ITEM(c->f->hosts, struct ty_host, h);
		struct ty_names nn;

		if (host->nics.n == 0 && host->name != NULL)
			cfg_diag_add(c->d, host->at, "host '%s' has no NICs",
				     host->name);
		if (host->nics.n > TOPO_MAX_NICS_PER_HOST)
			cfg_diag_add(c->d, host->at,
				     "host '%s' has more than %u NICs",
				     host->name ? host->name : "?",
				     TOPO_MAX_NICS_PER_HOST);
		ty_names_build(&nn, &host->nics, sizeof(struct ty_nic),
			       offsetof(struct ty_nic, name),
			       offsetof(struct ty_nic, name_at), "nic", c->d);
		tmap_free(&nn.m);
		for (n = 0; n < host->nics.n; n++) {
			struct ty_nic *nic =
				TY_ITEM(host->nics, struct ty_nic, n);
			const struct ty_port *ports[2] = {&nic->left,
							  &nic->right};
			uint32_t leaf[2], s;

			for (s = 0; s < 2; s++) {
				uint32_t ip;

				leaf[s] = ty_port_leaf(c, ports[s]);
				if (ports[s]->ip == NULL)
					continue;
				if (topo_ip_parse(ports[s]->ip, &ip) < 0) {
					cfg_diag_add(c->d, ports[s]->ip_at,
						     "'%s' is not an IPv4 "
						     "address",
						     ports[s]->ip);
					continue;
				}
				/* a bonded NIC uses its IP twice: count once */
				if (s == 1 && nic->left.ip != NULL &&
				    strcmp(nic->left.ip, ports[1]->ip) == 0)
					continue;
				if (nuse == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					struct ty_ipuse *nu = realloc(
						uses, ncap * sizeof(*nu));

					if (nu == NULL) {
						cfg_diag_add(c->d,
							     ports[s]->ip_at,
							     "out of memory");
						goto out;
					}
					uses = nu;
					cap = ncap;
				}
				uses[nuse].ip = ip;
				uses[nuse].host = h;
				uses[nuse].nic = n;
				uses[nuse].at = ports[s]->ip_at;
				nuse++;
			}
			if (leaf[0] != TOPO_NONE && leaf[0] == leaf[1])
				cfg_diag_add(c->d, nic->right.leaf_at,
					     "nic '%s': left and right ports "
					     "both on leaf '%s'",
					     nic->name ? nic->name : "?",
					     nic->right.leaf);
		}
	}
	if (nuse > 1)
		qsort(uses, nuse, sizeof(*uses), ty_cmp_ipuse);
	for (i = 0; i < nuse; i = j) {
		for (j = i + 1; j < nuse && uses[j].ip == uses[i].ip; j++) {
			const struct ty_host *hf = TY_ITEM(
				c->f->hosts, struct ty_host, uses[i].host);
			const struct ty_nic *nf =
				TY_ITEM(hf->nics, struct ty_nic, uses[i].nic);

			cfg_diag_add(c->d, uses[j].at,
				     "IP already used by %s/%s at line %u",
				     hf->name ? hf->name : "?",
				     nf->name ? nf->name : "?",
				     uses[i].at.line);
		}
	}
out:
	free(uses);
}

/*
 * Expands link item l into (leaf, spine) pairs: a '*' end stands for every
 * switch of that kind in the other end's pod and plane. Calls fn for each
 * pair; returns false when a named end is unknown (nothing expanded).
 */
static bool
ty_link_expand(struct ty_ctx *c, const struct ty_link *l,
	       void (*fn)(struct ty_ctx *, const struct ty_link *, uint32_t,
			  uint32_t))
{
	uint32_t leaf = ty_names_find(&c->leaves, l->leaf);
	uint32_t spine = ty_names_find(&c->spines, l->spine);
	bool lall = l->leaf != NULL && strcmp(l->leaf, "*") == 0;
	bool sall = l->spine != NULL && strcmp(l->spine, "*") == 0;
	uint32_t i, j;

	if ((leaf == TOPO_NONE && !lall) || (spine == TOPO_NONE && !sall) ||
	    (lall && sall))
		return false;
	for (i = lall ? 0 : leaf; i < (lall ? c->f->leaves.n : leaf + 1); i++) {
		const struct ty_switch *lf =
			TY_ITEM(c->f->leaves, struct ty_switch, i);

		for (j = sall ? 0 : spine;
		     j < (sall ? c->f->spines.n : spine + 1); j++) {
			const struct ty_switch *sp =
				TY_ITEM(c->f->spines, struct ty_switch, j);

			/* a wildcard quietly skips other pods and planes */
			if ((lall || sall) &&
			    (lf->pod != sp->pod || lf->plane != sp->plane))
				continue;
			fn(c, l, i, j);
		}
	}
	return true;
}

/* Check of one expanded pair: pods and planes, declared once. */
static void
ty_link_check_pair(struct ty_ctx *c, const struct ty_link *l, uint32_t i,
		   uint32_t j)
{
	const struct ty_switch *lf = TY_ITEM(c->f->leaves, struct ty_switch, i);
	const struct ty_switch *sp = TY_ITEM(c->f->spines, struct ty_switch, j);
	uint32_t *line = &c->bundle_line[(size_t)i * c->f->spines.n + j];

	if (lf->pod != sp->pod || lf->plane != sp->plane) {
		cfg_diag_add(c->d, l->at,
			     "link %s-%s joins pod/plane %lld/%lld to "
			     "%lld/%lld",
			     lf->name, sp->name, (long long)lf->pod,
			     (long long)lf->plane, (long long)sp->pod,
			     (long long)sp->plane);
		return;
	}
	if (*line != 0) {
		cfg_diag_add(c->d, l->at,
			     "link %s-%s already declared at line %u (use "
			     "count)",
			     lf->name, sp->name, *line);
		return;
	}
	*line = l->at.line ? l->at.line : 1;
}

/* Adds one expanded pair's cables (the file is known to be valid). */
static void
ty_link_add_pair(struct ty_ctx *c, const struct ty_link *l, uint32_t i,
		 uint32_t j)
{
	if (topo_add_links(c->t, i, j, (uint32_t)l->count, l->gbps, c->err,
			   sizeof(c->err)) == TOPO_NONE)
		cfg_diag_add(c->d, l->at, "%s", c->err);
}

/* Checks every link: names, wildcards, pods and planes, duplicates. */
static void
ty_check_links(struct ty_ctx *c)
{
	uint32_t i;

	c->bundle_line = calloc(c->f->leaves.n * c->f->spines.n + 1,
				sizeof(*c->bundle_line));
	if (c->bundle_line == NULL) {
		cfg_diag_add(c->d, c->f->at, "out of memory");
		return;
	}
	for (i = 0; i < c->f->links.n; i++) {
		struct ty_link *l = TY_ITEM(c->f->links, struct ty_link, i);
		bool lall = l->leaf != NULL && strcmp(l->leaf, "*") == 0;
		bool sall = l->spine != NULL && strcmp(l->spine, "*") == 0;

		if (lall && sall) {
			cfg_diag_add(c->d, l->at,
				     "link: leaf and spine cannot both be *");
			continue;
		}
		if (!lall && l->leaf != NULL &&
		    ty_names_find(&c->leaves, l->leaf) == TOPO_NONE)
			cfg_diag_add(c->d, l->leaf_at, "unknown leaf '%s'",
				     l->leaf);
		if (!sall && l->spine != NULL &&
		    ty_names_find(&c->spines, l->spine) == TOPO_NONE)
			cfg_diag_add(c->d, l->spine_at, "unknown spine '%s'",
				     l->spine);
		ty_link_expand(c, l, ty_link_check_pair);
	}
}

/*
 * Switches that cannot carry traffic: a leaf with host ports but no
 * uplink (its hosts reach no other leaf) and a spine with no cable. Runs
 * after ty_check_links, from its table of declared pairs.
 */
static void
ty_check_isolated(struct ty_ctx *c)
{
	uint32_t nl = c->f->leaves.n, ns = c->f->spines.n, i, j;
	bool *hosts = NULL;

	if (c->bundle_line == NULL)
		return;
	hosts = calloc(nl + 1, sizeof(*hosts));
	if (hosts == NULL) {
		cfg_diag_add(c->d, c->f->at, "out of memory");
		return;
	}
	for (i = 0; i < c->f->hosts.n; i++) {
		struct ty_host *h = TY_ITEM(c->f->hosts, struct ty_host, i);

		for (j = 0; j < h->nics.n; j++) {
			struct ty_nic *n = TY_ITEM(h->nics, struct ty_nic, j);
			uint32_t l = ty_names_find(&c->leaves, n->left.leaf);
			uint32_t r = ty_names_find(&c->leaves, n->right.leaf);

			if (l != TOPO_NONE)
				hosts[l] = true;
			if (r != TOPO_NONE)
				hosts[r] = true;
		}
	}
	for (i = 0; i < nl; i++) {
		const struct ty_switch *lf =
			TY_ITEM(c->f->leaves, struct ty_switch, i);
		bool up = false;

		for (j = 0; j < ns && !up; j++)
			up = c->bundle_line[(size_t)i * ns + j] != 0;
		if (hosts[i] && !up)
			cfg_diag_add(c->d, lf->at,
				     "leaf %s carries host ports but has no "
				     "uplink: its hosts could reach no other "
				     "leaf",
				     lf->name);
	}
	for (j = 0; j < ns; j++) {
		const struct ty_switch *sp =
			TY_ITEM(c->f->spines, struct ty_switch, j);
		bool any = false;

		for (i = 0; i < nl && !any; i++)
			any = c->bundle_line[(size_t)i * ns + j] != 0;
		if (!any)
			cfg_diag_add(
				c->d, sp->at,
				"spine %s has no cables (no link names it)",
				sp->name);
	}
	free(hosts);
}

/* Builds the topology from a checked file; problems go to d. */
static void
ty_build(struct ty_ctx *c)
{
	struct ty_file *f = c->f;
	uint32_t i, n;

	c->t = topo_new();
	if (c->t == NULL) {
		cfg_diag_add(c->d, f->at, "out of memory");
		return;
	}
	for (i = 0; i < f->leaves.n; i++) {
		struct ty_switch *s = TY_ITEM(f->leaves, struct ty_switch, i);

		if (topo_add_leaf(c->t, s->name, (uint32_t)s->pod,
				  (uint32_t)s->plane, c->err,
				  sizeof(c->err)) == TOPO_NONE)
			cfg_diag_add(c->d, s->at, "%s", c->err);
	}
	for (i = 0; i < f->spines.n; i++) {
		struct ty_switch *s = TY_ITEM(f->spines, struct ty_switch, i);

		if (topo_add_spine(c->t, s->name, (uint32_t)s->pod,
				   (uint32_t)s->plane, c->err,
				   sizeof(c->err)) == TOPO_NONE)
			cfg_diag_add(c->d, s->at, "%s", c->err);
	}
	if (c->d->n > 0)
		return;
	for (i = 0; i < f->links.n; i++)
		ty_link_expand(c, TY_ITEM(f->links, struct ty_link, i),
			       ty_link_add_pair);
	for (i = 0; i < f->hosts.n; i++) {
		struct ty_host *h = TY_ITEM(f->hosts, struct ty_host, i);
		uint32_t hid =
			topo_add_host(c->t, h->name, c->err, sizeof(c->err));

		if (hid == TOPO_NONE) {
			cfg_diag_add(c->d, h->at, "%s", c->err);
			continue;
		}
		for (n = 0; n < h->nics.n; n++) {
			struct ty_nic *nic = TY_ITEM(h->nics, struct ty_nic, n);
			uint32_t ipl = 0, ipr = 0;

			topo_ip_parse(nic->left.ip, &ipl);
			topo_ip_parse(nic->right.ip, &ipr);
			if (topo_add_nic(
				    c->t, hid, nic->name,
				    ty_names_find(&c->leaves, nic->left.leaf),
				    ipl,
				    ty_names_find(&c->leaves, nic->right.leaf),
				    ipr, nic->gbps, c->err,
				    sizeof(c->err)) == TOPO_NONE)
				cfg_diag_add(c->d, nic->at, "%s", c->err);
		}
	}
	if (c->d->n > 0)
		return;
	/* the plan's problems are the switch_net key's, or the file's */
	if (addrplan_set_switch_net(c->t, c->swnet_base, c->swnet_prefix,
				    c->err, sizeof(c->err)) < 0 ||
	    addrplan_check(c->t, c->err, sizeof(c->err)) < 0) {
		cfg_diag_add(c->d,
			     f->switch_net_at.line ? f->switch_net_at : f->at,
			     "%s", c->err);
		return;
	}
	if (topo_finalize(c->t, c->err, sizeof(c->err)) < 0)
		cfg_diag_add(c->d, f->at, "%s", c->err);
}

/* Parses switch_net (default when absent) into c, reporting a bad one. */
static void
ty_check_switch_net(struct ty_ctx *c)
{
	const char *s = c->f->switch_net;

	c->swnet_base = TOPO_SWITCH_NET_DEFAULT_BASE;
	c->swnet_prefix = TOPO_SWITCH_NET_DEFAULT_PREFIX;
	if (s == NULL)
		return;
	if (addrplan_cidr_parse(s, &c->swnet_base, &c->swnet_prefix) < 0)
		cfg_diag_add(c->d, c->f->switch_net_at,
			     "switch_net: '%s' is not an IPv4 network "
			     "a.b.c.d/len with no host bits set",
			     s);
}

/* Position "line:col" of a diagnostic formatted "file:line:col: ...". */
static void
ty_diag_pos(const char *file, const char *m, unsigned long *line,
	    unsigned long *col)
{
	size_t n = strlen(file);
	char *end;

	*line = *col = 0;
	if (strncmp(m, file, n) != 0 || m[n] != ':')
		return;
	*line = strtoul(m + n + 1, &end, 10);
	if (*end == ':')
		*col = strtoul(end + 1, NULL, 10);
}

/*
 * Orders the diagnostics by position so the report reads top to bottom;
 * a stable insertion sort keeps equal positions in reporting order.
 */
static void
ty_sort_diag(struct cfg_diag *d)
{
	size_t i, j;

	if (d->file == NULL)
		return;
	for (i = 1; i < d->n; i++) {
		char *m = d->msgs[i];
		unsigned long l, c;

		ty_diag_pos(d->file, m, &l, &c);
		for (j = i; j > 0; j--) {
			unsigned long pl, pc;

			ty_diag_pos(d->file, d->msgs[j - 1], &pl, &pc);
			if (pl < l || (pl == l && pc <= c))
				break;
			d->msgs[j] = d->msgs[j - 1];
		}
		d->msgs[j] = m;
	}
}

/* Runs every check on a loaded (possibly partial) file, then builds. */
static int
ty_process(struct ty_file *f, struct cfg_diag *d, bool loaded,
	   struct topo **out)
{
	struct ty_ctx c;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	c.f = f;
	c.d = d;
	ty_names_build(&c.leaves, &f->leaves, sizeof(struct ty_switch),
		       offsetof(struct ty_switch, name),
		       offsetof(struct ty_switch, name_at), "leaf", d);
	ty_names_build(&c.spines, &f->spines, sizeof(struct ty_switch),
		       offsetof(struct ty_switch, name),
		       offsetof(struct ty_switch, name_at), "spine", d);
	ty_names_build(&c.hosts, &f->hosts, sizeof(struct ty_host),
		       offsetof(struct ty_host, name),
		       offsetof(struct ty_host, name_at), "host", d);
	ty_check_links(&c);
	ty_check_nics(&c);
	ty_check_isolated(&c);
	ty_check_switch_net(&c);
	if (loaded && d->n == 0 && d->dropped == 0) {
		if (f->leaves.n == 0)
			cfg_diag_add(d, f->at, "no leaves");
		else if (f->hosts.n == 0)
			cfg_diag_add(d, f->at, "no hosts");
		else
			ty_build(&c);
	}
	if (d->n == 0 && d->dropped == 0 && c.t != NULL) {
		*out = c.t;
		c.t = NULL;
		rc = 0;
	}
	topo_free(c.t);
	free(c.bundle_line);
	tmap_free(&c.leaves.m);
	tmap_free(&c.spines.m);
	tmap_free(&c.hosts.m);
	return rc;
}

int
topo_yaml_load_buffer(const char *name, const void *buf, size_t len,
		      struct topo **out, struct cfg_diag *d)
{
	struct ty_file f;
	int rc;

	*out = NULL;
	rc = cfg_load_buffer(name, buf, len, &ty_file_schema, &f, d);
	rc = ty_process(&f, d, rc == 0, out) < 0 || rc < 0 ? -1 : 0;
	ty_sort_diag(d);
	cfg_free(&ty_file_schema, &f);
	if (rc < 0) {
		topo_free(*out);
		*out = NULL;
	}
	return rc;
}

int
topo_yaml_load(const char *path, struct topo **out, struct cfg_diag *d)
{
	struct ty_file f;
	int rc;

	*out = NULL;
	rc = cfg_load_file(path, &ty_file_schema, &f, d);
	rc = ty_process(&f, d, rc == 0, out) < 0 || rc < 0 ? -1 : 0;
	ty_sort_diag(d);
	cfg_free(&ty_file_schema, &f);
	if (rc < 0) {
		topo_free(*out);
		*out = NULL;
	}
	return rc;
}
