/*
 * test_arena.c - the region allocator: zeroed, aligned allocations that
 * stay put while more are made, requests above a block, strings, the
 * overflow check of arena_calloc(), and reset keeping one block.
 */
#include <check.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "tmain.h"

START_TEST(test_alloc_zeroed_aligned)
{
	struct arena a;
	unsigned char *p[100];

	arena_init(&a);
	for (int i = 0; i < 100; i++) {
		p[i] = arena_alloc(&a, (size_t)i * 37 + 1);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_uint_eq((uintptr_t)p[i] % alignof(max_align_t), 0);
		for (int k = 0; k < i * 37 + 1; k++)
			ck_assert_uint_eq(p[i][k], 0);
		memset(p[i], i, (size_t)i * 37 + 1);
	}
	/* Later allocations never overlap earlier ones. */
	for (int i = 0; i < 100; i++)
		for (int k = 0; k < i * 37 + 1; k++)
			ck_assert_uint_eq(p[i][k], (unsigned char)i);
	ck_assert_uint_ge(a.total, 100 * 99 / 2 * 37);
	arena_free(&a);
	ck_assert_ptr_null(a.head);
	ck_assert_uint_eq(a.total, 0);
}
END_TEST

START_TEST(test_large_and_reset)
{
	struct arena a;
	char *big, *s;

	arena_init(&a);
	ck_assert_ptr_nonnull(arena_alloc(&a, 16));
	big = arena_alloc(&a, 3 * ARENA_BLOCK);
	ck_assert_ptr_nonnull(big);
	big[3 * ARENA_BLOCK - 1] = 'x';
	ck_assert_uint_eq(a.total, 4 * ARENA_BLOCK);
	/* Reset keeps the newest block (the large one) only. */
	arena_reset(&a);
	ck_assert_uint_eq(a.total, 3 * ARENA_BLOCK);
	ck_assert_uint_eq(a.used, 0);
	s = arena_alloc(&a, 8);
	ck_assert_ptr_eq(s, big);
	ck_assert_int_eq(s[0], 0);
	arena_free(&a);
}
END_TEST

START_TEST(test_strings_and_calloc)
{
	struct arena a;
	char *d, *f;
	uint32_t *v;

	arena_init(&a);
	d = arena_strdup(&a, "mlx5_0");
	f = arena_printf(&a, "%s/%u", "job", 42u);
	ck_assert_str_eq(d, "mlx5_0");
	ck_assert_str_eq(f, "job/42");
	v = arena_calloc(&a, 10, sizeof(*v));
	ck_assert_ptr_nonnull(v);
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(v[i], 0);
	ck_assert_ptr_null(arena_calloc(&a, SIZE_MAX / 2, 4));
	/* The strings were not disturbed by what came after. */
	ck_assert_str_eq(d, "mlx5_0");
	ck_assert_str_eq(f, "job/42");
	arena_free(&a);
}
END_TEST

TMAIN("arena", test_alloc_zeroed_aligned, test_large_and_reset,
      test_strings_and_calloc)
