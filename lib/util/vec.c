/*
 * vec.c - growing arrays.
 */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>

int
vec_reserve(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t c = *cap ? *cap : 16;
	void *p;

	if (n <= *cap)
		return 0;
	while (c < n) {
		if (c > SIZE_MAX / 2)
			return -1;
		c *= 2;
	}
	if (sz != 0 && c > SIZE_MAX / sz)
		return -1;
	p = realloc(*v, c * sz);
	if (p == NULL)
		return -1;
	*v = p;
	*cap = c;
	return 0;
}
