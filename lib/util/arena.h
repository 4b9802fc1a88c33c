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

void arena_init(struct arena *a);
/* Zeroed memory for n bytes, or NULL when out of memory. */
void *arena_alloc(struct arena *a, size_t n);
/* Zeroed array of n elements of size sz (overflow-checked). */
void *arena_calloc(struct arena *a, size_t n, size_t sz);
char *arena_strdup(struct arena *a, const char *s);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Like arena_alloc() without zeroing. */
void *arena_alloc_raw(struct arena *a, size_t n);
/* Forgets every allocation but keeps the newest block for reuse. */
void arena_reset(struct arena *a);
void arena_free(struct arena *a);

#endif
