/*
 * alloc.h: source-port allocation for RDMA QPs (the C4P algorithm).
 *
 * For a QP from NIC a to NIC b the allocator picks, among the catalog's
 * paths for (a's IP, b's IP, side):
 *   - same-side paths (left->left, right->right) of the QP's own side;
 *     when that side has none healthy and the NICs are bonded, those of
 *     the other side (the bond's failover, "fallback");
 *   - paths whose ports and cables are all healthy;
 *   - the path whose most-loaded cable, after adding this QP, is least
 *     loaded (load = sum of QP weights per cable direction, divided by the
 *     cable's capacity);
 *   - ties: the path whose leaf-spine bundles are least loaded (this
 *     spreads each leaf's QPs over all spines when cables are parallel),
 *     then the lower sum of the two cable loads, then catalog order.
 * It answers the UDP source port the catalog knows to take that path. All
 * decisions depend only on the topology, the catalog and the allocation
 * state, never on time or addresses of memory: replaying the same calls
 * (or restoring the same records) gives the same answers.
 *
 * Allocations belong to a request (a caller-chosen id, e.g. one per
 * communicator) of a job. A request is allocated all-or-nothing; asking
 * again with the same id returns the current answer (idempotent retry).
 * Each request holds a lease (seconds on the caller's clock); it ends with
 * alloc_release(), alloc_release_job() or alloc_expire().
 *
 * Health changes go through alloc_link_set()/alloc_port_set() (or
 * alloc_links_set() for a batch): QPs on a cable or port going down are
 * moved to other paths and reported as changes (qp, old port, new port)
 * for the master to tell their holders. A QP whose own side has no
 * healthy path left moves to the other side when its NIC is bonded (the
 * bond's failover: "fallback") and back when its side recovers; only a
 * QP with no healthy path on either side is "stranded".
 *
 * One truth for a QP's port: the allocator changes a placed QP's port
 * only through a reported change. The port the holder confirmed (by its
 * request, or by reporting the port in use: alloc_confirm) is kept beside
 * it; the two differ while a change is on its way (pending).
 */
#ifndef C4_ALLOC_H
#define C4_ALLOC_H

#include "catalog.h"

struct alloc_qp_req {
	uint32_t sip;
	uint32_t dip;
	uint8_t side;	 /* TOPO_LEFT, TOPO_RIGHT or TOPO_SIDE_ANY */
	uint32_t weight; /* demand; 0 counts as 1 */
};

struct alloc_qp_res {
	uint64_t qp_id;
	uint16_t sport;
	uint8_t side;	   /* the side it sends from now */
	uint8_t home_side; /* the side asked for (or chosen for ANY) */
	bool stranded;
	bool fallback; /* side != home_side: its own side has no path */
	struct path path;
};

enum alloc_change_kind {
	ALLOC_MOVED = 0,    /* new_sport takes a healthy path */
	ALLOC_STRANDED = 1, /* no healthy path: keeps old_sport for now */
};

struct alloc_change {
	uint64_t qp_id;
	uint64_t job;
	char req_id[ALLOC_REQID_MAX];
	uint32_t index; /* QP position within its request */
	uint16_t old_sport;
	uint16_t new_sport;
	uint8_t kind; /* enum alloc_change_kind */
	uint8_t old_side, new_side;
	bool fallback; /* the new placement is on the other side */
	struct path old_path;
	struct path new_path;
};

/* One QP as stored by a persistence layer; see alloc_next/alloc_restore. */
struct alloc_record {
	char req_id[ALLOC_REQID_MAX];
	uint64_t job;
	uint64_t expires; /* lease end, caller's clock (seconds) */
	uint32_t index;	  /* position within the request */
	uint32_t nqp;	  /* QPs in the request */
	uint64_t qp_id;
	struct alloc_qp_req req;
	uint16_t sport;
	uint16_t conf_sport; /* holder-confirmed port, 0: none (not stored) */
	uint8_t side;
	uint8_t home_side; /* read only when fallback (else == side) */
	bool stranded;
	bool fallback;
	struct path path;
};

struct alloc_stats {
	size_t qps;
	size_t requests;
	size_t stranded;
	size_t fallback; /* QPs on their other side */
	size_t pending;	 /* QPs whose holder has not confirmed the port */
	uint64_t max_link_load; /* max weight sum over cable directions */
	double mean_link_load;	/* over healthy cable directions */
};

struct alloc;

/*
 * The allocator takes health changes for t (a final topology); t and c
 * must outlive it. NULL when t is not final or without memory. alloc_free
 * frees it and every allocation (NULL is fine); t and c stay.
 */
struct alloc *alloc_new(struct topo *t, struct catalog *c);
void alloc_free(struct alloc *a);

/*
 * Allocates the n QPs of request req_id for job, lease until now + lease_s.
 * out[i] answers qps[i]. Returns 0; -EINVAL (bad argument, cross-side
 * request), -ENOENT (no catalog entry or no healthy path on either side),
 * -EEXIST (req_id in use by another job, or with other QPs), -ENOMEM;
 * on error nothing is allocated and err says why. A known req_id asked
 * with the same QPs renews its lease and returns the current answer.
 */
int alloc_request(struct alloc *a, const char *req_id, uint64_t job,
		  uint64_t now, uint32_t lease_s,
		  const struct alloc_qp_req *qps, size_t n,
		  struct alloc_qp_res *out, char *err, size_t errlen);
