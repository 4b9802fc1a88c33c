/*
 * mem.c: allocation wrappers that count the engine's live and peak bytes.
 * Each block carries its size in a 16-byte header so frees can be counted.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "matrix_int.h"

static _Atomic size_t mem_cur;
static _Atomic size_t mem_peak;

static void
mem_account(size_t add, size_t sub)
{
	size_t now, pk;

	if (add >= sub)
		now = atomic_fetch_add(&mem_cur, add - sub) + (add - sub);
	else
		now = atomic_fetch_sub(&mem_cur, sub - add) - (sub - add);
	pk = atomic_load(&mem_peak);
	while (now > pk && !atomic_compare_exchange_weak(&mem_peak, &pk, now))
		;
}

/* Allocate size bytes (counted); NULL on failure or size 0. */
void *
mem_alloc(size_t size)
{
	unsigned char *b;

	if (size == 0 || size > SIZE_MAX - MATRIX_MEM_HDR)
		return NULL;
	b = malloc(size + MATRIX_MEM_HDR);
	if (b == NULL)
		return NULL;
	memcpy(b, &size, sizeof(size));
	mem_account(size, 0);
	return b + MATRIX_MEM_HDR;
}

/* Allocate n * size zeroed bytes (counted); NULL on overflow or failure. */
void *
mem_calloc(size_t n, size_t size)
{
	void *p;

	if (n != 0 && size > SIZE_MAX / n)
		return NULL;
	p = mem_alloc(n * size);
	if (p != NULL)
		memset(p, 0, n * size);
	return p;
}

/* Resize a block from mem_alloc (or NULL); the old block survives failure. */
void *
mem_realloc(void *p, size_t size)
{
	unsigned char *b, *nb;
	size_t old;

	if (p == NULL)
		return mem_alloc(size);
	if (size == 0 || size > SIZE_MAX - MATRIX_MEM_HDR)
		return NULL;
	b = (unsigned char *)p - MATRIX_MEM_HDR;
	memcpy(&old, b, sizeof(old));
	nb = realloc(b, size + MATRIX_MEM_HDR);
	if (nb == NULL)
		return NULL;
	memcpy(nb, &size, sizeof(size));
	mem_account(size, old);
	return nb + MATRIX_MEM_HDR;
}

/* Free a block from mem_alloc (counted); NULL is fine. */
void
mem_free(void *p)
{
	unsigned char *b;
	size_t old;

	if (p == NULL)
		return;
	b = (unsigned char *)p - MATRIX_MEM_HDR;
	memcpy(&old, b, sizeof(old));
	mem_account(0, old);
	free(b);
}

/*
 * Make *p hold at least need elements of elem bytes, doubling *cap. The
 * added tail is zeroed. Returns 0, or -1 with *p and *cap unchanged.
 */
int
mem_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint64_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		return -1;
	np = mem_realloc(*p, (size_t)ncap * elem);
	if (np == NULL)
		return -1;
	memset((char *)np + (size_t)*cap * elem, 0,
	       (size_t)(ncap - *cap) * elem);
	*p = np;
	*cap = (uint32_t)ncap;
	return 0;
}

/*
 * u64map_put, with the change of h's table size counted as the engine's
 * memory. 0, or -1 without memory (h unchanged).
 */
int
mem_map_put(struct u64map *h, uint64_t key, uint32_t val)
{
	size_t before = u64map_bytes(h);

	if (u64map_put(h, key, val) < 0)
		return -1;
	mem_account(u64map_bytes(h), before);
	return 0;
}

/* u64map_free, uncounting h's table; h is zeroed, not freed. */
void
mem_map_free(struct u64map *h)
{
	mem_account(0, u64map_bytes(h));
	u64map_free(h);
}

/* Live and peak bytes allocated by the engine (all engines together). */
void
matrix_mem_usage(size_t *cur, size_t *peak)
{
	if (cur != NULL)
		*cur = atomic_load(&mem_cur);
	if (peak != NULL)
		*peak = atomic_load(&mem_peak);
}
