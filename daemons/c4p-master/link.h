/*
 * link.h - a leaf-spine cable set down or up, for the operator (admin.c)
 * and for probes (probes.c) alike: QPs move off it (or back onto it, with
 * rebalancing), the change is stored, and the holders of moved QPs get a
 * PathReassign once it has committed.
 */
#ifndef C4P_LINK_H
#define C4P_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "c4p.h"

/*
 * Sets cable link down or up; reason (copied) goes to the log and to the
 * holders.  *moved and *stranded get the QPs that moved and those left
 * without a healthy path.  Returns the store sequence an answer about it
 * must wait for, or -1 when out of memory (nothing changed then).
 */
int64_t link_set_state(struct c4p *p, uint32_t link, bool up,
		       const char *reason, uint32_t *moved, uint32_t *stranded);

/*
 * The weight of cable link changed in the catalog (catalog_link_set): the
 * allocator counts its capacity at that share and rebalances
 * (alloc_link_reweigh), and the holders of moved QPs are told with reason
 * (copied).  *moved gets the QPs that moved.  Returns the store sequence
 * an answer about it must wait for (0: nothing moved), or -1 when out of
 * memory.
 */
int64_t link_set_weight(struct c4p *p, uint32_t link, const char *reason,
			uint32_t *moved);

/*
 * Stores the n changes ch (QPs moved or stranded), counts them, and
 * queues one PathReassign per request to its holder, sent when the moves
 * have committed.  Reads ch only.  Returns the store sequence of the last
 * move (0 when n is 0).
 */
uint64_t link_moves(struct c4p *p, const struct alloc_change *ch, size_t n,
		    const char *reason);

#endif
