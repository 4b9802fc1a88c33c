/*
 * prober.c - probe tasks from the c4p-master: for each source port of a
 * task, UDP datagrams toward the RoCEv2 port with TTL 1 .. max_ttl, each
 * `repeats` times; the switch where the TTL runs out answers ICMP time
 * exceeded, the destination answers port unreachable.  IP_RECVERR puts
 * those answers on the sending socket's error queue, so no raw socket is
 * needed.  The payload of every probe names it (task id, source port, TTL,
 * repeat): answers are matched by it, whichever probe socket they reach.
 *
 * Everything runs on the event loop: sockets are non-blocking, a token
 * bucket refilled by a timer paces the packets of all running tasks, and
 * a task ends at a timer after its last probe (or as soon as every probe
 * was answered).  Sockets are made in the configured network namespace
 * (setns around socket(); a socket keeps the namespace it was made in).
 */
#define LOG_SUBSYS "probe"

#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* What the answers of one (source port, TTL) add up to. */
struct prober_acc {
	uint32_t sent, received;
	uint64_t rtt_us; /* sum over received */
	uint32_t addr;	 /* last offender, network order; 0: none */
	bool reached;
	bool mixed; /* answers came from two addresses: rehashed mid-task */
};

struct prober_run {
	TAILQ_ENTRY(prober_run) entry;
	uint64_t id;
	uint32_t src_ip, dst_ip; /* network order */
	uint16_t dport;
	char dev[MSG_IFNAME_MAX + 1];
	C4__PortSide side;
	uint16_t *sports;
	size_t n;
	uint8_t max_ttl, repeats;
	uint32_t timeout_ms;
	int *fds;
	struct event **evs;
	struct prober_acc *acc; /* [n * max_ttl] */
	uint64_t *sent_ns;	/* [n * max_ttl * repeats]; 0: unanswered */
	size_t next, total, answered;
	uint64_t started_ns;
	bool failed;	     /* its sockets could not be made, or it expired */
	bool draining;	     /* every probe sent: timer is the answer wait */
	struct event *timer; /* the deadline, then the answer wait */
	struct prober *pr;
};

TAILQ_HEAD(prober_list, prober_run);

struct prober {
	struct event_base *base;
	uint32_t rate;
	int netns_fd, self_fd; /* -1 without probe_netns */
	double tokens;
	uint64_t last_tick_ns;
	struct event *tick;
	struct prober_list queue, active;
	size_t socks;
	prober_result_fn done;
	void *arg;
	struct prober_stats st;
};

/* ---- payload and error-queue parsing (pure, unit-tested) -------------- */

static void
prober_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t
prober_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

void
prober_payload(uint8_t *buf, uint64_t task, uint16_t sport, uint8_t ttl,
	       uint8_t rep)
{
	prober_put32(buf, PROBER_MAGIC);
	prober_put32(buf + 4, (uint32_t)(task >> 32));
	prober_put32(buf + 8, (uint32_t)task);
	buf[12] = (uint8_t)(sport >> 8);
	buf[13] = (uint8_t)sport;
	buf[14] = ttl;
	buf[15] = rep;
}

int
prober_parse(const struct msghdr *msg, const uint8_t *data, size_t len,
	     struct prober_reply *r)
{
	const struct sock_extended_err *ee = NULL;
	const struct sockaddr_in *off;
	const uint8_t *end = NULL;
	struct cmsghdr *cm;

	memset(r, 0, sizeof(*r));
	for (cm = CMSG_FIRSTHDR((struct msghdr *)msg); cm != NULL;
	     cm = CMSG_NXTHDR((struct msghdr *)msg, cm))
		if (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(*ee))) {
			ee = (const struct sock_extended_err *)CMSG_DATA(cm);
			end = (const uint8_t *)cm + cm->cmsg_len;
		}
	if (ee == NULL || ee->ee_origin != SO_EE_ORIGIN_ICMP)
		return -1;
	/* Without our payload it cannot be told which probe this was. */
	if (len < PROBER_PAYLOAD_LEN || prober_get32(data) != PROBER_MAGIC)
		return -1;
	r->task =
		(uint64_t)prober_get32(data + 4) << 32 | prober_get32(data + 8);
	r->sport = (uint16_t)(data[12] << 8 | data[13]);
	r->ttl = data[14];
	r->rep = data[15];
	if (ee->ee_type == 11) /* ICMP time exceeded */
		r->kind = PROBER_TTL_EXCEEDED;
	else if (ee->ee_type == 3 && ee->ee_code == 3) /* port unreachable */
		r->kind = PROBER_REACHED;
	else
		r->kind = PROBER_OTHER;
	/* The offender follows the structure, inside the same cmsg. */
	off = (const struct sockaddr_in *)SO_EE_OFFENDER(
		(struct sock_extended_err *)ee);
	if ((const uint8_t *)(off + 1) <= end && off->sin_family == AF_INET)
		r->offender = off->sin_addr.s_addr;
	return 0;
}

