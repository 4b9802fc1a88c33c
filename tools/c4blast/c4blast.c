/*
 * c4blast - paced UDP/4791 flows between hosts of the namespace fabric
 * (tools/c4fabric): the stand-in for an RDMA CCL in the real-traffic
 * tests and the fabric-real benchmark.
 *
 *   c4blast recv --bind IP [--netns NS] [--interval-ms MS] [--duration S]
 *   c4blast send --src IP --to DST:SIDE:QPS... [--netns NS] [--nic NAME]
 *                [--rate MBIT] [--size BYTES] [--duration S | --count N]
 *                [--ports random [--seed N] | --ports P,P,... |
 *                 --c4p HOST:PORT --token T --job J [--name ID]]
 *
 * A sender's flows are QPs: each sends UDP to port 4791 (what RoCEv2 and
 * the probes use, so the switches hash it as the catalog expects) from its
 * own source port, paced at --rate Mbit/s of UDP payload, out of the
 * NIC's left (SIDE l) or right (r) port, chosen per socket with
 * IP_UNICAST_IF.  The packets are built on a raw UDP socket: a source port
 * is then a header field, not a bound port, so flows never collide with
 * the agent's probe sockets on the same ports (allocated ports are probed
 * ports), and a reassigned flow moves at once.
 *
 * With --c4p the ports come from c4p-master (one PathRequestBatch, one
 * request per destination and side); the session is opened before the
 * process enters --netns, so it stays on the root namespace's loopback.
 * A PathReassign moves the flows at once and is logged with its time.
 *
 * The receiver counts payload bytes per (source IP, source port) of
 * packets carrying c4blast's magic (probes to 4791 are ignored), prints
 * the running total every --interval-ms, and the per-source table when it
 * ends (--duration, SIGINT or SIGTERM).  All output is JSON lines on
 * stdout; times are Unix milliseconds (CLOCK_REALTIME).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4p_client.h"
#include "clock.h"

#define BLAST_PORT	  4791
#define BLAST_MAGIC	  0x43344246u /* "C4BF" */
#define BLAST_MAX_FLOWS	  256
#define BLAST_MAX_DSTS	  32
#define BLAST_MAX_SOURCES 4096
#define BLAST_MIN_SIZE	  64
#define BLAST_MAX_SIZE	  8192
#define BLAST_PORT_LO	  49152
#define BLAST_PORT_HI	  65535
#define BLAST_NAME_MAX	  64
/* A flow that falls this far behind its schedule skips, not bursts. */
#define BLAST_MAX_LAG_NS 50000000ull
/* How often the master's session is read for PathReassign. */
#define BLAST_POLL_NS	 20000000ull
#define BLAST_RECV_BATCH 64
#define BLAST_CONNECT_MS 10000

/* The header every c4blast packet's payload starts with. */
struct blast_hdr {
	uint32_t magic;
	uint32_t flow;
	uint64_t seq;
};

struct blast_flow {
	uint32_t dst; /* network order */
	int side;     /* 1 left, 2 right */
	uint16_t sport;
	char spine[C4P_CLIENT_NAME_MAX];
	uint64_t next_ns, seq, bytes, pkts, errors;
};

struct blast_dst {
	uint32_t ip;
	int side;
	unsigned qps;
	char id[BLAST_NAME_MAX * 2];
	char dst_s[INET_ADDRSTRLEN];
};

struct blast_source {
	uint32_t ip;
	uint16_t port;
	uint64_t bytes, pkts;
};

static volatile sig_atomic_t blast_stop;

static void
blast_signal(int sig)
{
	(void)sig;
	blast_stop = 1;
}

static uint64_t
blast_wall_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000u;
}

static const char *
blast_side_name(int side)
{
	return side == 1 ? "left" : side == 2 ? "right" : "any";
}

static const char *
blast_ip(uint32_t ip, char *buf)
{
	struct in_addr a = {ip};

	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: c4blast recv --bind IP [--netns NS] [--interval-ms MS] "
		"[--duration S]\n"
		"       c4blast send --src IP --to DST:l|r:QPS... [--netns NS] "
		"[--nic NAME]\n"
		"               [--rate MBIT] [--size BYTES] [--duration S | "
		"--count N]\n"
		"               [--ports random [--seed N] | --ports P,P,... "
		"|\n"
		"                --c4p HOST:PORT --token T --job J [--name "
		"ID]]\n");
	exit(2);
}

