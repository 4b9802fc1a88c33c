/*
 * catalog.h: the path catalog: for a (source IP, destination IP, source
 * side), which UDP source ports take which path.
 *
 * Entries come from the configured hash model (filled on first use, or
 * explicitly) or from probe results that agents report. One record is kept
 * per distinct path: the first source port seen for it. The catalog is an
 * in-memory table; a storage layer (SQLite in c4p-master) saves it by
 * iterating catalog_entry_at() and reloads it with catalog_add().
 *
 * Probe flow: the master plans probe tasks (catalog_probe_tasks: one sender
 * port per leaf and side, each sweeping a range of source ports toward one
 * port on every other leaf); an agent sends one probe per source port and
 * reports a probe_result per port; catalog_add_probe() resolves the hops to
 * cables and records the path. Results never change link health: the master
 * decides that from loss and calls alloc_link_set().
 */
#ifndef C4_CATALOG_H
#define C4_CATALOG_H

#include "ecmp.h"

struct catalog_key {
	uint32_t sip;
	uint32_t dip;
	uint8_t side; /* the source port the traffic leaves from */
};

enum catalog_origin {
	CATALOG_FROM_HASH = 0,
	CATALOG_FROM_PROBE = 1,
};

struct catalog_rec {
	struct path path;
	uint16_t sport;
	uint16_t loss_permille;
	uint8_t origin;	  /* enum catalog_origin */
	uint8_t dst_side; /* side of path.dst_port (set by the catalog) */
};

struct catalog_entry {
	struct catalog_key key;
	struct catalog_rec *recs; /* one per distinct path */
	uint32_t n, cap;
	uint32_t src_port; /* resolved from the key */
};

/* A probe task: send one probe per source port and report each. */
struct probe_task {
	uint32_t src_ip;
	uint32_t dst_ip;
	uint8_t side;
	uint16_t sport_first;
	uint16_t sport_count;
};

/*
 * What an agent reports for one probe. Switches are ids of the fabric
 * model (the master resolves traceroute hop addresses to them); cables may
 * be TOPO_NONE when the prober cannot tell parallel cables apart, which is
 * accepted only where the leaf-spine pair has a single cable.
 */
struct probe_result {
	uint32_t src_ip;
	uint32_t dst_ip;
	uint8_t side;	  /* source port side */
	uint8_t dst_side; /* port the probe arrived on */
	uint16_t sport;
	uint8_t hops; /* switches seen: 1 direct, 3 through a spine */
	uint32_t src_leaf;
	uint32_t spine; /* TOPO_NONE when direct */
	uint32_t dst_leaf;
	uint32_t up_link;   /* TOPO_NONE when unknown */
	uint32_t down_link; /* TOPO_NONE when unknown */
	uint16_t loss_permille;
};

/*
 * A cable's health as the probes see it (the master sets it, the
 * allocator reads the weight): up with weight 1; degraded, still carrying
 * traffic at weight (the share of its capacity it delivers, 0 < weight <
 * 1); down with weight 0.  Loss figures are fractions of the worse
 * direction with their confidence bounds; rtt_us the mean RTT of probe
 * answers that crossed it last (0: none), queue_us the queueing delay
 * they saw on it (linkest.h).
 */
enum catalog_link_state {
	CATALOG_LINK_UP = 0,
	CATALOG_LINK_DEGRADED = 1,
	CATALOG_LINK_DOWN = 2,
};

struct catalog_link {
	uint8_t state; /* enum catalog_link_state */
	double weight;
	double loss, loss_lo, loss_hi;
	double rtt_us;
	double queue_us;   /* queueing delay of the busier direction */
	uint64_t since_ns; /* when state last changed, the caller's clock */
};

struct catalog;

/*
 * Creates an empty catalog over t, which must be final and outlive it;
 * model is copied (NULL: probe results only).  Returns NULL when t is
 * not final or without memory.  catalog_free() frees the catalog and
 * every entry (NULL is fine); t stays the caller's.
 */
struct catalog *catalog_new(const struct topo *t,
			    const struct ecmp_model *model);
void catalog_free(struct catalog *c);

/*
 * The entry for key; when missing and a hash model is configured, filled
 * from it first (health ignored: resilient hashing keeps healthy paths).
 * Returns NULL with a message when the key is invalid or nothing is known.
 * The pointer stays valid until the next call that adds to the catalog.
 */
const struct catalog_entry *catalog_get(struct catalog *c,
					const struct catalog_key *key,
					char *err, size_t errlen);
/* Looks the entry up without filling; NULL when absent. */
const struct catalog_entry *catalog_find(const struct catalog *c,
					 const struct catalog_key *key);

/*
 * Adds records (restore from storage, or any external source). A record
 * with a source port already present replaces it; a record for a path
 * already present under another port is ignored. Records are validated
 * against the topology. Returns 0 or -1 with a message (nothing added).
 */
int catalog_add(struct catalog *c, const struct catalog_key *key,
		const struct catalog_rec *recs, size_t n, char *err,
		size_t errlen);
/* Resolves and records one probe result; 0 or -1 with a message. */
int catalog_add_probe(struct catalog *c, const struct probe_result *r,
		      char *err, size_t errlen);
/* Drops an entry (e.g. before re-probing); 0, or -1 when absent. */
int catalog_drop(struct catalog *c, const struct catalog_key *key);

/*
 * A number that changes whenever entries may have moved (any call that
 * adds or drops): a cached entry pointer is valid while it is unchanged.
 */
uint64_t catalog_generation(const struct catalog *c);

/*
 * Iteration: entries 0 .. catalog_count()-1, in insertion order;
 * catalog_entry_at() returns NULL for i out of range.  Entries belong to
 * the catalog, valid while catalog_generation() is unchanged.
 */
size_t catalog_count(const struct catalog *c);
const struct catalog_entry *catalog_entry_at(const struct catalog *c, size_t i);

/*
 * Plans a full-mesh probe round: for every ordered pair of distinct leaves
 * and both sides, a sender port on the first leaf (chosen by seed among the
 * leaf's healthy ports of that side) probes a port of the same side on the
 * second leaf over count source ports. *tasks is malloc'ed. 0 or -1.
 */
int catalog_probe_tasks(const struct topo *t, uint64_t seed, uint16_t count,
			struct probe_task **tasks, size_t *ntasks, char *err,
			size_t errlen);

/*
 * Sets cable link's health record to *v (copied): 0, or -1 on a bad link
 * id, state or a weight outside [0, 1].  The topology's up flag is not
 * changed (alloc_link_set does that); the allocator reads the weight on
 * alloc_link_reweigh().
 */
int catalog_link_set(struct catalog *c, uint32_t link,
		     const struct catalog_link *v);
/*
 * Cable link's health record (every cable starts up, weight 1); NULL on a
 * bad id or a NULL catalog.  Valid while the catalog lives.
 */
const struct catalog_link *catalog_link(const struct catalog *c, uint32_t link);

#endif /* C4_CATALOG_H */
