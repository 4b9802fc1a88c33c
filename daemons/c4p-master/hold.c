/*
 * hold.c - which live session made (holds) which request, so that moved
 * QPs can be told to it.  A chained hash table keyed by the request key;
 * it grows by doubling when it holds more entries than buckets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4p.h"
#include "fnv.h"
#include "hold.h"

#define HOLD_BUCKETS_MIN 1024u

struct hold_ent {
	struct hold_ent *next;
	struct c4p_sess *sess;
	char key[C4P_KEY_MAX];
};

struct hold {
	struct hold_ent **b;
	size_t nb, n;
};

/* The bucket of key in a table of nb buckets, nb a power of two. */
static size_t
hold_bucket(size_t nb, const char *key)
{
	return (size_t)fnv1a64_str(FNV1A64_INIT, key) & (nb - 1);
}

struct hold *
hold_new(void)
{
	struct hold *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->nb = HOLD_BUCKETS_MIN;
	h->b = calloc(h->nb, sizeof(*h->b));
	if (h->b == NULL) {
		free(h);
		return NULL;
	}
	return h;
}

void
hold_free(struct hold *h)
{
	if (h == NULL)
		return;
	for (size_t i = 0; i < h->nb; i++) {
		struct hold_ent *e = h->b[i], *nx;

		for (; e != NULL; e = nx) {
			nx = e->next;
			free(e);
		}
	}
	free(h->b);
	free(h);
}

/* Doubles the buckets; on allocation failure keeps the old ones. */
static void
hold_grow(struct hold *h)
{
	size_t nb = h->nb * 2;
	struct hold_ent **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return;
	for (size_t i = 0; i < h->nb; i++) {
		struct hold_ent *e = h->b[i], *nx;

		for (; e != NULL; e = nx) {
			size_t k = hold_bucket(nb, e->key);

			nx = e->next;
			e->next = b[k];
			b[k] = e;
		}
	}
	free(h->b);
	h->b = b;
	h->nb = nb;
}

int
hold_set(struct hold *h, const char *key, struct c4p_sess *sess)
{
	size_t k = hold_bucket(h->nb, key);
	struct hold_ent *e;

	for (e = h->b[k]; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0) {
			e->sess = sess;
			return 0;
		}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -1;
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->sess = sess;
	e->next = h->b[k];
	h->b[k] = e;
	if (++h->n > h->nb)
		hold_grow(h);
	return 0;
}

struct c4p_sess *
hold_get(const struct hold *h, const char *key)
{
	const struct hold_ent *e = h->b[hold_bucket(h->nb, key)];

	for (; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e->sess;
	return NULL;
}

void
hold_del(struct hold *h, const char *key)
{
	struct hold_ent **pp = &h->b[hold_bucket(h->nb, key)], *e;

	for (; (e = *pp) != NULL; pp = &e->next)
		if (strcmp(e->key, key) == 0) {
			*pp = e->next;
			free(e);
			h->n--;
			return;
		}
}

void
hold_drop_sess(struct hold *h, const struct c4p_sess *sess)
{
	for (size_t i = 0; i < h->nb; i++) {
		struct hold_ent **pp = &h->b[i], *e;

		while ((e = *pp) != NULL) {
			if (e->sess == sess) {
				*pp = e->next;
				free(e);
				h->n--;
			} else {
				pp = &e->next;
			}
		}
	}
}
