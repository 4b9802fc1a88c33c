/*
 * catalog.c: the path catalog (see catalog.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "errbuf.h"
#include "mix.h"
#include "tmap.h"

struct catalog {
	const struct topo *t;
	struct ecmp_model model;
	bool have_model;
	struct catalog_entry *ent;
	size_t nent, cap;
	struct tmap idx;
	uint64_t gen;
	struct catalog_link *links; /* per cable: health as probes see it */
};

static uint64_t
catalog_key_hash(const struct catalog_key *k)
{
	return mix64(((uint64_t)k->sip << 32 | k->dip) ^ mix64(k->side + 1));
}

struct catalog_probe {
	const struct catalog *c;
	const struct catalog_key *k;
};

static bool
catalog_key_eq(const void *arg, uint32_t slot)
{
	const struct catalog_probe *p = arg;
	const struct catalog_key *a = &p->c->ent[slot].key;

	return a->sip == p->k->sip && a->dip == p->k->dip &&
	       a->side == p->k->side;
}

static uint64_t
catalog_rehash(const void *arg, uint32_t slot)
{
	const struct catalog *c = arg;

	return catalog_key_hash(&c->ent[slot].key);
}

struct catalog *
catalog_new(const struct topo *t, const struct ecmp_model *model)
{
	struct catalog *c;

	if (!t->final)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->t = t;
	if (model != NULL) {
		c->model = *model;
		c->have_model = true;
	}
	c->links = calloc(t->nlinks ? t->nlinks : 1, sizeof(*c->links));
	if (c->links == NULL) {
		free(c);
		return NULL;
	}
	for (uint32_t l = 0; l < t->nlinks; l++)
		c->links[l].weight = 1;
	return c;
}

int
catalog_link_set(struct catalog *c, uint32_t link, const struct catalog_link *v)
{
	if (link >= c->t->nlinks || v->state > CATALOG_LINK_DOWN ||
	    !(v->weight >= 0 && v->weight <= 1))
		return -1;
	c->links[link] = *v;
	return 0;
}

const struct catalog_link *
catalog_link(const struct catalog *c, uint32_t link)
{
	return c != NULL && link < c->t->nlinks ? &c->links[link] : NULL;
}

void
catalog_free(struct catalog *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nent; i++)
		free(c->ent[i].recs);
	free(c->ent);
	tmap_free(&c->idx);
	free(c->links);
	free(c);
}

const struct catalog_entry *
catalog_find(const struct catalog *c, const struct catalog_key *key)
{
	struct catalog_probe p = {c, key};
	uint32_t s;

	s = tmap_find(&c->idx, catalog_key_hash(key), catalog_key_eq, &p);
	return s == TMAP_EMPTY ? NULL : &c->ent[s];
}

/*
 * Returns the entry for key, creating an empty one when absent. The key
 * must name an existing source port (sip on side) and a known destination.
 * NULL with a message otherwise or when out of memory.
 */
static struct catalog_entry *
catalog_slot(struct catalog *c, const struct catalog_key *key, char *err,
	     size_t errlen)
{
	struct catalog_probe p = {c, key};
	struct catalog_entry *e;
	uint32_t s, sp;

	s = tmap_find(&c->idx, catalog_key_hash(key), catalog_key_eq, &p);
	if (s != TMAP_EMPTY)
		return &c->ent[s];
	if (key->side >= TOPO_SIDES) {
		errbuf_set(err, errlen, "bad side %u", key->side);
		return NULL;
	}
	sp = topo_port_by_ip(c->t, key->sip, key->side);
	if (sp == TOPO_NONE || topo_nic_by_ip(c->t, key->dip) == TOPO_NONE) {
		errbuf_set(err, errlen, "unknown source or destination IP");
		return NULL;
	}
	if (topo_nic_by_ip(c->t, key->dip) == c->t->ports[sp].nic) {
		errbuf_set(err, errlen, "source and destination on one NIC");
		return NULL;
	}
	c->gen++;
	if (c->nent == c->cap) {
		size_t ncap = c->cap == 0 ? 64 : c->cap * 2;
		struct catalog_entry *ne;

		ne = realloc(c->ent, ncap * sizeof(*ne));
		if (ne == NULL) {
			errbuf_set(err, errlen, "out of memory");
			return NULL;
		}
		c->ent = ne;
		c->cap = ncap;
	}
	e = &c->ent[c->nent];
	memset(e, 0, sizeof(*e));
	e->key = *key;
	e->src_port = sp;
	if (tmap_insert(&c->idx, catalog_key_hash(key), (uint32_t)c->nent,
			catalog_rehash, c) < 0) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	c->nent++;
	return e;
}

