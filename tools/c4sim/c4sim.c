/*
 * c4sim - drive real c4a-agents with a synthetic training job.
 *
 * The scenario generator (lib/scenario) produces what every rank of a
 * bulk-synchronous job measures per interval, with an injected fault whose
 * ground truth only c4sim knows.  c4sim starts one real c4a-agent process
 * per simulated host (each with its own unix socket, reporting to the job's
 * c4d-master over TCP), opens one session of the CCL client library per
 * host, registers each host's ranks, and every interval hands each host's
 * share of the summaries to its agent, in real time.  A lost node is a
 * SIGKILLed agent.  Everything it started is stopped when it ends.
 *
 * Output on stdout: progress lines, and the ground truth of the fault.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c4client.h"
#include "scen.h"
#include "cfg.h"
#include "clock.h"
#include "sketch.h"
#include "vec.h"

#define SIM_HOSTS_MAX	  4096
#define SIM_AGENT_WAIT_MS 20000 /* for an agent's socket to appear */
#define SIM_STOP_WAIT_MS  10000
#define SIM_LOCAL_TOKEN	  "c4sim-local-ccl-token"
#define SIM_QUEUE_BYTES	  (8u * 1024 * 1024)

struct sim_conf {
	char *job;
	char *master;
	char *token;
	int64_t ranks;
	int layout;
	int fault;
	int family;
	double slowdown;
	int64_t fault_at;
	int64_t clear_at;
	int64_t intervals;
	int64_t interval;
	int64_t seed;
	char *agent;
	char *workdir;
	char *host_prefix;
	char *truth;
	char *direct;
	char *direct_token;
};

static const char *const sim_layouts[] = {"tp-dp",    "tp-pp-dp", "dp-flat",
					  "tp-ep-dp", "dp-ring",  NULL};
static const char *const sim_faults[] = {
	"none",		"slow-conn", "slow-tx",	     "slow-rx",	  "slow-gpu",
	"intermittent", "comm-hang", "noncomm-hang", "node-lost", NULL};

/* none, then enum scen_family in order; late_reports is not offered: a
 * late host would send two intervals in one report, not two late ones */
static const char *const sim_families[] = {
	"none",	     "heavy_tail",   "drift",	       "backpressure",
	"host_wide", "host_nics",    "flapping",       "gradual",
	"job_stall", "partial_hang", "fraction_delay", NULL};

/* Every option can also be given in a scenario file (-F FILE). */
static const struct cfg_field sim_fields[] = {
	{"job", CFG_STR, offsetof(struct sim_conf, job), 0, 0, 0, "demo-job",
	 NULL, "job id"},
	{"master", CFG_ADDR, offsetof(struct sim_conf, master), 0, 0, 0,
	 "127.0.0.1:7410", NULL, "the job's c4d-master"},
	{"token", CFG_STR, offsetof(struct sim_conf, token), CFG_SECRET, 0, 0,
	 "change-me-agent-token", NULL, "the agents' credential at the master"},
	{"ranks", CFG_INT, offsetof(struct sim_conf, ranks), 0, 8, 32768, "64",
	 NULL, "ranks (a multiple of 8)"},
	{"layout", CFG_ENUM, offsetof(struct sim_conf, layout), 0, 0, 0,
	 "tp-dp", sim_layouts, "parallelism layout"},
	{"fault", CFG_ENUM, offsetof(struct sim_conf, fault), 0, 0, 0, "none",
	 sim_faults, "the injected fault"},
	{"family", CFG_ENUM, offsetof(struct sim_conf, family), 0, 0, 0, "none",
	 sim_families,
	 "a phenomenon family instead of fault (layout and magnitudes from "
	 "the seed)"},
	{"slowdown", CFG_DOUBLE, offsetof(struct sim_conf, slowdown), 0, 1.0,
	 100.0, "3", NULL, "slowdown factor of slow faults"},
	{"fault_at", CFG_INT, offsetof(struct sim_conf, fault_at), 0, 0,
	 1000000, "5", NULL, "interval of onset"},
	{"clear_at", CFG_INT, offsetof(struct sim_conf, clear_at), 0, 0,
	 1000000, "0", NULL, "interval a slow fault clears (0: never)"},
	{"intervals", CFG_INT, offsetof(struct sim_conf, intervals), 0, 1,
	 1000000, "30", NULL, "intervals to run"},
	{"interval", CFG_DURATION, offsetof(struct sim_conf, interval), 0, 50,
	 60000, "1s", NULL, "reporting interval"},
	{"seed", CFG_INT, offsetof(struct sim_conf, seed), 0, 0, 0, "1", NULL,
	 "random seed"},
	{"agent", CFG_STR, offsetof(struct sim_conf, agent), 0, 0, 0, NULL,
	 NULL, "c4a-agent program"},
	{"workdir", CFG_STR, offsetof(struct sim_conf, workdir), 0, 0, 0, NULL,
	 NULL, "folder for agent configs, sockets and logs"},
	{"host_prefix", CFG_STR, offsetof(struct sim_conf, host_prefix), 0, 0,
	 0, "node-", NULL, "host names are prefix + number"},
	{"truth", CFG_STR, offsetof(struct sim_conf, truth), 0, 0, 0, NULL,
	 NULL, "write the fault's ground truth here (JSON)"},
	{"direct", CFG_STR, offsetof(struct sim_conf, direct), 0, 0, 0, NULL,
	 NULL,
	 "no agents: every host's session goes to this unix socket of the "
	 "master (benchmarks)"},
	{"direct_token", CFG_STR, offsetof(struct sim_conf, direct_token),
	 CFG_SECRET, 0, 0, NULL, NULL,
	 "the ccl-client credential at the master, with direct"},
};

