/*
 * u64map.c - the uint64 -> uint32 hash map (u64map.h).
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "mix.h"

static size_t
u64map_home(const struct u64map *m, uint64_t k)
{
	return (size_t)mix64(k) & (m->cap - 1);
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
	for (i = u64map_home(m, k); m->used[i]; i = (i + 1) & (m->cap - 1)) {
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
	for (size_t i = u64map_home(m, k); m->used[i];
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

	if (m->cap == 0)
		return -1;
	for (i = u64map_home(m, k); m->keys[i] != k || !m->used[i];
	     i = (i + 1) & mask)
		if (!m->used[i])
			return -1;
	/* backward shift: refill the hole from the probe chain behind it */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		home = u64map_home(m, m->keys[j]);
		/* an entry whose home lies in (i, j] must stay */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->used[i] = 0;
	m->n--;
	return 0;
}

void
u64map_clear(struct u64map *m)
{
	if (m->cap != 0)
		memset(m->used, 0, m->cap);
	m->n = 0;
}

void
u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

size_t
u64map_bytes(const struct u64map *m)
{
	return m->cap * (sizeof(*m->keys) + sizeof(*m->vals) + 1);
}
