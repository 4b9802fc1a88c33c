/*
 * ring.c - single-producer single-consumer ring (see ring.h).
 *
 * head and tail only grow; the slot of position p is p & mask.  The
 * producer publishes a record with a release store of tail after copying
 * it in; the consumer reads tail with acquire, copies the record out, and
 * frees the slot with a release store of head.
 */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

int
ring_init(struct ring *r, uint32_t cap, size_t size)
{
	uint32_t c = RING_CAP_MIN;

	memset(r, 0, sizeof(*r));
	if (size == 0 || cap > RING_CAP_MAX)
		return -1;
	while (c < cap)
		c <<= 1;
	r->slots = calloc(c, size);
	if (r->slots == NULL)
		return -1;
	r->cap = c;
	r->mask = c - 1;
	r->size = size;
	return 0;
}

void
ring_free(struct ring *r)
{
	free(r->slots);
	r->slots = NULL;
}

int
ring_push(struct ring *r, const void *rec)
{
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);

	if (t - h >= r->cap) {
		atomic_fetch_add_explicit(&r->drops, 1, memory_order_relaxed);
		return -1;
	}
	memcpy(r->slots + (size_t)(t & r->mask) * r->size, rec, r->size);
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return 0;
}

int
ring_pop(struct ring *r, void *rec)
{
	uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);

	if (h == t)
		return -1;
	memcpy(rec, r->slots + (size_t)(h & r->mask) * r->size, r->size);
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	return 0;
}

void
ring_reset(struct ring *r)
{
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);

	atomic_store_explicit(&r->head, t, memory_order_release);
}

uint64_t
ring_drops(const struct ring *r)
{
	return atomic_load_explicit(&r->drops, memory_order_relaxed);
}
