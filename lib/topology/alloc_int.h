/*
 * alloc_int.h: the allocator's state and the functions its files (alloc.c,
 * place.c, rebal.c, restore.c) share. Not installed.
 */
#ifndef C4_ALLOC_INT_H
#define C4_ALLOC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "tmap.h"

struct alloc_req {
	char id[ALLOC_REQID_MAX];
	uint64_t job;
	uint64_t expires;
	uint32_t *qps; /* QP slots in index order */
	uint32_t nqp;
	bool live;
};

struct alloc_qp {
	uint64_t id;
	uint32_t req;
	uint32_t index;
	struct alloc_qp_req rq;
	struct path path;
	uint16_t sport;
	uint16_t conf_sport; /* the port the holder confirmed; 0: none yet */
	uint8_t side;	     /* the side the QP sends from now */
	uint8_t home;	     /* the side it belongs on (asked or chosen) */
	bool live;
	bool stranded;
	bool fallback; /* side != home: the bond's failover */
};

/* A growable stack of free slot numbers. */
struct alloc_freelist {
	uint32_t *v;
	uint32_t n, cap;
};

struct alloc {
	struct topo *t;
	struct catalog *cat;
	uint64_t *lup, *ldown; /* per cable direction */
	uint64_t *bup, *bdown; /* per bundle direction */
	double *inv_bcap;      /* 1 / healthy capacity per bundle (0: none) */
	uint64_t *ptx, *prx;   /* per port */
	struct alloc_qp *qp;
	uint32_t nqp, qp_cap;
	struct alloc_freelist qp_free;
	struct alloc_req *rq;
	uint32_t nrq, rq_cap;
	struct alloc_freelist rq_free;
	struct tmap rq_idx;
	uint64_t next_id;
	size_t live_qps, live_reqs, stranded, fallback;
	uint64_t checked_gen; /* catalog generation alloc_recheck last saw */
	double *inv_link;     /* 1 / cable capacity */
	/* last catalog entry used (QPs of a batch share few keys) */
	struct catalog_key ckey;
	const struct catalog_entry *cent;
	uint64_t cgen;
};

/*
 * alloc.c: slots and the request index.
 *
 * alloc_fl_push pushes slot s on free list f: 0, or -1 without memory.
 * alloc_qp_slot and alloc_rq_slot take a free (or new) QP or request
 * slot, returning it or TOPO_NONE without memory; the slot's contents are
 * the caller's to set. alloc_qp_put frees QP slot s (its load must be off
 * already). alloc_rq_find returns the slot of live request id, or
 * TMAP_EMPTY; alloc_rq_rehash is the request index's rehash callback (arg
 * is the allocator).
 *
 * alloc_rq_drop gives back request slot s (not in the request index) and
 * its first n QP slots r->qps[0..n): each QP's load comes off its path,
 * except a stranded QP's when stranded_unloaded (a stranded QP carries no
 * load), its slot is freed, then the QP array and s itself.  It changes
 * none of the allocator's counters (live_qps, live_reqs, stranded, next_id):
 * those are the caller's.  Free-list room must be reserved first.
 */
int alloc_fl_push(struct alloc_freelist *f, uint32_t s);
uint32_t alloc_qp_slot(struct alloc *a);
uint32_t alloc_rq_slot(struct alloc *a);
void alloc_qp_put(struct alloc *a, uint32_t s);
uint32_t alloc_rq_find(const struct alloc *a, const char *id);
uint64_t alloc_rq_rehash(const void *arg, uint32_t slot);
void alloc_rq_drop(struct alloc *a, uint32_t s, uint32_t n,
		   bool stranded_unloaded);

/*
 * place.c: path choice and loads.
 *
 * place_weight: a QP request's weight (0 counts as 1). place_load adds
 * (sign > 0) or removes (sign < 0) q's weight along its path. place_worst:
 * the worst normalized cable load of path p were weight w added; nothing
 * changes. place_side resolves request r's ports and side into *side_out
 * (for TOPO_SIDE_ANY the less loaded side, left on a tie): 0, or -EINVAL
 * with a message. place_qp puts QP q (rq and side set) on its best path,
 * setting path and sport and adding its load: 0, or -ENOENT (no catalog
 * entry, no healthy path) with a message and q's load unchanged.
 */
uint64_t place_weight(const struct alloc_qp_req *r);
void place_load(struct alloc *a, const struct alloc_qp *q, int sign);
double place_worst(const struct alloc *a, const struct path *p, uint64_t w);
int place_side(const struct alloc *a, const struct alloc_qp_req *r,
	       uint8_t *side_out, char *err, size_t errlen);
int place_qp(struct alloc *a, struct alloc_qp *q, char *err, size_t errlen);
int place_home(struct alloc *a, struct alloc_qp *q, char *err, size_t errlen);
bool place_valid(const struct alloc *a, const struct alloc_qp *q);

/*
 * rebal.c: moving placed QPs. Both return 0 with *changes (the caller
 * frees it; NULL when *nchanges is 0) or -ENOMEM, the loads consistent
 * either way.
 *
 * rebal_move moves every live QP selected by sel: REBAL_SEL_UNHEALTHY
 * those placed on a path with a cable or port down; REBAL_SEL_RECOVER
 * those and every stranded or fallback QP (after something came up);
 * REBAL_SEL_STALE those placed on a path that is down or that the
 * catalog no longer maps their port to. rebal_run is alloc_rebalance.
 */
enum rebal_sel { REBAL_SEL_UNHEALTHY, REBAL_SEL_RECOVER, REBAL_SEL_STALE };
int rebal_move(struct alloc *a, enum rebal_sel sel,
	       struct alloc_change **changes, size_t *nchanges);
int rebal_run(struct alloc *a, size_t max_moves, struct alloc_change **changes,
	      size_t *nchanges);

/*
 * restore.c: persisted records (alloc_restore). restore_plan is described
 * in restore.c. restore_group inserts one planned request, the k records
 * recs[ord[0..k)], its loads included: 0, or -ENOMEM with nothing
 * inserted. Free-list room must be reserved first.
 */
int restore_plan(const struct alloc *a, const struct alloc_record *recs,
		 uint32_t n, uint32_t *ord, uint32_t *gstart, uint32_t *ngroups,
		 char *err, size_t errlen);
int restore_group(struct alloc *a, const struct alloc_record *recs,
		  const uint32_t *ord, uint32_t k);

#endif /* C4_ALLOC_INT_H */
