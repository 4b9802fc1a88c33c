/*
 * sketch.h - log-bucketed duration histograms (the wire's QuantileSketch).
 *
 * A value v > 0 falls in bucket i = floor(log(v) / log(gamma)) with
 * gamma = 1 + 2 * alpha, alpha = accuracy_ppm / 1e6; a value of 0 is counted
 * apart.  Any quantile is then answered within a relative error of alpha of
 * a value that was added, whatever the distribution, and two sketches of the
 * same accuracy merge exactly (bucket counts add).  The sketch also keeps
 * count, sum, min and max, the rest of a DurationStats.
 *
 * Used by the CCL client library (one sketch per measured duration and
 * interval) and by the job master (merging sketches of many ranks), so it
 * depends on libc, libm and the generated protobuf-c code only.  Not
 * thread-safe: one owner at a time.
 */
#ifndef C4_SKETCH_H
#define C4_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#include "c4d.pb-c.h"

#define SKETCH_ACCURACY_DEFAULT 10000u /* ppm: 1% relative error */
#define SKETCH_ACCURACY_MIN	100u   /* ppm; finer costs many buckets */
#define SKETCH_ACCURACY_MAX	500000u
/*
 * Buckets kept; equals the wire's limit (MSG_SKETCH_MAX).  At 1% accuracy
 * 1 ns .. 1 hour spans about 1,100 buckets, so the cap only bites on
 * hostile input; beyond it the two lowest buckets are folded together,
 * which loses accuracy at the low end only.
 */
#define SKETCH_BUCKETS_MAX 4096u

struct sketch {
	uint32_t accuracy_ppm;
	double log_gamma;
	int32_t *index; /* ascending */
	uint64_t *count;
	size_t n, cap;
	uint64_t zero_count;
	uint64_t total; /* zero_count + all bucket counts */
	uint64_t sum, min, max;
};

/*
 * Makes s empty with the given accuracy (0: SKETCH_ACCURACY_DEFAULT).
 * Returns -1 if accuracy_ppm is outside SKETCH_ACCURACY_MIN..MAX.
 */
int sketch_init(struct sketch *s, uint32_t accuracy_ppm);
/*
 * Frees the buckets and empties s; its accuracy stays, so it may be
 * filled again.  s itself is the caller's.
 */
void sketch_free(struct sketch *s);
/* Empties s, keeping its accuracy and memory. */
void sketch_reset(struct sketch *s);

/* Adds one value (ns).  0, or -1 on allocation failure (s unchanged). */
int sketch_add(struct sketch *s, uint64_t v);
/* Adds n samples of v. */
int sketch_add_n(struct sketch *s, uint64_t v, uint64_t n);
/*
 * Adds every sample of src to dst.  Both must have the same accuracy
 * (-1 otherwise, dst unchanged); -1 on allocation failure too.
 */
int sketch_merge(struct sketch *dst, const struct sketch *src);

/*
 * The q-quantile (0 <= q <= 1) of the samples: the representative value
 * of the bucket holding the sample of rank floor(q * (total - 1)), clamped
 * to [min, max].  0 for an empty sketch.
 */
double sketch_quantile(const struct sketch *s, double q);

/*
 * What the samples above cap (ns) add beyond it, each bucket's value
 * clamped to s->max: sketch_pb_excess() of the sketch once sent.
 */
double sketch_excess(const struct sketch *s, double cap);

/* Index of the bucket v (> 0) falls in. */
int32_t sketch_bucket(const struct sketch *s, uint64_t v);
/*
 * The highest bucket index a value of 64 bits can fall in at accuracy_ppm
 * (1..999999); the lowest is 0, the bucket of 1 ns.  A received sketch
 * with an index outside [0, sketch_index_max()] is not one a sketch
 * wrote.  -1 for an accuracy out of range.  Changes nothing.
 */
int32_t sketch_index_max(uint32_t accuracy_ppm);

/*
 * Fills a DurationStats (and its QuantileSketch, which must be zeroed
 * storage of the caller, attached as d->sketch) from s.  The index and
 * count arrays are allocated; release them with sketch_pb_free().  An
 * empty sketch fills count 0 and no buckets.  0 or -1 (ENOMEM).
 */
int sketch_to_pb(const struct sketch *s, C4__DurationStats *d,
		 C4__QuantileSketch *q);
/*
 * Frees the index and count arrays sketch_to_pb() allocated and empties
 * them; q itself, and the DurationStats pointing at it, are the caller's.
 * Not for sketches msg_unpack() decoded: msg_free() frees those.
 */
void sketch_pb_free(C4__QuantileSketch *q);
/*
 * Quantiles qs[0..nq) (ascending, each in [0, 1]) of a received
 * DurationStats' sketch, in ns, in one pass and without building a struct
 * sketch: the same answers as sketch_quantile() would give, clamped to the
 * stats' min and max.  Buckets may come in any order.  0, or -1 when there
 * is no usable sketch (out is then all 0).
 */
int sketch_pb_quantiles(const C4__DurationStats *d, const double *qs, size_t nq,
			double *out);
/*
 * What the samples above cap (ns) add beyond it: the sum of (value - cap)
 * over the sketch's buckets above cap, each bucket's value clamped to the
 * stats' max.  0 when there is no usable sketch.
 */
double sketch_pb_excess(const C4__DurationStats *d, double cap);
/*
 * Loads a received sketch (already validated by msg_unpack()) into an
 * initialised s of the same accuracy, merging with what s holds.  count,
 * sum, min and max come from d.  0, or -1 on an accuracy mismatch or
 * ENOMEM.
 */
int sketch_from_pb(struct sketch *s, const C4__DurationStats *d);

#endif
