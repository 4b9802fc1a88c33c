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

/* All cap indices start free.  0, or -1 on a bad cap or ENOMEM. */
int pool_init(struct pool *p, uint32_t cap);
void pool_free(struct pool *p);
/* A free index, or -1 when none is left (a drop is counted). */
int64_t pool_get(struct pool *p);
/* Gives back an index obtained from pool_get. */
void pool_put(struct pool *p, uint32_t idx);
uint64_t pool_drops(const struct pool *p);

#endif
