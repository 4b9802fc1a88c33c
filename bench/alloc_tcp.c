/*
 * bench-alloc-tcp: the C4P allocator through a real c4p-master process
 * over TCP loopback, its SQLite store included (every answer waits for
 * its commit).
 *
 * Fabric (written as YAML for the master): --hosts hosts (default 1024) x
 * 8 NICs x 2x200G bonded, leaves in pairs (8 hosts per pair), 64 spines,
 * one 200G cable from every leaf to every spine: the bench-alloc fabric.
 * Job: one ring per rail over all hosts, one request per connection of
 * --qps QPs (default 8): 65,536 QPs for 1024 hosts.
 *
 * Metrics:
 *   tcp_batched_qps   QPs/s allocating the whole job in batches of --batch
 *                     requests (one PathRequestBatch per round trip, one
 *                     client), warm catalog, --rounds rounds (each ends
 *                     with a release of the job, not timed);
 *   tcp_single_*      one request (one connection's QPs) per round trip:
 *                     latency p50/p99 and the request rate, --single
 *                     requests, each new (allocated and committed);
 *   tcp_heartbeat_*   heartbeat round trips on the same session: the
 *                     floor of loopback, libevent and scheduling here.
 *
 * stdout: only "metric <name> <value> <unit>" lines; progress on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c4p_client.h"

#define BT_TOKEN	  "bench-token-000001"
#define BT_NICS		  8
#define BT_SPINES	  64
#define BT_HOSTS_PER_PAIR 8
#define BT_READY_MS	  60000
#define BT_TIMEOUT_MS	  30000
#define BT_NAME		  48

struct bt {
	char dir[64];
	char addr[64];
	pid_t pid;
	unsigned hosts, qps, batch, rounds, single;
	const char *master;
};

static double
bt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
bt_write_topology(const struct bt *b, const char *path)
{
	unsigned pairs = (b->hosts + BT_HOSTS_PER_PAIR - 1) / BT_HOSTS_PER_PAIR;
	FILE *fp = fopen(path, "w");

	if (fp == NULL)
		return -1;
	fprintf(fp, "leaves:\n");
	for (unsigned l = 0; l < 2 * pairs; l++)
		fprintf(fp, "  - {name: leaf%u}\n", l);
	fprintf(fp, "spines:\n");
	for (unsigned s = 0; s < BT_SPINES; s++)
		fprintf(fp, "  - {name: spine%u}\n", s);
	fprintf(fp, "links:\n");
	for (unsigned s = 0; s < BT_SPINES; s++)
		fprintf(fp, "  - {leaf: '*', spine: spine%u, gbps: 200}\n", s);
	fprintf(fp, "hosts:\n");
	for (unsigned h = 0; h < b->hosts; h++) {
		unsigned p = h % pairs;

		fprintf(fp, "  - name: host%u\n    nics:\n", h);
		for (unsigned n = 0; n < BT_NICS; n++) {
			uint32_t ip = (10u << 24) + h * 64 + n * 2;

			fprintf(fp,
				"      - {name: nic%u, gbps: 200, left: {leaf: "
				"leaf%u, ip: %u.%u.%u.%u}, right: {leaf: "
				"leaf%u, ip: %u.%u.%u.%u}}\n",
				n, 2 * p, ip >> 24, (ip >> 16) & 255,
				(ip >> 8) & 255, ip & 255, 2 * p + 1, ip >> 24,
				(ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
		}
	}
	return fclose(fp);
}

/* A loopback port free now (the master binds it right after). */
static int
bt_free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int
bt_start(struct bt *b)
{
	char conf[PATH_MAX], topo[PATH_MAX], logp[PATH_MAX];
	int port = bt_free_port();
	double deadline;
	FILE *fp;

	if (mkdtemp(b->dir) == NULL || port < 0)
		return -1;
	snprintf(topo, sizeof(topo), "%s/fabric.yaml", b->dir);
	snprintf(conf, sizeof(conf), "%s/c4p-master.yaml", b->dir);
	snprintf(logp, sizeof(logp), "%s/c4p-master.log", b->dir);
	snprintf(b->addr, sizeof(b->addr), "127.0.0.1:%d", port);
	if (bt_write_topology(b, topo) < 0)
		return -1;
	fp = fopen(conf, "w");
	if (fp == NULL)
		return -1;
	fprintf(fp,
		"server: {listen: '%s', max_frame: 16MiB}\n"
		"credentials:\n"
		"  - {name: bench, token: " BT_TOKEN
		", roles: [ccl-client, agent], jobs: ['*']}\n"
		"topology: %s\nstate_dir: %s\nhash_seed: 1\nlease: 1h\n"
		"log: {level: warning}\n",
		b->addr, topo, b->dir);
	fclose(fp);
	fprintf(stderr, "bench-alloc-tcp: %s on %s (%u hosts)\n", b->master,
		b->addr, b->hosts);
	b->pid = fork();
	if (b->pid < 0)
		return -1;
	if (b->pid == 0) {
		if (freopen(logp, "w", stderr) == NULL)
			_exit(127);
		execl(b->master, b->master, "-d", "-f", conf, (char *)NULL);
		_exit(127);
	}
	deadline = bt_now() + BT_READY_MS / 1000.0;
	while (bt_now() < deadline) {
		struct c4p_client c;

		if (c4p_client_connect(&c, b->addr, BT_TOKEN, "bench",
				       C4__ROLE__ROLE_CCL_CLIENT, 1000) == 0) {
			c4p_client_close(&c);
			return 0;
		}
		if (waitpid(b->pid, NULL, WNOHANG) == b->pid) {
			b->pid = -1;
			fprintf(stderr, "c4p-master exited; see %s\n", logp);
			return -1;
		}
		usleep(50000);
	}
	return -1;
}

