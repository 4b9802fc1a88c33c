/*
 * c4p.h - the c4p-master's shared state, limits and the functions its
 * files export to each other:
 *   main.c   configuration, start and stop;
 *   api.c    requests from agents and CCL clients (PathRequest(Batch),
 *            PathRelease, QpLoadUpdate, ProbeResult), deferred replies and
 *            PathReassign to the holders of moved QPs;
 *   admin.c  operator requests (paths, links, link set, allocs, fabric);
 *   state.c  the SQLite store and its writer thread;
 *   hold.c   which session holds which request;
 *   metrics.c its /metrics and /healthz.
 *   probe.c  probe rounds by agents, results into the catalog, cable
 *            health judged from them.
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
#include "arena.h"
#include "catalog.h"
#include "daemon.h"
#include "http.h"
#include "topo.h"

#define C4P_DB_NAME	     "c4p-master.db"
#define C4P_LEASE_DEFAULT    "10m"
#define C4P_EXPIRE_PERIOD_MS 1000  /* how often leases are checked */
#define C4P_ALLOCS_MAX	     20000 /* QPs in one ADMIN_ALLOCS reply */
#define C4P_JOBS_MAX	     (1u << 20)
#define C4P_KEY_MAX	     ALLOC_REQID_MAX /* "<job id>/<request id>" */
#define C4P_REBALANCE_MOVES  10000 /* QPs moved when a cable comes back */
#define C4P_ERROR_CODES	     16	   /* C4__ErrorCode values counted */
#define C4P_PROBE_PORTS_MAX  1024  /* source ports per probed pair */
#define C4P_PROBE_AGENT_SOCKS                                                  \
	512			 /* ports an agent probes at once (agent.h)    \
				  */
#define C4P_PROBE_TTL	   4	 /* leaf, spine, leaf, destination */
#define C4P_PROBE_WANT_MAX 65536 /* pairs waiting for an on-demand probe */
/*
 * After a frame the loop polls this long for the next one before it sleeps
 * (dmn_run): a client asking for one connection after another sends its
 * next request 5-15 us after its answer.
 */
#define C4P_POLL_US 50

/* "probe:" */
struct c4p_probe_conf {
	int64_t interval;      /* ms between rounds; 0: only when asked */
	int64_t ports;	       /* source ports per pair */
	int64_t rate;	       /* packets per second asked of each agent */
	int64_t repeats;       /* probes per (source port, TTL) */
	int64_t timeout;       /* ms an agent waits for late answers */
	double loss_threshold; /* fraction above which a path is lossy */
	int64_t hosts_per_leaf;
	bool full_mesh; /* every NIC pair, not a leaf-pair sample */
	char *device;	/* interface template: {host} {nic} {side} {s} */
};

struct c4p_conf {
	struct srv_conf server;
	struct cfg_list credentials;
	struct dmn_log_conf log;
	char *topology;	   /* YAML fabric file */
	char *state_dir;   /* holds c4p-master.db */
	int64_t lease;	   /* ms, lease of a request unless renewed */
	int64_t hash_seed; /* -1: no hash model (probes only) */
	bool sync_full;	   /* fsync every commit (power-loss safe) */
	struct http_conf http;
	struct c4p_probe_conf probe;
};

struct state;
struct hold;

/* A session's data: outlives the connection while replies are pending. */
struct c4p_sess {
	struct srv_conn *conn; /* NULL once closed */
	uint32_t pending;      /* deferred messages that name this session */
	uint64_t requests;     /* path requests made on it */
	uint32_t host;	       /* an agent's topology host, or TOPO_NONE */
};

/* A message to send once the store has committed seq. */
struct c4p_pend {
	struct c4p_pend *next;
	struct c4p_sess *sess;
	uint64_t seq;
	uint64_t reply_to;
	C4__MsgType type;
	void *body;
	struct arena arena; /* owns body */
};

struct c4p_job {
	char *name;
	uint64_t id;
};

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
	X(qp_load_updates, "QP load updates received")                         \
	X(qp_load_qps, "QP load entries received")                             \
	X(probe_results, "probe results received")                             \
	X(probe_rounds, "probe rounds started")                                \
	X(probe_tasks, "probe tasks sent to agents")                           \
	X(probe_tasks_lost, "probe tasks without a result by the deadline")    \
	X(probe_no_agent, "probe tasks not sent: no agent on the host")        \
	X(probe_packets, "probe packets agents reported sent (TTL 1)")         \
	X(probe_unresolved, "probed ports whose hops fit no path")             \
	X(probe_links_marked, "cables marked down or up by probes")            \
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
	struct state *store;
	struct hold *holders;
	struct c4p_job *jobs; /* index = id - 1 */
	size_t njobs, cap_jobs;
	struct c4p_pend *pend_head, *pend_tail;
	struct event *expire_ev;
	struct probe *probe;
	struct c4p_stats st;
	uint64_t errors_by_code[C4P_ERROR_CODES]; /* path request errors */
	struct http *http;
	char http_bound[256];
};

/* ---- main.c */
uint64_t c4p_now_s(void);
/* Job id of a name, creating (and storing) it when create; 0 if none. */
uint64_t c4p_job_id(struct c4p *p, const char *name, int create);
const char *c4p_job_name(const struct c4p *p, uint64_t id);
/* "host/nic" of a port's NIC. */
void c4p_nic_name(const struct topo *t, uint32_t port, char *buf, size_t len);
/* A NIC by "host/nic" or by IP; TOPO_NONE if unknown. */
uint32_t c4p_nic_lookup(const struct topo *t, const char *s);

/* ---- api.c */
int api_on_hello(struct srv_conn *c, const C4__Hello *h, struct msg_err *err,
		 void *arg);
