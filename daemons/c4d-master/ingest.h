/*
 * ingest.h - the job master's detection pipeline.
 *
 * Agents' communicator registrations and telemetry batches are converted
 * on arrival into the detection engine's records (lib/matrix) and queued
 * per host.  Every interval the master's timer calls ingest_tick(): one
 * window per host is taken (a short per-host queue absorbs the phase
 * difference between agents' clocks and the master's), the engine runs,
 * and each event it reports is turned into a c4.Event with a stable public
 * id and handed to the publish callback (store, webhooks, subscribers).
 *
 * Public ids survive master restarts: events still open at the last run
 * are adopted with ingest_adopt(); when the engine reports the same
 * anomaly again it continues under the old id (an update, not a second
 * open), and an adopted event the engine does not confirm within a grace
 * period is resolved.
 *
 * The pipeline is built in layers, each file with its own header:
 * hosts.c (hosts, their queued windows and liveness) and telemetry.c
 * (registrations and batches to engine records) at the bottom, events.c
 * (the event lifecycle) above them, views.c (what c4ctl shows) on top;
 * this file (ingest.c) ties them to the engine and runs the tick.  The
 * definitions below are shared by all of them; this header includes none
 * of theirs.
 */
#ifndef C4D_INGEST_H
#define C4D_INGEST_H

#include <stdint.h>

#include "arena.h"
#include "msg.h"

#define INGEST_QUEUE_MAX    3	  /* windows kept per host */
#define INGEST_ADOPT_GRACE  8	  /* intervals with data to re-confirm */
#define INGEST_MATRIX_CELLS 65536 /* cells in one matrix reply */
#define INGEST_RANKS_REPLY  65536 /* ranks in one ranks reply */
#define INGEST_HOSTS_MAX    (1u << 20)

struct ingest_params {
	unsigned hang_intervals; /* no completion for this long: a hang */
	unsigned node_intervals; /* no data from a host: node lost */
	unsigned persist_k;	 /* hot in k of the last n intervals */
	unsigned persist_n;
	double min_slowdown;
	uint64_t max_comms;		/* of the job; 0: no cap */
	uint64_t max_comms_per_session; /* introduced by one session */
};

struct ingest_stats {
	uint64_t registrations;
	uint64_t batches;
	uint64_t records;
	uint64_t windows_dropped; /* a host sent faster than analysed */
	uint64_t bad_records;	  /* ranks or comms the engine refused */
	uint64_t ticks;
	uint64_t events_open;
	uint64_t events_updated;
	uint64_t events_resolved;
	uint64_t analysis_us_last;
	uint64_t analysis_us_max;
	uint64_t hosts;
	uint64_t comms;
	uint64_t comms_incomplete;  /* registered ranks < nranks */
	uint64_t flights_matched;   /* ops timed by both ends (flight.h) */
	uint64_t flights_unmatched; /* one end's timing, never the other's */
	uint64_t timing_refused;    /* timing lists of unequal lengths */
	uint64_t comms_refused;	    /* new communicators beyond a cap */
};

/* Receives each event transition; ev is valid during the call only. */
typedef void (*ingest_publish_fn)(void *arg, const C4__Event *ev);
/*
 * Receives, once per interval at most, that the open event id still had
 * evidence in interval last_interval, seen at last_seen_ns: no transition,
 * nothing for webhooks.
 */
typedef void (*ingest_touch_fn)(void *arg, const char *id,
				uint64_t last_interval, uint64_t last_seen_ns);

struct ingest;

/*
 * Creates the pipeline of job (copied) with the parameters p (copied; a
 * zero field keeps the engine's default).  Every event transition goes to
 * publish(arg, ...), called from ingest_tick() only.  Returns NULL
 * without memory.
 */
struct ingest *ingest_new(const char *job, const struct ingest_params *p,
			  ingest_publish_fn publish, void *arg);

/*
 * From the next interval on, touch(arg, ...) with publish's arg learns of
 * the open events whose evidence goes on (NULL: nobody does).
 */
void ingest_set_touch(struct ingest *g, ingest_touch_fn touch);

/* Frees g and all it holds, publishing nothing; g may be NULL. */
void ingest_free(struct ingest *g);

/*
 * A registration from an agent on session link (ranks may arrive in
 * parts); see telemetry_register() (telemetry.h).  Reads m only.  Returns
 * 0, or -1 with err set for a registration to refuse (-1 with err
 * untouched: no memory).
 */
int ingest_register(struct ingest *g, const C4__CommRegister *m,
		    const void *link, struct msg_err *err);

/*
 * Sets the caps on communicators of the job and per session (0: none);
 * see telemetry_set_limits() (telemetry.h).  Known ones stay.
 */
void ingest_set_limits(struct ingest *g, uint64_t max_comms,
		       uint64_t max_comms_per_session);

/*
 * Queues a telemetry batch from the agent of host node, received on
 * session link, for the next ticks; see telemetry_batch() (telemetry.h).
 * Reads b only.  Returns 0, or -1 with err set for a batch to refuse (-1
 * with err untouched: no memory).
 */
int ingest_telemetry(struct ingest *g, const char *node,
		     const C4__TelemetryBatch *b, const void *link,
		     struct msg_err *err);

/*
 * Session link closed: its hosts are no longer linked, so an unheard one
 * is lost after the node timeout alone (no grace for a late agent), and
 * the communicators it introduced leave its cap.
 */
void ingest_unlink(struct ingest *g, const void *link);

/*
 * Runs the analysis of one interval (now_ns is CLOCK_REALTIME): takes one
 * queued window per host, runs the engine, publishes the event
 * transitions and resolves adopted events not confirmed in time.  Returns
 * 0, or -1 without memory (the interval is then not analysed).
 */
int ingest_tick(struct ingest *g, uint64_t now_ns);

/*
 * Continues an event that was open when the master last stopped; see
 * events_adopt() (events.h).  Reads ev only; publishes nothing.  Returns
 * 0, or -1 for an event that cannot be continued.
 */
int ingest_adopt(struct ingest *g, const C4__Event *ev);

/* The pipeline's counters, owned by g and updated in place. */
const struct ingest_stats *ingest_get_stats(const struct ingest *g);

/*
 * The job's summary for ADMIN_JOBS, with the agents and open events the
 * caller counts; see views_job() (views.h).  Built in the arena, which the
 * caller frees; job_id points into g.  Changes nothing in g.  Returns 0,
 * or -1 without memory.
 */
int ingest_reply_job(const struct ingest *g, uint32_t agents,
		     uint32_t open_events, struct arena *a, C4__AdminReply *r);

/*
 * Admin views of communicator comm (0: the default); see views_ranks()
 * and views_matrix() (views.h).  Built in the arena, which the caller
 * frees; strings may point into g, valid until its next call.  Change
 * nothing in g.  Return 0, or -1 without memory.
 */
int ingest_reply_ranks(const struct ingest *g, uint64_t comm, struct arena *a,
		       C4__AdminReply *r);
int ingest_reply_matrix(const struct ingest *g, uint64_t comm, struct arena *a,
			C4__AdminReply *r);

#endif
