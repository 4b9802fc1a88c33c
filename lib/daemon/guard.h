/*
 * guard.h - what the server core remembers about each source address:
 * how many of its connections have not authenticated yet, how many of its
 * hellos failed lately, when its next hello may be checked, and when it
 * was last logged about.
 *
 * A source is the peer's IP address without the port (all unix-socket
 * peers are one source).  The table holds at most GUARD_SOURCES_MAX
 * sources; when it is full, the source seen longest ago that has no
 * connection waiting for its hello is forgotten.  Times are milliseconds
 * of a monotonic clock, given by the caller, so the module is easy to
 * test.  Not thread-safe: the server's loop owns it.
 */
#ifndef C4_GUARD_H
#define C4_GUARD_H

#include <stdint.h>
#include <sys/socket.h>

#define GUARD_SOURCES_MAX 65536u /* sources remembered at once */
/* Failed hellos remembered; a higher count would not change the delay. */
#define GUARD_FAILS_MAX 64u

struct guard;

/* The throttling parameters, from the server's configuration. */
struct guard_limits {
	int64_t per_source; /* connections awaiting hello per source */
	int64_t fail_free;  /* failed hellos before the delay starts */
	int64_t delay_ms;   /* first delay; it doubles per failure */
	int64_t delay_max_ms;
	int64_t forget_ms;	 /* a source quiet this long starts afresh */
	int64_t log_interval_ms; /* one log line per source per interval */
};

/* A new, empty table, or NULL without memory.  Free with guard_free(). */
struct guard *guard_new(void);
/* Frees g and everything it remembers; NULL does nothing. */
void guard_free(struct guard *g);

/*
 * The source key of a peer address: a hash of its IP address (the port
 * left out); every unix-socket peer gets the same key.  Changes nothing.
 */
uint64_t guard_key(const struct sockaddr *sa, socklen_t salen);

/*
 * Counts a new unauthenticated connection from src: 0, or -1 when src
 * already has lim->per_source of them (nothing is counted then) or the
 * table is out of memory.
 */
int guard_open(struct guard *g, uint64_t src, const struct guard_limits *lim,
	       int64_t now);
/* One connection from src authenticated or closed before it did. */
void guard_done(struct guard *g, uint64_t src);

/*
 * A complete hello from src waits to be checked: returns 0 when it may be
 * checked now, the milliseconds it must wait for its turn (its turn is
 * then reserved), or -1 when its turn would come later than
 * lim->delay_max_ms from now (the hello is refused unchecked and nothing
 * is reserved).  Until lim->fail_free hellos of src failed, every hello is
 * checked at once; after that at most one per delay, the delay doubling
 * with each failure up to lim->delay_max_ms.
 */
int64_t guard_turn(struct guard *g, uint64_t src,
		   const struct guard_limits *lim, int64_t now);
/*
 * Records a failed hello from src; returns the milliseconds its reply is
 * to be held back (0 while src is within lim->fail_free).
 */
int64_t guard_failed(struct guard *g, uint64_t src,
		     const struct guard_limits *lim, int64_t now);

/*
 * May a warning about src be logged now?  1 at most once per
 * lim->log_interval_ms per source, with *suppressed set to the lines
 * left out since the last one; 0 otherwise (the line is counted as
 * suppressed).
 */
int guard_log(struct guard *g, uint64_t src, const struct guard_limits *lim,
	      int64_t now, uint64_t *suppressed);

/* Sources remembered now (a gauge). */
uint64_t guard_sources(const struct guard *g);

#endif
