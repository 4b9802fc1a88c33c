/*
 * sketch.c - log-bucketed duration histograms.
 */
#include "sketch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int
sketch_init(struct sketch *s, uint32_t accuracy_ppm)
{
	if (accuracy_ppm == 0)
		accuracy_ppm = SKETCH_ACCURACY_DEFAULT;
	memset(s, 0, sizeof(*s));
	if (accuracy_ppm < SKETCH_ACCURACY_MIN ||
	    accuracy_ppm > SKETCH_ACCURACY_MAX)
		return -1;
	s->accuracy_ppm = accuracy_ppm;
	s->log_gamma = log1p(2.0 * accuracy_ppm / 1e6);
	return 0;
}

void
sketch_free(struct sketch *s)
{
	free(s->index);
	free(s->count);
	s->index = NULL;
	s->count = NULL;
	s->n = s->cap = 0;
	sketch_reset(s);
}

void
sketch_reset(struct sketch *s)
{
	s->n = 0;
	s->zero_count = 0;
	s->total = 0;
	s->sum = 0;
	s->min = 0;
	s->max = 0;
}

int32_t
sketch_bucket(const struct sketch *s, uint64_t v)
{
	return (int32_t)floor(log((double)v) / s->log_gamma);
}

int32_t
sketch_index_max(uint32_t accuracy_ppm)
{
	double lg;

	if (accuracy_ppm == 0 || accuracy_ppm >= 1000000u)
		return -1;
	lg = log1p(2.0 * accuracy_ppm / 1e6);
	/* At 1 ppm this is about 2.2e7, far inside int32_t. */
	return (int32_t)ceil(64.0 * M_LN2 / lg);
}