/* ---- sockets ----------------------------------------------------------- */

/*
 * A UDP socket in the probe namespace bound to (src_ip, sport) and, when
 * named, sending out of the port's interface (IP_UNICAST_IF, not
 * SO_BINDTODEVICE: a socket bound to a device only gets the ICMP errors
 * that arrive on that device, and the fabric may answer a bonded NIC
 * through its other port); IP_RECVERR on.  SO_REUSEADDR lets
 * concurrent tasks from the same address use the same source ports: an
 * answer may then land on another task's socket, which is why answers are
 * matched by payload, not by socket.  -1 with errno on failure.
 */
static int
prober_socket(struct prober *pr, const struct prober_run *t, uint16_t sport)
{
	struct sockaddr_in sa;
	int fd, on = 1, e;
	uint32_t ifx = 0;

	if (pr->netns_fd >= 0 && setns(pr->netns_fd, CLONE_NEWNET) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	e = errno;
	/* the interface's index in the probe namespace, looked up there */
	if (fd >= 0 && t->dev[0] != '\0') {
		ifx = if_nametoindex(t->dev);
		if (ifx == 0)
			e = errno;
	}
	if (pr->netns_fd >= 0 && setns(pr->self_fd, CLONE_NEWNET) < 0)
		log_warn("cannot return to the agent's network namespace");
	if (fd < 0 || (t->dev[0] != '\0' && ifx == 0)) {
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	ifx = htonl(ifx);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = t->src_ip;
	sa.sin_port = htons(sport);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0 ||
	    setsockopt(fd, SOL_IP, IP_RECVERR, &on, sizeof(on)) < 0 ||
	    (t->dev[0] != '\0' &&
	     setsockopt(fd, SOL_IP, IP_UNICAST_IF, &ifx, sizeof(ifx)) < 0) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static struct prober_run *
prober_find(struct prober *pr, uint64_t id)
{
	struct prober_run *t;

	TAILQ_FOREACH(t, &pr->active, entry)
	if (t->id == id)
		return t;
	return NULL;
}

/* Index of sport in the task, or -1. */
static ssize_t
prober_sport_ix(const struct prober_run *t, uint16_t sport)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->sports[i] == sport)
			return (ssize_t)i;
	return -1;
}

/* One answer: credit the probe it names, once. */
static void
prober_take(struct prober *pr, const struct prober_reply *r, uint64_t now)
{
	struct prober_run *t = prober_find(pr, r->task);
	struct prober_acc *a;
	ssize_t k;
	size_t ix;

	if (t == NULL || r->ttl == 0 || r->ttl > t->max_ttl ||
	    r->rep >= t->repeats || (k = prober_sport_ix(t, r->sport)) < 0 ||
	    r->kind == PROBER_OTHER) {
		pr->st.stray++;
		return;
	}
	ix = ((size_t)r->rep * t->n + (size_t)k) * t->max_ttl + r->ttl - 1;
	if (t->sent_ns[ix] == 0 || t->sent_ns[ix] == UINT64_MAX) {
		pr->st.stray++; /* never sent, or answered already */
		return;
	}
	a = &t->acc[(size_t)k * t->max_ttl + r->ttl - 1];
	a->received++;
	a->rtt_us += (now - t->sent_ns[ix]) / 1000;
	if (a->addr != 0 && a->addr != r->offender)
		a->mixed = true;
	a->addr = r->offender;
	if (r->kind == PROBER_REACHED) {
		a->reached = true;
		pr->st.reached++;
	}
	t->sent_ns[ix] = UINT64_MAX;
	t->answered++;
	pr->st.replies++;
	/* Ends at its timer's callback: this socket is being read now. */
	if (t->answered == t->total && t->next == t->total)
		event_active(t->timer, EV_TIMEOUT, 1);
}

static void
prober_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct prober *pr = arg;

	(void)what;
	for (int i = 0; i < 256; i++) {
		uint8_t data[64], ctl[512];
		struct iovec iov = {data, sizeof(data)};
		struct msghdr m;
		struct prober_reply r;
		ssize_t n;

		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl;
		m.msg_controllen = sizeof(ctl);
		n = recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
		if (n < 0)
			return;
		if (prober_parse(&m, data, (size_t)n, &r) < 0) {
			pr->st.stray++;
			continue;
		}
		prober_take(pr, &r, clock_ns(CLOCK_MONOTONIC));
	}
}

