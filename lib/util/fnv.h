/*
 * fnv.h - 64-bit FNV-1a, for hashing names and byte strings into tables
 * and identifiers.  Header only, so that any library can use it without
 * linking one.  Not a defence against chosen keys: tables that hash
 * names from peers must bound their chains by other means.
 */
#ifndef C4_FNV_H
#define C4_FNV_H

#include <stddef.h>
#include <stdint.h>

/*
 * The start of every chain: the basis this code has always used.  It is
 * the published FNV offset basis (14695981039346656037) without its last
 * digit; it stays because keys hashed with it outlive a process (c4d's
 * stable event keys), and the prime alone gives the mixing.
 */
#define FNV1A64_INIT 1469598103934665603ull

/*
 * Folds the n bytes at p into the hash h (FNV1A64_INIT to start) and
 * returns the new hash; calls chain, so hashing a then b equals hashing
 * their concatenation.  Reads p only.
 */
static inline uint64_t
fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/*
 * Folds the bytes of the NUL-terminated string s, without its NUL, into
 * h and returns the new hash.  Reads s only.
 */
static inline uint64_t
fnv1a64_str(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

#endif
