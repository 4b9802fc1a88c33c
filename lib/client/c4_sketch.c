/*
 * c4_sketch.c - the sketch calls of libc4client's public interface: thin
 * wrappers of lib/proto/sketch.c under the c4_ prefix, so that a CCL
 * linking the library sees no unprefixed symbol.  A c4_sketch is the
 * library's struct sketch, allocated here.
 */
#include <stdlib.h>

#include "c4client.h"

c4_sketch *
c4_sketch_new(uint32_t accuracy_ppm)
{
	struct sketch *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	if (sketch_init(s, accuracy_ppm) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

void
c4_sketch_free(c4_sketch *s)
{
	if (s == NULL)
		return;
	sketch_free(s);
	free(s);
}

void
c4_sketch_reset(c4_sketch *s)
{
	sketch_reset(s);
}

int
c4_sketch_add(c4_sketch *s, uint64_t ns)
{
	return sketch_add(s, ns);
}

int
c4_sketch_add_n(c4_sketch *s, uint64_t ns, uint64_t n)
{
	return sketch_add_n(s, ns, n);
}

int
c4_sketch_merge(c4_sketch *dst, const c4_sketch *src)
{
	return sketch_merge(dst, src);
}

double
c4_sketch_quantile(const c4_sketch *s, double q)
{
	return sketch_quantile(s, q);
}

uint64_t
c4_sketch_count(const c4_sketch *s)
{
	return s->total;
}
