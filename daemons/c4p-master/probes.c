/*
 * probes.c - probing by agents: the master plans rounds of probe tasks,
 * sends each to the agent of the task's source host, resolves the hop
 * addresses of the results with the switches' address plan (addrplan.h)
 * into exact cables, refreshes the catalog with them, and judges cable
 * health from what the round saw.
 *
 * Hops (switches answer from the interface a probe came in on):
 *   TTL 1  the leaf's interface facing the source NIC port  -> source port
 *   TTL 2  the spine end of the up cable                    -> up cable
 *   TTL 3  the leaf end of the down cable                   -> down cable
 *   TTL 4  the destination (port unreachable), optional
 * A same-leaf pair answers from the destination at TTL 2 (direct path).
 *
 * Health, judged when a round ends:
 *  - a cable no probe crossed while catalog ports that used to cross it
 *    now resolve to other cables is dead: marked down (hard failure);
 *  - otherwise linkest.c estimates every cable direction's loss from the
 *    probe groups of the last probe.window rounds, with the return path of
 *    each ICMP answer as a latent variable (so loss on the way back is not
 *    blamed on the forward cables), and judges up / degraded / down with
 *    hysteresis on Wilson bounds.  A degraded cable stays up at a weight
 *    (the share of its capacity go-back-N transport gets through it): the
 *    allocator counts its capacity at that share and rebalances.
 * Ports whose answers did not resolve to one path (rehashed mid-round, or
 * answers lost) count for nothing.  Changes go through link.c, the
 * operator's path: QPs move, holders are told.
 */
#define LOG_SUBSYS "c4p-probe"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "linkest.h"
#include "link.h"
#include "probes.h"
#include "store.h"
#include "clock.h"
#include "log.h"
#include "path.h"

/* One task of a round. */
struct probes_job {
	uint32_t host; /* whose agent runs it */
	uint32_t sip, dip;
	uint32_t nports; /* source ports to probe (probes_ports) */
	uint8_t side;
	bool sent, done;
};

/* What a round saw of one cable. */
struct probes_seen {
	uint32_t crossed; /* probed ports whose answers resolved through it */
	uint32_t moved; /* catalog ports that crossed it, resolved elsewhere */
};

struct probes {
	struct c4p *p;
	struct c4p_sess **agents; /* per host; NULL: no agent */
	struct probes_job *jobs;
	size_t njobs;
	uint64_t round;		  /* number of the current (or last) round */
	bool running;		  /* a round is under way */
	bool again;		  /* start another when this one ends */
	size_t pending;		  /* tasks sent, results not yet in */
	struct probes_seen *seen; /* per cable, this round */
	bool *marked;		  /* per cable: down because of probes */
	bool *hard;		  /* per cable: down for want of crossings */
	uint8_t *state;		  /* per cable: enum linkest_state */
	struct linkest *est;	  /* loss estimates over the window */
	struct catalog_key *want; /* pairs asked for without entries */
	size_t nwant, capwant;
	struct event *tick, *deadline;
	/*
	 * Added to a round's deadline: doubled (from 1 s) after a round ends
	 * with results missing, halved after one whose results all came in,
	 * at most PROBES_SLACK_MAX_MS.  An overloaded agent answers late; a
	 * fixed deadline would discard every late answer, round after round,
	 * and the catalog would never fill.
	 */
	uint64_t slack_ms;
};

#define PROBES_SLACK_MAX_MS 30000

#define PROBES_ID(round, i) ((round) << 24 | (uint64_t)(i))

static void probes_end(struct probes *pb);

/* ---- planning ----------------------------------------------------------- */

/*
 * How many source ports to probe from port src toward the NIC holding
 * dip: enough to meet each of its P paths (to either port of a bonded
 * NIC: the fabric picks the receive side) with probability 0.999 when the
 * switches hash uniformly.  Collecting all P of P equally likely outcomes
 * takes about P (ln P + ln 1000) draws; never fewer than probe.ports,
 * never more than C4P_PROBE_PORTS_MAX (an agent refuses a task of more
 * ports: that bound wins over the floor).  A fixed port count misses paths:
 * 32 ports leave one of 8 paths unseen in 1.4 % of pairs, and the
 * allocator cannot balance a leaf's QPs over a spine it does not know.
 */
