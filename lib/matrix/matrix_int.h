/*
 * matrix_int.h: state shared by the engine's subsystems (matrix.c, cell.c,
 * wait.c, hang.c, persist.c, mem.c). Not installed.
 */
#ifndef MATRIX_INT_H
#define MATRIX_INT_H

#include <stddef.h>
#include <stdint.h>

#include "matrix.h"
#include "u64map.h"

#define NO_IDX	    UINT32_MAX
#define EP_NET_FLAG (1ull << 63) /* endpoint key: NIC port, else GPU */
#define CELL_KEY(c, a, s, d)                                                   \
	(((uint64_t)(c) << 41) | ((uint64_t)(a) << 38) |                       \
	 ((uint64_t)(s) << 19) | (uint64_t)(d))

/*
 * mem.c: counted allocation, so benchmarks can report the engine's memory
 * (matrix_mem_usage()).  Blocks from mem_alloc(), mem_calloc() and
 * mem_realloc() must be freed with mem_free(), never free().
 * mem_alloc(): size bytes, uninitialised; NULL when out of memory or size
 * is 0.  mem_calloc(): n * size zeroed bytes; NULL on overflow, a zero
 * size or failure.  mem_realloc(): resizes a block from mem_alloc() (or
 * NULL: allocates); on failure returns NULL and the old block survives.
 * mem_free(): NULL is fine.  mem_grow(): makes *p hold at least need
 * elements of elem bytes, doubling *cap from 16 and zeroing the added
 * tail; returns 0, or -1 with *p and *cap unchanged.  Thread-safe, like
 * malloc().
 */
void *mem_alloc(size_t size);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t size);
void mem_free(void *p);
int mem_grow(void **p, uint32_t *cap, uint32_t need, size_t elem);

/*
 * The engine's maps are u64maps whose tables mem.c counts: insert with
 * mem_map_put (u64map_put's contract) and free with mem_map_free; lookups
 * and deletions (u64map_get, u64map_del) do not change the table's size.
 */
int mem_map_put(struct u64map *h, uint64_t key, uint32_t val);
void mem_map_free(struct u64map *h);

struct host {
	uint32_t host;
	uint32_t dev;	    /* first device registered on it */
	uint64_t last_seen; /* interval + 1; 0 = never */
	uint64_t added;	    /* interval count when first registered */
	uint8_t heard;	    /* heard from in the current interval */
	uint8_t linked;	    /* its agent's session is open (input linked) */
	uint8_t back;	    /* heard now, not in the interval before */
	uint8_t lost;
	uint32_t members; /* ranks of live communicators on this host */
	uint32_t miss;	  /* intervals unheard while the job was heard */
	uint64_t st_iv;	  /* interval + 1 it was counted in a job stall */
	uint64_t lead_iv; /* interval + 1 a host-local comm had a late member */
	uint64_t slow_iv; /* ... its median gap was above its own baseline */
	uint64_t rep_iv;  /* interval + 1 summaries of its ranks arrived */
};

struct dev {
	uint32_t host;
	uint32_t hidx;
	uint16_t gpu;
	uint16_t nic;
	uint8_t port;
	uint8_t blocked;   /* entered > done on some comm this interval */
	uint64_t blk_iv;   /* interval blocked was computed for */
	uint64_t ref_comm; /* a (comm, rank) naming this device */
	uint32_t ref_rank;
	uint32_t ep_net;    /* NIC port endpoint */
	uint32_t ep_gpu;    /* intra-host endpoint */
	uint64_t hd_iv;	    /* interval + 1 a member sent its own markers */
	uint64_t mv_iv;	    /* ... and one moved within stall_timeout */
	uint32_t still_min; /* fewest still intervals of those members */
	uint64_t hg_iv;	    /* interval + 1 it took part in a hung op */
};

