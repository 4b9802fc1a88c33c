/*
 * c4fabric.h: the fabric emulator: one network namespace per host, leaf and
 * spine of a topology, veth pairs for cables and NIC ports, addresses from
 * the topology's address plan (lib/topology/addrplan.h), ECMP routes over
 * resilient nexthop groups, tc rates scaled from the topology.
 *
 * plan.c writes what to configure (ip/tc batch text); run.c runs ip, tc,
 * nft in a namespace and writes sysctls there; c4fabric.c has the commands.
 */
#ifndef C4_FABRIC_H
#define C4_FABRIC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo.h"

#define FAB_PREFIX_DEFAULT "c4f-"
#define FAB_NETNS_DIR	   "/run/netns"
#define FAB_NS_MAX	   128	    /* namespace name incl. NUL */
#define FAB_IFNAME_MAX	   16	    /* IFNAMSIZ */
#define FAB_GROUP_BASE	   1000000u /* nexthop group ids; members: link+1 */
#define FAB_BUCKETS	   128	    /* buckets of a resilient group */
#define FAB_SCALE_DEFAULT  1.0	    /* Mbit/s per topology Gbit/s */
#define FAB_SEED_DEFAULT   0xc4fab1u
#define FAB_LATENCY_MS	   20	/* tbf queue bound */
#define FAB_BURST_MIN	   8192 /* tbf bucket, bytes */
#define FAB_MARK_LEFT	   1	/* fwmark that sends from the left ports */
#define FAB_MARK_RIGHT	   2
#define FAB_TABLE_BASE	   100 /* per-side routing tables: 100 + side */
#define FAB_ARGV_MAX	   64

/* A growable text buffer (batch files, captured output). */
struct fab_buf {
	char *p;
	size_t len, cap;
};

void buf_printf(struct fab_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_free(struct fab_buf *b);

enum fab_node { FAB_HOST, FAB_LEAF, FAB_SPINE };

struct fab {
	struct topo *t;
	const char *prefix;
	double scale;
	uint32_t seed;
	bool verbose;
};

/* Set by SIGINT/SIGTERM/SIGHUP: stop after the running command. */
extern volatile sig_atomic_t fab_stop;

/* ---- run.c */
void run_signals(void);
/*
 * Runs argv (PATH lookup) inside namespace ns (NULL: this one) with in as
 * its standard input (NULL: /dev/null); stdout goes to out when not NULL.
 * On failure prints the command, its exit status, its stderr, and for a
 * failed batch line the line itself; quiet suppresses that. Returns 0 when
 * it exited 0, else -1.
 */
int run_cmd(const char *ns, const char *const argv[], const struct fab_buf *in,
	    struct fab_buf *out, bool quiet);
/* "ip -batch -" / "tc -batch -" in ns with b as input; empty b: 0. */
int run_ip(const char *ns, const struct fab_buf *b);
int run_tc(const char *ns, const struct fab_buf *b);
/* Enters ns; *back gets a descriptor for run_ns_leave. -1 on error. */
int run_ns_enter(const char *ns, int *back);
void run_ns_leave(int back);
/* Writes a sysctl of the current namespace ("net.ipv4.ip_forward"). */
int run_sysctl(const char *key, const char *val);
/* Namespaces whose name starts with prefix, NUL-separated in out. */
int run_ns_list(const char *prefix, struct fab_buf *out);

/* ---- plan.c */
void plan_ns(const struct fab *f, enum fab_node kind, uint32_t id, char *buf,
	     size_t len);
/* Host-side interface of NIC port p: "<nic>-l"/"<nic>-r", or "p<id>". */
void plan_host_if(const struct topo *t, uint32_t port, char *buf, size_t len);
void plan_netns_add(const struct fab *f, struct fab_buf *b);
void plan_veths(const struct fab *f, struct fab_buf *b);
/* Addresses and interfaces up of a switch; then plan_routes. */
void plan_switch_ifs(const struct fab *f, enum fab_node kind, uint32_t id,
		     struct fab_buf *b);
/*
 * Nexthops, resilient groups and routes of a switch, over the cables for
 * which live[link] is true. With only != TOPO_NONE, just the nexthop of
 * cable only and the groups (and their routes) that contain it.
 */
void plan_routes(const struct fab *f, enum fab_node kind, uint32_t id,
		 const bool *live, uint32_t only, struct fab_buf *b);
/* A host's addresses, interfaces and side rules; then its routes. */
void plan_host_ifs(const struct fab *f, uint32_t host, struct fab_buf *b);
void plan_host_routes(const struct fab *f, uint32_t host, struct fab_buf *b);
/* tbf qdiscs on every interface of a node. */
void plan_tc(const struct fab *f, enum fab_node kind, uint32_t id,
	     struct fab_buf *b);
/* Per-switch hash seed, derived from --seed and the switch (never 0). */
uint32_t plan_seed(const struct fab *f, enum fab_node kind, uint32_t id);

/* ---- fault.c */
/* Which way of a cable an impairment hits: leaf->spine, spine->leaf. */
enum fault_dir { FAULT_BOTH, FAULT_UP, FAULT_DOWN };
/*
 * Drops pct percent of the packets arriving over cable l in dir (an
 * nftables ingress chain on the receiving end, replacing what that end
 * had; pct 0 removes it). burst 0: each packet at random; burst N: N
 * consecutive packets of every N * 100 / pct (a burst pattern). 0 or -1.
 */
int fault_drop(const struct fab *f, uint32_t l, enum fault_dir dir, double pct,
	       unsigned burst);
/*
 * Delays packets sent over cable l in dir by ms (a netem qdisc under the
 * sending end's tbf; 0 removes it). -1 when tc refuses, as it does on a
 * kernel without sch_netem.
 */
int fault_delay(const struct fab *f, uint32_t l, enum fault_dir dir, double ms);

#endif /* C4_FABRIC_H */
