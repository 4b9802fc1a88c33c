/*
 * views.h - what c4ctl shows of the detection pipeline (ADMIN_JOBS,
 * ADMIN_RANKS and ADMIN_MATRIX): built from the pipeline's state, never
 * changing it.
 *
 * The top layer: reads hosts.h, telemetry.h and events.h; nothing below
 * includes it.
 */
#ifndef C4D_VIEWS_H
#define C4D_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "matrix.h"
#include "events.h"
#include "hosts.h"
#include "msg.h"
#include "telemetry.h"

/* What the views read; all of it borrowed from the pipeline. */
struct views_src {
	const struct hosts *hosts;
	const struct telemetry *tele;
	const struct events *events;
	const struct matrix_conn *last; /* the last analysed interval's */
	size_t nlast;
	uint64_t interval; /* the last analysed */
};

/*
 * Fills r->jobs with the one summary of job (ADMIN_JOBS): the agents and
 * open events the caller counts, and the ranks (GPUs known to run one),
 * communicators and last interval of the pipeline.  Allocates in a only;
 * r->jobs[0]->job_id points to job.  Returns 0, or -1 without memory.
 */
int views_job(const struct views_src *s, const char *job, uint32_t agents,
	      uint32_t open_events, struct arena *a, C4__AdminReply *r);

/*
 * Fills r->ranks with where each registered rank of communicator comm runs
 * (rank, host, GPU, NIC, port; at most INGEST_RANKS_REPLY).  comm 0 names
 * the default communicator: the one the newest open communication event
 * is about, else the one with most network connections in the last
 * interval.  Everything is allocated in a (the caller frees it with the
 * arena); strings point into s's hosts.  An unknown communicator leaves r
 * empty.  Returns 0, or -1 without memory.
 */
int views_ranks(const struct views_src *s, uint64_t comm, struct arena *a,
		C4__AdminReply *r);

/*
 * Fills r->cells with the delay matrix of communicator comm (0: the
 * default, as views_ranks()) as of the last interval: per connection the
 * median transfer time per byte, its transport's median as baseline, the
 * log ratio as score, and hot above 1.5 times the baseline; at most
 * INGEST_MATRIX_CELLS cells.  Allocates in a only.  Returns 0, or -1
 * without memory.
 */
int views_matrix(const struct views_src *s, uint64_t comm, struct arena *a,
		 C4__AdminReply *r);

#endif