static uint32_t
probes_ports(const struct topo *t, uint32_t src, uint32_t dip, int64_t floor)
{
	uint32_t nic = topo_nic_by_ip(t, dip), n, lo;
	long paths = 0;
	double want;

	lo = floor > C4P_PROBE_PORTS_MAX ? C4P_PROBE_PORTS_MAX
					 : (uint32_t)floor;
	if (nic == TOPO_NONE)
		return lo;
	for (uint8_t s = 0; s < TOPO_SIDES; s++) {
		uint32_t dp = t->nics[nic].port[s];
		long k;

		if (t->ports[dp].ip != dip)
			continue;
		k = path_enum(t, src, dp, NULL, 0);
		if (k > 0)
			paths += k;
	}
	want = paths > 1 ? ceil((double)paths *
				(log((double)paths) + log(1000.0)))
			 : 1.0;
	n = want > C4P_PROBE_PORTS_MAX ? C4P_PROBE_PORTS_MAX : (uint32_t)want;
	return n < lo ? lo : n;
}

static int
probes_add_job(struct probes *pb, size_t *cap, uint32_t sip, uint32_t dip,
	       uint8_t side)
{
	const struct topo *t = pb->p->topo;
	uint32_t nic = topo_nic_by_ip(t, sip);

	if (nic == TOPO_NONE || sip == dip)
		return 0;
	for (size_t i = 0; i < pb->njobs; i++)
		if (pb->jobs[i].sip == sip && pb->jobs[i].dip == dip &&
		    pb->jobs[i].side == side)
			return 0;
	if (pb->njobs == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		void *g = realloc(pb->jobs, nc * sizeof(*pb->jobs));

		if (g == NULL)
			return -1;
		pb->jobs = g;
		*cap = nc;
	}
	pb->jobs[pb->njobs++] = (struct probes_job){
		.host = t->nics[nic].host,
		.sip = sip,
		.dip = dip,
		.nports = probes_ports(t, t->nics[nic].port[side], dip,
				       pb->p->conf->probe.ports),
		.side = side};
	return 0;
}

/*
 * The round's tasks: every NIC pair of different hosts and each side
 * (full_mesh), or hosts_per_leaf senders per leaf toward every other leaf
 * (catalog_probe_tasks, its seed moving with the round so that senders
 * rotate); plus the pairs asked for without catalog entries.
 */
static int
probes_plan(struct probes *pb)
{
	const struct topo *t = pb->p->topo;
	const struct c4p_probe_conf *pc = &pb->p->conf->probe;
	size_t cap = 0;

	pb->njobs = 0;
	free(pb->jobs);
	pb->jobs = NULL;
	if (pc->full_mesh) {
		for (uint32_t a = 0; a < t->nnics; a++)
			for (uint32_t b = 0; b < t->nnics; b++) {
				if (t->nics[a].host == t->nics[b].host)
					continue;
				for (uint8_t s = 0; s < TOPO_SIDES; s++)
					if (probes_add_job(
						    pb, &cap,
						    t->ports[t->nics[a].port[s]]
							    .ip,
						    t->ports[t->nics[b].port[s]]
							    .ip,
						    s) < 0)
						return -1;
			}
	} else {
		for (int64_t k = 0; k < pc->hosts_per_leaf; k++) {
			struct probe_task *v = NULL;
			size_t n = 0;
			char err[256];

			if (catalog_probe_tasks(
				    t,
				    pb->round * (uint64_t)pc->hosts_per_leaf +
					    (uint64_t)k,
				    1, &v, &n, err, sizeof(err)) < 0) {
				log_warnx("probe plan: %s", err);
				return -1;
			}
			for (size_t i = 0; i < n; i++)
				if (probes_add_job(pb, &cap, v[i].src_ip,
						   v[i].dst_ip,
						   v[i].side) < 0) {
					free(v);
					return -1;
				}
			free(v);
		}
	}
	for (size_t i = 0; i < pb->nwant; i++)
		if (probes_add_job(pb, &cap, pb->want[i].sip, pb->want[i].dip,
				   pb->want[i].side) < 0)
			return -1;
	pb->nwant = 0;
	return 0;
}

/* ---- dispatch ----------------------------------------------------------- */

