/*
 * test_mem.c - the engine's counted allocations: live bytes rise and
 * fall with alloc, realloc and free, the peak stays at its highest,
 * mem_grow() doubles from 16 zeroing the tail, and a map's table is
 * counted while it lives.
 */
#include <check.h>
#include <stdint.h>

#include "matrix_int.h"
#include "tmain.h"

START_TEST(test_counts)
{
	size_t cur0, cur, peak;
	uint32_t *v = NULL, cap = 0;
	unsigned char *p;
	struct u64map h = {0};

	matrix_mem_usage(&cur0, &peak);
	p = mem_alloc(1000);
	ck_assert_ptr_nonnull(p);
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0 + 1000);
	ck_assert_uint_ge(peak, cur);
	p = mem_realloc(p, 3000);
	ck_assert_ptr_nonnull(p);
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0 + 3000);
	p = mem_realloc(p, 10);
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0 + 10);
	ck_assert_uint_ge(peak, cur0 + 3000);
	mem_free(p);
	mem_free(NULL);
	ck_assert_ptr_null(mem_alloc(0));
	ck_assert_ptr_null(mem_calloc(SIZE_MAX / 2, 4));
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0);

	ck_assert_int_eq(mem_grow((void **)&v, &cap, 3, sizeof(*v)), 0);
	ck_assert_uint_eq(cap, 16);
	v[15] = 9;
	ck_assert_int_eq(mem_grow((void **)&v, &cap, 40, sizeof(*v)), 0);
	ck_assert_uint_eq(cap, 64);
	ck_assert_uint_eq(v[15], 9);
	for (uint32_t i = 16; i < 64; i++)
		ck_assert_uint_eq(v[i], 0);
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0 + 64 * sizeof(*v));
	mem_free(v);

	for (uint64_t k = 1; k <= 100; k++)
		ck_assert_int_eq(mem_map_put(&h, k, (uint32_t)k), 0);
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0 + u64map_bytes(&h));
	mem_map_free(&h);
	matrix_mem_usage(&cur, &peak);
	ck_assert_uint_eq(cur, cur0);
}
END_TEST

TMAIN("matrix-mem", test_counts)
