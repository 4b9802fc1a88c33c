/*
 * u64map.h - a uint64 -> uint32 hash map: open addressing, linear probing,
 * at most three quarters full, capacity a power of two.  Zero-initialise
 * it before use; there is no deletion.
 */
#ifndef C4_U64MAP_H
#define C4_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	uint32_t *vals;
	uint8_t *used;
	size_t cap, n;
};

/* A 64-bit finalizer: spreads keys over the slots; usable as a hash. */
uint64_t u64map_mix(uint64_t x);
/* Sets k to v (replacing).  0, or -1 without memory. */
int u64map_put(struct u64map *m, uint64_t k, uint32_t v);
/* 0 with *v set, or -1 when k is absent. */
int u64map_get(const struct u64map *m, uint64_t k, uint32_t *v);
void u64map_free(struct u64map *m);

#endif