/* Per-interval aggregate of one side (row or column) of an endpoint. */
struct side {
	uint16_t n;	/* links sampled */
	uint16_t ncons; /* links consistent with the hottest one */
	float rmax;
	float sum_r; /* over consistent links */
	float sum_z;
	uint8_t status;
	uint16_t ntail; /* links with tail evidence (tail.c) */
	uint32_t lmax;	/* the elevated link of r rmax (rmax > -INFINITY) */
	uint16_t nind;	/* HOT: consistent links whose other side is not */
	uint8_t held;	/* HOT, nind 0, yet some other side has nind 0 too */
};

/* An endpoint: a NIC port (network side) or a GPU (intra-host side). */
struct ep {
	uint64_t pkey; /* physical identity: (host, nic, port) or (host, gpu) */
	uint32_t dev;  /* representative device */
	uint8_t net;
	struct side sd[2]; /* 0: transmit (row), 1: receive (column) */
	uint32_t rstamp;   /* low bits of interval + 1 of rn and rhot */
	uint16_t rn[2];	   /* cells sampled on each side this interval ... */
	uint16_t rhot[2];  /* ... and those slowed, before the spike filter */
};

/* Per communicator member: progress and the rank's own baselines. */
struct crank {
	uint64_t enter;
	uint64_t done;
	uint8_t enq; /* done read at enqueue (matrix_coll.done_at_enqueue) */
	uint8_t carried;  /* only the agent's repeat of older markers */
	uint8_t stuck;	  /* reported ops open to a peer, nothing moving */
	uint64_t seen_iv; /* interval + 1 of the last summary */
	float gbase;	  /* gap, log, relative to the comm median */
	float gvar;	  /* its clean samples' variance (small comms) */
	uint8_t gwarm;
	float lg;	   /* log gap location this interval (wait_comm) */
	float lm;	   /* log mean gap this interval */
	uint8_t qall;	   /* every summary had gap quantiles (wait_q) */
	float lk;	   /* log mean kernel time */
	float lw;	   /* log wait per step, NAN when none */
	double gs, ks, ws; /* sums over this interval's summaries */
	double gl;	   /* wait_q of each summary times its count */
	uint64_t gn, kn, wn;
	uint64_t h_enter; /* own markers when they last moved (hang.c) */
	uint64_t h_done;
	uint32_t still; /* intervals since, heard and unmoved */
	uint8_t h_have;
	uint8_t late;  /* its gap here was min_slowdown beyond the usual */
	uint8_t lhist; /* late in its fresh intervals, bit 0 the last one */
	float xprev;   /* its lateness in the last fresh interval ... */
	float zprev;   /* ... and its robust z */
};

struct comm {
	uint64_t hash;
	uint32_t nranks;
	uint32_t *dev; /* per rank: device index */
	struct crank *rs;
	uint64_t done_max;
	uint32_t stall; /* consecutive intervals without completion */
	uint8_t any_done;
	uint8_t retired; /* destroyed by the job: ignored from then on */
	uint8_t local;	 /* every member on one host (tensor parallel) */
	uint8_t gwarm;	 /* host-local: clean samples of gbase */
	float gbase;	 /* host-local: baseline of its median log gap */
	uint64_t hk;	 /* hang.c: lowest op a member is inside, or none */
	uint64_t hkmax;	 /* ... highest op a member entered */
	uint8_t hv;	 /* ... this interval's verdict (enum in hang.c) */
};

/*
 * A connection that has carried traffic: one cell of the sparse matrix.
 * Its scoring state lives in struct cbase (m->cbase, same index) and its
 * per-interval values in struct work, so the hot loops stream small
 * arrays.
 */
struct cell {
	uint64_t key;
	uint64_t iv; /* interval + 1 of the current sample */
	uint64_t bytes;
	uint32_t comm;
	uint32_t src;
	uint32_t dst;
	uint32_t ep_tx;
	uint32_t ep_rx;
	uint32_t pending;
	uint32_t widx; /* work item of the current interval, or NO_IDX */
	uint32_t cls;  /* its class (persistent), NO_IDX before the first */
	uint32_t link; /* physical link (ep_tx, ep_rx) it runs over */
	uint8_t net;
	uint8_t algo;
	uint8_t tr;
	uint16_t shape; /* size and count classes the class was chosen for */
};

