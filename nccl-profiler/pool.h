/*
 * pool.h - fixed pool of record indices with a lock-free free list.
 *
 * Event records of a communicator live in an array sized at init; the
 * pool hands out and takes back their indices from any thread without a
 * lock (a Treiber stack whose head carries a tag against ABA).  When it
 * is empty, pool_get fails and counts a drop: the caller then returns no
 * handle to NCCL and the event is lost, never waited for.
 */
#ifndef C4_POOL_H
#define C4_POOL_H

#include <stdatomic.h>
#include <stdint.h>

#define POOL_CAP_MAX (1u << 20) /* indices fit in a handle's 20 bits */

struct pool {
	_Alignas(64) _Atomic uint64_t
		head; /* tag << 32 | (index + 1); 0 empty */
	_Atomic uint64_t drops;
	_Atomic uint32_t *next; /* per index: the next free index + 1, or 0 */
	uint32_t cap;
};

/*
 * Sets up p with indices 0..cap-1, all free; p owns its free list until
 * pool_free.  0, or -1 on a bad cap or ENOMEM.  Before any thread uses p.
 */
int pool_init(struct pool *p, uint32_t cap);

/* Frees p's free list (a zeroed pool is accepted).  Once no thread uses p. */
void pool_free(struct pool *p);

/*
 * A free index, now the caller's, or -1 when none is left (a drop is
 * counted).  Any thread, lock-free.
 */
int64_t pool_get(struct pool *p);

/*
 * Gives back idx, obtained from pool_get and not given back since.  Any
 * thread, lock-free.
 */
void pool_put(struct pool *p, uint32_t idx);

/* Gets that found the pool empty since pool_init.  Any thread; reads. */
uint64_t pool_drops(const struct pool *p);

#endif
