/*
 * producer.h - the callbacks NCCL calls, on its own threads (the thread
 * issuing collectives and the proxy threads).  prof.c's prof_init,
 * prof_start, prof_state, prof_stop and prof_finalize are these.
 *
 * Event callbacks never block and never allocate: records come from the
 * communicator's fixed pools, and what is measured is pushed into a ring
 * owned by the calling thread (claimed on its first event).  Every loss
 * (pool empty, ring full, no ring left, stale handle) is counted, never
 * waited for.  Handles returned to NCCL are not pointers: they encode
 * the communicator's slot, the record's kind and index and a generation,
 * so a handle that outlived its record is recognised.  All return 0
 * (ncclSuccess): the plugin never fails NCCL.
 */
#ifndef C4_PRODUCER_H
#define C4_PRODUCER_H

#include <stdint.h>

struct prof_descr;

/*
 * A communicator's init: creates and publishes its state, sets NCCL's
 * event mask (*mask, shared by the process's communicators: cleared only
 * when the core is not open; the kernel-channel bit left to sampling) and
 * registers the communicator with the client session.  *ctx is the
 * communicator, owned by the core until finalize (NULL when it is not
 * observed: core closed, bad rank, table full, ENOMEM).  Takes prof_core.lock;
 * name is not kept.
 */
int producer_init(void **ctx, uint64_t comm_hash, int *mask, const char *name,
		  int nnodes, int nranks, int rank);

/*
 * An event's start in communicator ctx (NULL: ignored), described by d
 * (read, not kept): takes a Coll slot or a child record and sets *handle
 * (NULL when nothing was taken).  A Coll or ProxyOp pushes its start
 * record; a CollApi event drives sampling.  Records it when recording.
 */
int producer_start(void *ctx, void **handle, const struct prof_descr *d);

/*
 * A state change of the event behind handle: a kernel channel's GPU stop
 * timer, or a proxy step's time in each state and its transfer size.
 * Changes only that child record (stale or unknown handles counted).
 */
int producer_state(void *handle, int state, uint64_t trans_size,
		   uint64_t ptimer);

/*
 * An event's stop: pushes the record of what was measured and gives the
 * child record back to the pool, after which the handle is stale.  A
 * Coll's stop means "enqueued"; a CollApi handle has nothing to record.
 */
int producer_stop(void *handle);

/*
 * A communicator's finalize: marks ctx finalized so that the consumer
 * frees it once its last records are drained.  ctx stays valid until
 * then; NCCL sends no more events for it.
 */
int producer_finalize(void *ctx);

#endif