/* Enters network namespace name (/run/netns/NAME).  0 or -1. */
static int
blast_netns(const char *name)
{
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "c4blast: %s: %s\n", path, strerror(errno));
		return -1;
	}
	rc = setns(fd, CLONE_NEWNET);
	if (rc < 0)
		fprintf(stderr, "c4blast: setns %s: %s\n", name,
			strerror(errno));
	close(fd);
	return rc;
}

static int
blast_parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "c4blast: bad IPv4 address '%s'\n", s);
		return -1;
	}
	*ip = a.s_addr;
	return 0;
}

static int
blast_parse_ulong(const char *s, unsigned long lo, unsigned long hi,
		  const char *what, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *v < lo || *v > hi) {
		fprintf(stderr, "c4blast: bad %s '%s' (%lu..%lu)\n", what, s,
			lo, hi);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- recv */

static struct blast_source *
blast_source_find(struct blast_source *t, size_t *n, uint32_t ip, uint16_t port)
{
	for (size_t i = 0; i < *n; i++)
		if (t[i].ip == ip && t[i].port == port)
			return &t[i];
	if (*n >= BLAST_MAX_SOURCES)
		return NULL;
	t[*n] = (struct blast_source){ip, port, 0, 0};
	return &t[(*n)++];
}

/*
 * Receives on bind:4791 until the duration ends or a signal comes;
 * prints a running total every interval and the table at the end.
 */
static int
blast_recv(uint32_t bind_ip, uint64_t interval_ms, uint64_t duration_ms)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(BLAST_PORT),
				 .sin_addr = {bind_ip}};
	static struct blast_source src[BLAST_MAX_SOURCES];
	static char buf[BLAST_RECV_BATCH][BLAST_MAX_SIZE];
	struct mmsghdr mm[BLAST_RECV_BATCH];
	struct iovec iov[BLAST_RECV_BATCH];
	struct sockaddr_in from[BLAST_RECV_BATCH];
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), next = t0, bytes = 0, pkts = 0,
		 foreign = 0, overflow = 0;
	size_t nsrc = 0;
	int fd, rcvbuf = 4 << 20;
	char ipb[INET_ADDRSTRLEN];

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "c4blast: bind %s:%d: %s\n",
			blast_ip(bind_ip, ipb), BLAST_PORT, strerror(errno));
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	printf("{\"event\":\"listen\",\"t_ms\":%llu,\"bind\":\"%s\"}\n",
	       (unsigned long long)blast_wall_ms(), blast_ip(bind_ip, ipb));
	fflush(stdout);
	while (!blast_stop) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		struct pollfd p = {fd, POLLIN, 0};
		int n;

		if (duration_ms && now - t0 >= duration_ms * 1000000u)
			break;
		if (now >= next) {
			printf("{\"t_ms\":%llu,\"rx_bytes\":%llu,"
			       "\"rx_pkts\":%llu}\n",
			       (unsigned long long)blast_wall_ms(),
			       (unsigned long long)bytes,
			       (unsigned long long)pkts);
			fflush(stdout);
			next += interval_ms * 1000000u;
			continue;
		}
		if (poll(&p, 1, (int)((next - now) / 1000000u) + 1) <= 0)
			continue;
		for (int i = 0; i < BLAST_RECV_BATCH; i++) {
			iov[i] = (struct iovec){buf[i], sizeof(buf[i])};
			mm[i].msg_hdr =
				(struct msghdr){.msg_name = &from[i],
						.msg_namelen = sizeof(from[i]),
						.msg_iov = &iov[i],
						.msg_iovlen = 1};
		}
		n = recvmmsg(fd, mm, BLAST_RECV_BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++) {
			struct blast_hdr h;
			struct blast_source *s;

			if (mm[i].msg_len < sizeof(h)) {
				foreign++;
				continue;
			}
			memcpy(&h, buf[i], sizeof(h));
			if (ntohl(h.magic) != BLAST_MAGIC) {
				foreign++;
				continue;
			}
			bytes += mm[i].msg_len;
			pkts++;
			s = blast_source_find(src, &nsrc,
					      from[i].sin_addr.s_addr,
					      ntohs(from[i].sin_port));
			if (s == NULL) {
				overflow++;
				continue;
			}
			s->bytes += mm[i].msg_len;
			s->pkts++;
		}
	}
	for (size_t i = 0; i < nsrc; i++)
		printf("{\"src\":\"%s\",\"sport\":%u,\"bytes\":%llu,"
		       "\"pkts\":%llu}\n",
		       blast_ip(src[i].ip, ipb), src[i].port,
		       (unsigned long long)src[i].bytes,
		       (unsigned long long)src[i].pkts);
	printf("{\"summary\":\"recv\",\"t_ms\":%llu,\"seconds\":%.3f,"
	       "\"rx_bytes\":%llu,\"rx_pkts\":%llu,\"sources\":%zu,"
	       "\"foreign\":%llu,\"overflow\":%llu}\n",
	       (unsigned long long)blast_wall_ms(),
	       (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9,
	       (unsigned long long)bytes, (unsigned long long)pkts, nsrc,
	       (unsigned long long)foreign, (unsigned long long)overflow);
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- send */

/*
 * A raw UDP socket that sends out of interface dev: the kernel adds the
 * IP header (source: src_ip), c4blast writes the UDP header.  A drop-all
 * filter keeps the socket from queueing copies of the host's UDP input.
 */
static int
blast_raw_socket(uint32_t src_ip, const char *dev)
{
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = {1, &drop};
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = {src_ip}};
	unsigned idx = if_nametoindex(dev);
	uint32_t be = htonl(idx);
	int fd;

	if (idx == 0) {
		fprintf(stderr, "c4blast: no interface %s\n", dev);
		return -1;
	}
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) <
		    0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_UNICAST_IF, &be, sizeof(be)) < 0) {
		fprintf(stderr, "c4blast: raw socket on %s: %s\n", dev,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Sends one packet of flow f (index i); 0 or -1. */
static int
blast_send_one(int fd, struct blast_flow *f, uint32_t i, size_t size)
{
	static char pkt[BLAST_MAX_SIZE + sizeof(struct udphdr)];
	struct udphdr *u = (struct udphdr *)pkt;
	struct blast_hdr h = {htonl(BLAST_MAGIC), htonl(i), f->seq++};
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr = {f->dst}};

	u->source = htons(f->sport);
	u->dest = htons(BLAST_PORT);
	u->len = htons((uint16_t)(size + sizeof(*u)));
	u->check = 0; /* none: allowed for UDP over IPv4 */
	memcpy(pkt + sizeof(*u), &h, sizeof(h));
	if (sendto(fd, pkt, size + sizeof(*u), 0, (struct sockaddr *)&to,
		   sizeof(to)) < 0) {
		f->errors++;
		return -1;
	}
	f->bytes += size;
	f->pkts++;
	return 0;
}

struct blast_send_opts {
	uint32_t src;
	struct blast_dst dsts[BLAST_MAX_DSTS];
	size_t ndst;
	const char *nic, *ports, *c4p, *token, *job, *name, *netns;
	uint64_t seed, duration_ms, count;
	double rate_mbit;
	size_t size;
};

static void
blast_flow_log(const char *ev, const struct blast_flow *f, uint32_t i,
	       uint16_t old)
{
	char a[INET_ADDRSTRLEN];

	printf("{\"event\":\"%s\",\"t_ms\":%llu,\"flow\":%u,\"dst\":\"%s\","
	       "\"side\":\"%s\",\"sport\":%u,\"old_sport\":%u,"
	       "\"spine\":\"%s\"}\n",
	       ev, (unsigned long long)blast_wall_ms(), i, blast_ip(f->dst, a),
	       blast_side_name(f->side), f->sport, old, f->spine);
	fflush(stdout);
}

/*
 * Applies ports (as the master answered them, request after request) to
 * the flows fl[base..base+n); logs each flow whose port moved as a
 * reassignment, under its index among all flows.
 */
static void
blast_apply(struct blast_flow *all, size_t base,
	    const struct c4p_client_port *p, size_t n, int log)
{
	struct blast_flow *fl = all + base;

	for (size_t i = 0; i < n; i++) {
		uint16_t old = fl[i].sport;

		if (p[i].sport == 0 ||
		    (p[i].sport == old &&
		     strcmp(p[i].spine, fl[i].spine) == 0 &&
		     (p[i].side == 0 || p[i].side == fl[i].side)))
			continue;
		fl[i].sport = p[i].sport;
		/* a bond failover sends from the other port */
		if (p[i].side == 1 || p[i].side == 2)
			fl[i].side = p[i].side;
		snprintf(fl[i].spine, sizeof(fl[i].spine), "%s", p[i].spine);
		if (log)
			blast_flow_log("reassign", &fl[i], (uint32_t)(base + i),
				       old);
	}
}

/*
 * Reads what the master sent without waiting; a PathReassign moves the
 * flows of its request.  Returns -1 when the session is lost.
 */
static int
blast_c4p_drain(struct c4p_client *c, const struct blast_send_opts *o,
		struct blast_flow *fl, const size_t *first)
{
	C4__Envelope *env;

	/* until nothing is left: one read may have brought several frames,
	 * and those wait in the session's buffer, not on the socket */
	for (;;) {
		c->cli.timeout_ms = 0;
		env = cli_recv(&c->cli);
		if (env == NULL)
			return strstr(c->cli.err, "no answer") ? 0 : -1;
		if (env->type == C4__MSG_TYPE__MSG_PATH_REASSIGN) {
			const C4__PathReassign *m = env->path_reassign;

			for (size_t d = 0; d < o->ndst; d++) {
				struct c4p_client_port pt[BLAST_MAX_FLOWS];

				if (strcmp(m->request_id, o->dsts[d].id) != 0)
					continue;
				struct c4p_client_port done[BLAST_MAX_FLOWS];
				size_t nd = 0;

				memset(pt, 0, sizeof(pt));
				for (size_t k = 0; k < m->n_paths; k++) {
					const C4__PathAssignment *a =
						m->paths[k];

					if (a->qp_index >= o->dsts[d].qps)
						continue;
					pt[a->qp_index].sport =
						(uint16_t)a->udp_sport;
					pt[a->qp_index].side =
						a->side == C4__PORT_SIDE__SIDE_LEFT
							? 1
							: 2;
					pt[a->qp_index].qp_index = a->qp_index;
					snprintf(pt[a->qp_index].spine,
						 sizeof(pt[0].spine), "%s",
						 a->spine ? a->spine : "");
				}
				blast_apply(fl, first[d], pt, o->dsts[d].qps,
					    1);
				/* each moved QP once, as it ends (a QP moved
				 * twice in one message: its last entry) */
				for (size_t k = 0; k < o->dsts[d].qps; k++)
					if (pt[k].sport != 0)
						done[nd++] = pt[k];
				/* the ports in use now: the master's record */
				if (c4p_client_confirm(c, o->dsts[d].id, done,
						       nd) < 0)
					return -1;
			}
		}
		msg_free(env);
	}
	return 0;
}

/* Asks (or renews) every request in one batch; 0 or -1. */
static int
blast_c4p_request(struct c4p_client *c, const struct blast_send_opts *o,
		  struct blast_flow *fl, size_t nflows, int log)
{
	struct c4p_client_req rq[BLAST_MAX_DSTS];
	struct c4p_client_port pt[BLAST_MAX_FLOWS];
	char src[INET_ADDRSTRLEN];
	int errs[BLAST_MAX_DSTS], rc;

	blast_ip(o->src, src);
	for (size_t d = 0; d < o->ndst; d++)
		rq[d] = (struct c4p_client_req){
			o->dsts[d].id, src, o->dsts[d].dst_s, o->dsts[d].side,
			o->dsts[d].qps};
	c->cli.timeout_ms = BLAST_CONNECT_MS;
	rc = c4p_client_request(c, rq, o->ndst, pt, errs);
	if (rc != 0) {
		fprintf(stderr, "c4blast: path request: %s\n", c->err);
		return -1;
	}
	blast_apply(fl, 0, pt, nflows, log);
	return 0;
}

static int
blast_send(struct blast_send_opts *o)
{
	static struct blast_flow fl[BLAST_MAX_FLOWS];
	struct c4p_client c4;
	size_t nflows = 0, first[BLAST_MAX_DSTS];
	uint64_t gap_ns, t0, end, next_poll, next_renew = UINT64_MAX;
	int fds[3] = {-1, -1, -1}, rc = 1, have_c4 = 0;
	char dev[IFNAMSIZ + 8], a[INET_ADDRSTRLEN];
	const char *pp;

	for (size_t d = 0; d < o->ndst; d++) {
		first[d] = nflows;
		for (unsigned q = 0; q < o->dsts[d].qps; q++) {
			if (nflows >= BLAST_MAX_FLOWS) {
				fprintf(stderr, "c4blast: over %d flows\n",
					BLAST_MAX_FLOWS);
				return 2;
			}
			fl[nflows].dst = o->dsts[d].ip;
			fl[nflows].side = o->dsts[d].side;
			nflows++;
		}
	}
	/* Ports: the master's, a list, or random. */
	if (o->c4p != NULL) {
		if (c4p_client_connect(&c4, o->c4p, o->token, o->job,
				       C4__ROLE__ROLE_CCL_CLIENT,
				       BLAST_CONNECT_MS) < 0) {
			fprintf(stderr, "c4blast: %s: %s\n", o->c4p, c4.err);
			return 1;
		}
		have_c4 = 1;
		if (blast_c4p_request(&c4, o, fl, nflows, 0) < 0)
			goto out;
	} else if (o->ports != NULL && strcmp(o->ports, "random") != 0) {
		pp = o->ports;
		for (size_t i = 0; i < nflows; i++) {
			unsigned long v;
			char tok[16];
			size_t l = strcspn(pp, ",");

			snprintf(tok, sizeof(tok), "%.*s", (int)l, pp);
			if (blast_parse_ulong(tok, 1, 65535, "port", &v) < 0)
				return 2;
			fl[i].sport = (uint16_t)v;
			pp += l;
			if (*pp == ',')
				pp++;
			else if (i + 1 < nflows) {
				fprintf(stderr,
					"c4blast: --ports names %zu "
					"ports for %zu flows\n",
					i + 1, nflows);
				return 2;
			}
		}
	} else {
		/* nrand48: seeded, the same ports for a seed and source */
		unsigned short rs[3] = {
			(unsigned short)o->seed,
			(unsigned short)(o->seed >> 16),
			(unsigned short)(o->src ^ o->src >> 16)};

		for (size_t i = 0; i < nflows; i++) {
			int dup;

			do {
				fl[i].sport =
					(uint16_t)(BLAST_PORT_LO +
						   (unsigned long)nrand48(rs) %
							   (BLAST_PORT_HI -
							    BLAST_PORT_LO + 1));
				dup = 0;
				for (size_t k = 0; k < i; k++)
					dup |= fl[k].sport == fl[i].sport;
			} while (dup);
		}
	}
	if (o->netns != NULL && blast_netns(o->netns) < 0)
		goto out;
	for (int s = 1; s <= 2; s++) {
		snprintf(dev, sizeof(dev), "%s-%c", o->nic, s == 1 ? 'l' : 'r');
		fds[s] = blast_raw_socket(o->src, dev);
		if (fds[s] < 0)
			goto out;
	}
	for (size_t i = 0; i < nflows; i++)
		blast_flow_log("start", &fl[i], (uint32_t)i, 0);
	gap_ns = (uint64_t)((double)o->size * 8.0 * 1000.0 / o->rate_mbit);
	t0 = clock_ns(CLOCK_MONOTONIC);
	end = o->duration_ms ? t0 + o->duration_ms * 1000000u : UINT64_MAX;
	next_poll = t0 + BLAST_POLL_NS;
	if (have_c4 && c4.lease_ms > 0)
		next_renew = t0 + (uint64_t)c4.lease_ms * 1000000u / 3;
	/* Stagger the flows over one gap so they do not send in step. */
	for (size_t i = 0; i < nflows; i++)
		fl[i].next_ns = t0 + gap_ns * i / nflows;
	while (!blast_stop) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC), wake = end;
		int done = 1;
		struct timespec ts;

		if (now >= end)
			break;
		for (size_t i = 0; i < nflows; i++) {
			struct blast_flow *f = &fl[i];

			if (o->count && f->pkts + f->errors >= o->count)
				continue;
			done = 0;
			if (now - f->next_ns < (1ull << 63) &&
			    now - f->next_ns > BLAST_MAX_LAG_NS)
				f->next_ns = now;
			while (f->next_ns <= now &&
			       !(o->count && f->pkts + f->errors >= o->count)) {
				blast_send_one(fds[f->side], f, (uint32_t)i,
					       o->size);
				f->next_ns += gap_ns;
			}
			if (f->next_ns < wake)
				wake = f->next_ns;
		}
		if (done)
			break;
		if (have_c4 && now >= next_poll) {
			if (blast_c4p_drain(&c4, o, fl, first) < 0) {
				fprintf(stderr, "c4blast: c4p session: %s\n",
					c4.cli.err);
				goto out;
			}
			next_poll = now + BLAST_POLL_NS;
		}
		if (have_c4 && now >= next_renew) {
			if (blast_c4p_request(&c4, o, fl, nflows, 1) < 0)
				goto out;
			next_renew = now + (uint64_t)c4.lease_ms * 1000000u / 3;
		}
		if (have_c4 && next_poll < wake)
			wake = next_poll;
		now = clock_ns(CLOCK_MONOTONIC);
		if (wake > now) {
			ts.tv_sec = (time_t)((wake - now) / 1000000000u);
			ts.tv_nsec = (long)((wake - now) % 1000000000u);
			nanosleep(&ts, NULL);
		}
	}
	rc = 0;
	{
		uint64_t bytes = 0, pkts = 0, errors = 0;
		double secs = (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9;

		for (size_t i = 0; i < nflows; i++) {
			printf("{\"flow\":%zu,\"src\":\"%s\",", i,
			       blast_ip(o->src, a));
			printf("\"dst\":\"%s\",\"side\":\"%s\",\"sport\":%u,"
			       "\"spine\":\"%s\",\"sent_bytes\":%llu,"
			       "\"sent_pkts\":%llu,\"send_errors\":%llu}\n",
			       blast_ip(fl[i].dst, a),
			       blast_side_name(fl[i].side), fl[i].sport,
			       fl[i].spine, (unsigned long long)fl[i].bytes,
			       (unsigned long long)fl[i].pkts,
			       (unsigned long long)fl[i].errors);
			bytes += fl[i].bytes;
			pkts += fl[i].pkts;
			errors += fl[i].errors;
		}
		printf("{\"summary\":\"send\",\"t_ms\":%llu,\"seconds\":%.3f,"
		       "\"flows\":%zu,\"sent_bytes\":%llu,\"sent_pkts\":%llu,"
		       "\"send_errors\":%llu}\n",
		       (unsigned long long)blast_wall_ms(), secs, nflows,
		       (unsigned long long)bytes, (unsigned long long)pkts,
		       (unsigned long long)errors);
	}
out:
	for (int s = 1; s <= 2; s++)
		if (fds[s] >= 0)
			close(fds[s]);
	if (have_c4) {
		if (rc == 0)
			c4p_client_release(&c4, NULL);
		c4p_client_close(&c4);
	}
	fflush(stdout);
	return rc;
}

