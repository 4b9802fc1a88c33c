/*
 * jobs.h - the c4p-master's job table: a job's name gets a small id (1, 2,
 * ...) the first time it is seen, stored so that it survives restarts.
 * Requests are keyed by the id.  A hash index over the names makes a
 * lookup constant time on every path request.
 */
#ifndef C4P_JOBS_H
#define C4P_JOBS_H

#include <stddef.h>
#include <stdint.h>

struct c4p_store;
struct jobs;

/*
 * An empty table writing new jobs to store (NULL: writes nothing, for
 * tests); at most max jobs.  NULL when out of memory.
 */
struct jobs *jobs_new(struct c4p_store *store, size_t max);
/* Frees the table and its names; NULL is ignored. */
void jobs_free(struct jobs *j);

/*
 * The id of the job named name (copied); when it has none and create is
 * set, a new id, written to the store.  0 when unknown (create unset),
 * when the table is full, or out of memory.
 */
uint64_t jobs_id(struct jobs *j, const char *name, int create);

/*
 * Takes a job read back from the store: id must be the next one (1 for
 * the first).  0, or -1 (out of order, a name seen twice, out of memory).
 * Nothing is written.  Its signature fits store_restore.job.
 */
int jobs_restore(void *j, uint64_t id, const char *name);

/* The name of job id, or "?" when there is none; owned by the table. */
const char *jobs_name(const struct jobs *j, uint64_t id);

/* How many jobs the table holds. */
size_t jobs_count(const struct jobs *j);

#endif
