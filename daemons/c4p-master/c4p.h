/*
 * c4p.h - the c4p-master's context: its configuration, counters and the
 * state every part works on (struct c4p).  Types only: each file's
 * functions are declared in its own header.
 *
 * Files, by layer (a file calls only files on lower layers; the lines
 * below are the includes and calls, and they form no cycle):
 *
 *   main.c      wiring: configuration, sockets, callbacks, the loop
 *     |
 *   api.c       client requests (paths, releases, loads, probe results)
 *   admin.c     operator requests (paths, links, link set, allocs, probe)
 *   metrics.c   /metrics and /healthz
 *     |            api -> probes, metrics; admin -> probes
 *   probes.c    probe rounds by agents, cable health from their results
 *     |
 *   link.c      a cable down or up: QPs move, holders are told (the one
 *               entry point for operators and probes)
 *     |
 *   jobs.c      job names <-> ids (hash index), stored
 *   hold.c      which session holds which request
 *   reply.c     sessions, messages deferred until a commit, assignments
 *     |
 *   store.c     the SQLite store: its operations, queued to sqlq
 *   store_writer.c  the SQL of every write (lib/daemon/sqlq.c writes)
 *   store_load.c    loading at start
 *
 * Durability rule: an answer that hands out (or moves) a port is sent only
 * after the SQLite transaction recording it has committed; the writer
 * thread commits everything queued in one transaction (group commit). See
 * docs/c4p.md, "Storage".
 */
#ifndef C4P_H
#define C4P_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "c4limits.h"
#include "arena.h"
#include "catalog.h"
#include "daemon.h"
#include "http.h"
#include "reply.h"
#include "topo.h"

#define C4P_LEASE_DEFAULT    "10m"
#define C4P_EXPIRE_PERIOD_MS 1000	     /* how often leases are checked */
#define C4P_KEY_MAX	     ALLOC_REQID_MAX /* "<job id>/<request id>" */
#define C4P_JOBS_MAX	     (1u << 20)
#define C4P_ALLOCS_MAX	     20000 /* QPs in one ADMIN_ALLOCS reply */
#define C4P_REBALANCE_MOVES  10000 /* QPs moved when a cable comes back */
#define C4P_ERROR_CODES	     16	   /* C4__ErrorCode values counted */
#define C4P_PROBE_PORTS_MAX  C4_PROBE_SOCKS_MAX /* per pair: an agent's most */
#define C4P_PROBE_WANT_MAX   65536 /* pairs waiting for an on-demand probe */
/*
 * After a frame the loop polls this long for the next one before it sleeps
 * (daemon_run): a client asking for one connection after another sends its
 * next request 5-15 us after its answer.
 */
#define C4P_POLL_US 50

/* "probe:" */
struct c4p_probe_conf {
	int64_t interval;	/* ms between rounds; 0: only when asked */
	int64_t ports;		/* source ports per pair */
	int64_t rate;		/* packets per second asked of each agent */
	int64_t repeats;	/* probes per (source port, TTL) */
	int64_t timeout;	/* ms an agent waits for late answers */
	int64_t window;		/* rounds in the loss estimate's window */
	double confidence_z;	/* quantile of the Wilson bounds */
	double loss_degraded;	/* lower bound above: degraded */
	double loss_down;	/* lower bound above: down */
	double loss_recover;	/* upper bound below: up again */
	int64_t min_probes;	/* fewer reaching a direction: no judgement */
	int64_t gbn_window;	/* packets in flight, for a degraded weight */
	int64_t queue_delay_us; /* above it, a direction's loss is congestion */
	int64_t hosts_per_leaf;
	bool full_mesh; /* every NIC pair, not a leaf-pair sample */
	char *device;	/* interface template: {host} {nic} {side} {s} */
};

struct c4p_conf {
	struct srv_conf server;
	struct cfg_list credentials;
	struct daemon_log_conf log;
	char *topology;	   /* YAML fabric file */
	char *state_dir;   /* holds c4p-master.db */
	int64_t lease;	   /* ms, lease of a request unless renewed */
	int64_t hash_seed; /* -1: no hash model (probes only) */
	bool sync_full;	   /* fsync every commit (power-loss safe) */
	struct http_conf http;
	struct c4p_probe_conf probe;
};

struct c4p_store;
struct hold;
struct jobs;
struct probes;

#define C4P_COUNTERS(X)                                                        \
	X(path_requests, "path requests received (batch entries count)")       \
	X(path_qps, "QPs allocated or renewed")                                \
	X(path_errors, "path requests answered with an error")                 \
	X(path_releases, "release requests served")                            \
	X(path_released_qps, "QPs released by request")                        \
	X(path_expired, "requests whose lease lapsed")                         \
	X(reassigned_qps, "QPs moved to new ports after a health change")      \
	X(stranded_qps, "QPs left without a healthy path")                     \
	X(reassign_sent, "PathReassign messages sent to holders")              \
	X(reassign_orphaned, "moved requests whose holder session is gone")    \
	X(link_changes, "link health changes applied")                         \
	X(recheck_moves, "QPs placed again: the catalog changed their path")   \
	X(port_confirms, "QP ports confirmed by their holder")                 \
	X(port_disagreements, "holder reports of a port not allocated")        \
	X(qp_load_updates, "QP load updates received")                         \
	X(qp_load_qps, "QP load entries received")                             \
	X(probe_results, "probe results received")                             \
	X(probe_rounds, "probe rounds started")                                \
	X(probe_tasks, "probe tasks sent to agents")                           \
	X(probe_tasks_lost, "probe tasks without a result by the deadline")    \
	X(probe_tasks_failed, "probe results without paths (agent failed)")    \
	X(probe_no_agent, "probe tasks not sent: no agent on the host")        \
	X(probe_packets, "probe packets agents reported sent (TTL 1)")         \
	X(probe_unresolved, "probed ports whose hops fit no path")             \
	X(probe_links_marked, "cables marked down or up by probes")            \
	X(probe_links_degraded, "cables marked degraded (or reweighed)")       \
	X(probe_groups_skipped, "probe groups with too many return paths")     \
	X(probe_paths, "probed paths added to the catalog")                    \
	X(probe_rejected, "probed paths that did not fit the topology")        \
	X(store_commits, "SQLite transactions committed")                      \
	X(store_inline_commits,                                                \
	  "of those, committed on the event loop (the writer was idle)")       \
	X(store_ops, "store operations written")

struct c4p_stats {
#define C4P_STAT_FIELD(n, h) uint64_t n;
	C4P_COUNTERS(C4P_STAT_FIELD)
#undef C4P_STAT_FIELD
};

struct c4p {
	struct dmn *dmn;
	const struct c4p_conf *conf;
	struct topo *topo;
	struct ecmp_model model;
	struct catalog *cat;
	struct alloc *alloc;
	struct c4p_store *store;
	struct hold *holders;
	struct jobs *jobs;
	struct reply_queue replies; /* answers waiting for commits */
	struct event *expire_ev;
	struct probes *probes;
	struct c4p_stats st;
	uint64_t errors_by_code[C4P_ERROR_CODES]; /* path request errors */
	struct http *http;
	char http_bound[256];
};

#endif