/* The device template with {host}, {nic}, {side} and {s} filled in. */
static void
probes_device(const struct topo *t, uint32_t port, const char *tpl, char *buf,
	      size_t len)
{
	const struct topo_port *pt = &t->ports[port];
	const struct topo_nic *n = &t->nics[pt->nic];
	size_t o = 0;

	buf[0] = '\0';
	for (const char *s = tpl; s != NULL && *s != '\0' && o + 1 < len;) {
		const char *v = NULL;
		size_t k = 0;

		if (strncmp(s, "{host}", 6) == 0)
			v = t->hosts[n->host].name, k = 6;
		else if (strncmp(s, "{nic}", 5) == 0)
			v = n->name, k = 5;
		else if (strncmp(s, "{side}", 6) == 0)
			v = pt->side == TOPO_LEFT ? "left" : "right", k = 6;
		else if (strncmp(s, "{s}", 3) == 0)
			v = pt->side == TOPO_LEFT ? "l" : "r", k = 3;
		if (v != NULL) {
			o += (size_t)snprintf(buf + o, len - o, "%s", v);
			if (o >= len)
				o = len - 1;
			s += k;
		} else {
			buf[o++] = *s++;
			buf[o] = '\0';
		}
	}
}

static void
probes_send(struct probes *pb, size_t i)
{
	struct c4p *p = pb->p;
	const struct c4p_probe_conf *pc = &p->conf->probe;
	const struct topo *t = p->topo;
	struct probes_job *j = &pb->jobs[i];
	struct c4p_sess *s = pb->agents[j->host];
	C4__ProbeTask m = C4__PROBE_TASK__INIT;
	uint32_t sports[C4P_PROBE_PORTS_MAX];
	char sip[INET_ADDRSTRLEN], dip[INET_ADDRSTRLEN],
		dev[MSG_IFNAME_MAX + 1];
	uint32_t port = topo_port_by_ip(t, j->sip, j->side);

	if (s == NULL || s->conn == NULL || port == TOPO_NONE) {
		p->st.probe_no_agent++;
		return;
	}
	topo_ip_format(j->sip, sip, sizeof(sip));
	topo_ip_format(j->dip, dip, sizeof(dip));
	probes_device(t, port, pc->device, dev, sizeof(dev));
	for (uint32_t k = 0; k < j->nports; k++)
		sports[k] = CATALOG_SPORT_BASE + k;
	m.has_task_id = 1;
	m.task_id = PROBES_ID(pb->round, i);
	m.src_ip = sip;
	m.dst_ip = dip;
	m.sports = sports;
	m.n_sports = j->nports;
	m.has_max_ttl = m.has_rate_pps = m.has_timeout_ms = m.has_repeats = 1;
	m.max_ttl = C4_PROBE_TTL;
	m.rate_pps = (uint32_t)pc->rate;
	m.timeout_ms = (uint32_t)pc->timeout;
	m.repeats = (uint32_t)pc->repeats;
	m.has_src_side = 1;
	m.src_side = j->side == TOPO_LEFT ? C4__PORT_SIDE__SIDE_LEFT
					  : C4__PORT_SIDE__SIDE_RIGHT;
	m.src_dev = dev;
	if (reply_send_now(&p->replies, s, C4__MSG_TYPE__MSG_PROBE_TASK, &m) <
	    0)
		return;
	j->sent = true;
	pb->pending++;
	p->st.probe_tasks++;
}

int
probes_round(struct probes *pb, const char *why)
{
	struct c4p *p = pb->p;
	const struct c4p_probe_conf *pc = &p->conf->probe;
	size_t *per_host;
	uint64_t most = 0, ms;
	struct timeval tv;

	if (pb->running) {
		pb->again = true;
		return 0;
	}
	pb->round++;
	if (probes_plan(pb) < 0)
		return -1;
	memset(pb->seen, 0, p->topo->nlinks * sizeof(*pb->seen));
	pb->running = true;
	pb->pending = 0;
	p->st.probe_rounds++;
	for (size_t i = 0; i < pb->njobs; i++)
		probes_send(pb, i);
	log_debug("probe round %llu (%s): %zu of %zu tasks sent",
		  (unsigned long long)pb->round, why, pb->pending, pb->njobs);
	if (pb->pending == 0) {
		probes_end(pb);
		return 0;
	}
	/*
	 * The deadline: twice the busiest agent's packets at the rate asked
	 * for (agents share two cores with everything else on small test
	 * machines), the agent's wait for late answers once per batch of
	 * sockets it can have open, and a second of slack.  A round that
	 * ends at its deadline with results missing proves nothing about the
	 * cables those results would have crossed.
	 */
	per_host = calloc(p->topo->nhosts, sizeof(*per_host));
	if (per_host != NULL) {
		for (size_t i = 0; i < pb->njobs; i++)
			if (pb->jobs[i].sent && (per_host[pb->jobs[i].host] +=
						 pb->jobs[i].nports) > most)
				most = per_host[pb->jobs[i].host];
		free(per_host);
	}
	ms = 2 * most * (uint64_t)(C4_PROBE_TTL * pc->repeats) * 1000 /
		     (uint64_t)pc->rate +
	     (uint64_t)pc->timeout *
		     ((most + C4_PROBE_SOCKS_MAX - 1) / C4_PROBE_SOCKS_MAX) +
	     1000 + pb->slack_ms;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(pb->deadline, &tv);
	return 0;
}

