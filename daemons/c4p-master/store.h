/*
 * store.h - the c4p-master's SQLite store (state_dir/c4p-master.db): jobs,
 * requests and their QPs, cable health and the catalog learnt from probes.
 * Every write is an operation with a sequence number; the owner learns
 * through its committed() callback, on the loop, up to which number the
 * writes are on disk (see store.c for who commits when).  The store knows
 * nothing of the rest of the daemon: loading hands rows to the caller.
 */
#ifndef C4P_STORE_H
#define C4P_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "catalog.h"
#include "http.h"

#define STORE_DB_NAME "c4p-master.db"

struct c4p_store;
struct event_base;

/*
 * Opens (creating) dir/c4p-master.db and its tables on the loop base;
 * committed(seq, arg) runs on the loop after each commit.  NULL with err
 * on failure.  WAL mode and the threads start with store_load().
 */
struct c4p_store *store_open(const char *dir, bool sync_full,
			     struct event_base *base,
			     void (*committed)(uint64_t seq, void *arg),
			     void *arg, char *err, size_t errlen);

/* Where store_load() puts what the file holds. */
struct store_restore {
	/*
	 * Called for each stored job in id order (ids 1, 2, ...); returns 0,
	 * or -1 to refuse the row (the load fails).
	 */
	int (*job)(void *arg, uint64_t id, const char *name);
	void *arg;
	struct catalog *cat; /* gets the entries learnt from probes */
	struct alloc *alloc; /* gets the requests, then the cables down */
};

/*
 * Loads everything into to (jobs, catalog entries, allocations, cable
 * health) before the loop runs, then puts the file in WAL mode and starts
 * the queue's writer and checkpointer threads (sqlq_start()); 0, or -1
 * with err.  Cables stored down are set down again in
 * to->alloc, and any QP that moves is written back.
 */
int store_load(struct c4p_store *s, const struct store_restore *to, char *err,
	       size_t errlen);

/*
 * Each queues one write and returns the sequence number it will commit
 * under.  They copy what they are given.  Out of memory the store fails
 * (the daemon stops) rather than lose a write.
 */
uint64_t store_job(struct c4p_store *s, uint64_t id, const char *name);
uint64_t store_put(struct c4p_store *s, const char *key, uint64_t job,
		   uint64_t expires, const struct alloc_record *recs, size_t n);
uint64_t store_renew(struct c4p_store *s, const char *key, uint64_t expires);
uint64_t store_del(struct c4p_store *s, const char *key);
uint64_t store_del_job(struct c4p_store *s, uint64_t job);
/* Deletes every request whose lease ended at or before now. */
uint64_t store_expire(struct c4p_store *s, uint64_t now);
uint64_t store_move(struct c4p_store *s, const struct alloc_change *ch);
uint64_t store_link(struct c4p_store *s, uint32_t link, bool up);
uint64_t store_catalog(struct c4p_store *s, const struct catalog_entry *e);

struct store_stats {
	uint64_t commits;	      /* transactions committed */
	uint64_t inline_commits;      /* of those, by the loop itself */
	uint64_t ops;		      /* operations queued since start */
	uint64_t committed;	      /* of those, committed */
	bool failed;		      /* a write failed (the daemon stops) */
	struct http_hist commit_hist; /* BEGIN to COMMIT, seconds */
};
/* Copies the counters into st; changes nothing. */
void store_get_stats(const struct c4p_store *s, struct store_stats *st);

/* Writes what is queued, stops the threads, closes the database; NULL ok. */
void store_close(struct c4p_store *s);

#endif
