/*
 * rng.c: the scenario generator's random numbers: xoshiro256** seeded
 * through splitmix64, with uniform, normal, lognormal and Poisson draws.
 * Deterministic for a seed on every platform.
 */
#include <math.h>

#include "mix.h"
#include "scen_int.h"

void
rng_seed(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
	r->have = 0;
}

static uint64_t
rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: the next 64 random bits. */
uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rng_rotl(s[3], 45);
	return out;
}

/* Uniform in [0, 1). */
double
rng_unif(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n); n > 0. */
uint32_t
rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Standard normal (Marsaglia polar method, second value cached). */
double
rng_norm(struct rng *r)
{
	double u, v, q, f;

	if (r->have) {
		r->have = 0;
		return r->spare;
	}
	do {
		u = 2.0 * rng_unif(r) - 1.0;
		v = 2.0 * rng_unif(r) - 1.0;
		q = u * u + v * v;
	} while (q >= 1.0 || q == 0.0);
	f = sqrt(-2.0 * log(q) / q);
	r->spare = v * f;
	r->have = 1;
	return u * f;
}

/* exp(N(0, sigma^2)): a lognormal factor with median 1. */
double
rng_lognorm(struct rng *r, double sigma)
{
	return exp(sigma * rng_norm(r));
}

/* Poisson(lambda) for the small lambdas used here (inversion). */
uint32_t
rng_poisson(struct rng *r, double lambda)
{
	double l = exp(-lambda), p = rng_unif(r);
	uint32_t k = 0;

	if (lambda > 30.0) {
		double x = lambda + sqrt(lambda) * rng_norm(r);
		return x > 0 ? (uint32_t)x : 0;
	}
	while (p > l) {
		p *= rng_unif(r);
		k++;
	}
	return k;
}