/* ---- results ------------------------------------------------------------ */

/* A hop's address as a host-order IPv4; 0 when absent or malformed. */
static uint32_t
probes_hop_addr(const C4__ProbePath *pp, uint32_t ttl, bool *reached,
		uint32_t *sent, uint32_t *recv)
{
	uint32_t a;

	for (size_t i = 0; i < pp->n_hops; i++) {
		const C4__ProbeHop *h = pp->hops[i];

		if (h->ttl != ttl)
			continue;
		if (sent != NULL) {
			*sent = h->sent;
			*recv = h->received;
		}
		if (reached != NULL)
			*reached = pp->reached && i + 1 == pp->n_hops;
		if (h->received == 0 || h->addr == NULL ||
		    topo_ip_parse(h->addr, &a) < 0)
			return 0;
		return a;
	}
	return 0;
}

int
probes_resolve(const struct topo *t, uint32_t sip, uint32_t dip, uint8_t side,
	       const C4__ProbePath *pp, struct probe_result *r)
{
	uint32_t a, id, sent = 0, recv = 0, dn = topo_nic_by_ip(t, dip);
	uint32_t sp = topo_port_by_ip(t, sip, side);
	bool reached = false;

	memset(r, 0, sizeof(*r));
	r->src_ip = sip;
	r->dst_ip = dip;
	r->side = side;
	r->sport = (uint16_t)pp->sport;
	r->spine = r->up_link = r->down_link = TOPO_NONE;
	if (sp == TOPO_NONE || dn == TOPO_NONE)
		return -1;
	/* TTL 1: the source leaf, from its port facing our NIC port. */
	a = probes_hop_addr(pp, 1, NULL, NULL, NULL);
	if (a == 0 || addrplan_if_lookup(t, a, &id) != ADDRPLAN_IF_LEAF_PORT ||
	    id != sp)
		return -1;
	r->src_leaf = t->ports[sp].leaf;
	/* TTL 2: the destination itself (same leaf), or the up cable. */
	a = probes_hop_addr(pp, 2, &reached, &sent, &recv);
	if (a == 0)
		return -1;
	if (a == dip && reached) {
		r->hops = 1;
		r->dst_leaf = r->src_leaf;
	} else {
		if (addrplan_if_lookup(t, a, &id) != ADDRPLAN_IF_CABLE_SPINE ||
		    t->links[id].leaf != r->src_leaf)
			return -1;
		r->up_link = id;
		r->spine = t->links[id].spine;
		/* TTL 3: the down cable, hence the destination leaf. */
		a = probes_hop_addr(pp, 3, NULL, &sent, &recv);
		if (a == 0 ||
		    addrplan_if_lookup(t, a, &id) != ADDRPLAN_IF_CABLE_LEAF ||
		    t->links[id].spine != r->spine)
			return -1;
		r->down_link = id;
		r->dst_leaf = t->links[id].leaf;
		r->hops = 3;
	}
	/* The receive side: the destination NIC's port on that leaf. */
	if (t->ports[t->nics[dn].port[TOPO_LEFT]].leaf == r->dst_leaf)
		r->dst_side = TOPO_LEFT;
	else if (t->ports[t->nics[dn].port[TOPO_RIGHT]].leaf == r->dst_leaf)
		r->dst_side = TOPO_RIGHT;
	else
		return -1;
	/* Loss where the path is last seen: it covers both cables. */
	r->loss_permille =
		sent == 0 ? 1000 : (uint16_t)((sent - recv) * 1000u / sent);
	return 0;
}

/* Sent, received and mean RTT of pp's probes with TTL ttl; false: none. */
static bool
probes_hop(const C4__ProbePath *pp, uint32_t ttl, uint32_t *sent,
	   uint32_t *recv, double *rtt)
{
	for (size_t i = 0; i < pp->n_hops; i++) {
		const C4__ProbeHop *h = pp->hops[i];

		if (h->ttl != ttl)
			continue;
		*sent = h->sent;
		*recv = h->received < h->sent ? h->received : h->sent;
		*rtt = h->has_rtt_us ? h->rtt_us : 0;
		return h->sent > 0;
	}
	return false;
}

