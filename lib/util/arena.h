/*
 * arena.h - a region allocator for replies built piece by piece.
 *
 * An admin reply is a tree of protobuf-c structs with many small parts;
 * building it from one arena and releasing the arena after sending frees
 * everything at once, with no per-field bookkeeping.  Allocations are
 * zeroed and aligned for any type.  Not thread-safe.
 */
#ifndef C4_ARENA_H
#define C4_ARENA_H

#include <stddef.h>

#define ARENA_BLOCK (64u * 1024) /* default block size */

struct arena_block;

struct arena {
	struct arena_block *head;
	size_t used; /* bytes used in head */
	size_t total;
};

/*
 * Makes *a an empty arena that owns no memory.  It allocates nothing and
 * cannot fail; whatever *a held before is forgotten, not freed.
 */
void arena_init(struct arena *a);
/*
 * Returns n zeroed bytes aligned for any type, or NULL when out of
 * memory.  The memory belongs to the arena: the caller never frees it,
 * and it stays valid until arena_reset() or arena_free().  n == 0 still
 * returns a distinct, non-NULL pointer.  On failure the arena is
 * unchanged.
 */
void *arena_alloc(struct arena *a, size_t n);
/*
 * Like arena_alloc() for an array of n elements of sz bytes each; returns
 * NULL, allocating nothing, when n * sz overflows.
 */
void *arena_calloc(struct arena *a, size_t n, size_t sz);
/*
 * Returns a copy of the string s in the arena, or NULL when out of
 * memory.  s must not be NULL and stays the caller's.
 */
char *arena_strdup(struct arena *a, const char *s);
/*
 * Formats like printf() into a string allocated from the arena and
 * returns it, or NULL on an encoding error or when out of memory.
 */
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Like arena_alloc() without zeroing: the bytes are undefined. */
void *arena_alloc_raw(struct arena *a, size_t n);
/*
 * Forgets every allocation, freeing all blocks but the newest, which is
 * kept for reuse.  Every pointer the arena returned becomes invalid.
 */
void arena_reset(struct arena *a);
/*
 * Frees every block and leaves *a empty as after arena_init(), so it
 * can be used again.  Every pointer the arena returned becomes invalid.
 */
void arena_free(struct arena *a);

#endif
