/*
 * test_vec.c - vec_reserve(): capacity doubles from 16, contents survive
 * growth, a request within the capacity changes nothing, and an
 * overflowing request fails leaving the array as it was.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "tmain.h"
#include "vec.h"

START_TEST(test_grow)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	ck_assert_int_eq(vec_reserve((void **)&v, &cap, 1, sizeof(*v)), 0);
	ck_assert_uint_eq(cap, 16);
	for (size_t i = 0; i < 16; i++)
		v[i] = i * i;
	ck_assert_int_eq(vec_reserve((void **)&v, &cap, 17, sizeof(*v)), 0);
	ck_assert_uint_eq(cap, 32);
	ck_assert_int_eq(vec_reserve((void **)&v, &cap, 100, sizeof(*v)), 0);
	ck_assert_uint_eq(cap, 128);
	for (size_t i = 0; i < 16; i++)
		ck_assert_uint_eq(v[i], i * i);
	ck_assert_int_eq(vec_reserve((void **)&v, &cap, 128, sizeof(*v)), 0);
	ck_assert_uint_eq(cap, 128);
	free(v);
}
END_TEST

START_TEST(test_overflow)
{
	uint64_t *v = NULL, *old;
	size_t cap = 0;

	ck_assert_int_eq(vec_reserve((void **)&v, &cap, 4, sizeof(*v)), 0);
	old = v;
	ck_assert_int_eq(vec_reserve((void **)&v, &cap, SIZE_MAX, 1), -1);
	ck_assert_int_eq(
		vec_reserve((void **)&v, &cap, SIZE_MAX / 8 + 1, sizeof(*v)),
		-1);
	ck_assert_ptr_eq(v, old);
	ck_assert_uint_eq(cap, 16);
	free(v);
}
END_TEST

TMAIN("vec", test_grow, test_overflow)