/* ---- tasks ------------------------------------------------------------- */

static void
prober_run_free(struct prober_run *t)
{
	struct prober *pr = t->pr;

	for (size_t i = 0; t->fds != NULL && i < t->n; i++) {
		if (t->evs[i] != NULL)
			event_free(t->evs[i]);
		if (t->fds[i] >= 0) {
			close(t->fds[i]);
			pr->socks--;
		}
	}
	if (t->timer != NULL)
		event_free(t->timer);
	free(t->fds);
	free(t->evs);
	free(t->acc);
	free(t->sent_ns);
	free(t->sports);
	free(t);
}

static void prober_start_more(struct prober *pr);

static void
prober_ip_str(uint32_t a, char *buf, size_t len)
{
	struct in_addr in = {a};

	inet_ntop(AF_INET, &in, buf, (socklen_t)len);
}

/* Hands the task's result to the caller, frees it, starts the next. */
static void
prober_finish(struct prober_run *t)
{
	struct prober *pr = t->pr;
	C4__ProbeResult r = C4__PROBE_RESULT__INIT;
	C4__ProbePath *paths = calloc(t->n, sizeof(*paths));
	C4__ProbePath **pv = calloc(t->n, sizeof(*pv));
	C4__ProbeHop *hops = calloc(t->n * t->max_ttl, sizeof(*hops));
	C4__ProbeHop **hv = calloc(t->n * t->max_ttl, sizeof(*hv));
	char *addrs = calloc(t->n * t->max_ttl, INET_ADDRSTRLEN);
	char sip[INET_ADDRSTRLEN], dip[INET_ADDRSTRLEN];

	TAILQ_REMOVE(&pr->active, t, entry);
	pr->st.active--;
	pr->st.tasks_done++;
	pr->st.timeouts += t->next - t->answered;
	prober_ip_str(t->src_ip, sip, sizeof(sip));
	prober_ip_str(t->dst_ip, dip, sizeof(dip));
	r.has_task_id = 1;
	r.task_id = t->id;
	r.src_ip = sip;
	r.dst_ip = dip;
	r.has_started_ns = 1;
	r.started_ns = t->started_ns;
	r.has_finished_ns = 1;
	r.finished_ns = clock_ns(CLOCK_REALTIME);
	if (t->failed)
		goto send;
	if (paths == NULL || pv == NULL || hops == NULL || hv == NULL ||
	    addrs == NULL) {
		log_warnx("task %llu: out of memory; result without paths",
			  (unsigned long long)t->id);
		goto send;
	}
	for (size_t k = 0; k < t->n; k++) {
		C4__ProbePath *p = &paths[k];

		c4__probe_path__init(p);
		p->has_sport = 1;
		p->sport = t->sports[k];
		p->has_side = t->side != C4__PORT_SIDE__SIDE_UNSPECIFIED;
		p->side = t->side;
		p->hops = &hv[k * t->max_ttl];
		for (uint8_t ttl = 1; ttl <= t->max_ttl; ttl++) {
			size_t i = k * t->max_ttl + ttl - 1;
			const struct prober_acc *a = &t->acc[i];
			C4__ProbeHop *h = &hops[i];

			c4__probe_hop__init(h);
			h->has_ttl = h->has_sent = h->has_received = 1;
			h->ttl = ttl;
			h->sent = a->sent;
			h->received = a->received;
			/*
			 * The switches moved this port to another path while
			 * it was probed (a cable changed): neither path is
			 * known for these probes, and none of them counts as
			 * sent, answered or lost.
			 */
			if (a->mixed) {
				h->sent = h->received = 0;
				pr->st.rehashed++;
			} else if (a->addr != 0) {
				h->addr = addrs + i * INET_ADDRSTRLEN;
				prober_ip_str(a->addr, h->addr,
					      INET_ADDRSTRLEN);
			}
			if (a->received > 0) {
				h->has_rtt_us = 1;
				h->rtt_us = (uint32_t)(a->rtt_us / a->received);
			}
			hv[i] = h;
			p->n_hops++;
			/* Nothing lies beyond the destination. */
			if (a->reached) {
				p->reached = p->has_reached = 1;
				break;
			}
		}
		pv[k] = p;
	}
	r.paths = pv;
	r.n_paths = t->n;
send:
	if (pr->done != NULL)
		pr->done(&r, pr->arg);
	free(paths);
	free(pv);
	free(hops);
	free(hv);
	free(addrs);
	prober_run_free(t);
	prober_start_more(pr);
}