static const struct cfg_schema sim_schema = {
	"c4sim scenario", sizeof(struct sim_conf), sim_fields,
	CFG_NFIELDS(sim_fields), NULL};

struct sim_host {
	char name[32];
	char sock[300];
	pid_t agent;
	struct c4client *cl;
	int lost;
};

struct sim {
	struct sim_conf c;
	struct scen *s;
	struct scen_fault truth;
	uint64_t onset_ns; /* wall clock when the first faulty interval went */
	uint32_t nhosts;
	struct sim_host *hosts;
	char dir[200]; /* checked: sockets live here (sun_path is 108) */
};

static volatile sig_atomic_t sim_stop;

static void
sim_on_signal(int sig)
{
	(void)sig;
	sim_stop = 1;
}

static uint64_t
sim_now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000u;
}

/*
 * Milliseconds of CLOCK_MONOTONIC at which the next wall-clock multiple
 * of the interval falls (c4client_next_boundary): the job reports at the
 * boundaries, just before the agents send (docs/design.md).
 */
static uint64_t
sim_next_boundary_ms(uint32_t interval_ms, int first)
{
	uint64_t rt = clock_ns(CLOCK_REALTIME);
	uint64_t at = c4client_next_boundary(rt, interval_ms, first);

	return sim_now_ms() + (at > rt ? (at - rt) / 1000000u : 0);
}

