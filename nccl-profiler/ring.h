/*
 * ring.h - single-producer single-consumer ring of fixed-size records.
 *
 * The handoff between an NCCL thread (the producer: it owns one ring) and
 * the plugin's aggregation thread (the consumer).  Neither side blocks or
 * allocates: a push into a full ring fails and is counted as a drop, a pop
 * from an empty ring fails.  Capacity is a power of two fixed at init.
 */
#ifndef C4_RING_H
#define C4_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RING_CAP_MIN 16u
#define RING_CAP_MAX (1u << 24)

struct ring {
	_Alignas(64) _Atomic uint64_t head; /* next slot to pop (consumer) */
	_Alignas(64) _Atomic uint64_t tail; /* next slot to push (producer) */
	_Alignas(64) _Atomic uint64_t drops;
	uint32_t cap, mask;
	size_t size; /* bytes per record */
	unsigned char *slots;
};

/*
 * Sets up r for records of size bytes; cap is rounded up to a power of
 * two.  r owns its slots until ring_free.  0, or -1 on bad size or
 * ENOMEM.  Before either side uses r.
 */
int ring_init(struct ring *r, uint32_t cap, size_t size);

/*
 * Frees r's slots (slots becomes NULL; a zeroed ring is accepted).  Once
 * neither side uses r any more.
 */
void ring_free(struct ring *r);

/*
 * Producer (the one thread that owns r): copies size bytes of rec in;
 * -1 (and a drop counted) when full.  Never blocks.
 */
int ring_push(struct ring *r, const void *rec);

/*
 * Consumer (one thread): copies the oldest record out into rec; -1 when
 * empty.  Never blocks.
 */
int ring_pop(struct ring *r, void *rec);

/*
 * Consumer: empties the ring (used when a ring is handed to a new
 * thread); the drop count stays.
 */
void ring_reset(struct ring *r);

/* Records lost to a full ring since ring_init.  Any thread; reads only. */
uint64_t ring_drops(const struct ring *r);

#endif
