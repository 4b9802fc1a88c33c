/*
 * flight.h - one-way chunk delivery times of connections, from the
 * sender's and the receiver's timings of the same ops.
 *
 * The sender reports, per sampled op, the mean time its chunks on a
 * connection were ready to leave; the receiver the mean time they had
 * arrived (ConnSummary.timed_*).  Matched by op ordinal and chunk count,
 * the difference is the op's mean one-way delivery time.  Hosts' clocks
 * differ by an unknown but steady offset, so what is kept is the excess
 * over the connection's own floor (the least delivery time of the last
 * FLIGHT_BASE_TICKS intervals): queueing on the path, which no clock
 * offset changes.  The sender's own SendWait cannot see that queueing
 * when the transport hands a chunk to a socket buffer and calls it sent.
 */
#ifndef C4D_FLIGHT_H
#define C4D_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#define FLIGHT_PENDING	  128u /* one side's ops waiting for the other's */
#define FLIGHT_SAMPLES	  64u  /* matched ops kept per interval */
#define FLIGHT_BASE_TICKS 32u  /* intervals the floor looks back */

struct flight_stats {
	uint64_t matched;   /* ops with both sides' times */
	uint64_t mismatch;  /* both sides, different chunk counts */
	uint64_t unmatched; /* one side's op pushed out before the other's */
	uint64_t conns;	    /* connections tracked */
};

struct flight;

/*
 * flight_new() returns an empty tracker, or NULL without memory;
 * flight_free() frees it with every connection's state (NULL is fine).
 * Not thread-safe: one thread drives a tracker.
 */
struct flight *flight_new(void);
void flight_free(struct flight *f);
/*
 * One side's timings of connection comm: src -> dst: n ops, each with its
 * ordinal, chunk count and mean time (ns).  0, or -1 without memory.
 */
int flight_add(struct flight *f, uint64_t comm, uint32_t src, uint32_t dst,
	       int receiver, const uint64_t *seq, const uint32_t *chunks,
	       const uint64_t *mean_ns, size_t n);
/*
 * The connection's queueing excess (ns) over its floor: the median of the
 * ops matched since the last call, less the floor.  Moves the floor's
 * window on by one interval.  1 with *excess set, 0 when no op matched.
 */
int flight_take(struct flight *f, uint64_t comm, uint32_t src, uint32_t dst,
		double *excess_ns);
/* Copies the counters into *out; changes nothing in f. */
void flight_get_stats(const struct flight *f, struct flight_stats *out);

#endif
