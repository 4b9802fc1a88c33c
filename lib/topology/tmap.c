/*
 * tmap.c: linear-probing index of slot numbers (see tmap.h).
 */
#include <stdlib.h>

#include "tmap.h"

#include "mix.h"

uint64_t
tmap_str(const char *s)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	while (*s != '\0')
		h = mix64(h ^ (unsigned char)*s++);
	return h;
}

void
tmap_free(struct tmap *m)
{
	free(m->tab);
	m->tab = NULL;
	m->cap = m->used = m->live = 0;
}

uint32_t
tmap_find(const struct tmap *m, uint64_t hash, tmap_eq_fn eq, const void *arg)
{
	size_t mask, i;

	if (m->cap == 0)
		return TMAP_EMPTY;
	mask = m->cap - 1;
	for (i = hash & mask;; i = (i + 1) & mask) {
		uint32_t s = m->tab[i];

		if (s == TMAP_EMPTY)
			return TMAP_EMPTY;
		if (s != TMAP_DEAD && eq(arg, s))
			return s;
	}
}

/*
 * Rebuilds the table with capacity ncap, dropping dead cells. Returns 0 or
 * -1 when out of memory (the old table is kept).
 */
static int
tmap_grow(struct tmap *m, size_t ncap,
	  uint64_t (*rehash)(const void *arg, uint32_t slot), const void *arg)
{
	uint32_t *nt;
	size_t i, j, mask = ncap - 1;

	nt = malloc(ncap * sizeof(*nt));
	if (nt == NULL)
		return -1;
	for (i = 0; i < ncap; i++)
		nt[i] = TMAP_EMPTY;
	for (i = 0; i < m->cap; i++) {
		uint32_t s = m->tab[i];

		if (s == TMAP_EMPTY || s == TMAP_DEAD)
			continue;
		for (j = rehash(arg, s) & mask; nt[j] != TMAP_EMPTY;
		     j = (j + 1) & mask)
			;
		nt[j] = s;
	}
	free(m->tab);
	m->tab = nt;
	m->cap = ncap;
	m->used = m->live;
	return 0;
}

int
tmap_insert(struct tmap *m, uint64_t hash, uint32_t slot,
	    uint64_t (*rehash)(const void *arg, uint32_t slot), const void *arg)
{
	size_t mask, i;

	/* keep the load (live + dead) under 1/2 */
	if ((m->used + 1) * 2 > m->cap) {
		size_t ncap = 16;

		/* after the rebuild, live cells fill at most a quarter */
		while (ncap < (m->live + 1) * 4)
			ncap *= 2;
		if (tmap_grow(m, ncap, rehash, arg) < 0)
			return -1;
	}
	mask = m->cap - 1;
	for (i = hash & mask; m->tab[i] != TMAP_EMPTY && m->tab[i] != TMAP_DEAD;
	     i = (i + 1) & mask)
		;
	if (m->tab[i] == TMAP_EMPTY)
		m->used++;
	m->tab[i] = slot;
	m->live++;
	return 0;
}

int
tmap_remove(struct tmap *m, uint64_t hash, uint32_t slot)
{
	size_t mask, i;

	if (m->cap == 0)
		return -1;
	mask = m->cap - 1;
	for (i = hash & mask; m->tab[i] != TMAP_EMPTY; i = (i + 1) & mask) {
		if (m->tab[i] == slot) {
			m->tab[i] = TMAP_DEAD;
			m->live--;
			return 0;
		}
	}
	return -1;
}