static void
sim_sleep_until(uint64_t t)
{
	while (!sim_stop) {
		uint64_t now = sim_now_ms();
		struct timespec ts;

		if (now >= t)
			return;
		ts.tv_sec = (time_t)((t - now) / 1000);
		ts.tv_nsec = (long)((t - now) % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
}

/* ---- agents
 * ------------------------------------------------------------------ */

static int
sim_agent_start(struct sim *m, uint32_t h)
{
	struct sim_host *x = &m->hosts[h];
	char conf[320], log[320];
	FILE *fp;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/%s.yaml", m->dir, x->name);
	snprintf(log, sizeof(log), "%s/%s.log", m->dir, x->name);
	fp = fopen(conf, "w");
	if (fp == NULL)
		return -1;
	fprintf(fp,
		"node_name: %s\n"
		"interval: %" PRId64 "ms\n"
		"socket: {path: \"%s\", mode: 0600}\n"
		"masters:\n"
		"  - {job: \"%s\", address: \"%s\", token: \"%s\"}\n"
		"credentials:\n"
		"  - {name: ccl, token: %s, roles: [ccl-client]}\n"
		"log: {level: warning}\n",
		x->name, m->c.interval, x->sock, m->c.job, m->c.master,
		m->c.token, SIM_LOCAL_TOKEN);
	if (fclose(fp) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		/* A bare name is looked up in PATH. */
		execlp(m->c.agent, m->c.agent, "-d", "-f", conf, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", m->c.agent, strerror(errno));
		_exit(127);
	}
	x->agent = pid;
	return 0;
}

/* Waits until every agent's socket exists (the agents are ready). */
static int
sim_agents_wait(struct sim *m)
{
	uint64_t deadline = sim_now_ms() + SIM_AGENT_WAIT_MS;

	for (uint32_t h = 0; h < m->nhosts; h++) {
		struct stat st;

		while (stat(m->hosts[h].sock, &st) < 0) {
			int status;

			if (waitpid(m->hosts[h].agent, &status, WNOHANG) ==
			    m->hosts[h].agent) {
				fprintf(stderr,
					"c4sim: agent %s exited; see "
					"%s/%s.log\n",
					m->hosts[h].name, m->dir,
					m->hosts[h].name);
				m->hosts[h].agent = -1;
				return -1;
			}
			if (sim_now_ms() > deadline || sim_stop) {
				fprintf(stderr, "c4sim: agent %s not ready\n",
					m->hosts[h].name);
				return -1;
			}
			usleep(20000);
		}
	}
	return 0;
}

static void
sim_agents_stop(struct sim *m)
{
	uint64_t deadline = sim_now_ms() + SIM_STOP_WAIT_MS;

	for (uint32_t h = 0; h < m->nhosts; h++)
		if (m->hosts[h].agent > 0)
			kill(m->hosts[h].agent, SIGTERM);
	for (uint32_t h = 0; h < m->nhosts; h++) {
		int status;

		while (m->hosts[h].agent > 0) {
			pid_t w = waitpid(m->hosts[h].agent, &status, WNOHANG);

			if (w == m->hosts[h].agent || w < 0)
				break;
			if (sim_now_ms() > deadline) {
				kill(m->hosts[h].agent, SIGKILL);
				waitpid(m->hosts[h].agent, &status, 0);
				break;
			}
			usleep(10000);
		}
		m->hosts[h].agent = -1;
	}
}

/* ---- summaries
 * --------------------------------------------------------------- */

/*
 * A sketch that answers the generator's quantiles: samples spread over
 * piecewise-linear quantile points through (0,min) (.5,p50) (.9,p90)
 * (.99,p99) (1,max), weighted to the sample count.  Input in us.
 */
static int
sim_sketch(struct sketch *sk, const struct matrix_stats *st)
{
	static const double q[] = {0.0, 0.5, 0.9, 0.99, 1.0};
	double v[5];
	const unsigned k = 64;
	uint64_t left;

	sketch_reset(sk);
	if (st->count == 0)
		return 0;
	v[0] = st->min;
	v[1] = st->p50;
	v[2] = st->p90;
	v[3] = st->p99;
	v[4] = st->max;
	left = st->count;
	for (unsigned i = 0; i < k && left > 0; i++) {
		double p = (i + 0.5) / k, x = v[4];
		uint64_t n = left / (k - i);

		for (int j = 0; j < 4; j++)
			if (p <= q[j + 1]) {
				x = v[j] + (v[j + 1] - v[j]) * (p - q[j]) /
						   (q[j + 1] - q[j]);
				break;
			}
		if (n == 0)
			continue;
		if (sketch_add_n(sk, (uint64_t)llround(x * 1e3), n) < 0)
			return -1;
		left -= n;
	}
	/* Count, sum and extremes as measured, not as sampled. */
	sk->sum = (uint64_t)llround(st->sum * 1e3);
	sk->min = (uint64_t)llround(st->min * 1e3);
	sk->max = (uint64_t)llround(st->max * 1e3);
	return 0;
}

static int
sim_algo(uint8_t a)
{
	switch (a) {
	case MATRIX_ALGO_RING:
		return C4CLIENT_ALGO_RING;
	case MATRIX_ALGO_TREE:
		return C4CLIENT_ALGO_TREE;
	case MATRIX_ALGO_P2P:
		return 8; /* ALGO_P2P on the wire */
	default:
		return C4CLIENT_ALGO_OTHER;
	}
}

static int
sim_transport(uint8_t t)
{
	switch (t) {
	case MATRIX_TR_NVLINK:
		return C4CLIENT_NVLINK;
	case MATRIX_TR_PCIE:
		return C4CLIENT_PCIE;
	case MATRIX_TR_SHM:
		return C4CLIENT_SHM;
	default:
		return C4CLIENT_NET;
	}
}

/* Per-host buffers for one interval's report. */
struct sim_buf {
	size_t ccoll, cconn, cwait, cprog; /* records the arrays hold */
	struct c4client_progress *prog;
	size_t nprog;
	struct c4client_coll *coll;
	struct c4client_op *ops;
	struct c4client_conn *conn;
	struct c4client_wait *wait;
	struct sketch *sk; /* pool */
	size_t ncoll, nconn, nwait, nsk, csk;
};

static struct sketch *
sim_sk(struct sim_buf *b)
{
	return &b->sk[b->nsk++];
}

/* Host of (comm, rank), from the registered maps. */
struct sim_rankmap {
	uint64_t comm;
	uint32_t nranks;
	uint32_t *host;
};

/* maps is sorted by comm (sim_register); binary search. */
static uint32_t
sim_host_of(const struct sim_rankmap *maps, uint32_t nmaps, uint64_t comm,
	    uint32_t rank)
{
	uint32_t lo = 0, hi = nmaps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (maps[mid].comm < comm)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nmaps && maps[lo].comm == comm && rank < maps[lo].nranks)
		return maps[lo].host[rank];
	return UINT32_MAX;
}

static int
sim_cmp_map(const void *a, const void *b)
{
	uint64_t x = ((const struct sim_rankmap *)a)->comm;
	uint64_t y = ((const struct sim_rankmap *)b)->comm;

	return (x > y) - (x < y);
}

static int
sim_register(struct sim *m, struct sim_rankmap **out, uint32_t *nout)
{
	uint32_t nc = scen_ncomms(m->s);
	struct sim_rankmap *maps = calloc(nc ? nc : 1, sizeof(*maps));
	struct c4client_rank *ranks = NULL;
	char(*nics)[16] = NULL;
	uint32_t cap = 0;

	if (maps == NULL)
		return -1;
	for (uint32_t i = 0; i < nc; i++) {
		uint64_t hash;
		uint32_t n;

		if (scen_comm(m->s, i, &hash, &n) < 0)
			return -1;
		maps[i].comm = hash;
		maps[i].nranks = n;
		maps[i].host = calloc(n, sizeof(uint32_t));
		if (maps[i].host == NULL)
			return -1;
		if (n > cap) {
			cap = n;
			free(ranks);
			free(nics);
			ranks = calloc(cap, sizeof(*ranks));
			nics = calloc(cap, sizeof(*nics));
			if (ranks == NULL || nics == NULL)
				return -1;
		}
		for (uint32_t h = 0; h < m->nhosts; h++) {
			struct c4client_comm cm;
			size_t k = 0;

			for (uint32_t r = 0; r < n; r++) {
				struct matrix_rank_loc loc;

				scen_rank_loc(m->s, i, r, &loc);
				maps[i].host[r] = loc.host;
				if (loc.host != h)
					continue;
				snprintf(nics[k], sizeof(nics[k]), "mlx5_%u",
					 (unsigned)loc.nic);
				memset(&ranks[k], 0, sizeof(ranks[k]));
				ranks[k].rank = r;
				ranks[k].host = m->hosts[h].name;
				ranks[k].gpu = loc.gpu;
				ranks[k].local_rank = loc.gpu;
				ranks[k].nic = nics[k];
				ranks[k].nic_port = 1;
				k++;
			}
			if (k == 0)
				continue;
			memset(&cm, 0, sizeof(cm));
			cm.comm_hash = hash;
			cm.nranks = n;
			cm.nlocal = k;
			cm.ranks = ranks;
			if (c4client_register(m->hosts[h].cl, &cm) < 0)
				return -1;
		}
	}
	free(ranks);
	free(nics);
	qsort(maps, nc, sizeof(*maps), sim_cmp_map);
	*out = maps;
	*nout = nc;
	return 0;
}

/* Splits one interval of the whole job by host and reports it. */
static int
sim_report(struct sim *m, uint32_t iv, const struct matrix_input *in,
	   const struct sim_rankmap *maps, uint32_t nmaps, struct sim_buf *bufs)
{
	uint64_t now_ns;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (uint32_t h = 0; h < m->nhosts; h++)
		bufs[h].ncoll = bufs[h].nconn = bufs[h].nwait = bufs[h].nsk =
			bufs[h].nprog = 0;
	/* Sketches needed per host: 2 per collective, 1 per connection, 3
	 * per wait record; counted first so the pool never moves mid-fill. */
	for (size_t i = 0; i < in->ncoll; i++) {
		uint32_t h = sim_host_of(maps, nmaps, in->coll[i].comm,
					 in->coll[i].rank);

		if (h < m->nhosts)
			bufs[h].nsk += 2;
	}
	for (size_t i = 0; i < in->nconn; i++) {
		uint32_t h = sim_host_of(maps, nmaps, in->conn[i].comm,
					 in->conn[i].src);

		if (h < m->nhosts)
			bufs[h].nsk += 1;
	}
	for (size_t i = 0; i < in->nwait; i++) {
		uint32_t h = sim_host_of(maps, nmaps, in->wait[i].comm,
					 in->wait[i].rank);

		if (h < m->nhosts)
			bufs[h].nsk += 3;
	}
	for (uint32_t h = 0; h < m->nhosts; h++) {
		struct sim_buf *b = &bufs[h];
		size_t need = b->nsk;

		b->nsk = 0;
		if (need > b->csk) {
			/* Sketches are reused across intervals; grow once. */
			struct sketch *v = realloc(b->sk, need * sizeof(*v));

			if (v == NULL)
				return -1;
			for (size_t i = b->csk; i < need; i++)
				if (sketch_init(&v[i], 0) < 0)
					return -1;
			b->sk = v;
			b->csk = need;
		}
	}
	for (size_t i = 0; i < in->ncoll; i++) {
		const struct matrix_coll *c = &in->coll[i];
		uint32_t h = sim_host_of(maps, nmaps, c->comm, c->rank);
		struct sim_buf *b;
		struct c4client_coll *o;
		struct c4client_op *op;

		if (h >= m->nhosts)
			continue;
		b = &bufs[h];
		if (b->ncoll == b->ccoll) {
			size_t cops = b->ccoll;

			if (vec_reserve((void **)&b->coll, &b->ccoll,
					b->ncoll + 1, sizeof(*b->coll)) < 0 ||
			    vec_reserve((void **)&b->ops, &cops, b->ncoll + 1,
					sizeof(*b->ops)) < 0)
				return -1;
		}
		o = &b->coll[b->ncoll];
		op = &b->ops[b->ncoll++];
		memset(o, 0, sizeof(*o));
		o->comm_hash = c->comm;
		o->rank = c->rank;
		/*
		 * As a CCL reports them: the summary's sequence numbers are
		 * those of the interval (0 when none), the progress marker's
		 * the newest ever.
		 */
		if (c->nops > 0) {
			o->first_seq_entered = c->seq_enter_first;
			o->last_seq_entered = c->seq_enter;
			o->first_seq_completed = c->seq_done_first;
			o->last_seq_completed = c->seq_done;
		}
		if (vec_reserve((void **)&b->prog, &b->cprog, b->nprog + 1,
				sizeof(*b->prog)) < 0)
			return -1;
		memset(&b->prog[b->nprog], 0, sizeof(b->prog[0]));
		b->prog[b->nprog].comm_hash = c->comm;
		b->prog[b->nprog].rank = c->rank;
		b->prog[b->nprog].last_seq_entered = c->seq_enter;
		b->prog[b->nprog].last_seq_completed = c->seq_done;
		b->nprog++;
		o->first_start_ns = (uint64_t)c->t_first_ns;
		o->idle = c->nops == 0;
		if (c->nops == 0)
			continue;
		memset(op, 0, sizeof(*op));
		op->func = c->op ? c->op : C4CLIENT_ALLREDUCE;
		op->count = c->nops;
		op->bytes = c->bytes;
		op->algorithm = sim_algo(c->algo);
		op->protocol = C4CLIENT_PROTO_SIMPLE;
		{
			struct sketch *k = sim_sk(b), *g = sim_sk(b);

			if (sim_sketch(k, &c->kernel) < 0 ||
			    sim_sketch(g, &c->gap) < 0)
				return -1;
			op->kernel_time = k;
			op->gap_time = g;
		}
		o->nops = 1;
		o->ops = op;
	}
	for (size_t i = 0; i < in->nconn; i++) {
		const struct matrix_conn *c = &in->conn[i];
		uint32_t h = sim_host_of(maps, nmaps, c->comm, c->src);
		struct sim_buf *b;
		struct c4client_conn *o;
		struct sketch *k;

		if (h >= m->nhosts)
			continue;
		b = &bufs[h];
		if (vec_reserve((void **)&b->conn, &b->cconn, b->nconn + 1,
				sizeof(*b->conn)) < 0)
			return -1;
		o = &b->conn[b->nconn++];
		memset(o, 0, sizeof(*o));
		o->comm_hash = c->comm;
		o->src_rank = c->src;
		o->dst_rank = c->dst;
		o->channel_mask = c->channels;
		o->transport = sim_transport(c->transport);
		o->algorithm = sim_algo(c->algo);
		o->bytes = c->bytes;
		o->chunks = c->chunks;
		o->pending_chunks = c->pending;
		k = sim_sk(b);
		if (sim_sketch(k, &c->xfer) < 0)
			return -1;
		o->transfer_time = c->xfer.count ? k : NULL;
	}
	for (size_t i = 0; i < in->nwait; i++) {
		const struct matrix_wait *w = &in->wait[i];
		uint32_t h = sim_host_of(maps, nmaps, w->comm, w->rank);
		struct sim_buf *b;
		struct c4client_wait *o;

		if (h >= m->nhosts)
			continue;
		b = &bufs[h];
		if (vec_reserve((void **)&b->wait, &b->cwait, b->nwait + 1,
				sizeof(*b->wait)) < 0)
			return -1;
		o = &b->wait[b->nwait++];
		memset(o, 0, sizeof(*o));
		o->comm_hash = w->comm;
		o->rank = w->rank;
		o->steps = w->nsteps;
		/* Totals travel as one-sample sketches: the master reads sums.
		 */
		{
			struct sketch *a = sim_sk(b), *p = sim_sk(b),
				      *g = sim_sk(b);

			sketch_reset(a);
			sketch_reset(p);
			sketch_reset(g);
			if (sketch_add(a, (uint64_t)llround(w->recv_wait_us *
							    1e3)) < 0 ||
			    sketch_add(p, (uint64_t)llround(
						  w->send_peer_wait_us * 1e3)) <
				    0 ||
			    sketch_add(g, (uint64_t)llround(
						  w->send_gpu_wait_us * 1e3)) <
				    0)
				return -1;
			o->recv_wait = a;
			o->send_peer_wait = p;
			o->send_gpu_wait = g;
		}
	}
	for (uint32_t h = 0; h < m->nhosts; h++) {
		struct sim_buf *b = &bufs[h];
		struct c4client_report r;

		if (m->hosts[h].lost)
			continue;
		memset(&r, 0, sizeof(r));
		r.interval_id = iv + 1;
		r.interval_start_ns = now_ns;
		r.interval_ms = (uint32_t)m->c.interval;
		r.ncolls = b->ncoll;
		r.colls = b->coll;
		r.nconns = b->nconn;
		r.conns = b->conn;
		r.nwaits = b->nwait;
		r.waits = b->wait;
		r.nprogress = b->nprog;
		r.progress = b->prog;
		if (c4client_report(m->hosts[h].cl, &r) < 0)
			fprintf(stderr, "c4sim: %s: report dropped\n",
				m->hosts[h].name);
	}
	return 0;
}

/* ---- ground truth
 * -------------------------------------------------------------- */

static void
sim_truth(const struct sim *m, FILE *fp)
{
	const struct scen_fault *f = &m->truth;

	if (m->c.fault == 0) {
		fprintf(fp, "{\"fault\":\"none\",\"family\":\"%s\"}\n",
			sim_families[m->c.family]);
		return;
	}
	fprintf(fp,
		"{\"family\":\"%s\",\"fault\":\"%s\",\"effective\":\"%s\","
		"\"slowdown\":%.3f,"
		"\"start_interval\":%u,\"clear_interval\":%" PRId64
		",\"host\":\"%s%02u\",\"gpu\":%u,\"nic\":\"mlx5_%u\","
		"\"peer_host\":\"%s%02u\",\"peer_gpu\":%u,\"onset_ns\":%" PRIu64
		"}\n",
		sim_families[m->c.family],
		scen_fault_name((unsigned)m->c.fault), scen_fault_name(f->base),
		f->slowdown, f->start, m->c.clear_at, m->c.host_prefix, f->host,
		f->gpu, f->gpu, m->c.host_prefix, f->peer_host, f->peer_gpu,
		m->onset_ns);
}

/*
 * The job is one episode of a phenomenon family (scen_family_new, from
 * the seed and rank count); its fault, if any, becomes the truth and is
 * reported as the fault kind it is. 0, or -1 when it cannot be built.
 */
static int
sim_family(struct sim *m)
{
	struct scen_truth t;
	int fam = scen_family_parse(sim_families[m->c.family]);

	m->s = fam < 0 ? NULL
		       : scen_family_new((unsigned)fam, (uint64_t)m->c.seed,
					 (uint32_t)m->c.ranks, &t);
	if (m->s == NULL) {
		fprintf(stderr,
			"c4sim: cannot build family %s with %" PRId64
			" ranks\n",
			sim_families[m->c.family], m->c.ranks);
		return -1;
	}
	m->c.layout = t.layout;
	m->c.fault = t.nfaults ? t.fault.kind : 0;
	m->c.fault_at = t.nfaults ? t.fault.start : 0;
	m->c.clear_at = 0;
	m->truth = t.fault;
	return 0;
}

/* ---- main -------------------------------------------------------------------
 */

static void
sim_usage(FILE *fp)
{
	fprintf(fp, "usage: c4sim [-F scenario.yaml] [--KEY VALUE ...]\n"
		    "keys (also in the scenario file):\n");
	for (size_t i = 0; i < CFG_NFIELDS(sim_fields); i++)
		fprintf(fp, "  --%-12s %s%s%s\n", sim_fields[i].key,
			sim_fields[i].help,
			sim_fields[i].def ? "; default " : "",
			sim_fields[i].def && !(sim_fields[i].flags & CFG_SECRET)
				? sim_fields[i].def
				: "");
	fprintf(fp, "layouts: tp-dp tp-pp-dp dp-flat tp-ep-dp dp-ring\n"
		    "faults: none slow-conn slow-tx slow-rx slow-gpu "
		    "intermittent comm-hang noncomm-hang node-lost\n");
}

/*
 * Options are KEY VALUE pairs of the scenario schema: they are appended to
 * the scenario file's text as YAML, so the one loader checks both and a
 * command-line value overrides the file's.
 */
static int
sim_load(int argc, char **argv, struct sim_conf *c)
{
	char *text = NULL, *file = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	struct cfg_diag d;
	int rc, i = 1;

	if (mem == NULL)
		return -1;
	if (argc > 2 && strcmp(argv[1], "-F") == 0) {
		FILE *fp = fopen(argv[2], "r");
		char line[4096];

		if (fp == NULL) {
			fprintf(stderr, "c4sim: %s: %s\n", argv[2],
				strerror(errno));
			fclose(mem);
			free(text);
			return -1;
		}
		while (fgets(line, sizeof(line), fp))
			fputs(line, mem);
		fclose(fp);
		fputc('\n', mem);
		file = argv[2];
		i = 3;
	}
	for (; i < argc; i += 2) {
		if (strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) {
			sim_usage(stderr);
			fclose(mem);
			free(text);
			return -1;
		}
		fprintf(mem, "%s: \"%s\"\n", argv[i] + 2, argv[i + 1]);
	}
	fclose(mem);
	/*
	 * A key given twice (file and command line) would be a duplicate:
	 * keep the last occurrence of each key.
	 */
	{
		char *out = calloc(1, len + 1), *save, *line;
		size_t n = 0;

		if (out == NULL) {
			free(text);
			return -1;
		}
		for (line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			const char *colon = strchr(line, ':');
			size_t klen = colon ? (size_t)(colon - line) : 0;
			int later = 0;

			if (colon && line[0] != ' ' && line[0] != '#') {
				char *rest = save;

				while (rest && *rest) {
					if (strncmp(rest, line, klen + 1) == 0)
						later = 1;
					rest = strchr(rest, '\n');
					rest = rest ? rest + 1 : NULL;
				}
			}
			if (!later)
				n += (size_t)sprintf(out + n, "%s\n", line);
		}
		free(text);
		text = out;
		len = n;
	}
	rc = cfg_load_buffer(file ? file : "command line", text, len,
			     &sim_schema, c, &d);
	if (rc < 0)
		cfg_diag_print(&d, stderr);
	cfg_diag_free(&d);
	free(text);
	return rc;
}

int
main(int argc, char **argv)
{
	struct sim m;
	struct scen_params sp;
	struct sim_rankmap *maps = NULL;
	struct sim_buf *bufs = NULL;
	uint32_t nmaps = 0;
	char self[PATH_MAX];
	int rc = 1;

	if (argc > 1 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		sim_usage(stdout);
		return 0;
	}
	memset(&m, 0, sizeof(m));
	if (sim_load(argc, argv, &m.c) < 0)
		return 2;
	if (m.c.ranks % 8 != 0) {
		fprintf(stderr, "c4sim: ranks must be a multiple of 8\n");
		goto out;
	}
	/* The agent binary: configured, or beside this program's build. */
	if (m.c.agent == NULL) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n > 0) {
			self[n] = '\0';
			*strrchr(self, '/') = '\0';
			m.c.agent = malloc(PATH_MAX + 64);
			if (m.c.agent != NULL)
				snprintf(m.c.agent, PATH_MAX + 64,
					 "%s/../../daemons/c4a-agent/c4a-agent",
					 self);
		}
		/* Installed: the agent is in PATH, not in a build tree. */
		if (m.c.agent == NULL || access(m.c.agent, X_OK) < 0) {
			free(m.c.agent);
			m.c.agent = strdup("c4a-agent");
		}
	}
	if (m.c.workdir != NULL) {
		if (strlen(m.c.workdir) > 60) {
			fprintf(stderr, "c4sim: workdir longer than 60 "
					"characters (unix socket paths)\n");
			goto out;
		}
		snprintf(m.dir, sizeof(m.dir), "%s", m.c.workdir);
		mkdir(m.dir, 0755);
	} else {
		char tmpl[] = "/tmp/c4sim-XXXXXX";

		if (mkdtemp(tmpl) == NULL)
			goto out;
		snprintf(m.dir, sizeof(m.dir), "%s", tmpl);
	}
	signal(SIGINT, sim_on_signal);
	signal(SIGTERM, sim_on_signal);
	signal(SIGPIPE, SIG_IGN);

	scen_params_default(&sp);
	sp.nranks = (uint32_t)m.c.ranks;
	sp.layout = (uint8_t)m.c.layout;
	sp.seed = (uint64_t)m.c.seed;
	if (m.c.family != 0 && sim_family(&m) < 0)
		goto out;
	if (m.s == NULL)
		m.s = scen_new(&sp);
	if (m.s == NULL) {
		fprintf(stderr,
			"c4sim: cannot build a %s job of %" PRId64 " ranks\n",
			sim_layouts[m.c.layout], m.c.ranks);
		goto out;
	}
	if (m.c.fault != 0 && m.c.family == 0) {
		if (scen_add_fault(m.s, (unsigned)m.c.fault, m.c.slowdown,
				   (uint32_t)m.c.fault_at, &m.truth) < 0) {
			fprintf(stderr, "c4sim: cannot place fault %s\n",
				sim_faults[m.c.fault]);
			goto out;
		}
		if (m.c.clear_at > 0 &&
		    scen_clear_fault(m.s, 0, (uint32_t)m.c.clear_at) < 0) {
			fprintf(stderr, "c4sim: fault %s cannot clear\n",
				sim_faults[m.c.fault]);
			goto out;
		}
	}
	m.nhosts = scen_nhosts(m.s);
	if (m.nhosts > SIM_HOSTS_MAX)
		goto out;
	m.hosts = calloc(m.nhosts, sizeof(*m.hosts));
	bufs = calloc(m.nhosts, sizeof(*bufs));
	if (m.hosts == NULL || bufs == NULL)
		goto out;
	for (uint32_t h = 0; h < m.nhosts; h++) {
		snprintf(m.hosts[h].name, sizeof(m.hosts[h].name), "%s%02u",
			 m.c.host_prefix, h);
		snprintf(m.hosts[h].sock, sizeof(m.hosts[h].sock), "%s/%s.sock",
			 m.dir, m.hosts[h].name);
		m.hosts[h].agent = -1;
		if (m.c.direct != NULL)
			snprintf(m.hosts[h].sock, sizeof(m.hosts[h].sock), "%s",
				 m.c.direct);
		else if (sim_agent_start(&m, h) < 0)
			goto out;
	}
	if (m.c.direct != NULL)
		printf("c4sim: %" PRId64 " ranks (%s) on %u hosts, sessions "
		       "straight to the master at %s every %" PRId64 " ms\n",
		       m.c.ranks, sim_layouts[m.c.layout], m.nhosts, m.c.direct,
		       m.c.interval);
	else
		printf("c4sim: %" PRId64
		       " ranks (%s) on %u hosts, one c4a-agent each "
		       "(%s), reporting to %s every %" PRId64 " ms\n",
		       m.c.ranks, sim_layouts[m.c.layout], m.nhosts, m.dir,
		       m.c.master, m.c.interval);
	fflush(stdout);
	if (m.c.direct == NULL && sim_agents_wait(&m) < 0)
		goto out;
	for (uint32_t h = 0; h < m.nhosts; h++) {
		struct c4client_opts o;

		memset(&o, 0, sizeof(o));
		o.socket_path = m.hosts[h].sock;
		o.job_id = m.c.job;
		o.token = m.c.direct ? m.c.direct_token : SIM_LOCAL_TOKEN;
		o.node_name = m.hosts[h].name;
		o.queue_limit = SIM_QUEUE_BYTES;
		m.hosts[h].cl = c4client_open(&o);
		if (m.hosts[h].cl == NULL)
			goto out;
	}
	if (sim_register(&m, &maps, &nmaps) < 0)
		goto out;
	if (m.c.truth != NULL) {
		FILE *fp = fopen(m.c.truth, "w");

		if (fp != NULL) {
			sim_truth(&m, fp);
			fclose(fp);
		}
	}
	printf("c4sim: injecting ");
	sim_truth(&m, stdout);
	fflush(stdout);
	sim_sleep_until(sim_next_boundary_ms((uint32_t)m.c.interval, 1));
	for (uint32_t iv = 0; iv < (uint32_t)m.c.intervals && !sim_stop; iv++) {
		struct matrix_input in;

		if (scen_interval(m.s, iv, &in) < 0)
			goto out;
		if (m.c.fault != 0 && m.truth.base == SCEN_F_NODE_LOST &&
		    iv == m.truth.start && !m.hosts[m.truth.host].lost) {
			struct sim_host *x = &m.hosts[m.truth.host];

			printf("c4sim: interval %u: node %s lost (agent "
			       "killed)\n",
			       iv, x->name);
			kill(x->agent, SIGKILL);
			waitpid(x->agent, NULL, 0);
			x->agent = -1;
			x->lost = 1;
		}
		if (m.c.fault != 0 && iv == m.truth.start) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			m.onset_ns = (uint64_t)ts.tv_sec * 1000000000u +
				     (uint64_t)ts.tv_nsec;
		}
		if (sim_report(&m, iv, &in, maps, nmaps, bufs) < 0)
			goto out;
		if (m.onset_ns != 0 && iv == m.truth.start &&
		    m.c.truth != NULL) {
			FILE *fp = fopen(m.c.truth, "w");

			if (fp != NULL) {
				sim_truth(&m, fp);
				fclose(fp);
			}
		}
		if (iv == (uint32_t)m.c.fault_at && m.c.fault != 0)
			printf("c4sim: interval %u: fault %s begins\n", iv,
			       scen_fault_name((unsigned)m.c.fault));
		if (m.c.clear_at > 0 && iv == (uint32_t)m.c.clear_at)
			printf("c4sim: interval %u: fault cleared\n", iv);
		fflush(stdout);
		sim_sleep_until(
			sim_next_boundary_ms((uint32_t)m.c.interval, 0));
	}
	rc = 0;
