/*
 * mix.h - a 64-bit finalizer (splitmix64's): every input bit moves about
 * half of the output bits.  Header only, so that any library can use it
 * without linking one.
 */
#ifndef C4_MIX_H
#define C4_MIX_H

#include <stdint.h>

/* Returns x mixed: a bijection of 64-bit values, pure and thread-safe. */
static inline uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/*
 * splitmix64: advances *state by the golden-ratio increment and returns
 * the new state mixed.  One state per thread: the update is not atomic.
 */
static inline uint64_t
splitmix64(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

#endif
