/*
 * jobs.c - job names and ids (see jobs.h).  Names are in an array indexed
 * by id - 1; an open-addressing index of ids keyed by the names' FNV-1a
 * hash finds a name's id, kept at most half full.
 */
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "jobs.h"
#include "store.h"

#define JOBS_SLOTS_MIN 64u

struct jobs {
	struct c4p_store *store;
	size_t max;
	char **names; /* [id - 1] */
	size_t n, cap;
	uint32_t *slots; /* ids; 0: empty */
	size_t nslots;	 /* a power of two */
};

/* The slot holding name, or the empty slot where it would go. */
static size_t
jobs_slot(const struct jobs *j, const char *name)
{
	size_t mask = j->nslots - 1,
	       i = (size_t)fnv1a64_str(FNV1A64_INIT, name) & mask;

	while (j->slots[i] != 0 && strcmp(j->names[j->slots[i] - 1], name))
		i = (i + 1) & mask;
	return i;
}

/* Doubles the index; 0 or -1. */
static int
jobs_grow(struct jobs *j)
{
	uint32_t *old = j->slots;
	size_t nold = j->nslots;

	j->slots = calloc(nold * 2, sizeof(*j->slots));
	if (j->slots == NULL) {
		j->slots = old;
		return -1;
	}
	j->nslots = nold * 2;
	for (size_t i = 0; i < nold; i++)
		if (old[i] != 0)
			j->slots[jobs_slot(j, j->names[old[i] - 1])] = old[i];
	free(old);
	return 0;
}

struct jobs *
jobs_new(struct c4p_store *store, size_t max)
{
	struct jobs *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->store = store;
	j->max = max;
	j->nslots = JOBS_SLOTS_MIN;
	j->slots = calloc(j->nslots, sizeof(*j->slots));
	if (j->slots == NULL) {
		free(j);
		return NULL;
	}
	return j;
}

void
jobs_free(struct jobs *j)
{
	if (j == NULL)
		return;
	for (size_t i = 0; i < j->n; i++)
		free(j->names[i]);
	free(j->names);
	free(j->slots);
	free(j);
}

/* Appends name as job n + 1 at slot (from jobs_slot); its id, or 0. */
static uint64_t
jobs_add(struct jobs *j, const char *name)
{
	char *copy;

	if (j->n >= j->max)
		return 0;
	if ((j->n + 1) * 2 > j->nslots && jobs_grow(j) < 0)
		return 0;
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 16;
		char **g = realloc(j->names, cap * sizeof(*g));

		if (g == NULL)
			return 0;
		j->names = g;
		j->cap = cap;
	}
	copy = strdup(name);
	if (copy == NULL)
		return 0;
	j->names[j->n++] = copy;
	j->slots[jobs_slot(j, name)] = (uint32_t)j->n;
	return j->n;
}

uint64_t
jobs_id(struct jobs *j, const char *name, int create)
{
	uint64_t id = j->slots[jobs_slot(j, name)];

	if (id != 0 || !create)
		return id;
	id = jobs_add(j, name);
	if (id != 0 && j->store != NULL)
		store_job(j->store, id, name);
	return id;
}

int
jobs_restore(void *arg, uint64_t id, const char *name)
{
	struct jobs *j = arg;

	if (id != j->n + 1 || j->slots[jobs_slot(j, name)] != 0)
		return -1;
	return jobs_add(j, name) == id ? 0 : -1;
}

const char *
jobs_name(const struct jobs *j, uint64_t id)
{
	return id >= 1 && id <= j->n ? j->names[id - 1] : "?";
}

size_t
jobs_count(const struct jobs *j)
{
	return j->n;
}