/*
 * A resolved path r of pp from NIC port port: the cables it crossed, and
 * its probes per TTL into the loss estimator.
 */
static void
probes_feed(struct probes *pb, uint32_t port, const C4__ProbePath *pp,
	    const struct probe_result *r)
{
	uint32_t sent, recv;
	double rtt;

	if (r->up_link != TOPO_NONE) {
		pb->seen[r->up_link].crossed++;
		pb->seen[r->down_link].crossed++;
	}
	for (uint32_t ttl = 1; ttl <= (r->up_link != TOPO_NONE ? 3u : 1u);
	     ttl++)
		if (probes_hop(pp, ttl, &sent, &recv, &rtt) &&
		    linkest_add(pb->est, port, (uint8_t)ttl, r->up_link,
				r->down_link, sent, recv, rtt) < 0)
			log_debug("probe: group of port %u TTL %u not taken",
				  port, ttl);
}

/* The catalog's record for (key, sport) before this result; NULL if none. */
static const struct catalog_rec *
probes_old(const struct catalog_entry *e, uint16_t sport)
{
	for (uint32_t i = 0; e != NULL && i < e->n; i++)
		if (e->recs[i].sport == sport)
			return &e->recs[i];
	return NULL;
}

int
probes_result(struct probes *pb, struct c4p_sess *sess,
	      const C4__ProbeResult *r)
{
	struct c4p *p = pb->p;
	const struct topo *t = p->topo;
	uint64_t round = r->task_id >> 24;
	size_t i = (size_t)(r->task_id & 0xffffff), n = 0;
	struct probes_job *j;
	struct catalog_key k;
	const struct catalog_entry *old;
	struct catalog_rec *prev = NULL;
	size_t old_n = 0;
	struct probe_result *res = NULL;
	uint32_t port;
	char e[256];

	if (round != pb->round || i >= pb->njobs || !pb->running)
		return -1; /* not ours, or too late: ignored by the caller */
	j = &pb->jobs[i];
	if (!j->sent || j->done || pb->agents[j->host] != sess)
		return -1;
	j->done = true;
	pb->pending--;
	k.sip = j->sip;
	k.dip = j->dip;
	k.side = j->side;
	port = topo_port_by_ip(t, j->sip, j->side);
	/* Copy the old records: dropping the entry frees them. */
	old = catalog_find(p->cat, &k);
	if (old != NULL && old->n > 0) {
		prev = malloc(old->n * sizeof(*prev));
		if (prev != NULL) {
			memcpy(prev, old->recs, old->n * sizeof(*prev));
			old_n = old->n;
		}
	}
	res = calloc(r->n_paths ? r->n_paths : 1, sizeof(*res));
	if (res == NULL)
		goto out;
	for (size_t q = 0; q < r->n_paths; q++) {
		const C4__ProbePath *pp = r->paths[q];
		struct catalog_entry pe = {.recs = prev, .n = old ? old->n : 0};
		const struct catalog_rec *was;

		p->st.probe_packets += pp->n_hops ? pp->hops[0]->sent : 0;
		was = prev != NULL ? probes_old(&pe, (uint16_t)pp->sport)
				   : NULL;
		if (probes_resolve(t, j->sip, j->dip, j->side, pp, &res[n]) <
		    0) {
			/*
			 * No evidence either way: its answers were lost, or
			 * it was rehashed between TTLs (mid-round).
			 */
			p->st.probe_unresolved++;
			continue;
		}
		if (port != TOPO_NONE)
			probes_feed(pb, port, pp, &res[n]);
		/* Went elsewhere: the cables it left may be dead. */
		if (was != NULL && was->path.up != TOPO_NONE) {
			if (was->path.up != res[n].up_link)
				pb->seen[was->path.up].moved++;
			if (was->path.down != res[n].down_link)
				pb->seen[was->path.down].moved++;
		}
		n++;
	}
	if (n == 0)
		goto out;
	/* The switches may have rehashed: the entry is what this round saw. */
	catalog_drop(p->cat, &k);
	for (size_t q = 0; q < n; q++) {
		/*
		 * Loss is judged per cable over the window (linkest.c), where
		 * thousands of probes make an estimate; a
		 * port's own one or two repeats would exclude a healthy path
		 * for one probe lost to a busy queue (the catalog never hands
		 * out a port with loss), and the allocator could no longer
		 * balance a leaf's QPs over its spines.
		 */
		res[q].loss_permille = 0;
		if (catalog_add_probe(p->cat, &res[q], e, sizeof(e)) < 0) {
			p->st.probe_rejected++;
			log_debug("probe sport %u: %s", res[q].sport, e);
			continue;
		}
		p->st.probe_paths++;
	}
	/*
	 * A port this round did not resolve (a probe lost to a busy queue or
	 * a slow agent) keeps its last path while that path's cables are up:
	 * dropping it would leave the allocator without a spine it needs to
	 * balance a leaf's QPs.  Ports seen again were replaced above; a
	 * path already known keeps its first port.
	 */
	for (size_t q = 0; prev != NULL && q < old_n; q++) {
		bool seen = false;

		for (size_t r2 = 0; r2 < n && !seen; r2++)
			seen = res[r2].sport == prev[q].sport;
		if (!seen && path_healthy(t, &prev[q].path) &&
		    catalog_add(p->cat, &k, &prev[q], 1, e, sizeof(e)) < 0)
			log_debug("probe: keeping sport %u: %s", prev[q].sport,
				  e);
	}
	old = catalog_find(p->cat, &k);
	if (old != NULL)
		store_catalog(p->store, old);
out:
	free(prev);
	free(res);
	if (pb->pending == 0)
		probes_end(pb);
	return 0;
}

