/*
 * u64map.h - THE uint64 -> uint32 hash map: open addressing, linear
 * probing on mix64 (mix.h), at most half full, capacity a power of two.
 * Every key is valid: an empty slot holds U64MAP_EMPTY, and that one key,
 * when stored, lives beside the table (has_empty_key) instead of in it, so
 * a probe reads one array of keys and stops at the first empty slot.
 * Zero-initialise it before use; deletion shifts the following entries
 * back, so there are no tombstones and lookups stay as short after
 * deleting as before.  libc only.
 */
#ifndef C4_U64MAP_H
#define C4_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define U64MAP_EMPTY   UINT64_MAX /* the key an empty slot holds */
#define U64MAP_MIN_CAP 16u	  /* slots of the first table */

struct u64map {
	uint64_t *keys; /* U64MAP_EMPTY where a slot is free */
	uint32_t *vals;
	size_t cap, n;	    /* slots (0 until the first put), entries */
	bool has_empty_key; /* U64MAP_EMPTY itself is stored ... */
	uint32_t empty_val; /* ... with this value */
};

/*
 * Sets k to v, replacing an existing value; grows the table when needed.
 * Returns 0, or -1 without memory (the map is then unchanged).
 */
int u64map_put(struct u64map *m, uint64_t k, uint32_t v);
/* 0 with *v set, or -1 (and *v untouched) when k is absent. */
int u64map_get(const struct u64map *m, uint64_t k, uint32_t *v);
/* Removes k. Returns 0, or -1 when k is absent; the capacity stays. */
int u64map_del(struct u64map *m, uint64_t k);
/* Removes every key, keeping the table (and its capacity) for reuse. */
void u64map_clear(struct u64map *m);
/* Frees the table and zeroes *m (which itself is the caller's). */
void u64map_free(struct u64map *m);
/* Bytes the table holds now (for callers that account their memory). */
size_t u64map_bytes(const struct u64map *m);

#endif