/*
 * The answer wait after the last probe, or the task's deadline: a task
 * still sending then (pacing starved, sends stuck) gives its sockets
 * back and reports failure (an empty result) instead of holding a slot.
 */
static void
prober_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct prober_run *t = arg;

	(void)fd;
	(void)what;
	if (!t->draining) {
		t->pr->st.tasks_expired++;
		log_warnx("probe task %llu: deadline passed with %zu of %zu "
			  "probes sent; reported failed",
			  (unsigned long long)t->id, t->next, t->total);
		t->failed = true;
	}
	prober_finish(t);
}

/* Time a task may run: its packets at a 1/PROBER_ACTIVE_MAX share of the
 * rate, its answer wait and PROBER_DEADLINE_SLACK_MS. */
static void
prober_arm_deadline(struct prober_run *t)
{
	uint64_t ms = (uint64_t)t->total * 1000u * PROBER_ACTIVE_MAX /
			      (t->pr->rate ? t->pr->rate : 1) +
		      t->timeout_ms + PROBER_DEADLINE_SLACK_MS;
	struct timeval tv = {(time_t)(ms / 1000),
			     (suseconds_t)(ms % 1000) * 1000};

	evtimer_add(t->timer, &tv);
}

/* The last probe is out (sent or refused): wait timeout_ms for answers. */
static void
prober_drain(struct prober_run *t)
{
	struct timeval tv = {t->timeout_ms / 1000,
			     (t->timeout_ms % 1000) * 1000};

	t->draining = true;
	evtimer_add(t->timer, &tv);
}

/* Sends the task's next probe; 0, or -1 when nothing was left to send. */
static int
prober_send_next(struct prober *pr, struct prober_run *t)
{
	size_t per_rep = t->n * t->max_ttl, i = t->next, rem, k;
	uint8_t ttl, rep, buf[PROBER_PAYLOAD_LEN];
	struct sockaddr_in sa;
	int v, e;
	socklen_t sl = sizeof(e);

	if (i >= t->total)
		return -1;
	rep = (uint8_t)(i / per_rep);
	rem = i % per_rep;
	k = rem / t->max_ttl;
	ttl = (uint8_t)(rem % t->max_ttl + 1);
	t->next++;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = t->dst_ip;
	sa.sin_port = htons(t->dport);
	prober_payload(buf, t->id, t->sports[k], ttl, rep);
	v = ttl;
	/* An earlier ICMP error left on the socket would fail this send. */
	getsockopt(t->fds[k], SOL_SOCKET, SO_ERROR, &e, &sl);
	if (setsockopt(t->fds[k], SOL_IP, IP_TTL, &v, sizeof(v)) < 0 ||
	    sendto(t->fds[k], buf, sizeof(buf), 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0) {
		pr->st.send_errors++;
		t->answered++; /* not sent: nothing to wait for */
		if (t->next == t->total)
			prober_drain(t);
		return 0;
	}
	t->sent_ns[(size_t)rep * per_rep + k * t->max_ttl + ttl - 1] =
		clock_ns(CLOCK_MONOTONIC);
	t->acc[k * t->max_ttl + ttl - 1].sent++;
	pr->st.sent++;
	if (t->next == t->total)
		prober_drain(t);
	return 0;
}

/* The pacing timer: tokens at the agent's rate, spent round robin. */
static void
prober_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct prober *pr = arg;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	double burst = pr->rate * (double)PROBER_TICK_MS / 1000.0 * 2 + 1;
	bool busy = true;

	(void)fd;
	(void)what;
	pr->tokens += (double)(now - pr->last_tick_ns) * pr->rate / 1e9;
	if (pr->tokens > burst)
		pr->tokens = burst;
	pr->last_tick_ns = now;
	while (pr->tokens >= 1 && busy) {
		struct prober_run *t, *nx;

		busy = false;
		for (t = TAILQ_FIRST(&pr->active); t != NULL; t = nx) {
			nx = TAILQ_NEXT(t, entry);
			if (pr->tokens < 1)
				break;
			if (prober_send_next(pr, t) == 0) {
				pr->tokens -= 1;
				busy = true;
			}
		}
	}
	/* Tasks whose every send failed end here, not at a timer. */
	for (struct prober_run *t = TAILQ_FIRST(&pr->active), *nx; t != NULL;
	     t = nx) {
		nx = TAILQ_NEXT(t, entry);
		if (t->next == t->total && t->answered == t->total)
			prober_finish(t);
	}
	if (!busy && TAILQ_EMPTY(&pr->queue))
		for (struct prober_run *t = TAILQ_FIRST(&pr->active); t != NULL;
		     t = TAILQ_NEXT(t, entry))
			if (t->next < t->total)
				busy = true;
	if (!busy)
		event_del(pr->tick);
}

