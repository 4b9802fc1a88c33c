/*
 * sqlq.h - one SQLite database written through a queue: the event loop
 * submits operations without waiting for the disk, and a writer thread
 * commits them in order, several to a transaction (group commit).
 *
 * The durability rule.  An operation is committed when the COMMIT of the
 * transaction that holds it returns.  The database is in WAL mode, so a
 * committed operation is then in the WAL file and survives the process
 * dying (kill -9: the kernel holds the page cache).  With SQLQ_SYNC_FULL
 * every commit also waits for an fsync of the WAL, so it survives a power
 * loss or a crash of the machine too; with SQLQ_SYNC_PROCESS no commit
 * and no checkpoint calls fsync (synchronous=OFF), and a power loss may
 * lose the newest commits.  The owner is told about an operation only
 * after its commit: its done callback, then the queue's committed
 * callback, run on the loop, never earlier.  A checkpoint copies only
 * committed frames, so it never loses one.
 *
 * Failures.  A transaction that fails is rolled back and retried, with a
 * backoff from retry_ms doubling to retry_max_ms, until it succeeds or
 * the queue closes: later operations wait behind it, so commits stay in
 * order and a transient failure loses nothing.  Every failed attempt is
 * counted and logged, and the committed callback learns of it at once.
 * An operation that cannot be queued because the queue holds queue_max
 * operations is refused (sqlq_submit() says so) and counted.
 *
 * Who commits.  With SQLQ_SYNC_FULL, or inline_ops_max 0, an operation
 * goes to the writer at once.  Otherwise the loop stages a round of
 * operations and, once every ready input is handled, commits them itself
 * when they are few and small (inline_ops_max, inline_weight_max, none
 * bulk) and the writer is idle: a lone write then costs no thread
 * hand-off.  Either way one connection is used by one thread at a time
 * and transactions commit in sequence order.
 *
 * Checkpoints.  checkpoint_ms 0 leaves them to SQLite (inside a commit,
 * every 1000 pages).  Otherwise they never run inside a commit: a thread
 * on its own connection copies the WAL back every checkpoint_ms, and the
 * writer completes one when the WAL passes wal_max_frames and nothing
 * waits, so that the WAL starts over instead of growing.
 */
#ifndef C4_SQLQ_H
#define C4_SQLQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "http.h"

struct event_base;
struct sqlq;

enum sqlq_sync {
	SQLQ_SYNC_PROCESS, /* survives the process dying: synchronous=OFF */
	SQLQ_SYNC_FULL,	   /* survives power loss: synchronous=FULL */
};

/*
 * One operation.  The owner embeds it in its own structure, fills run,
 * free and optionally done, weight and bulk; the rest is the queue's.
 */
struct sqlq_op {
	struct sqlq_op *next; /* the queue's */
	uint64_t seq;	      /* the queue's: set by sqlq_submit() */
	uint64_t queued_ms;   /* the queue's: monotonic time of submission */
	/*
	 * Writes the operation inside the open transaction, with the
	 * connection of sqlq_db() and statements of sqlq_stmt(); on the
	 * writer thread or the loop.  Returns 0, or -1 to roll the whole
	 * transaction back (it is retried: run may run again).  A read
	 * that fails may record that in op and return 0.
	 */
	int (*run)(struct sqlq *q, struct sqlq_op *op);
	/* On the loop once op committed, before free; NULL: none. */
	void (*done)(struct sqlq_op *op);
	/* Frees op; on any thread, exactly once. */
	void (*free)(struct sqlq_op *op);
	size_t weight; /* rows or records it writes (inline_weight_max) */
	bool bulk;     /* touches many rows: never committed on the loop */
};

struct sqlq_conf {
	const char *path; /* copied */
	enum sqlq_sync sync;
	size_t queue_max;      /* operations not committed (at least 1) */
	int busy_ms;	       /* sqlite3_busy_timeout */
	int retry_ms;	       /* first wait after a failed transaction */
	int retry_max_ms;      /* longest wait between retries */
	int checkpoint_ms;     /* 0: SQLite's own checkpoints */
	int wal_max_frames;    /* with checkpoint_ms: the writer's bound */
	size_t inline_ops_max; /* 0: the loop never commits */
	size_t inline_weight_max;
	size_t await_ops_max; /* 0: the loop never polls for a commit */
	long spin_ns;	      /* polling bound, loop and idle writer */
	/*
	 * On the loop after commits and after failed attempts (NULL: none):
	 * seq is the highest sequence number committed, failed whether any
	 * attempt has failed since the queue opened.
	 */
	void (*committed)(uint64_t seq, bool failed, void *arg);
	void *arg;
};

struct sqlq_stats {
	uint64_t submitted;	      /* operations queued since open */
	uint64_t committed;	      /* highest sequence number committed */
	uint64_t commits;	      /* transactions committed */
	uint64_t inline_commits;      /* of those, by the loop itself */
	uint64_t failures;	      /* failed transaction attempts */
	uint64_t full;		      /* operations refused: queue full */
	uint64_t pending;	      /* operations not committed yet */
	uint64_t stall_ms;	      /* age of the oldest of those */
	bool failed;		      /* an attempt has failed since open */
	bool healthy;		      /* the last attempt succeeded */
	struct http_hist commit_hist; /* BEGIN to COMMIT, seconds */
};

/*
 * Opens (creating) conf->path on the loop base and returns the queue, or
 * NULL with err.  Nothing runs yet: the caller checks or creates its
 * schema and loads what it needs through sqlq_db() on this thread, then
 * calls sqlq_start().  conf is copied; base must outlive the queue.
 */
struct sqlq *sqlq_open(const struct sqlq_conf *conf, struct event_base *base,
		       char *err, size_t errlen);

/*
 * Puts the database in WAL mode with the configured synchronous level and
 * checkpoint policy, then starts the writer (and checkpointer) threads.
 * Operations submitted before are committed first.  0, or -1 with err;
 * after that the connection belongs to the threads: only run callbacks
 * use it.
 */
int sqlq_start(struct sqlq *q, char *err, size_t errlen);

/*
 * On the loop: queues op and returns its sequence number (1, 2, ...), or
 * 0 when the queue is full (counted; op stays the caller's).  From a
 * successful return on op belongs to the queue: the caller must not read
 * it again, except in its callbacks.
 */
uint64_t sqlq_submit(struct sqlq *q, struct sqlq_op *op);

/*
 * The connection: before sqlq_start() for the caller's thread, after it
 * only inside run callbacks.  Owned by the queue.
 */
sqlite3 *sqlq_db(struct sqlq *q);

/*
 * The prepared statement of sql, a string literal compared by address,
 * prepared once and kept until sqlq_close(); NULL on error (logged).
 * Only where sqlq_db() may be used; reset it after use.
 */
sqlite3_stmt *sqlq_stmt(struct sqlq *q, const char *sql);

/* Runs sql on the connection, where sqlq_db() may be used; 0, or -1. */
int sqlq_exec(struct sqlq *q, const char *sql);

/* Copies the counters into out; changes nothing.  On the loop. */
void sqlq_get_stats(struct sqlq *q, struct sqlq_stats *out);

/*
 * Commits everything submitted (a transaction that keeps failing is
 * given up and logged), stops the threads, closes the database and frees
 * q; NULL is fine.  The done callbacks still due do not run: their
 * operations are freed.  If sqlq_start() never ran nothing is written.
 */
void sqlq_close(struct sqlq *q);

#endif
