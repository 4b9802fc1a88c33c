/*
 * telemetry.h - what agents report, turned into the detection engine's
 * input: communicator registrations become the engine's rank maps, and
 * each telemetry batch becomes one window of engine records queued on its
 * host (hosts.h).  One-way timings of 2-rank communicators go to the
 * flight matcher (flight.h) and are folded into the connections of the
 * interval being analysed.
 *
 * Sits on hosts.h; knows nothing of events or views.
 */
#ifndef C4D_TELEMETRY_H
#define C4D_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>

#include "matrix.h"
#include "flight.h"
#include "hosts.h"
#include "ingest.h"
#include "msg.h"
#include "u64map.h"

/* A communicator as registered; map and known have nranks entries. */
struct telemetry_comm {
	uint64_t hash;
	uint32_t nranks;
	uint32_t nknown;
	struct matrix_rank_loc *map;
	uint8_t *known;
	char *name;
	int added;   /* handed to the engine */
	int retired; /* destroyed by the job */
};

/* Communicators one session introduced (the per-session cap). */
struct telemetry_link {
	const void *link;
	uint64_t comms;
};

struct telemetry {
	struct hosts *hosts;	 /* borrowed: hosts are added here */
	struct matrix *m;	 /* borrowed: the engine */
	struct ingest_stats *st; /* borrowed: counters kept here */
	struct flight *fl;	 /* owned */
	struct telemetry_comm *comms;
	size_t ncomms, ccomms;
	struct u64map comm_map;
	/* Caps on communicators: of the job, and introduced per session. */
	uint64_t max_comms, max_comms_per_link;
	struct telemetry_link *links;
	size_t nlinks, clinks;
	struct u64map link_map; /* (uintptr_t)link -> index in links */
};

/*
 * Sets t up over the caller's hosts, engine and counters, which must
 * outlive it, and creates its flight matcher.  Returns 0, or -1 without
 * memory (then telemetry_free() is still safe).
 */
int telemetry_init(struct telemetry *t, struct hosts *hosts, struct matrix *m,
		   struct ingest_stats *st);

/*
 * Sets the caps on communicators: max of the job (retired ones count:
 * they keep their memory), and max_per_link introduced by one session
 * (the session whose registration first named the hash).  0 leaves a cap
 * off.  Communicators already known stay; only new ones are refused.
 */
void telemetry_set_limits(struct telemetry *t, uint64_t max,
			  uint64_t max_per_link);

/*
 * Applies one registration from an agent on session link (ranks may
 * arrive in parts): records each rank's host, GPU and NIC, and hands the
 * communicator to the engine once all its ranks are known.  A destroyed
 * communicator is retired from the engine, so its quiet ranks do not read
 * as a hang.  A new hash beyond a cap (telemetry_set_limits) is refused
 * with ERR_LIMIT and counted in comms_refused; known ones keep working.
 * Reads m only.  Returns 0, or -1 with err set for a registration that
 * contradicts an earlier one, passes a cap or that the engine refuses
 * (-1 with err untouched: out of memory).
 */
int telemetry_register(struct telemetry *t, const C4__CommRegister *m,
		       const void *link, struct msg_err *err);

/*
 * Session link closed: what it introduced no longer counts against a
 * session's cap (the communicators stay, and count for the job).
 */
void telemetry_unlink(struct telemetry *t, const void *link);

/*
 * Queues the batch b from the agent of host node (b->host, when set,
 * names the host instead) as one window of engine records on that host;
 * the oldest window goes when the host's queue is full.  Timings go to the
 * flight matcher.  link names the session it came on (the host counts
 * as linked to it until hosts_unlink()).  Reads b only.  Returns 0, or
 * -1 with err set for a batch without a host name (-1 with err
 * untouched: out of memory).
 */
int telemetry_batch(struct telemetry *t, const char *node,
		    const C4__TelemetryBatch *b, const void *link,
		    struct msg_err *err);

/*
 * Folds into the transfer times of conn[0..n), the job's connections of
 * the interval about to be analysed, the path queueing both ends' timings
 * show, for 2-rank communicators (those timings are then consumed).
 * Updates the flight counters; changes nothing else.
 */
void telemetry_add_flights(struct telemetry *t, struct matrix_conn *conn,
			   size_t n);

/* The communicator with that hash, or NULL; valid until the next one. */
const struct telemetry_comm *telemetry_comm_find(const struct telemetry *t,
						 uint64_t hash);

/* Communicators with ranks not yet registered. */
uint64_t telemetry_comms_incomplete(const struct telemetry *t);

/* Frees the communicators and the flight matcher, not what is borrowed. */
void telemetry_free(struct telemetry *t);

#endif