/* Opens a task's sockets; -1 (errno set) when one cannot be made. */
static int
prober_open(struct prober *pr, struct prober_run *t)
{
	t->fds = malloc(t->n * sizeof(*t->fds));
	t->evs = calloc(t->n, sizeof(*t->evs));
	if (t->fds == NULL || t->evs == NULL)
		return -1;
	for (size_t i = 0; i < t->n; i++)
		t->fds[i] = -1;
	for (size_t i = 0; i < t->n; i++) {
		t->fds[i] = prober_socket(pr, t, t->sports[i]);
		if (t->fds[i] < 0)
			return -1;
		pr->socks++;
		t->evs[i] = event_new(pr->base, t->fds[i], EV_READ | EV_PERSIST,
				      prober_read_cb, pr);
		if (t->evs[i] == NULL || event_add(t->evs[i], NULL) < 0)
			return -1;
	}
	return 0;
}

/* Moves queued tasks to running while the limits allow. */
static void
prober_start_more(struct prober *pr)
{
	struct prober_run *t;
	struct timeval tv = {0, PROBER_TICK_MS * 1000};

	while ((t = TAILQ_FIRST(&pr->queue)) != NULL &&
	       pr->st.active < PROBER_ACTIVE_MAX &&
	       pr->socks + t->n <= C4_PROBE_SOCKS_MAX) {
		TAILQ_REMOVE(&pr->queue, t, entry);
		pr->st.queued--;
		TAILQ_INSERT_TAIL(&pr->active, t, entry);
		pr->st.active++;
		t->started_ns = clock_ns(CLOCK_REALTIME);
		if (prober_open(pr, t) < 0) {
			log_warn("task %llu: probe socket from %s",
				 (unsigned long long)t->id,
				 t->dev[0] ? t->dev : "(any device)");
			/* An empty result tells the master it failed. */
			t->failed = true;
			prober_finish(t);
			return; /* prober_finish went on with the queue */
		}
		prober_arm_deadline(t);
	}
	if (!TAILQ_EMPTY(&pr->active) &&
	    !event_pending(pr->tick, EV_TIMEOUT, NULL)) {
		pr->last_tick_ns = clock_ns(CLOCK_MONOTONIC);
		event_add(pr->tick, &tv);
	}
}