/* ---- health ---------------------------------------------------------------
 */

static void
probes_mark(struct probes *pb, uint32_t link, bool up, const char *why)
{
	struct c4p *p = pb->p;
	char name[3 * TOPO_NAME_MAX], reason[256];
	uint32_t moved = 0, stranded = 0;

	addrplan_link_name(p->topo, link, name, sizeof(name));
	snprintf(reason, sizeof(reason), "link %s %s (probe: %s)", name,
		 up ? "up" : "down", why);
	if (link_set_state(p, link, up, reason, &moved, &stranded) < 0) {
		log_warnx("%s: out of memory", reason);
		return;
	}
	pb->marked[link] = !up;
	p->st.probe_links_marked++;
	log_info("%s: %u QPs moved, %u stranded", reason, moved, stranded);
}

/*
 * Records what the estimator says of cable l, in state st at weight w, in
 * the catalog (c4ctl links, metrics, the allocator's weight).
 */
static void
probes_record(struct probes *pb, uint32_t l, uint8_t st, double w)
{
	struct catalog *cat = pb->p->cat;
	struct catalog_link v = *catalog_link(cat, l);
	const struct linkest_dir *u = linkest_elem(pb->est, 2 * l + LINKEST_UP);
	const struct linkest_dir *d =
		linkest_elem(pb->est, 2 * l + LINKEST_DOWN);
	const struct linkest_dir *x = d->lo > u->lo ? d : u;

	v.loss = x->loss;
	v.loss_lo = x->lo;
	v.loss_hi = x->hi;
	v.rtt_us = u->rtt_us;
	v.queue_us = u->queue_us > d->queue_us ? u->queue_us : d->queue_us;
	if (st != v.state || w != v.weight)
		v.since_ns = clock_ns(CLOCK_REALTIME);
	v.state = st;
	v.weight = w;
	catalog_link_set(cat, l, &v);
}

/* Cable l gets weight w (state st): the allocator rebalances. */
static void
probes_weigh(struct probes *pb, uint32_t l, uint8_t st, double w, double loss)
{
	struct c4p *p = pb->p;
	char name[3 * TOPO_NAME_MAX], reason[256];
	uint32_t moved = 0;

	probes_record(pb, l, st, w);
	addrplan_link_name(p->topo, l, name, sizeof(name));
	snprintf(reason, sizeof(reason),
		 "link %s %s (probe: loss %.2f%%, weight %.3f)", name,
		 st == CATALOG_LINK_DEGRADED ? "degraded" : "up", loss * 100,
		 w);
	if (link_set_weight(p, l, reason, &moved) < 0)
		log_warnx("%s: out of memory", reason);
	else
		p->st.probe_links_degraded++;
}

/*
 * Judges cable l at the end of a round; true when it was marked down or
 * up (the switches may then have rehashed: another round is due).
 */