/* Copies the current answer of a request (n must match); 0 or -ENOENT. */
int alloc_lookup(const struct alloc *a, const char *req_id,
		 struct alloc_qp_res *out, size_t n);

/*
 * Release request req_id, or every request of job; return the number of
 * QPs freed (0 when nothing matched).
 */
size_t alloc_release(struct alloc *a, const char *req_id);
size_t alloc_release_job(struct alloc *a, uint64_t job);
/* Renews every request of job to now + lease_s; returns requests renewed. */
size_t alloc_renew_job(struct alloc *a, uint64_t job, uint64_t now,
		       uint32_t lease_s);
/* Releases every request whose lease ended (expires <= now). */
size_t alloc_expire(struct alloc *a, uint64_t now);

/*
 * Sets a cable's (or port's) health. Going down moves the QPs on it (in
 * QP id order, after taking all of them off the loads) and going up places
 * stranded QPs again. *changes (malloc'ed, caller frees; NULL when none)
 * and *nchanges describe what moved. Returns 0, -EINVAL or -ENOMEM.
 */
int alloc_link_set(struct alloc *a, uint32_t link, bool up,
		   struct alloc_change **changes, size_t *nchanges);
int alloc_port_set(struct alloc *a, uint32_t port, bool up,
		   struct alloc_change **changes, size_t *nchanges);

/* The smallest capacity share placement gives a cable (never 0). */
#define ALLOC_WEIGHT_MIN 0.01

/*
 * The weight of cable link changed in the catalog (catalog_link_set: a
 * degraded cable delivers only that share of its capacity): from now on
 * placement counts its capacity as gbps x weight (at least
 * ALLOC_WEIGHT_MIN), and a rebalancing pass (alloc_rebalance, max_moves)
 * moves QPs only where their worst cable load strictly drops, so QPs
 * leave a degraded cable only while a sibling has room below its own
 * share.  *changes as alloc_rebalance.  Returns 0, -EINVAL or -ENOMEM.
 */
int alloc_link_reweigh(struct alloc *a, uint32_t link, size_t max_moves,
		       struct alloc_change **changes, size_t *nchanges);

/*
 * Sets the health of n cables (links[i] up when up[i]) as one batch: every
 * state is applied first, then the QPs on anything now down are placed
 * again, then (when something came up) stranded and fallback QPs try their
 * own side again. So no QP is moved onto a cable the same batch takes
 * down. A QP appears at most once in *changes. Returns 0, -EINVAL (a bad
 * id: nothing changed) or -ENOMEM.
 */
int alloc_links_set(struct alloc *a, const uint32_t *links, const bool *up,
		    size_t n, struct alloc_change **changes, size_t *nchanges);

/*
 * After the catalog changed (a probe round replaced a pair's ports), every
 * placed QP whose port the catalog no longer maps to its path, or whose
 * path is down, is placed again (the same rule as a new QP) and reported
 * in *changes, the stranded ones too. Cheap when the catalog's generation
 * is the one last checked. Returns 0 or -ENOMEM.
 */
int alloc_recheck(struct alloc *a, struct alloc_change **changes,
		  size_t *nchanges);

/*
 * The holder of request req_id reports that QP index sends from sport.
 * Returns 0 when that is the allocator's port (now confirmed), 1 when it
 * is another (a disagreement: kept as the confirmed port so that it
 * shows, the allocator's stays), -ENOENT for an unknown request or index.
 */
int alloc_confirm(struct alloc *a, const char *req_id, uint32_t index,
		  uint16_t sport);

/*
 * Dynamic load balancing: moves QPs (in QP id order, up to
 * ALLOC_REBALANCE_PASSES passes, at most max_moves moves) to the path the
 * allocator would pick now, when that strictly lowers the QP's worst cable
 * load. Use after a cable comes back, or when the CCL reports slow paths.
 * Each QP appears at most once in *changes (first old port, last new
 * port). Returns 0 or -ENOMEM.
 */
int alloc_rebalance(struct alloc *a, size_t max_moves,
		    struct alloc_change **changes, size_t *nchanges);

/*
 * Iteration for persistence: *cursor starts at 0; returns 1 and fills rec
 * while records remain, then 0. Order: by slot, stable between calls that
 * do not allocate or release.
 */
int alloc_next(const struct alloc *a, size_t *cursor, struct alloc_record *rec);
/*
 * Restores records (after a restart), without choosing paths: every
 * request must be complete (indices 0..nqp-1), its paths must fit the
 * topology and must not already exist. Loads are rebuilt, so later
 * decisions equal those of the allocator that saved the records. QP ids
 * continue after the largest restored. 0, or -EINVAL/-EEXIST/-ENOMEM
 * with nothing restored.
 */
int alloc_restore(struct alloc *a, const struct alloc_record *recs, size_t n,
		  char *err, size_t errlen);

/* Load (weight sum) of a cable in each direction; -1 on a bad id. */
int alloc_link_load(const struct alloc *a, uint32_t link, uint64_t *up,
		    uint64_t *down);
/* Fill *st with the allocator's counts and cable loads; nothing changes. */
void alloc_stats(const struct alloc *a, struct alloc_stats *st);

#endif /* C4_ALLOC_H */
