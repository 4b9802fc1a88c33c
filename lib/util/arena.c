/*
 * arena.c - region allocator.
 */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
	struct arena_block *next;
	size_t size;
	max_align_t data[];
};

void
arena_init(struct arena *a)
{
	memset(a, 0, sizeof(*a));
}

void *
arena_alloc(struct arena *a, size_t n)
{
	void *p = arena_alloc_raw(a, n);

	if (p != NULL)
		memset(p, 0, n);
	return p;
}

void *
arena_alloc_raw(struct arena *a, size_t n)
{
	const size_t align = sizeof(max_align_t);
	struct arena_block *b;
	size_t need;
	void *p;

	n = (n + align - 1) / align * align;
	if (n == 0)
		n = align;
	if (a->head == NULL || a->used + n > a->head->size) {
		need = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		b = malloc(sizeof(*b) + need);
		if (b == NULL)
			return NULL;
		b->size = need;
		b->next = a->head;
		a->head = b;
		a->used = 0;
		a->total += need;
	}
	p = (char *)a->head->data + a->used;
	a->used += n;
	return p;
}

void
arena_reset(struct arena *a)
{
	struct arena_block *b;

	if (a->head == NULL)
		return;
	b = a->head->next;
	while (b != NULL) {
		struct arena_block *next = b->next;

		a->total -= b->size;
		free(b);
		b = next;
	}
	a->head->next = NULL;
	a->used = 0;
}

void *
arena_calloc(struct arena *a, size_t n, size_t sz)
{
	if (sz != 0 && n > SIZE_MAX / sz)
		return NULL;
	return arena_alloc(a, n * sz);
}

char *
arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc(a, n);

	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

char *
arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = arena_alloc(a, (size_t)n + 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
arena_free(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b != NULL) {
		struct arena_block *next = b->next;

		free(b);
		b = next;
	}
	arena_init(a);
}