static bool
probes_judge(struct probes *pb, uint32_t l)
{
	const struct probes_seen *s = &pb->seen[l];
	bool up = pb->p->topo->links[l].up;
	enum linkest_state cur = pb->state[l], nx;
	const struct catalog_link *cl = catalog_link(pb->p->cat, l);
	double loss, w;
	char why[160];

	if (!up && !pb->marked[l]) /* the operator's: left alone */
		return false;
	if (up && s->crossed == 0 && s->moved > 0) {
		snprintf(why, sizeof(why),
			 "%u catalog ports left it, none crossed it", s->moved);
		probes_record(pb, l, CATALOG_LINK_DOWN, 0);
		probes_mark(pb, l, false, why);
		pb->hard[l] = true;
		pb->state[l] = LINKEST_BAD;
		return true;
	}
	if (pb->hard[l]) {
		if (s->crossed == 0)
			return false; /* still dead */
		/* Repaired: what the window saw before says nothing now. */
		pb->hard[l] = false;
		cur = LINKEST_OK;
	}
	nx = linkest_judge(pb->est, l, cur, &loss);
	w = nx == LINKEST_DEGRADED
		    ? linkest_weight(linkest_get_conf(pb->est), loss)
	    : nx == LINKEST_OK ? 1
			       : 0;
	pb->state[l] = nx;
	if (nx == LINKEST_BAD) {
		probes_record(pb, l, CATALOG_LINK_DOWN, 0);
		if (!up)
			return false;
		snprintf(why, sizeof(why), "loss %.2f%% (at least %.2f%%)",
			 loss * 100,
			 catalog_link(pb->p->cat, l)->loss_lo * 100);
		probes_mark(pb, l, false, why);
		return true;
	}
	/*
	 * Degraded: reweigh on entry, and when the weight moved by half
	 * again (not on every wobble of the estimate: each reweigh may move
	 * QPs).
	 */
	if (up && cl->state == CATALOG_LINK_UP && nx == LINKEST_OK) {
		probes_record(pb, l, CATALOG_LINK_UP, 1);
		return false;
	}
	if (up && cl->state == CATALOG_LINK_DEGRADED &&
	    nx == LINKEST_DEGRADED && w < cl->weight * 1.5 &&
	    w > cl->weight / 1.5) {
		probes_record(pb, l, CATALOG_LINK_DEGRADED, cl->weight);
		return false;
	}
	probes_weigh(pb, l,
		     nx == LINKEST_OK ? CATALOG_LINK_UP : CATALOG_LINK_DEGRADED,
		     w, loss);
	if (up)
		return false;
	snprintf(why, sizeof(why), "loss %.2f%% (at most %.2f%%)", loss * 100,
		 catalog_link(pb->p->cat, l)->loss_hi * 100);
	probes_mark(pb, l, true, why);
	return true;
}

/* The round is over: judge every cable on what it saw. */
static void
probes_end(struct probes *pb)
{
	struct c4p *p = pb->p;
	const struct topo *t = p->topo;
	bool changed = false;
	uint64_t skipped;

	event_del(pb->deadline);
	pb->running = false;
	if (pb->pending > 0) {
		pb->slack_ms = pb->slack_ms ? 2 * pb->slack_ms : 1000;
		if (pb->slack_ms > PROBES_SLACK_MAX_MS)
			pb->slack_ms = PROBES_SLACK_MAX_MS;
	} else {
		pb->slack_ms /= 2;
	}
	for (size_t i = 0; i < pb->njobs; i++)
		if (pb->jobs[i].sent && !pb->jobs[i].done)
			p->st.probe_tasks_lost++;
	if (linkest_round_end(pb->est) < 0)
		log_warnx("probe round %llu: out of memory for the estimate",
			  (unsigned long long)pb->round);
	skipped = linkest_get_stats(pb->est)->skipped;
	p->st.probe_groups_skipped = skipped;
	for (uint32_t l = 0; l < t->nlinks; l++)
		if (probes_judge(pb, l))
			changed = true;
	/* The switches rehashed what crossed a changed cable: look again. */
	if (changed || pb->again) {
		pb->again = false;
		probes_round(pb, changed ? "links changed" : "asked again");
	}
}

static void
probes_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probes *pb = arg;

	(void)fd;
	(void)what;
	log_debug("probe round %llu: %zu results missing at the deadline",
		  (unsigned long long)pb->round, pb->pending);
	probes_end(pb);
}

static void
probes_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	probes_round(arg, "periodic");
}

/* ---- agents and life cycle --------------------------------------------------
 */

