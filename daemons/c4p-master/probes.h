/*
 * probes.h - probe rounds the c4p-master runs through its agents: it plans
 * tasks, sends each to the agent of the source host, turns the results
 * into catalog entries with exact cables, and judges cable health from a
 * round (changes go through link.c).  The agents' side is the c4a-agent's
 * prober.c.
 */
#ifndef C4P_PROBES_H
#define C4P_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "c4p.h"

struct probes;

/*
 * The prober of p: its timers run on p->dmn->base, a round every
 * probe.interval (none when 0).  NULL when out of memory.
 */
struct probes *probes_new(struct c4p *p);
/* Stops the timers and frees; NULL is ignored. */
void probes_free(struct probes *pb);

/*
 * An agent of host node (its hello's node_name) is connected on sess:
 * tasks for that host go to it.  sess->host is set; a node that is no
 * host of the topology is ignored.
 */
void probes_agent(struct probes *pb, struct c4p_sess *sess, const char *node);
/* sess closed: its host has no agent until another says hello. */
void probes_agent_gone(struct probes *pb, struct c4p_sess *sess);

/*
 * Starts a round now, or right after the running one; why goes to the
 * log.  0, or -1 when out of memory.
 */
int probes_round(struct probes *pb, const char *why);

/*
 * A result from sess: 0 when it answered a task of the running round
 * (then it is taken into the catalog and the round's view of the
 * cables), -1 when it is no such result (the caller may take it another
 * way).  Reads r only.
 */
int probes_result(struct probes *pb, struct c4p_sess *sess,
		  const C4__ProbeResult *r);

/* A pair asked for without catalog entry (copied): probe it soon. */
void probes_want(struct probes *pb, const struct catalog_key *k);

/*
 * The operator set the cable: probes no longer bring it back up, and what
 * they judged of it (degraded, its weight) is dropped.
 */
void probes_forget(struct probes *pb, uint32_t link);

/* The current round's number; *tasks: its results still awaited. */
uint64_t probes_rounds(const struct probes *pb, size_t *tasks);

/*
 * Turns one probed path from sip to dip on side into r with exact cables,
 * from the hop addresses and the address plan of t; 0, or -1 when the
 * hops fit no path.  Reads t and pp only.
 */
int probes_resolve(const struct topo *t, uint32_t sip, uint32_t dip,
		   uint8_t side, const C4__ProbePath *pp,
		   struct probe_result *r);

#endif
