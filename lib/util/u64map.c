/*
 * u64map.c - the uint64 -> uint32 hash map (u64map.h).
 *
 * The layout is chosen for lookups, which the detection engine does for
 * every record of every interval: keys in one array with an in-band empty
 * marker (one cache line read per probe), at most half full (short probe
 * chains).  The one key equal to the marker is kept out of band.
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "mix.h"

static size_t
u64map_home(size_t cap, uint64_t k)
{
	return (size_t)mix64(k) & (cap - 1);
}

/* Stores k (not the marker, not present) into a table with a free slot. */
static void
u64map_place(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t k, uint32_t v)
{
	size_t i = u64map_home(cap, k);

	while (keys[i] != U64MAP_EMPTY)
		i = (i + 1) & (cap - 1);
	keys[i] = k;
	vals[i] = v;
}

static int
u64map_grow(struct u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : U64MAP_MIN_CAP;
	uint64_t *keys;
	uint32_t *vals;

	if (cap > SIZE_MAX / sizeof(*keys))
		return -1;
	keys = malloc(cap * sizeof(*keys));
	vals = malloc(cap * sizeof(*vals));
	if (keys == NULL || vals == NULL) {
		free(keys);
		free(vals);
		return -1;
	}
	memset(keys, 0xff, cap * sizeof(*keys));
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] != U64MAP_EMPTY)
			u64map_place(keys, vals, cap, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int
u64map_put(struct u64map *m, uint64_t k, uint32_t v)
{
	size_t i;

	if (k == U64MAP_EMPTY) {
		m->n += !m->has_empty_key;
		m->has_empty_key = true;
		m->empty_val = v;
		return 0;
	}
	if (m->cap != 0) {
		for (i = u64map_home(m->cap, k); m->keys[i] != U64MAP_EMPTY;
		     i = (i + 1) & (m->cap - 1)) {
			if (m->keys[i] == k) {
				m->vals[i] = v;
				return 0;
			}
		}
	}
	if (2 * (m->n + 1) > m->cap && u64map_grow(m) < 0)
		return -1;
	u64map_place(m->keys, m->vals, m->cap, k, v);
	m->n++;
	return 0;
}

int
u64map_get(const struct u64map *m, uint64_t k, uint32_t *v)
{
	if (k == U64MAP_EMPTY) {
		if (!m->has_empty_key)
			return -1;
		*v = m->empty_val;
		return 0;
	}
	if (m->cap == 0)
		return -1;
	for (size_t i = u64map_home(m->cap, k); m->keys[i] != U64MAP_EMPTY;
	     i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			*v = m->vals[i];
			return 0;
		}
	}
	return -1;
}

int
u64map_del(struct u64map *m, uint64_t k)
{
	size_t mask = m->cap - 1, i, j, home;

	if (k == U64MAP_EMPTY) {
		if (!m->has_empty_key)
			return -1;
		m->has_empty_key = false;
		m->n--;
		return 0;
	}
	if (m->cap == 0)
		return -1;
	for (i = u64map_home(m->cap, k); m->keys[i] != k; i = (i + 1) & mask)
		if (m->keys[i] == U64MAP_EMPTY)
			return -1;
	/* backward shift: refill the hole from the probe chain behind it */
	for (j = (i + 1) & mask; m->keys[j] != U64MAP_EMPTY;
	     j = (j + 1) & mask) {
		home = u64map_home(m->cap, m->keys[j]);
		/* an entry whose home lies in (i, j] must stay */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->keys[i] = U64MAP_EMPTY;
	m->n--;
	return 0;
}

void
u64map_clear(struct u64map *m)
{
	if (m->cap != 0)
		memset(m->keys, 0xff, m->cap * sizeof(*m->keys));
	m->n = 0;
	m->has_empty_key = false;
}

void
u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

size_t
u64map_bytes(const struct u64map *m)
{
	return m->cap * (sizeof(*m->keys) + sizeof(*m->vals));
}