/* A cell's own history: log time per byte relative to its class. */
struct cbase {
	float base; /* running mean, then EWMA, of clean samples */
	float var;  /* same, of the squared innovation: the cell's own noise */
	float cus;  /* CUSUM of z over intervals (sub-threshold evidence) */
	float isig; /* 1 / own noise shrunk to the class (INFINITY: none) */
	float lvl;  /* level of the class it was last scored in ... */
	uint32_t lcls; /* ... and that class (NO_IDX: never scored) */
	uint8_t warm;
	uint8_t have_prev; /* rprev and zprev hold a sample */
	uint8_t twarm;	   /* clean tail samples */
	uint8_t hmask;	   /* raw slowed samples, bit 0 the last one */
	float rprev;	   /* raw r and z of the last sample and the one */
	float zprev;	   /* before: a cell is slowed only when slowed */
	float rprev2;	   /* in one of them too */
	float zprev2;
	float rprev3; /* and the one before that */
	float zprev3;
	float tbase;  /* tail.c: log(p90 / p50), its running mean then EWMA */
	float tdev;   /* ... mean absolute innovation (its spread) */
	float tprev;  /* ... last innovation */
	uint8_t trun; /* ... samples in a row grown by tail_min */
};

/*
 * A physical link: all cells between one transmit endpoint and one receive
 * endpoint, whatever their communicator or algorithm. Rows and columns are
 * judged over links, so ring and tree traffic to the same peer count once.
 */
struct link {
	uint32_t ep_tx;
	uint32_t ep_rx;
	uint32_t stamp; /* low bits of interval + 1 of the sums below */
	uint32_t best;	/* cell with the largest r */
	uint16_t k;	/* cells this interval */
	uint16_t ncold;
	uint16_t nhot;
	uint16_t nacc; /* cells hot by accumulated evidence */
	uint8_t hot;
	uint8_t elevated;    /* r >= min_slowdown / 2: may matter for a side */
	uint8_t on_hot_side; /* set by the verdicts for elevated links */
	uint8_t cand;	     /* has a cell at >= min_slowdown / 2 or hot */
	float best_r;
	float best_z;
	float r;	 /* sum, then mean, of the cells' r */
	float z;	 /* sum, then combined, of the cells' z */
	uint32_t tbest;	 /* cell with the largest tail growth (ntail > 0) */
	uint16_t ntail;	 /* cells with tail evidence this interval */
	float tbest_d;	 /* its growth of log(p90 / p50) ... */
	float tbest_z;	 /* ... and robust z */
	uint32_t bp_iv;	 /* low bits of interval + 1 back-pressure last
			    explained it (0: never) */
	uint32_t rstamp; /* low bits of interval + 1 of rhot */
	uint16_t rhot;	 /* its cells slowed now, before the spike filter */
	uint16_t npre;	 /* hot cells whose previous sample was slowed too */
};

/* Per-interval work item of the comm-slow detector (one sampled cell). */
struct work {
	uint32_t cell;
	uint32_t cls;
	uint32_t link;
	union { /* the sums until scored, then the scores (28-byte items) */
		struct {
			float tsum; /* sum of median chunk time x chunks */
			float bsum; /* sum of bytes */
		};
		struct {
			float q; /* log time per byte minus the class level */
			float r; /* q minus the baseline, centered */
		};
	};
	float z;
	uint8_t hot;
	uint8_t acc;  /* hot by accumulated (CUSUM) evidence */
	uint8_t thot; /* tail evidence (tail.c) */
	uint8_t pre;  /* let through by the spike filter: slowed alike in
			 the cell's sample just before (spike.c) */
	float t;      /* log(p90 / p50) x bytes summed, then its growth */
	float tz;     /* robust z of the growth */
};