out:
	/* The job ends as a CCL's does: its communicators are destroyed. */
	for (uint32_t h = 0; rc == 0 && m.hosts && h < m.nhosts; h++)
		for (uint32_t i = 0; m.hosts[h].cl != NULL && i < nmaps; i++)
			c4client_deregister(m.hosts[h].cl, maps[i].comm);
	for (uint32_t h = 0; m.hosts && h < m.nhosts; h++) {
		if (m.hosts[h].cl != NULL) {
			struct c4client_stats st;

			c4client_stats(m.hosts[h].cl, &st);
			if (st.reports_dropped > 0)
				fprintf(stderr,
					"c4sim: %s: %" PRIu64
					" reports dropped\n",
					m.hosts[h].name, st.reports_dropped);
			c4client_close(m.hosts[h].cl);
		}
	}
	if (m.hosts != NULL)
		sim_agents_stop(&m);
	for (uint32_t i = 0; i < nmaps; i++)
		free(maps[i].host);
	free(maps);
	for (uint32_t h = 0; bufs && h < m.nhosts; h++) {
		for (size_t i = 0; i < bufs[h].csk; i++)
			sketch_free(&bufs[h].sk[i]);
		free(bufs[h].sk);
		free(bufs[h].coll);
		free(bufs[h].ops);
		free(bufs[h].conn);
		free(bufs[h].wait);
		free(bufs[h].prog);
	}
	free(bufs);
	free(m.hosts);
	scen_free(m.s);
	cfg_free(&sim_schema, &m.c);
	return rc;
}
