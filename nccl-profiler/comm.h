/*
 * comm.h - a communicator's state (struct prof_comm in core.h): the Coll
 * slots and child records the producers write, and the consumer's
 * aggregate.
 */
#ifndef C4_COMM_H
#define C4_COMM_H

#include <stdint.h>

struct prof_comm;

/*
 * A new communicator of nranks ranks, of which this process is rank,
 * sized from prof_core.cfg (colls_cap rounded up to a power of two, pool_cap
 * child records), with an empty aggregate.  The caller owns it until it
 * publishes it in prof_core.comms; slot and mask are left for it to set.
 * NULL on ENOMEM.  Called under prof_core.lock (producer_init); reads
 * prof_core.cfg and changes nothing else.
 */
struct prof_comm *comm_new(uint64_t hash, int nnodes, int nranks, int rank);

/*
 * Frees c and everything it owns; NULL is ignored.  Only once no thread
 * can reach c any more: it is out of prof_core.comms, and NCCL finalized it
 * (consumer_reap) or the core is closing (prof_close).
 */
void comm_free(struct prof_comm *c);

#endif