struct cls {
	uint64_t key;
	uint64_t iv;   /* interval + 1 the counters belong to */
	uint32_t step; /* statistics from every step-th sample */
	uint32_t cnt;
	uint32_t n;
	uint32_t off;
	uint32_t fill;
	uint32_t parent; /* pooled class when this one is too small */
	float med;	 /* class level: median of (log time per byte - base) */
	float medr;	 /* this interval's shift of the level */
	float sig;
	float isig; /* 1 / sig */
	uint8_t have_med;
};

/* A tracked candidate anomaly (persist.c). */
/*
 * Where a candidate's culprit is observed, so an open event resolves only
 * on clean observations, never because its traffic stopped.
 */
enum probe_kind { PROBE_NONE = 0, PROBE_LINK, PROBE_SIDE, PROBE_RANK };

struct probe {
	uint8_t kind;
	uint32_t a; /* link, endpoint or communicator index */
	uint32_t b; /* side (0 tx, 1 rx) or rank */
};

struct track {
	uint64_t key;
	struct probe probe;
	uint32_t hist;	 /* bit 0 = current interval */
	uint32_t strong; /* intervals whose evidence was strong */
	uint8_t open;
	uint8_t seen;
	uint8_t immediate;  /* hangs/lost nodes carry their own timeout */
	uint8_t acc_strong; /* strong by accumulated evidence this interval */
	uint8_t prior;	    /* the evidence was there the interval before */
	double sscore;	    /* best score this interval not marked weak */
	uint8_t live;
	double reported_slowdown;
	uint32_t hits_r;
	double sum_r;
	struct matrix_event ev;
	/* final pass (domain.c) */
	uint8_t pub;	/* its OPEN was published as an event of its own */
	uint8_t pend;	/* open, meets the contract, not yet published */
	uint8_t storm;	/* folded into (or retracted by) the job event */
	uint8_t act;	/* action last published */
	uint64_t grp;	/* key of the host event it is folded into, or 0 */
	uint8_t clean;	/* clean intervals since its last evidence */
	uint8_t gapmax; /* longest clean run inside the open event */
};

/*
 * A host (or job) event of the final pass: concurrent anomalies of one
 * host reported once (domain.c).
 */
struct dgrp {
	uint64_t key; /* event id */
	uint32_t host;
	uint8_t open;
	uint8_t live;
	uint8_t storm;	  /* folded into the job event */
	uint8_t pub;	  /* its OPEN was published */
	uint8_t act;	  /* action last published */
	uint8_t nic_only; /* every member a port side of one NIC */
	uint16_t nic;
	uint32_t nmem;	  /* members open now */
	uint32_t nfolded; /* members counted so far */
	uint32_t nrep;	  /* ... as last published */
	uint64_t gpus;	  /* devices with evidence, bit gpu & 63 */
	double sum_r;	  /* members' log slowdowns this interval */
	double reported_slowdown;
	struct matrix_event ev;
};

struct matrix {
	struct matrix_params p;
	uint64_t iv; /* current interval number (from input) */
	uint64_t nanalyzed;

	struct u64map comm_map;
	struct comm *comms;
	uint32_t ncomms, ccomms;

	struct u64map host_map;
	struct host *hosts;
	uint32_t nhosts, chosts;

	struct u64map dev_map;
	struct dev *devs;
	uint32_t ndevs, cdevs;

	struct u64map ep_map;
	struct ep *eps;
	uint32_t neps, ceps;

	struct u64map cell_map;
	struct cell *cells;
	uint32_t ncells, ccells;
	struct cbase *cbase;
	uint32_t ccbase;

	struct u64map link_map;
	struct link *links;
	uint32_t nlinks, clinks;
	uint32_t *lwork; /* candidate links (a cell at >= min_slowdown / 2) */
	uint32_t nlwork, caplwork;
	uint32_t *lhot; /* the elevated ones among them */
	uint32_t nlhot, caplhot;

