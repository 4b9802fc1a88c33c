/*
 * events.h - the lifecycle of the events the detection engine reports:
 * each engine event becomes a c4.Event with a public id that survives
 * master restarts, published when it opens, each time it is updated and
 * when it resolves.
 *
 * An event's public id is "<stable key>-<ms of opening>", the stable key
 * hashing the kind and each suspect's role, host and NIC names, GPU and
 * port (the engine's own id depends on the order hosts first reported).
 * Events open at the last stop are adopted: when the engine reports the
 * same anomaly again it continues under the old id (an update, not a
 * second open); one it does not confirm within INGEST_ADOPT_GRACE
 * intervals with data is resolved.
 *
 * Sits on hosts.h (names of suspects); knows nothing of telemetry or views.
 */
#ifndef C4D_EVENTS_H
#define C4D_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "matrix.h"
#include "hosts.h"
#include "ingest.h"

/* An event open now (or adopted and not yet confirmed). */
struct events_entry {
	uint64_t cid;  /* the engine's id (0: adopted, not seen yet) */
	uint64_t skey; /* stable across restarts: kind and suspects' names */
	char id[48];   /* public id */
	uint64_t revision;
	uint64_t first_seen_ns;
	uint64_t adopted_at; /* data tick of adoption; 0 if not adopted */
	C4__EventKind kind;
	uint64_t last_interval; /* the newest with evidence, as published */
	/* What the last transition said, for a resolution without the engine */
	C4__EventDomain domain;
	C4__Action action_type;
	char *target; /* owned; NULL: none */
};

struct events {
	const char *job;	   /* borrowed */
	const struct hosts *hosts; /* borrowed: suspects' names */
	struct ingest_stats *st;   /* borrowed: event counters kept here */
	ingest_publish_fn publish;
	/*
	 * Called with publish's arg when an open event's evidence goes on
	 * without a transition (events_seen()); NULL: nobody is told.
	 */
	ingest_touch_fn touch;
	void *arg;
	struct events_entry *v;
	size_t n, cap;
	uint64_t hot_comm; /* of the newest communication event opened */
};

/*
 * Sets evs up: transitions go to publish(arg, ...) for job; job, hosts and
 * st are borrowed and must outlive evs.  Nothing is allocated yet.
 */
void events_init(struct events *evs, const char *job, const struct hosts *hosts,
		 struct ingest_stats *st, ingest_publish_fn publish, void *arg);

/*
 * Applies one event of the engine at now_ns (CLOCK_REALTIME): an opening
 * publishes OPEN under a new public id, or UPDATED when it matches an
 * adopted event; an update publishes UPDATED; a resolution publishes
 * RESOLVED and forgets the event.  Events this pipeline never opened are
 * ignored.  Reads e only; without memory an opening is dropped.
 */
void events_apply(struct events *evs, const struct matrix_event *e,
		  uint64_t now_ns);

/*
 * Resolves the adopted events the engine did not confirm within
 * INGEST_ADOPT_GRACE of the data_ticks (intervals in which some host
 * reported); tick is the interval the resolution names.
 */
void events_expire(struct events *evs, uint64_t data_ticks, uint64_t tick,
		   uint64_t now_ns);

/*
 * Adopts ev, open when the master last stopped, at data tick data_ticks:
 * keeps its id, revision, first sighting, kind, last interval, domain,
 * typed action and target (copied; ev is only read).  Publishes nothing.
 * Returns 0, or -1 for an id this pipeline did not make, one adopted already,
 * or no memory.
 */
int events_adopt(struct events *evs, const C4__Event *ev, uint64_t data_ticks);

/*
 * Notes that the open engine event e still has evidence: when its
 * last_interval is newer than the one published or last noted, evs->touch
 * is called with the public id, that interval and now_ns.  Publishes no
 * transition (the engine emits UPDATED when the event changes); unknown
 * events are ignored.
 */
void events_seen(struct events *evs, const struct matrix_event *e,
		 uint64_t now_ns);

/* events_seen() for every event the engine m holds open now. */
void events_refresh(struct events *evs, const struct matrix *m,
		    uint64_t now_ns);

/*
 * The communicator of the newest communication event opened, while any
 * event is open; 0 otherwise.
 */
uint64_t events_hot_comm(const struct events *evs);

/* Frees the open events without publishing anything. */
void events_free(struct events *evs);

#endif
