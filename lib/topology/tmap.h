/*
 * tmap.h: an open-addressing index from caller-defined keys to dense uint32
 * slot numbers. The map stores only slot numbers; the caller owns the
 * objects, computes the key hash and answers "does slot s hold this key?".
 * Internal to lib/topology.
 */
#ifndef C4_TMAP_H
#define C4_TMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TMAP_EMPTY UINT32_MAX
#define TMAP_DEAD  (UINT32_MAX - 1)

struct tmap {
	uint32_t *tab;
	size_t cap;  /* power of two, or 0 */
	size_t used; /* live + dead cells */
	size_t live;
};

/* key_eq(arg, slot) returns true when the object in slot has the key. */
typedef bool (*tmap_eq_fn)(const void *arg, uint32_t slot);

/*
 * Frees the table and leaves *m empty (usable again); m itself and the
 * objects its slots index are the caller's.
 */
void tmap_free(struct tmap *m);
/* Returns the slot holding the key, or TMAP_EMPTY. */
uint32_t tmap_find(const struct tmap *m, uint64_t hash, tmap_eq_fn eq,
		   const void *arg);
/*
 * Inserts slot under hash (the key must not be present: callers find
 * first). rehash(arg, slot) gives the hash of a stored slot when the table
 * grows. Returns 0 or -1 when out of memory.
 */
int tmap_insert(struct tmap *m, uint64_t hash, uint32_t slot,
		uint64_t (*rehash)(const void *arg, uint32_t slot),
		const void *arg);
/* Removes the cell holding slot (found via hash); returns 0 or -1. */
int tmap_remove(struct tmap *m, uint64_t hash, uint32_t slot);

/*
 * A hash of the NUL-terminated string s (mix64 of mix.h over its bytes),
 * for tmap keys; s is not changed.
 */
uint64_t tmap_str(const char *s);

#endif /* C4_TMAP_H */