	struct work *work;
	uint32_t nwork, cwork;
	float *scratch;
	uint32_t cscratch;
	struct u64map
		cls_map; /* persistent: (comm, transport, size) -> class */
	struct cls *cls;
	uint32_t ncls, ccls;
	uint32_t *clwork; /* classes sampled this interval */
	uint32_t nclwork, cclwork;
	uint32_t *hint; /* cell of the i-th connection summary last time */
	uint32_t nhint, chint;
	uint64_t last_comm; /* one-entry cache of comm_map */
	uint32_t last_ci;
	float lmin;		   /* log(min_slowdown) */
	float lcold;		   /* log(cold_slowdown) */
	float lelev;		   /* elev_frac x log(min_slowdown) */
	float inv[MATRIX_INV_MAX]; /* EWMA weight after n clean samples */
	uint32_t inv_len;

	struct u64map trk_map;
	struct track *trk;
	uint32_t ntrk, ctrk;

	uint32_t *stuck; /* cells with pending chunks and no bytes */
	uint32_t nstuck, cstuck;

	struct matrix_event *out;
	uint32_t nout, cout;

	uint32_t silent; /* intervals in a row without a quorum of hosts */
	/* final pass (domain.c) */
	struct u64map grp_map; /* host -> host event */
	struct dgrp *grp;
	uint32_t ngrp, cgrp;
	struct dgrp job;  /* the job event (storm, job-wide stall) */
	uint64_t *blamed; /* per host index: interval + 1 last blamed */
	uint32_t cblamed;
	uint64_t ndropped; /* events that broke the contract */
	uint64_t slow_iv;  /* interval + 1 some host computed slower (wait.c) */
	uint32_t nback;	   /* hosts back from a silence this interval */
	/* one-interval spikes (spike.c): decayed sums, this interval's */
	struct spike_rate {
		double on, n;	 /* ends of runs and warm samples, decayed */
		uint32_t on_now; /* this interval's ends of runs ... */
		uint32_t n_now;	 /* ... and warm samples */
		uint32_t n_last; /* warm samples of the last interval */
		uint8_t fast;	 /* two alike in a row open now */
	} spc, spr;		 /* cells, ranks */
};

/*
 * matrix.c helpers used by the detectors.  matrix_suspect_dev() fills
 * *s with where device dev is, in role (tx/rx/rank/host).
 * matrix_median() returns the median of v[0..n), reordering v; n must be
 * above 0.  matrix_comm_find() sets *ci to comm's index and returns 0, or
 * returns -1 (leaving *ci unspecified) when comm is unknown or retired;
 * it caches the last hit.
 */
void matrix_suspect_dev(const struct matrix *m, struct matrix_suspect *s,
			uint32_t dev, unsigned role);
float matrix_median(float *v, uint32_t n);
/*
 * Is the host of rank of communicator index ci back from a silence (heard
 * now, not in the interval before)?  Reports that were late arrive with
 * the next interval's (or queued, one behind): timed under the interval
 * before, against this interval's class level they read as slowed or sped
 * up by however much the whole job moved, so a detector takes such a
 * sample neither as evidence nor to learn from.
 */
int matrix_back(const struct matrix *m, uint32_t ci, uint32_t rank);
/*
 * Starts *e (clearing it) as a candidate of kind against member rank of
 * communicator c alone: c names the event, the rank's device is its one
 * suspect, and the action is to isolate that device's host.  Returns the
 * persist key of kind for the device (its host and GPU).  m and c do not
 * change.
 */
uint64_t matrix_rank_event(const struct matrix *m, struct matrix_event *e,
			   unsigned kind, const struct comm *c, uint32_t rank);
int matrix_comm_find(struct matrix *m, uint64_t comm, uint32_t *ci);

/*
 * cell.c: communication slow.  cell_ingest() takes the interval's
 * connection summaries into their cells (creating them) and queues usable
 * samples; cell_detect() scores them, judges rows, columns and links and
 * hands candidates to persist_observe().  in is not kept.  Both return 0,
 * or -1 on memory exhaustion.
 */
