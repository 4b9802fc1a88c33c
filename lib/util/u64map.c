/*
 * u64map.c - the uint64 -> uint32 hash map (u64map.h).
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

uint64_t
u64map_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static int
u64map_grow(struct u64map *m)
{
	struct u64map n = {0};
	size_t cap = m->cap ? m->cap * 2 : 64;

	n.keys = calloc(cap, sizeof(*n.keys));
	n.vals = calloc(cap, sizeof(*n.vals));
	n.used = calloc(cap, 1);
	n.cap = cap;
	if (n.keys == NULL || n.vals == NULL || n.used == NULL) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			u64map_put(&n, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = n;
	return 0;
}

int
u64map_put(struct u64map *m, uint64_t k, uint32_t v)
{
	size_t i;

	if ((m->n + 1) * 4 > m->cap * 3 && u64map_grow(m) < 0)
		return -1;
	for (i = u64map_mix(k) & (m->cap - 1); m->used[i];
	     i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			m->vals[i] = v;
			return 0;
		}
	}
	m->used[i] = 1;
	m->keys[i] = k;
	m->vals[i] = v;
	m->n++;
	return 0;
}

int
u64map_get(const struct u64map *m, uint64_t k, uint32_t *v)
{
	if (m->cap == 0)
		return -1;
	for (size_t i = u64map_mix(k) & (m->cap - 1); m->used[i];
	     i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			*v = m->vals[i];
			return 0;
		}
	}
	return -1;
}

void
u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}
