/*
 * hosts.h - the hosts of a job as the master knows them: their names,
 * NICs and GPUs, the windows of telemetry each host's agent sent and the
 * master has not analysed yet, and which hosts were heard in an interval
 * (the detection engine declares a host lost when it goes unheard).
 *
 * The bottom layer of the pipeline: it knows nothing of communicators,
 * events or views.  Host ids are indexes in the table and never change:
 * a host, once known, stays for the life of the pipeline.
 */
#ifndef C4D_HOSTS_H
#define C4D_HOSTS_H

#include <stddef.h>
#include <stdint.h>

#include "matrix.h"
#include "ingest.h"
#include "u64map.h"

/* One host's interval of engine records, filled by telemetry.c. */
struct hosts_window {
	struct matrix_coll *coll;
	size_t ncoll, ccoll;
	struct matrix_conn *conn;
	size_t nconn, cconn;
	struct matrix_wait *wait;
	size_t nwait, cwait;
};

struct hosts_entry {
	char *name;
	uint64_t gpus[4]; /* bit g: GPU g runs a rank (first 256 GPUs) */
	char **nics;	  /* NIC names; a rank's nic is an index into these */
	size_t nnics;
	struct hosts_window q[INGEST_QUEUE_MAX];
	unsigned head, nq;
	int heard;	  /* a message since the last tick */
	const void *link; /* session its last batch came on, NULL: closed */
};

struct hosts {
	struct hosts_entry *v;
	size_t n, cap;
	struct u64map map; /* name hash -> index (collisions probed) */
};

/*
 * Finds the host called name and stores its id in *id.  With create set,
 * an unknown host is added (name is copied; the table owns the copy)
 * unless the table holds INGEST_HOSTS_MAX hosts.  Returns the entry, valid
 * until the next host is added, or NULL (unknown, or out of memory).
 */
struct hosts_entry *hosts_find(struct hosts *hs, const char *name, int create,
			       uint32_t *id);

/*
 * Stores in *idx the index of NIC nic on host h ("-" when nic is NULL or
 * empty), adding a copy of the name if it is new.  Returns 0, or -1 when
 * the host has UINT16_MAX NICs or memory runs out (h keeps its NICs).
 */
int hosts_nic(struct hosts_entry *h, const char *nic, uint16_t *idx);

/* Records that GPU gpu of h runs a rank; GPUs from 256 up are not kept. */
void hosts_add_gpu(struct hosts_entry *h, uint16_t gpu);

/* The name of host id, or "?" for an unknown id; owned by the table. */
const char *hosts_name(const struct hosts *hs, uint32_t id);

/* The name of NIC nic of host host, or "?"; owned by the table. */
const char *hosts_nic_name(const struct hosts *hs, uint32_t host, uint16_t nic);

/* GPUs known to run a rank, over all hosts (a GPU counts once). */
uint32_t hosts_ranks_known(const struct hosts *hs);

/*
 * Marks h heard and returns the queue slot for its next window, emptied.
 * A full queue first drops its oldest window (newer data matters more)
 * and sets *dropped; otherwise *dropped is 0.  The window joins the queue
 * only with hosts_push(); until then the slot is not counted.
 */
struct hosts_window *hosts_slot(struct hosts_entry *h, int *dropped);

/* Appends the window hosts_slot() returned and the caller filled. */
void hosts_push(struct hosts_entry *h);

/* Empties a window and keeps its memory for the next fill. */
void hosts_window_clear(struct hosts_window *w);

/*
 * Takes one interval from every host: calls take() with the oldest queued
 * window of each host that has one (the window is dropped from the queue
 * after the call; take must copy what it keeps) and lists in heard[0..
 * *nheard) the ids of the hosts heard since the last collection.  A host
 * with windows still queued counts as heard next time.  heard is grown
 * with vec_reserve (the caller owns it).  Returns 0, or -1 when take fails
 * or memory runs out (the remaining hosts are not visited).
 */
/*
 * Forgets session link on every host whose batches came on it (the
 * session closed).  Changes nothing else.
 */
void hosts_unlink(struct hosts *hs, const void *link);

/*
 * Lists in ids[0..*n) the hosts whose last batch came on a session still
 * open.  ids is grown with vec_reserve (the caller owns it).  Returns 0,
 * or -1 when memory runs out.
 */
int hosts_linked(const struct hosts *hs, uint32_t **ids, size_t *cap,
		 size_t *n);

int hosts_collect(struct hosts *hs,
		  int (*take)(const struct hosts_window *w, void *arg),
		  void *arg, uint32_t **heard, size_t *cheard, size_t *nheard);

/* Frees every host, its NICs and windows; hs may be reused empty. */
void hosts_free(struct hosts *hs);

#endif