int cell_ingest(struct matrix *m, const struct matrix_input *in);
int cell_detect(struct matrix *m);

/* How a hot link's side looks from it (cell.c, tail.c). */
enum side_status { SIDE_UNKNOWN = 0, SIDE_COLD, SIDE_MIXED, SIDE_HOT };

/*
 * A candidate of the comm-slow detector for persist_observe(): kind on
 * the link of cell (its evidence), r the slowdown (log) and score the z
 * it claims, cr and cz the cell's own; rside and cside the link's sides
 * as cell.c judges them (ambiguous suspects), rshare and cshare the
 * share of each side's other links that look alike; flags PERSIST_ bits,
 * basis enum matrix_basis.
 */
struct cand {
	uint32_t cell;
	unsigned kind;
	float r, score, cr, cz;
	int rside, cside;
	float rshare, cshare;
	unsigned flags;
	uint8_t basis;
};

/*
 * cand_submit() hands candidate c to persist_observe(), after the
 * floors every candidate must pass: a slowdown of min_slowdown (for tail
 * evidence: tail_min) and a score of z_min unless c is flagged
 * PERSIST_WEAK. Returns 0 (also when c falls short), or -1 on memory
 * exhaustion.
 */
int cand_submit(struct matrix *m, const struct cand *c);
/*
 * spike.c.  spike_count() counts work item w's raw (unfiltered) sample on
 * its link and on both endpoints' sides for interval stamp (low bits of
 * interval + 1); call it for every scored item before any
 * spike_corroborated().  spike_corroborated() returns 1 when w's raw
 * sample is slowed and its link or one of its sides confirms it in this
 * interval.  spike_filter() lowers w's r and z to the largest of the
 * cell's three previous samples unless now is set, and shifts the raw
 * sample into the cell's history b.
 */
void spike_count(struct matrix *m, const struct work *w, uint32_t stamp);
int spike_corroborated(const struct matrix *m, const struct work *w);
void spike_filter(struct matrix *m, struct cbase *b, struct work *w, int now);
/*
 * spike_begin() starts an interval of rate sr: folds the last interval's
 * counts into its decayed sums and sets sr->fast when a pair of chance
 * spikes in a row is unlikely (pair_max). spike_note() counts one warm
 * sample on sr, and the end of a run of slowed samples when it was
 * slowed before and is not now (a spike is a run of one; a fault's run
 * ends once, so a fault's onset never slows the fast path down).
 */
void spike_begin(const struct matrix *m, struct spike_rate *sr);
void spike_note(struct spike_rate *sr, int hot, int was_hot);
/*
 * Fills *s (cleared first) as the link suspect of cell x: role link, both
 * ends' host, GPU, NIC and port, the ranks and the transport.  m and x do
 * not change.
 */
void cand_fill_link(const struct matrix *m, struct matrix_suspect *s,
		    const struct cell *x);

/*
 * tail.c: slowness in the tail of a connection's transfer times.
 * tail_score() scores work item w (its t holds the bytes-weighted
 * log(p90 / p50)) against the cell's own tail baseline: w->t becomes the
 * growth, w->tz its robust z, w->thot set when it is tail evidence.
 * tail_learn() updates the tail baseline of w's cell from a clean sample.
 * tail_detect() hands links with tail evidence and no median evidence to
 * cand_submit(); returns 0, or -1 on memory exhaustion.
 */
void tail_score(struct matrix *m, struct work *w);
void tail_learn(struct matrix *m, const struct work *w);
int tail_detect(struct matrix *m);

/*
 * wait.c: non-communication slow.  wait_ingest() takes the per-rank
 * collective and wait summaries (in is not kept) and returns 0;
 * wait_detect() runs the wait-chain judgment on every communicator and
 * returns 0, or -1 on memory exhaustion.
 */