/* On failure the master's log goes to stderr before it is removed. */
static void
bt_dump_log(const struct bt *b)
{
	char path[PATH_MAX], line[1024];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/c4p-master.log", b->dir);
	fp = fopen(path, "r");
	if (fp == NULL)
		return;
	fprintf(stderr, "--- %s\n", path);
	while (fgets(line, sizeof(line), fp) != NULL)
		fputs(line, stderr);
	fclose(fp);
}

static void
bt_stop(struct bt *b, int failed)
{
	static const char *const files[] = {
		"fabric.yaml",	 "c4p-master.yaml",   "c4p-master.log",
		"c4p-master.db", "c4p-master.db-wal", "c4p-master.db-shm"};
	char path[PATH_MAX];

	if (b->pid > 0) {
		int st = 0;

		kill(b->pid, SIGTERM);
		waitpid(b->pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "c4p-master: exit status %d\n", st);
			failed = 1;
		}
	}
	if (failed)
		bt_dump_log(b);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", b->dir, files[i]);
		unlink(path);
	}
	rmdir(b->dir);
}

/* The ring's requests: connection i is NIC r of host h -> host h+1. */
struct bt_job {
	struct c4p_client_req *r;
	char (*ids)[BT_NAME], (*src)[BT_NAME], (*dst)[BT_NAME];
	size_t n;
};

static int
bt_job_build(struct bt_job *j, const struct bt *b, const char *tag)
{
	j->n = (size_t)b->hosts * BT_NICS;
	j->r = calloc(j->n, sizeof(*j->r));
	j->ids = calloc(j->n, sizeof(*j->ids));
	j->src = calloc(j->n, sizeof(*j->src));
	j->dst = calloc(j->n, sizeof(*j->dst));
	if (!j->r || !j->ids || !j->src || !j->dst)
		return -1;
	for (size_t i = 0; i < j->n; i++) {
		unsigned h = (unsigned)(i / BT_NICS),
			 n = (unsigned)(i % BT_NICS);

		snprintf(j->ids[i], BT_NAME, "%s/%zu", tag, i);
		snprintf(j->src[i], BT_NAME, "host%u/nic%u", h, n);
		snprintf(j->dst[i], BT_NAME, "host%u/nic%u", (h + 1) % b->hosts,
			 n);
		j->r[i] = (struct c4p_client_req){j->ids[i], j->src[i],
						  j->dst[i], 0, b->qps};
	}
	return 0;
}

static void
bt_job_free(struct bt_job *j)
{
	free(j->r);
	free(j->ids);
	free(j->src);
	free(j->dst);
}

/* The whole job in batches; returns seconds, or -1. */
static double
bt_job_run(struct c4p_client *c, const struct bt_job *j, unsigned batch,
	   struct c4p_client_port *ports)
{
	double t0 = bt_now();

	for (size_t i = 0; i < j->n; i += batch) {
		size_t n = j->n - i < batch ? j->n - i : batch;

		if (c4p_client_request(c, &j->r[i], n, ports, NULL) != 0) {
			fprintf(stderr, "request: %s\n", c->err);
			return -1;
		}
	}
	return bt_now() - t0;
}