void
probes_agent(struct probes *pb, struct c4p_sess *sess, const char *node)
{
	uint32_t h =
		node != NULL ? topo_host_by_name(pb->p->topo, node) : TOPO_NONE;

	if (h == TOPO_NONE) {
		log_debug("agent '%s' is no host of the topology: no probes",
			  node ? node : "");
		return;
	}
	pb->agents[h] = sess;
	sess->host = h;
	log_info("agent of %s connected: it probes from now on", node);
}

void
probes_agent_gone(struct probes *pb, struct c4p_sess *sess)
{
	if (sess->host != TOPO_NONE && pb->agents[sess->host] == sess)
		pb->agents[sess->host] = NULL;
}

void
probes_want(struct probes *pb, const struct catalog_key *k)
{
	if (pb->nwant >= C4P_PROBE_WANT_MAX)
		return;
	for (size_t i = 0; i < pb->nwant; i++)
		if (memcmp(&pb->want[i], k, sizeof(*k)) == 0)
			return;
	if (pb->nwant == pb->capwant) {
		size_t nc = pb->capwant ? pb->capwant * 2 : 16;
		void *g = realloc(pb->want, nc * sizeof(*pb->want));

		if (g == NULL)
			return;
		pb->want = g;
		pb->capwant = nc;
	}
	pb->want[pb->nwant++] = *k;
	/* Soon, not at the next period: a request is waiting for it. */
	if (!pb->running)
		probes_round(pb, "pair asked for");
	else
		pb->again = true;
}

uint64_t
probes_rounds(const struct probes *pb, size_t *tasks)
{
	*tasks = pb->pending;
	return pb->round;
}

struct probes *
probes_new(struct c4p *p)
{
	struct probes *pb = calloc(1, sizeof(*pb));
	const struct topo *t = p->topo;
	int64_t iv = p->conf->probe.interval;
	struct timeval tv = {(time_t)(iv / 1000),
			     (suseconds_t)(iv % 1000) * 1000};

	if (pb == NULL)
		return NULL;
	pb->p = p;
	pb->agents = calloc(t->nhosts ? t->nhosts : 1, sizeof(*pb->agents));
	pb->seen = calloc(t->nlinks ? t->nlinks : 1, sizeof(*pb->seen));
	pb->marked = calloc(t->nlinks ? t->nlinks : 1, sizeof(*pb->marked));
	pb->hard = calloc(t->nlinks ? t->nlinks : 1, sizeof(*pb->hard));
	pb->state = calloc(t->nlinks ? t->nlinks : 1, sizeof(*pb->state));
	pb->est = linkest_new(
		t, &(struct linkest_conf){
			   .window = (uint32_t)p->conf->probe.window,
			   .z = p->conf->probe.confidence_z,
			   .loss_degraded = p->conf->probe.loss_degraded,
			   .loss_down = p->conf->probe.loss_down,
			   .loss_recover = p->conf->probe.loss_recover,
			   .min_probes = (double)p->conf->probe.min_probes,
			   .gbn_window = (uint32_t)p->conf->probe.gbn_window,
			   .queue_us = (double)p->conf->probe.queue_delay_us});
	pb->tick = event_new(p->dmn->base, -1, EV_PERSIST, probes_tick_cb, pb);
	pb->deadline = evtimer_new(p->dmn->base, probes_deadline_cb, pb);
	if (pb->agents == NULL || pb->seen == NULL || pb->marked == NULL ||
	    pb->hard == NULL || pb->state == NULL || pb->est == NULL ||
	    pb->tick == NULL || pb->deadline == NULL ||
	    (iv > 0 && event_add(pb->tick, &tv) < 0)) {
		probes_free(pb);
		return NULL;
	}
	return pb;
}

void
probes_forget(struct probes *pb, uint32_t link)
{
	const struct catalog_link *cl = catalog_link(pb->p->cat, link);
	uint32_t moved;

	if (cl == NULL)
		return;
	pb->marked[link] = pb->hard[link] = false;
	pb->state[link] = LINKEST_OK;
	if (cl->state != CATALOG_LINK_UP || cl->weight != 1) {
		probes_record(pb, link, CATALOG_LINK_UP, 1);
		link_set_weight(pb->p, link, "link set by the operator",
				&moved);
	}
}

void
probes_free(struct probes *pb)
{
	if (pb == NULL)
		return;
	if (pb->tick != NULL)
		event_free(pb->tick);
	if (pb->deadline != NULL)
		event_free(pb->deadline);
	free(pb->agents);
	free(pb->seen);
	free(pb->marked);
	free(pb->hard);
	free(pb->state);
	linkest_free(pb->est);
	free(pb->jobs);
	free(pb->want);
	free(pb);
}