/* Position of index i in s (or where it would be inserted). */
static size_t
sketch_find(const struct sketch *s, int32_t i)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->index[mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Adds n samples to bucket i.  At SKETCH_BUCKETS_MAX, the lowest bucket is
 * folded into the next one first (a new lowest bucket is folded at once).
 */
static int
sketch_bucket_add(struct sketch *s, int32_t i, uint64_t n)
{
	size_t pos = sketch_find(s, i);

	if (pos < s->n && s->index[pos] == i) {
		s->count[pos] += n;
		return 0;
	}
	if (s->n == SKETCH_BUCKETS_MAX) {
		if (pos == 0) {
			s->count[0] += n;
			return 0;
		}
		s->count[1] += s->count[0];
		memmove(s->index, s->index + 1, (s->n - 1) * sizeof(*s->index));
		memmove(s->count, s->count + 1, (s->n - 1) * sizeof(*s->count));
		s->n--;
		pos--;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		int32_t *ix;
		uint64_t *ct;

		if (cap > SKETCH_BUCKETS_MAX)
			cap = SKETCH_BUCKETS_MAX;
		ix = realloc(s->index, cap * sizeof(*ix));
		if (ix == NULL)
			return -1;
		s->index = ix;
		ct = realloc(s->count, cap * sizeof(*ct));
		if (ct == NULL)
			return -1;
		s->count = ct;
		s->cap = cap;
	}
	memmove(s->index + pos + 1, s->index + pos,
		(s->n - pos) * sizeof(*s->index));
	memmove(s->count + pos + 1, s->count + pos,
		(s->n - pos) * sizeof(*s->count));
	s->index[pos] = i;
	s->count[pos] = n;
	s->n++;
	return 0;
}

/* Folds count, sum, min and max of n samples in [lo, hi] summing to sum. */
static void
sketch_account(struct sketch *s, uint64_t n, uint64_t sum, uint64_t lo,
	       uint64_t hi)
{
	if (s->total == 0 || lo < s->min)
		s->min = lo;
	if (s->total == 0 || hi > s->max)
		s->max = hi;
	s->total += n;
	s->sum += sum;
}

int
sketch_add_n(struct sketch *s, uint64_t v, uint64_t n)
{
	if (n == 0)
		return 0;
	if (v == 0)
		s->zero_count += n;
	else if (sketch_bucket_add(s, sketch_bucket(s, v), n) < 0)
		return -1;
	sketch_account(s, n, v * n, v, v);
	return 0;
}

int
sketch_add(struct sketch *s, uint64_t v)
{
	return sketch_add_n(s, v, 1);
}

int
sketch_merge(struct sketch *dst, const struct sketch *src)
{
	if (dst->accuracy_ppm != src->accuracy_ppm)
		return -1;
	if (src->total == 0)
		return 0;
	for (size_t k = 0; k < src->n; k++)
		if (sketch_bucket_add(dst, src->index[k], src->count[k]) < 0)
			return -1;
	dst->zero_count += src->zero_count;
	sketch_account(dst, src->total, src->sum, src->min, src->max);
	return 0;
}

/*
 * Bucket i holds [gamma^i, gamma^(i+1)); the point 2 gamma^(i+1) /
 * (gamma + 1) is within alpha of both ends.
 */
static double
sketch_value(int32_t index, double log_gamma, double gamma)
{
	/* In double: index + 1 must not overflow int32_t. */
	return 2.0 * exp(((double)index + 1.0) * log_gamma) / (gamma + 1.0);
}

struct sketch_pair {
	int32_t index;
	uint64_t count;
};

static int
sketch_cmp_pair(const void *a, const void *b)
{
	int32_t x = ((const struct sketch_pair *)a)->index;
	int32_t y = ((const struct sketch_pair *)b)->index;

	return (x > y) - (x < y);
}

/*
 * What n buckets' samples above cap add beyond it, each bucket's value
 * clamped to max (0: no clamp).
 */
static double
sketch_excess_of(const int32_t *index, const uint64_t *count, size_t n,
		 double log_gamma, double max, double cap)
{
	double gamma = exp(log_gamma), ex = 0;

	for (size_t i = 0; i < n; i++) {
		double x = sketch_value(index[i], log_gamma, gamma);

		if (max > 0 && x > max)
			x = max;
		if (x > cap)
			ex += (x - cap) * (double)count[i];
	}
	return ex;
}

double
sketch_excess(const struct sketch *s, double cap)
{
	return sketch_excess_of(s->index, s->count, s->n, s->log_gamma,
				(double)s->max, cap);
}

double
sketch_pb_excess(const C4__DurationStats *d, double cap)
{
	const C4__QuantileSketch *s = d->sketch;

	if (s == NULL || s->n_index != s->n_count ||
	    s->relative_accuracy_ppm == 0)
		return 0;
	return sketch_excess_of(s->index, s->count, s->n_index,
				log1p(2.0 * s->relative_accuracy_ppm / 1e6),
				d->has_max_ns ? (double)d->max_ns : 0, cap);
}

int
sketch_pb_quantiles(const C4__DurationStats *d, const double *qs, size_t nq,
		    double *out)
{
	const C4__QuantileSketch *s = d->sketch;
	struct sketch_pair stackbuf[64], *v = stackbuf;
	double log_gamma, gamma;
	uint64_t total, seen;
	size_t n, k = 0;
	int sorted = 1;

	for (size_t i = 0; i < nq; i++)
		out[i] = 0;
	if (s == NULL || s->n_index != s->n_count ||
	    s->relative_accuracy_ppm == 0)
		return -1;
	/* Computed as sketch_init() does, so answers match to the bit. */
	log_gamma = log1p(2.0 * s->relative_accuracy_ppm / 1e6);
	gamma = exp(log_gamma);
	n = s->n_index;
	total = seen = s->zero_count;
	for (size_t i = 0; i < n; i++) {
		total += s->count[i];
		if (i > 0 && s->index[i] <= s->index[i - 1])
			sorted = 0;
	}
	if (total == 0)
		return 0;
	if (!sorted) {
		if (n > sizeof(stackbuf) / sizeof(stackbuf[0]))
			v = malloc(n * sizeof(*v));
		if (v == NULL)
			return -1;
		for (size_t i = 0; i < n; i++) {
			v[i].index = s->index[i];
			v[i].count = s->count[i];
		}
		qsort(v, n, sizeof(*v), sketch_cmp_pair);
	}
	/* Ranks below zero_count answer 0, as sketch_quantile() does. */
	while (k < nq && (uint64_t)(qs[k] * (double)(total - 1)) < seen)
		k++;
	for (size_t i = 0; i < n && k < nq; i++) {
		int32_t idx = sorted ? s->index[i] : v[i].index;

		seen += sorted ? s->count[i] : v[i].count;
		while (k < nq &&
		       (uint64_t)(qs[k] * (double)(total - 1)) < seen) {
			double x = sketch_value(idx, log_gamma, gamma);

			if (d->has_min_ns && x < (double)d->min_ns)
				x = (double)d->min_ns;
			if (d->has_max_ns && d->max_ns > 0 &&
			    x > (double)d->max_ns)
				x = (double)d->max_ns;
			out[k++] = x;
		}
	}
	if (v != stackbuf)
		free(v);
	return 0;
}

double
sketch_quantile(const struct sketch *s, double q)
{
	double gamma = exp(s->log_gamma), v;
	uint64_t rank, seen;
	size_t k;

	if (s->total == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	rank = (uint64_t)(q * (double)(s->total - 1));
	if (rank < s->zero_count)
		return 0;
	seen = s->zero_count;
	for (k = 0; k < s->n; k++) {
		seen += s->count[k];
		if (seen > rank)
			break;
	}
	if (k == s->n)
		k = s->n - 1;
	v = sketch_value(s->index[k], s->log_gamma, gamma);
	if (v < (double)s->min)
		v = (double)s->min;
	if (v > (double)s->max)
		v = (double)s->max;
	return v;
}

int
sketch_to_pb(const struct sketch *s, C4__DurationStats *d,
	     C4__QuantileSketch *q)
{
	c4__duration_stats__init(d);
	c4__quantile_sketch__init(q);
	d->has_count = 1;
	d->count = s->total;
	if (s->total == 0)
		return 0;
	d->has_sum_ns = d->has_min_ns = d->has_max_ns = 1;
	d->sum_ns = s->sum;
	d->min_ns = s->min;
	d->max_ns = s->max;
	q->has_relative_accuracy_ppm = 1;
	q->relative_accuracy_ppm = s->accuracy_ppm;
	if (s->zero_count > 0) {
		q->has_zero_count = 1;
		q->zero_count = s->zero_count;
	}
	if (s->n > 0) {
		q->index = malloc(s->n * sizeof(*q->index));
		q->count = malloc(s->n * sizeof(*q->count));
		if (q->index == NULL || q->count == NULL) {
			sketch_pb_free(q);
			return -1;
		}
		memcpy(q->index, s->index, s->n * sizeof(*q->index));
		memcpy(q->count, s->count, s->n * sizeof(*q->count));
		q->n_index = q->n_count = s->n;
	}
	d->sketch = q;
	return 0;
}

void
sketch_pb_free(C4__QuantileSketch *q)
{
	free(q->index);
	free(q->count);
	q->index = NULL;
	q->count = NULL;
	q->n_index = q->n_count = 0;
}

int
sketch_from_pb(struct sketch *s, const C4__DurationStats *d)
{
	const C4__QuantileSketch *q = d->sketch;
	uint64_t n = 0;

	if (q != NULL && q->n_index > 0 &&
	    q->relative_accuracy_ppm != s->accuracy_ppm)
		return -1;
	if (q != NULL) {
		size_t m = q->n_index < q->n_count ? q->n_index : q->n_count;

		for (size_t k = 0; k < m; k++) {
			if (sketch_bucket_add(s, q->index[k], q->count[k]) < 0)
				return -1;
			n += q->count[k];
		}
		s->zero_count += q->zero_count;
		n += q->zero_count;
	}
	if (d->has_count && d->count > n)
		n = d->count;
	if (n > 0)
		sketch_account(s, n, d->sum_ns, d->has_min_ns ? d->min_ns : 0,
			       d->max_ns);
	return 0;
}