static int
bt_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	struct bt b = {
		"/tmp/c4p-bench-XXXXXX", "", -1, 1024, 8, 128, 3, 20000, NULL};
	char self[PATH_MAX], master[PATH_MAX + 64];
	struct c4p_client_port *ports = NULL;
	struct bt_job job = {0}, one = {0};
	struct c4p_client c;
	double total = 0, *lat = NULL;
	ssize_t n;
	int rc = 1;

	for (int i = 1; i + 1 < argc; i += 2) {
		unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);

		if (strcmp(argv[i], "--hosts") == 0 && v >= 2)
			b.hosts = v;
		else if (strcmp(argv[i], "--qps") == 0 && v >= 1 && v <= 4096)
			b.qps = v;
		else if (strcmp(argv[i], "--batch") == 0 && v >= 1)
			b.batch = v;
		else if (strcmp(argv[i], "--rounds") == 0 && v >= 1)
			b.rounds = v;
		else if (strcmp(argv[i], "--single") == 0 && v >= 100)
			b.single = v;
		else if (strcmp(argv[i], "--master") == 0)
			b.master = argv[i + 1];
		else {
			fprintf(stderr,
				"usage: bench-alloc-tcp [--hosts N] [--qps N] "
				"[--batch N] [--rounds N] [--single N] "
				"[--master PATH]\n");
			return 2;
		}
	}
	if (b.master == NULL) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return 1;
		self[n] = '\0';
		snprintf(master, sizeof(master),
			 "%s/../daemons/c4p-master/c4p-master", dirname(self));
		b.master = master;
	}
	if (bt_start(&b) < 0) {
		fprintf(stderr, "bench-alloc-tcp: cannot start c4p-master\n");
		goto out;
	}
	if (c4p_client_connect(&c, b.addr, BT_TOKEN, "bench",
			       C4__ROLE__ROLE_CCL_CLIENT, BT_TIMEOUT_MS) < 0) {
		fprintf(stderr, "connect: %s\n", c.err);
		goto out;
	}
	ports = calloc((size_t)b.batch * b.qps, sizeof(*ports));
	lat = calloc(b.single, sizeof(*lat));
	if (ports == NULL || lat == NULL || bt_job_build(&job, &b, "ring") < 0)
		goto out_c;
	/* Warm-up: fills the catalog (hash model) for every pair. */
	if (bt_job_run(&c, &job, b.batch, ports) < 0 ||
	    c4p_client_release(&c, NULL) < 0)
		goto out_c;
	for (unsigned r = 0; r < b.rounds; r++) {
		double s = bt_job_run(&c, &job, b.batch, ports);

		if (s < 0 ||
		    c4p_client_release(&c, NULL) != (long)(job.n * b.qps))
			goto out_c;
		fprintf(stderr, "round %u: %zu QPs in %.3f s\n", r,
			job.n * b.qps, s);
		total += s;
	}
	printf("metric tcp_batched_qps %.0f QP/s\n",
	       (double)job.n * b.qps * b.rounds / total);
	printf("metric tcp_batched_job_s %.3f s\n", total / b.rounds);
	printf("metric tcp_batch_qps_per_msg %u QPs\n", b.batch * b.qps);
	/* Single requests: new ids, one connection's QPs each. */
	if (bt_job_build(&one, &b, "single") < 0)
		goto out_c;
	{
		double t0 = bt_now();

		for (unsigned i = 0; i < b.single; i++) {
			double s = bt_now();

			if (c4p_client_request(&c, &one.r[i % one.n], 1, ports,
					       NULL) != 0) {
				fprintf(stderr, "single: %s\n", c.err);
				goto out_c;
			}
			lat[i] = (bt_now() - s) * 1e6;
			/* keep every request new: release each full pass */
			if ((i + 1) % one.n == 0 &&
			    c4p_client_release(&c, NULL) < 0) {
				fprintf(stderr, "single: release: %s\n", c.err);
				goto out_c;
			}
		}
		printf("metric tcp_single_req_per_s %.0f req/s\n",
		       b.single / (bt_now() - t0));
	}
	qsort(lat, b.single, sizeof(*lat), bt_cmp_double);
	printf("metric tcp_single_p50_us %.1f us\n", lat[b.single / 2]);
	printf("metric tcp_single_p99_us %.1f us\n",
	       lat[(size_t)(b.single * 0.99)]);
	printf("metric tcp_single_max_us %.1f us\n", lat[b.single - 1]);
	printf("metric tcp_single_qps_per_req %u QPs\n", b.qps);
	/* The floor: heartbeat round trips on the same session. */
	for (unsigned i = 0; i < b.single; i++) {
		C4__Heartbeat hb = C4__HEARTBEAT__INIT;
		C4__Envelope *env;
		double s = bt_now();

		hb.has_nonce = 1;
		hb.nonce = i + 1;
		env = cli_call(&c.cli, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
		if (env == NULL) {
			fprintf(stderr, "heartbeat %u: no answer\n", i);
			goto out_c;
		}
		msg_free(env);
		lat[i] = (bt_now() - s) * 1e6;
	}
	qsort(lat, b.single, sizeof(*lat), bt_cmp_double);
	printf("metric tcp_heartbeat_p50_us %.1f us\n", lat[b.single / 2]);
	printf("metric tcp_heartbeat_p99_us %.1f us\n",
	       lat[(size_t)(b.single * 0.99)]);
	rc = 0;
out_c:
	c4p_client_close(&c);
out:
	bt_stop(&b, rc != 0);
	bt_job_free(&job);
	bt_job_free(&one);
	free(ports);
	free(lat);
	return rc;
}