int
prober_task(struct prober *pr, const C4__ProbeTask *m, char *err, size_t errlen)
{
	struct prober_run *t;
	struct in_addr a, b;
	uint32_t ttl = m->has_max_ttl ? m->max_ttl : C4_PROBE_TTL;
	uint32_t reps = m->has_repeats && m->repeats ? m->repeats : 1;
	uint32_t tmo = m->has_timeout_ms && m->timeout_ms ? m->timeout_ms
							  : PROBER_TIMEOUT_MS;

	pr->st.tasks++;
	if (inet_pton(AF_INET, m->src_ip, &a) != 1 ||
	    inet_pton(AF_INET, m->dst_ip, &b) != 1) {
		snprintf(err, errlen,
			 "probe task: src_ip and dst_ip must be "
			 "IPv4 addresses");
		goto refuse;
	}
	if (reps > C4_PROBE_REPEATS_MAX || tmo > C4_PROBE_TIMEOUT_MAX_MS ||
	    m->n_sports > C4_PROBE_SOCKS_MAX ||
	    (m->has_dst_port && (m->dst_port == 0 || m->dst_port > 65535))) {
		snprintf(err, errlen,
			 "probe task: repeats at most %u, timeout_ms at most "
			 "%u, at most %u source ports, dst_port 1..65535",
			 C4_PROBE_REPEATS_MAX, C4_PROBE_TIMEOUT_MAX_MS,
			 C4_PROBE_SOCKS_MAX);
		goto refuse;
	}
	if (pr->st.queued >= PROBER_QUEUE_MAX) {
		snprintf(err, errlen, "probe task: %u tasks queued already",
			 PROBER_QUEUE_MAX);
		goto refuse;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto oom;
	t->pr = pr;
	t->id = m->task_id;
	t->src_ip = a.s_addr;
	t->dst_ip = b.s_addr;
	t->dport = m->has_dst_port ? (uint16_t)m->dst_port : PROBER_DPORT;
	snprintf(t->dev, sizeof(t->dev), "%s", m->src_dev ? m->src_dev : "");
	t->side =
		m->has_src_side ? m->src_side : C4__PORT_SIDE__SIDE_UNSPECIFIED;
	t->n = m->n_sports;
	t->max_ttl = (uint8_t)ttl;
	t->repeats = (uint8_t)reps;
	t->timeout_ms = tmo;
	t->total = t->n * ttl * reps;
	t->sports = malloc(t->n * sizeof(*t->sports));
	t->acc = calloc(t->n * ttl, sizeof(*t->acc));
	t->sent_ns = calloc(t->total, sizeof(*t->sent_ns));
	t->timer = evtimer_new(pr->base, prober_timeout_cb, t);
	if (t->sports == NULL || t->acc == NULL || t->sent_ns == NULL ||
	    t->timer == NULL) {
		prober_run_free(t);
		goto oom;
	}
	for (size_t i = 0; i < t->n; i++)
		t->sports[i] = (uint16_t)m->sports[i];
	TAILQ_INSERT_TAIL(&pr->queue, t, entry);
	pr->st.queued++;
	prober_start_more(pr);
	return 0;
oom:
	snprintf(err, errlen, "probe task: out of memory");
refuse:
	pr->st.tasks_refused++;
	return -1;
}

void
prober_cancel(struct prober *pr)
{
	struct prober_run *t;

	while ((t = TAILQ_FIRST(&pr->queue)) != NULL) {
		TAILQ_REMOVE(&pr->queue, t, entry);
		pr->st.queued--;
		prober_run_free(t);
	}
	while ((t = TAILQ_FIRST(&pr->active)) != NULL) {
		TAILQ_REMOVE(&pr->active, t, entry);
		pr->st.active--;
		prober_run_free(t);
	}
	event_del(pr->tick);
}

struct prober *
prober_new(struct event_base *base, uint32_t rate, const char *netns,
	   prober_result_fn done, void *arg)
{
	struct prober *pr = calloc(1, sizeof(*pr));
	char path[256];

	if (pr == NULL)
		return NULL;
	pr->base = base;
	pr->rate = rate ? rate : 1;
	pr->netns_fd = pr->self_fd = -1;
	pr->done = done;
	pr->arg = arg;
	TAILQ_INIT(&pr->queue);
	TAILQ_INIT(&pr->active);
	pr->tick = event_new(base, -1, EV_PERSIST, prober_tick_cb, pr);
	if (pr->tick == NULL)
		goto fail;
	if (netns != NULL) {
		snprintf(path, sizeof(path), "/run/netns/%s", netns);
		pr->netns_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (pr->netns_fd < 0) {
			log_warn("probe_netns: %s", path);
			goto fail;
		}
		pr->self_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (pr->self_fd < 0) {
			log_warn("probe_netns: /proc/self/ns/net");
			goto fail;
		}
	}
	return pr;
fail:
	prober_free(pr);
	return NULL;
}

void
prober_free(struct prober *pr)
{
	if (pr == NULL)
		return;
	prober_cancel(pr);
	if (pr->tick != NULL)
		event_free(pr->tick);
	if (pr->netns_fd >= 0)
		close(pr->netns_fd);
	if (pr->self_fd >= 0)
		close(pr->self_fd);
	free(pr);
}

const struct prober_stats *
prober_get_stats(const struct prober *pr)
{
	return &pr->st;
}