/* DST:SIDE:QPS, SIDE l or r. */
static int
blast_parse_dst(const char *s, struct blast_dst *d, const char *name,
		size_t index)
{
	char ip[INET_ADDRSTRLEN], sd;
	unsigned long q;
	const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

	if (c1 == NULL || c2 == NULL || c2 != c1 + 2 ||
	    (size_t)(c1 - s) >= sizeof(ip)) {
		fprintf(stderr, "c4blast: bad --to '%s' (DST:l|r:QPS)\n", s);
		return -1;
	}
	snprintf(ip, sizeof(ip), "%.*s", (int)(c1 - s), s);
	sd = c1[1];
	if ((sd != 'l' && sd != 'r') || blast_parse_ip(ip, &d->ip) < 0 ||
	    blast_parse_ulong(c2 + 1, 1, BLAST_MAX_FLOWS, "QP count", &q) < 0) {
		fprintf(stderr, "c4blast: bad --to '%s' (DST:l|r:QPS)\n", s);
		return -1;
	}
	d->side = sd == 'l' ? 1 : 2;
	d->qps = (unsigned)q;
	snprintf(d->dst_s, sizeof(d->dst_s), "%s", ip);
	snprintf(d->id, sizeof(d->id), "%s/%zu-%s-%c", name, index, ip, sd);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"bind", required_argument, NULL, 'b'},
		{"netns", required_argument, NULL, 'N'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"duration", required_argument, NULL, 'd'},
		{"src", required_argument, NULL, 's'},
		{"to", required_argument, NULL, 't'},
		{"nic", required_argument, NULL, 'n'},
		{"rate", required_argument, NULL, 'r'},
		{"size", required_argument, NULL, 'z'},
		{"count", required_argument, NULL, 'c'},
		{"ports", required_argument, NULL, 'p'},
		{"seed", required_argument, NULL, 'S'},
		{"c4p", required_argument, NULL, 'C'},
		{"token", required_argument, NULL, 'T'},
		{"job", required_argument, NULL, 'J'},
		{"name", required_argument, NULL, 'I'},
		{NULL, 0, NULL, 0}};
	static struct blast_send_opts o;
	const char *mode, *tos[BLAST_MAX_DSTS];
	uint32_t bind_ip = 0;
	unsigned long v, interval = 1000, duration = 0;
	struct sigaction sa;
	char *end;
	int ch;

	if (argc < 2)
		usage();
	mode = argv[1];
	if (strcmp(mode, "recv") != 0 && strcmp(mode, "send") != 0)
		usage();
	o.nic = "nic0";
	o.rate_mbit = 1.0;
	o.size = 1000;
	o.name = "c4blast";
	optind = 2;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'b':
			if (blast_parse_ip(optarg, &bind_ip) < 0)
				return 2;
			break;
		case 's':
			if (blast_parse_ip(optarg, &o.src) < 0)
				return 2;
			break;
		case 'N':
			o.netns = optarg;
			break;
		case 'i':
			if (blast_parse_ulong(optarg, 10, 60000, "interval",
					      &interval) < 0)
				return 2;
			break;
		case 'd':
			if (blast_parse_ulong(optarg, 1, 86400, "duration",
					      &duration) < 0)
				return 2;
			break;
		case 't':
			if (o.ndst >= BLAST_MAX_DSTS) {
				fprintf(stderr, "c4blast: over %d --to\n",
					BLAST_MAX_DSTS);
				return 2;
			}
			tos[o.ndst++] = optarg;
			break;
		case 'n':
			if (strlen(optarg) + 2 >= IFNAMSIZ) {
				fprintf(stderr, "c4blast: NIC name too long\n");
				return 2;
			}
			o.nic = optarg;
			break;
		case 'r':
			o.rate_mbit = strtod(optarg, &end);
			if (*end != '\0' ||
			    !(o.rate_mbit > 0 && o.rate_mbit <= 100000)) {
				fprintf(stderr, "c4blast: bad --rate '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'z':
			if (blast_parse_ulong(optarg, BLAST_MIN_SIZE,
					      BLAST_MAX_SIZE, "size", &v) < 0)
				return 2;
			o.size = v;
			break;
		case 'c':
			if (blast_parse_ulong(optarg, 1, 1000000000, "count",
					      &v) < 0)
				return 2;
			o.count = v;
			break;
		case 'p':
			o.ports = optarg;
			break;
		case 'S':
			if (blast_parse_ulong(optarg, 0, ULONG_MAX, "seed",
					      &v) < 0)
				return 2;
			o.seed = v;
			break;
		case 'C':
			o.c4p = optarg;
			break;
		case 'T':
			o.token = optarg;
			break;
		case 'J':
			o.job = optarg;
			break;
		case 'I':
			o.name = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = blast_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "recv") == 0) {
		if (bind_ip == 0) {
			fprintf(stderr, "c4blast recv: --bind IP needed\n");
			return 2;
		}
		if (o.netns != NULL && blast_netns(o.netns) < 0)
			return 1;
		return blast_recv(bind_ip, interval, duration * 1000u);
	}
	if (o.src == 0 || o.ndst == 0) {
		fprintf(stderr, "c4blast send: --src and --to needed\n");
		return 2;
	}
	if (o.c4p != NULL && (o.token == NULL || o.job == NULL)) {
		fprintf(stderr,
			"c4blast send: --c4p needs --token and --job\n");
		return 2;
	}
	if (o.c4p != NULL && o.ports != NULL) {
		fprintf(stderr, "c4blast send: --c4p or --ports, not both\n");
		return 2;
	}
	if (o.duration_ms == 0 && o.count == 0)
		o.duration_ms = duration ? duration * 1000u : 10000u;
	else if (duration)
		o.duration_ms = duration * 1000u;
	for (size_t d = 0; d < o.ndst; d++)
		if (blast_parse_dst(tos[d], &o.dsts[d], o.name, d) < 0)
			return 2;
	return blast_send(&o);
}