int wait_ingest(struct matrix *m, const struct matrix_input *in);
int wait_detect(struct matrix *m);

/*
 * hang.c: hangs and lost nodes.  Judges node loss and every
 * communicator's progress; returns 0, or -1 on memory exhaustion.
 */
int hang_detect(struct matrix *m);
/*
 * Sets e's domain and evidence (basis, hot_intervals = window = intervals
 * capped at 255, z_open = e->score, slowdown_open = 1, nmembers 1 unless
 * set) for an event of hang.c or stall.c.  Call after e->score is set.
 */
void hang_evidence(struct matrix_event *e, unsigned domain, unsigned basis,
		   uint32_t intervals);

/*
 * stall.c: stalls of the whole job.  stall_detect() runs after every
 * communicator was judged (hang nonzero when any shows a hang or a lost
 * host): one job-stall candidate when most of the job's devices stood
 * still for stall_timeout intervals with no hang, or when too few hosts
 * were heard from for node_timeout + stall_timeout intervals; returns 0, or -1
 * on memory exhaustion.  stall_params_default() fills the stall parameters of
 * *p with their defaults; stall_params_ok() returns 1 when they are valid, else
 * 0.
 */
int stall_detect(struct matrix *m, int hang);
void stall_params_default(struct matrix_params *p);
int stall_params_ok(const struct matrix_params *p);

/* persist.c: candidates, persistence, event lifecycle */
#define PERSIST_IMMEDIATE 1 /* open at once (the detector timed it) */
#define PERSIST_STRONG	  2 /* strong evidence whatever the score */
#define PERSIST_WEAK	  4 /* weak evidence whatever the score */
#define PERSIST_PRIOR	  8 /* held back a first interval, now confirmed */
/*
 * persist_observe() records candidate e (copied) under key for the
 * current interval, merging repeated observations; flags are the
 * PERSIST_ bits above, pr (or NULL) where the culprit is observed.
 * persist_finish() closes the interval: shifts every history, opens,
 * updates and resolves events into m's output and forgets quiet
 * candidates.  Both return 0, or -1 on memory exhaustion.
 * persist_key() returns the stable key (and event id) of a kind and up to
 * two identities, never UINT64_MAX; it must not change across versions.
 * persist_free() frees the tracked candidates and events; m stays.
 */
int persist_observe(struct matrix *m, uint64_t key,
		    const struct matrix_event *e, unsigned flags,
		    const struct probe *pr);
int persist_finish(struct matrix *m);
/*
 * persist_compact() forgets the candidates persist_finish() let go of
 * (resolved, or quiet without opening); the final pass runs between the
 * two.  Returns 0, or -1 on memory exhaustion.
 */
int persist_compact(struct matrix *m);
uint64_t persist_key(unsigned kind, uint64_t a, uint64_t b);
/*
 * persist_emit_event() appends a copy of e in state to m's output (0, or
 * -1 on memory exhaustion); persist_popcount() counts the bits set in x.
 */
int persist_emit_event(struct matrix *m, const struct matrix_event *e,
		       unsigned state);
unsigned persist_popcount(uint64_t x);
void persist_free(struct matrix *m);

/*
 * domain.c: the final pass over an interval's events, after
 * persist_finish() and before persist_compact().  Sets every event's
 * fault domain and evidence basis (domain_classify(), which only reads m's
 * parameters), drops events that break the contract (a slow kind below
 * z_min or min_slowdown: counted in m->ndropped), folds concurrent
 * anomalies of one host into one host-slow event, turns a storm of
 * blamed hosts into one job-stall event, and decides every action
 * (domain_action()).  domain_finish() returns 0, or -1 on memory
 * exhaustion; domain_free() frees its state (m stays).
 */
void domain_classify(struct matrix_event *e);
unsigned domain_action(const struct matrix *m, const struct matrix_event *e);
int domain_finish(struct matrix *m);
void domain_free(struct matrix *m);

#endif /* MATRIX_INT_H */
