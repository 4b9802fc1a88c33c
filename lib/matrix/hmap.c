/*
 * hmap.c: a uint64 -> uint32 hash map with open addressing and linear
 * probing, kept at most half full. HMAP_EMPTY is not a valid key.
 */
#include <stdlib.h>
#include <string.h>

#include "mix.h"
#include "matrix_int.h"

/* splitmix64 from state x, for slots and event ids. */
uint64_t
hmap_mix(uint64_t x)
{
	return splitmix64(&x);
}

/* Allocate an empty table of cap slots (a power of two). 0 or -1. */
static int
hmap_alloc(struct hmap *h, uint32_t cap)
{
	h->keys = mem_alloc((size_t)cap * sizeof(*h->keys));
	h->vals = mem_alloc((size_t)cap * sizeof(*h->vals));
	if (h->keys == NULL || h->vals == NULL) {
		mem_free(h->keys);
		mem_free(h->vals);
		h->keys = NULL;
		h->vals = NULL;
		return -1;
	}
	memset(h->keys, 0xff, (size_t)cap * sizeof(*h->keys));
	h->cap = cap;
	h->n = 0;
	return 0;
}

/* Prepare an empty map sized for about hint keys. Returns 0 or -1. */
int
hmap_init(struct hmap *h, uint32_t hint)
{
	uint32_t cap = HMAP_MIN_CAP;

	while (cap < 2 * (uint64_t)hint && cap < (1u << 31))
		cap *= 2;
	return hmap_alloc(h, cap);
}

void
hmap_free(struct hmap *h)
{
	mem_free(h->keys);
	mem_free(h->vals);
	memset(h, 0, sizeof(*h));
}

/* Look key up; 0 and *val set when present, -1 when absent. */
int
hmap_get(const struct hmap *h, uint64_t key, uint32_t *val)
{
	uint32_t mask = h->cap - 1;
	uint32_t i = (uint32_t)hmap_mix(key) & mask;

	while (h->keys[i] != HMAP_EMPTY) {
		if (h->keys[i] == key) {
			*val = h->vals[i];
			return 0;
		}
		i = (i + 1) & mask;
	}
	return -1;
}

static void
hmap_place(struct hmap *h, uint64_t key, uint32_t val)
{
	uint32_t mask = h->cap - 1;
	uint32_t i = (uint32_t)hmap_mix(key) & mask;

	while (h->keys[i] != HMAP_EMPTY && h->keys[i] != key)
		i = (i + 1) & mask;
	if (h->keys[i] == HMAP_EMPTY)
		h->n++;
	h->keys[i] = key;
	h->vals[i] = val;
}

/* Insert or replace key. Grows the table; returns 0, or -1 (map intact). */
int
hmap_put(struct hmap *h, uint64_t key, uint32_t val)
{
	if (key == HMAP_EMPTY)
		return -1;
	if (2 * (uint64_t)(h->n + 1) > h->cap) {
		struct hmap nh;
		uint32_t i;

		if (h->cap >= (1u << 31) || hmap_alloc(&nh, h->cap * 2) < 0)
			return -1;
		for (i = 0; i < h->cap; i++)
			if (h->keys[i] != HMAP_EMPTY)
				hmap_place(&nh, h->keys[i], h->vals[i]);
		hmap_free(h);
		*h = nh;
	}
	hmap_place(h, key, val);
	return 0;
}

/*
 * Remove key (backward-shift deletion keeps probe chains intact without
 * tombstones). Returns 0, or -1 when the key is absent.
 */
int
hmap_del(struct hmap *h, uint64_t key)
{
	uint32_t mask = h->cap - 1;
	uint32_t i = (uint32_t)hmap_mix(key) & mask, j, home;

	while (h->keys[i] != key) {
		if (h->keys[i] == HMAP_EMPTY)
			return -1;
		i = (i + 1) & mask;
	}
	j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (h->keys[j] == HMAP_EMPTY)
			break;
		home = (uint32_t)hmap_mix(h->keys[j]) & mask;
		/* move j back into the hole at i unless home lies in (i, j] */
		if ((i <= j) ? (i < home && home <= j)
			     : (i < home || home <= j))
			continue;
		h->keys[i] = h->keys[j];
		h->vals[i] = h->vals[j];
		i = j;
	}
	h->keys[i] = HMAP_EMPTY;
	h->n--;
	return 0;
}

/* Drop every key, keeping the table's capacity. */
void
hmap_clear(struct hmap *h)
{
	memset(h->keys, 0xff, (size_t)h->cap * sizeof(*h->keys));
	h->n = 0;
}