int api_on_message(struct srv_conn *c, const C4__Envelope *env,
		   struct msg_err *err, void *arg);
void api_on_close(struct srv_conn *c, void *arg);
/* A new pending message for sess (arena ready, body to be set). */
struct c4p_pend *api_pend_new(struct c4p *p, struct c4p_sess *sess,
			      C4__MsgType type, uint64_t reply_to);
/* Queues pe to go out once seq commits (now, when seq is 0). */
void api_pend_submit(struct c4p *p, struct c4p_pend *pe, uint64_t seq);
/* The store committed up to seq: send what waited for it. */
void api_committed(struct c4p *p, uint64_t seq);
/* Tells holders about moved QPs; persists the moves; returns store seq. */
uint64_t api_changes(struct c4p *p, const struct alloc_change *ch, size_t n,
		     const char *reason);
void api_fill_assignment(struct c4p *p, struct arena *ar,
			 C4__PathAssignment *pa, uint32_t index, uint16_t sport,
			 uint8_t side, const struct path *path);
void api_expire(struct c4p *p);

/* ---- metrics.c: /metrics and /healthz (http: listen:) */
int metrics_open(struct c4p *p, char *err, size_t errlen);
void metrics_close(struct c4p *p);
/* Counts a path request answered with an error of code. */
void metrics_path_error(struct c4p *p, C4__ErrorCode code);

/* ---- admin.c */
int admin_handle(struct c4p *p, struct srv_conn *c, const C4__Envelope *env,
		 struct msg_err *err);
/*
 * Sets a cable down or up for the operator or for probes: QPs move (and
 * rebalance when it comes up), the change is stored, holders get
 * PathReassign with reason.  Returns the store sequence to wait for, or
 * -1 (out of memory).
 */
int64_t admin_link_apply(struct c4p *p, uint32_t link, bool up,
			 const char *reason, uint32_t *moved,
			 uint32_t *stranded);

/* ---- probe.c */
struct probe *probe_new(struct c4p *p);
void probe_free(struct probe *pb);
/* An agent of host node (its hello's node_name) is connected on sess. */
void probe_agent(struct probe *pb, struct c4p_sess *sess, const char *node);
void probe_agent_gone(struct probe *pb, struct c4p_sess *sess);
/* Starts a round now (or right after the running one); 0 or -1. */
int probe_round(struct probe *pb, const char *why);
/*
 * A result: 0 when it answered a task of the running round (then taken),
 * -1 when it is no such result (the caller may take it another way).
 */
int probe_result(struct probe *pb, struct c4p_sess *sess,
		 const C4__ProbeResult *r);
/* A pair asked for without catalog entry: probe it soon. */
void probe_want(struct probe *pb, const struct catalog_key *k);
/* The operator set the cable: probes no longer bring it back up. */
void probe_forget(struct probe *pb, uint32_t link);
/* The current round's number; *tasks: its results still awaited. */
uint64_t probe_rounds(const struct probe *pb, size_t *tasks);
/*
 * Turns one probed path into a probe_result with exact cables, from the
 * hop addresses and the address plan; 0, or -1 when the hops fit no path
 * of (sip, dip, side).
 */
int probe_resolve(const struct topo *t, uint32_t sip, uint32_t dip,
		  uint8_t side, const C4__ProbePath *pp,
		  struct probe_result *r);

/* ---- state.c */
/*
 * Opens (creating) dir/c4p-master.db in WAL mode and starts the writer
 * thread; committed() runs on the loop after each commit.
 */
struct state *state_open(const char *dir, bool sync_full,
			 struct event_base *base,
			 void (*committed)(uint64_t seq, void *arg), void *arg,
			 char *err, size_t errlen);
/*
 * Loads everything into p (jobs, catalog entries from probes, allocations,
 * link health) at start, before the loop runs; 0 or -1 with err.
 */
int state_load(struct state *s, struct c4p *p, char *err, size_t errlen);
/* Each returns the sequence number its write will commit under. */
uint64_t state_job(struct state *s, uint64_t id, const char *name);
uint64_t state_put(struct state *s, const char *key, uint64_t job,
		   uint64_t expires, const struct alloc_record *recs, size_t n);
uint64_t state_renew(struct state *s, const char *key, uint64_t expires);
uint64_t state_del(struct state *s, const char *key);
uint64_t state_del_job(struct state *s, uint64_t job);
uint64_t state_expire(struct state *s, uint64_t now);
uint64_t state_move(struct state *s, const struct alloc_change *ch);
uint64_t state_link(struct state *s, uint32_t link, bool up);
uint64_t state_catalog(struct state *s, const struct catalog_entry *e);
struct state_stats {
	uint64_t commits;	      /* transactions committed */
	uint64_t inline_commits;      /* of those, by the loop itself */
	uint64_t ops;		      /* operations queued since start */
	uint64_t committed;	      /* of those, committed */
	bool failed;		      /* a write failed (the daemon stops) */
	struct http_hist commit_hist; /* BEGIN to COMMIT, seconds */
};
void state_get_stats(const struct state *s, struct state_stats *st);
/* Writes what is queued, stops the thread, closes the database. */
void state_close(struct state *s);

/* ---- hold.c */
struct hold *hold_new(void);
void hold_free(struct hold *h);
/* Records that sess holds the request key (replacing an older holder). */
int hold_set(struct hold *h, const char *key, struct c4p_sess *sess);
struct c4p_sess *hold_get(const struct hold *h, const char *key);
void hold_del(struct hold *h, const char *key);
/* Forgets every request sess holds (the session closed). */
void hold_drop_sess(struct hold *h, const struct c4p_sess *sess);

#endif
