/*
 * vec.h - growing arrays.
 */
#ifndef C4_VEC_H
#define C4_VEC_H

#include <stddef.h>

/*
 * Makes the array *v (*cap elements of size sz) hold at least n elements,
 * doubling from 16; the contents are kept.  Returns 0, or -1 (ENOMEM or
 * overflow) with *v and *cap unchanged.
 */
int vec_reserve(void **v, size_t *cap, size_t n, size_t sz);

#endif