/* Appends one record to e; 0 or -1 when out of memory or full. */
static int
catalog_push(struct catalog_entry *e, const struct catalog_rec *r)
{
	if (e->n == e->cap) {
		uint32_t ncap = e->cap == 0 ? 16 : e->cap * 2;
		struct catalog_rec *nr;

		if (e->n >= CATALOG_MAX_RECS)
			return -1;
		nr = realloc(e->recs, (size_t)ncap * sizeof(*nr));
		if (nr == NULL)
			return -1;
		e->recs = nr;
		e->cap = ncap;
	}
	e->recs[e->n++] = *r;
	return 0;
}

/*
 * Fills e from the hash model: source ports from CATALOG_SPORT_BASE upward
 * until every path of the ECMP groups has one, or the range is spent.
 */
static int
catalog_fill(struct catalog *c, struct catalog_entry *e, char *err,
	     size_t errlen)
{
	struct ecmp_ctx hc;
	uint8_t *seen = NULL;
	uint32_t covered = 0, i, ix;
	int rc = -1;

	if (ecmp_ctx_init(&hc, c->t, &c->model, e->src_port, e->key.dip, err,
			  errlen) < 0)
		return -1;
	seen = calloc((size_t)hc.nup * hc.ndown + 1, 1);
	if (seen == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < CATALOG_SPORT_COUNT && covered < hc.npaths; i++) {
		struct catalog_rec r = {0};

		r.sport = (uint16_t)(CATALOG_SPORT_BASE + i);
		r.origin = CATALOG_FROM_HASH;
		if (ecmp_ctx_route_ix(&hc, r.sport, false, &r.path, &ix) < 0)
			continue;
		if (seen[ix])
			continue;
		r.dst_side = c->t->ports[r.path.dst_port].side;
		seen[ix] = 1;
		covered++;
		if (catalog_push(e, &r) < 0) {
			errbuf_set(err, errlen, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	free(seen);
	ecmp_ctx_free(&hc);
	return rc;
}

const struct catalog_entry *
catalog_get(struct catalog *c, const struct catalog_key *key, char *err,
	    size_t errlen)
{
	const struct catalog_entry *f;
	struct catalog_entry *e;

	f = catalog_find(c, key);
	if (f != NULL && f->n > 0)
		return f;
	if (!c->have_model) {
		errbuf_set(err, errlen, "no paths known (not probed yet)");
		return NULL;
	}
	e = catalog_slot(c, key, err, errlen);
	if (e == NULL)
		return NULL;
	c->gen++;
	if (catalog_fill(c, e, err, errlen) < 0)
		return NULL;
	return e;
}

/* Checks that r fits the entry's ports and the topology; 0 or -1. */
static int
catalog_rec_ok(const struct catalog *c, const struct catalog_entry *e,
	       const struct catalog_rec *r, char *err, size_t errlen)
{
	const struct topo *t = c->t;
	const struct path *p = &r->path;

	if (p->src_port != e->src_port || p->dst_port >= t->nports ||
	    t->ports[p->dst_port].ip != e->key.dip) {
		errbuf_set(err, errlen, "sport %u: path ports do not match",
			   r->sport);
		return -1;
	}
	if ((p->up == TOPO_NONE) != (p->down == TOPO_NONE)) {
		errbuf_set(err, errlen, "sport %u: half a path", r->sport);
		return -1;
	}
	if (p->up == TOPO_NONE) {
		if (t->ports[p->src_port].leaf != t->ports[p->dst_port].leaf) {
			errbuf_set(err, errlen,
				   "sport %u: direct path across leaves",
				   r->sport);
			return -1;
		}
		return 0;
	}
	if (p->up >= t->nlinks || p->down >= t->nlinks ||
	    t->links[p->up].leaf != t->ports[p->src_port].leaf ||
	    t->links[p->down].leaf != t->ports[p->dst_port].leaf ||
	    t->links[p->up].spine != t->links[p->down].spine) {
		errbuf_set(err, errlen, "sport %u: cables do not form a path",
			   r->sport);
		return -1;
	}
	return 0;
}

int
catalog_add(struct catalog *c, const struct catalog_key *key,
	    const struct catalog_rec *recs, size_t n, char *err, size_t errlen)
{
	struct catalog_entry *e;
	size_t i;
	uint32_t j;

	e = catalog_slot(c, key, err, errlen);
	if (e == NULL)
		return -1;
	c->gen++;
	for (i = 0; i < n; i++)
		if (catalog_rec_ok(c, e, &recs[i], err, errlen) < 0)
			return -1;
	for (i = 0; i < n; i++) {
		struct catalog_rec rec = recs[i];
		uint32_t same_port = TOPO_NONE, same_path = TOPO_NONE;

		rec.dst_side = c->t->ports[rec.path.dst_port].side;
		for (j = 0; j < e->n; j++) {
			if (e->recs[j].sport == rec.sport)
				same_port = j;
			else if (path_equal(&e->recs[j].path, &rec.path))
				same_path = j;
		}
		/* a port's newest path wins; a path keeps its first port */
		if (same_port != TOPO_NONE)
			e->recs[same_port] = rec;
		else if (same_path == TOPO_NONE && catalog_push(e, &rec) < 0) {
			errbuf_set(err, errlen, "entry full or out of memory");
			return -1;
		}
	}
	return 0;
}

/* Resolves one hop cable: given or the single cable of leaf-spine. */
static uint32_t
catalog_cable(const struct topo *t, uint32_t given, uint32_t leaf,
	      uint32_t spine)
{
	uint32_t first, count;

	if (given != TOPO_NONE)
		return given;
	topo_bundle_links(t, leaf, spine, &first, &count);
	return count == 1 ? first : TOPO_NONE;
}

int
catalog_add_probe(struct catalog *c, const struct probe_result *r, char *err,
		  size_t errlen)
{
	const struct topo *t = c->t;
	struct catalog_key k = {r->src_ip, r->dst_ip, r->side};
	struct catalog_rec rec = {0};
	uint32_t sp, dn;

	if (r->side >= TOPO_SIDES || r->dst_side >= TOPO_SIDES) {
		errbuf_set(err, errlen, "probe: bad side");
		return -1;
	}
	sp = topo_port_by_ip(t, r->src_ip, r->side);
	dn = topo_nic_by_ip(t, r->dst_ip);
	if (sp == TOPO_NONE || dn == TOPO_NONE) {
		errbuf_set(err, errlen, "probe: unknown IP");
		return -1;
	}
	rec.sport = r->sport;
	rec.loss_permille = r->loss_permille;
	rec.origin = CATALOG_FROM_PROBE;
	rec.path.src_port = sp;
	rec.path.dst_port = t->nics[dn].port[r->dst_side];
	if (r->src_leaf != t->ports[sp].leaf ||
	    r->dst_leaf != t->ports[rec.path.dst_port].leaf) {
		errbuf_set(err, errlen,
			   "probe sport %u: leaves do not match "
			   "the ports' cabling",
			   r->sport);
		return -1;
	}
	if (r->spine == TOPO_NONE) {
		rec.path.up = rec.path.down = TOPO_NONE;
	} else {
		if (r->spine >= t->nspines) {
			errbuf_set(err, errlen, "probe: bad spine");
			return -1;
		}
		rec.path.up =
			catalog_cable(t, r->up_link, r->src_leaf, r->spine);
		rec.path.down =
			catalog_cable(t, r->down_link, r->dst_leaf, r->spine);
		if (rec.path.up == TOPO_NONE || rec.path.down == TOPO_NONE) {
			errbuf_set(err, errlen,
				   "probe sport %u: parallel cables, cable "
				   "not reported",
				   r->sport);
			return -1;
		}
	}
	return catalog_add(c, &k, &rec, 1, err, errlen);
}

int
catalog_drop(struct catalog *c, const struct catalog_key *key)
{
	struct catalog_probe p = {c, key};
	uint32_t s, last;

	s = tmap_find(&c->idx, catalog_key_hash(key), catalog_key_eq, &p);
	if (s == TMAP_EMPTY)
		return -1;
	c->gen++;
	tmap_remove(&c->idx, catalog_key_hash(key), s);
	free(c->ent[s].recs);
	last = (uint32_t)c->nent - 1;
	if (s != last) {
		uint64_t h = catalog_key_hash(&c->ent[last].key);

		/* move the last entry into the hole, keeping the index right */
		tmap_remove(&c->idx, h, last);
		c->ent[s] = c->ent[last];
		c->nent--;
		return tmap_insert(&c->idx, h, s, catalog_rehash, c);
	}
	c->nent--;
	return 0;
}

uint64_t
catalog_generation(const struct catalog *c)
{
	return c->gen;
}

size_t
catalog_count(const struct catalog *c)
{
	return c->nent;
}

const struct catalog_entry *
catalog_entry_at(const struct catalog *c, size_t i)
{
	return i < c->nent ? &c->ent[i] : NULL;
}

/* Picks, by seed, one healthy port of side on leaf from the bucket. */
static uint32_t
catalog_pick_port(const struct topo *t, const uint32_t *bucket, uint32_t n,
		  uint64_t seed)
{
	uint32_t i, healthy = 0, k;

	for (i = 0; i < n; i++)
		healthy += t->ports[bucket[i]].up;
	if (healthy == 0)
		return TOPO_NONE;
	k = (uint32_t)(mix64(seed) % healthy);
	for (i = 0; i < n; i++)
		if (t->ports[bucket[i]].up && k-- == 0)
			return bucket[i];
	return TOPO_NONE;
}

int
catalog_probe_tasks(const struct topo *t, uint64_t seed, uint16_t count,
		    struct probe_task **tasks, size_t *ntasks, char *err,
		    size_t errlen)
{
	uint32_t *first = NULL, *bucket = NULL, *fill = NULL;
	uint32_t nb = t->nleaves * TOPO_SIDES, i, a, b, s;
	struct probe_task *out = NULL;
	size_t n = 0, cap;
	int rc = -1;

	*tasks = NULL;
	*ntasks = 0;
	/* bucket the ports by (leaf, side): counting sort */
	first = calloc((size_t)nb + 1, sizeof(uint32_t));
	fill = calloc((size_t)nb + 1, sizeof(uint32_t));
	bucket = malloc(((size_t)t->nports + 1) * sizeof(uint32_t));
	cap = (size_t)t->nleaves * t->nleaves * TOPO_SIDES + 1;
	out = malloc(cap * sizeof(*out));
	if (first == NULL || fill == NULL || bucket == NULL || out == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < t->nports; i++)
		first[t->ports[i].leaf * TOPO_SIDES + t->ports[i].side + 1]++;
	for (i = 0; i < nb; i++)
		first[i + 1] += first[i];
	for (i = 0; i < t->nports; i++) {
		uint32_t k = t->ports[i].leaf * TOPO_SIDES + t->ports[i].side;

		bucket[first[k] + fill[k]++] = i;
	}
	for (a = 0; a < t->nleaves; a++) {
		for (b = 0; b < t->nleaves; b++) {
			for (s = 0; s < TOPO_SIDES && a != b; s++) {
				uint32_t ka = a * TOPO_SIDES + s;
				uint32_t kb = b * TOPO_SIDES + s;
				uint32_t src, dst;

				src = catalog_pick_port(
					t, bucket + first[ka],
					first[ka + 1] - first[ka], seed ^ ka);
				dst = catalog_pick_port(
					t, bucket + first[kb],
					first[kb + 1] - first[kb],
					seed ^ ((uint64_t)kb << 20));
				if (src == TOPO_NONE || dst == TOPO_NONE)
					continue;
				out[n].src_ip = t->ports[src].ip;
				out[n].dst_ip = t->ports[dst].ip;
				out[n].side = (uint8_t)s;
				out[n].sport_first = CATALOG_SPORT_BASE;
				out[n].sport_count = count;
				n++;
			}
		}
	}
	*tasks = out;
	*ntasks = n;
	out = NULL;
	rc = 0;
out:
	free(first);
	free(fill);
	free(bucket);
	free(out);
	return rc;
}
