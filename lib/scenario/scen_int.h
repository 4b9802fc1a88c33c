/* scen_int.h: internals of the scenario generator. Not installed. */
#ifndef SCEN_INT_H
#define SCEN_INT_H

#include <stdint.h>

#include "c4scenario.h"

struct rng {
	uint64_t s[4];
	double spare;
	int have;
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
double rng_unif(struct rng *r);
uint32_t rng_below(struct rng *r, uint32_t n);
double rng_norm(struct rng *r);
double rng_lognorm(struct rng *r, double sigma);
uint32_t rng_poisson(struct rng *r, double lambda);

#endif /* SCEN_INT_H */
