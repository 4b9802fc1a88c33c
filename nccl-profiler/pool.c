/*
 * pool.c - lock-free index pool (see pool.h).
 */
#include "pool.h"

#include <stdlib.h>

#define POOL_IDX_MASK 0xffffffffull

int
pool_init(struct pool *p, uint32_t cap)
{
	uint32_t i;

	atomic_init(&p->head, 0);
	atomic_init(&p->drops, 0);
	p->next = NULL;
	p->cap = 0;
	if (cap == 0 || cap > POOL_CAP_MAX)
		return -1;
	p->next = calloc(cap, sizeof(*p->next));
	if (p->next == NULL)
		return -1;
	p->cap = cap;
	/* Chain 0 -> 1 -> ... -> cap-1, so the first gets are in order. */
	for (i = 0; i < cap; i++)
		atomic_init(&p->next[i], i + 1 < cap ? i + 2 : 0);
	atomic_store(&p->head, 1);
	return 0;
}

void
pool_free(struct pool *p)
{
	free((void *)p->next);
	p->next = NULL;
	p->cap = 0;
}

int64_t
pool_get(struct pool *p)
{
	uint64_t h = atomic_load_explicit(&p->head, memory_order_acquire);
	uint64_t nh;
	uint32_t idx;

	for (;;) {
		if ((h & POOL_IDX_MASK) == 0) {
			atomic_fetch_add_explicit(&p->drops, 1,
						  memory_order_relaxed);
			return -1;
		}
		idx = (uint32_t)(h & POOL_IDX_MASK) - 1;
		nh = ((h >> 32) + 1) << 32 |
		     atomic_load_explicit(&p->next[idx], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&p->head, &h, nh,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return idx;
	}
}

void
pool_put(struct pool *p, uint32_t idx)
{
	uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);
	uint64_t nh;

	do {
		atomic_store_explicit(&p->next[idx],
				      (uint32_t)(h & POOL_IDX_MASK),
				      memory_order_relaxed);
		nh = ((h >> 32) + 1) << 32 | (uint64_t)(idx + 1);
	} while (!atomic_compare_exchange_weak_explicit(
		&p->head, &h, nh, memory_order_acq_rel, memory_order_relaxed));
}

uint64_t
pool_drops(const struct pool *p)
{
	return atomic_load_explicit(&p->drops, memory_order_relaxed);
}
