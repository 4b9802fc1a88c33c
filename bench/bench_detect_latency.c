/*
 * bench_detect_latency.c - `bench/run detect-latency`: wall-clock time from
 * a fault's onset in c4sim to its event at the job master.
 *
 * Each run starts a real c4d-master and c4sim with 8 real c4a-agents (a
 * 64-rank job, 1 s intervals), injects one fault at interval 4, and polls
 * the master's events until one opens.  The latency is the event's
 * first_seen time (master clock) minus c4sim's onset time (the moment the
 * first faulty interval was handed to the agents); both are CLOCK_REALTIME
 * of this machine.  Faults rotate over slow receive NIC, slow transmit NIC,
 * slow connection and slow GPU at 3x, with a new seed (culprit) each run.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchproc.h"
#include "cli.h"

#define DL_RUNS_DEFAULT 20
#define DL_FAULT_AT	4
#define DL_INTERVALS	16
#define DL_WAIT_S	12.0 /* after onset, before a run counts as missed */
#define DL_OPS_TOKEN	"bench-operator-token"
#define DL_AGENT_TOKEN	"bench-agent-token-01"

static char dl_bin[PATH_MAX];

static const char *const dl_faults[] = {"slow-rx", "slow-tx", "slow-conn",
					"slow-gpu"};

/* Reads "key":NUMBER from a small file; 0 if absent. */
static uint64_t
dl_json_u64(const char *path, const char *key)
{
	char buf[4096], pat[64];
	const char *p;
	size_t n;
	FILE *fp = fopen(path, "r");

	if (fp == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(buf, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* Finds "ready on ADDR" in the master's log. */
static int
dl_master_addr(const char *log, char *addr, size_t len)
{
	char line[1024];
	FILE *fp = fopen(log, "r");
	int found = 0;

	if (fp == NULL)
		return -1;
	while (!found && fgets(line, sizeof(line), fp)) {
		const char *p = strstr(line, "ready on ");

		if (p != NULL) {
			snprintf(addr, len, "%s", p + 9);
			addr[strcspn(addr, " \n")] = '\0';
			found = 1;
		}
	}
	fclose(fp);
	return found ? 0 : -1;
}

/* first_seen_ns of the first open event at the master, or 0. */
static uint64_t
dl_first_event(const char *addr, char *kind, size_t klen)
{
	struct cli_hello h = {C4__ROLE__ROLE_CTL, DL_OPS_TOKEN, NULL, "bench"};
	C4__AdminRequest q = C4__ADMIN_REQUEST__INIT;
	C4__Envelope *env;
	uint64_t first = 0;
	struct cli c;

	if (cli_connect(&c, addr, &h, 5000) < 0)
		return 0;
	q.has_op = 1;
	q.op = C4__ADMIN_OP__ADMIN_EVENTS;
	env = cli_call(&c, C4__MSG_TYPE__MSG_ADMIN_REQUEST, &q);
	if (env != NULL) {
		for (size_t i = 0; i < env->admin_reply->n_events; i++) {
			const C4__Event *e = env->admin_reply->events[i];

			if (e->first_seen_ns != 0 &&
			    (first == 0 || e->first_seen_ns < first)) {
				first = e->first_seen_ns;
				snprintf(
					kind, klen, "%s",
					protobuf_c_enum_descriptor_get_value(
						&c4__event_kind__descriptor,
						e->kind)
						? protobuf_c_enum_descriptor_get_value(
							  &c4__event_kind__descriptor,
							  e->kind)
							  ->name
						: "?");
			}
		}
		msg_free(env);
	}
	cli_close(&c);
	return first;
}

/* One run; returns the latency in seconds, or -1 when nothing opened. */
static double
dl_run(unsigned run, char *kind, size_t klen)
{
	char dir[] = "/tmp/c4-bench-dl-XXXXXX", conf[96], mlog[96], slog[96],
	     truth[96], work[96], addr[128], seed[16], fat[16], nint[16],
	     master[PATH_MAX + 64], sim[PATH_MAX + 64];
	const char *fault = dl_faults[run % 4];
	double lat = -1, start;
	pid_t mp, sp;
	int status;
	FILE *fp;

	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(conf, sizeof(conf), "%s/master.yaml", dir);
	snprintf(mlog, sizeof(mlog), "%s/master.log", dir);
	snprintf(slog, sizeof(slog), "%s/sim.log", dir);
	snprintf(truth, sizeof(truth), "%s/truth.json", dir);
	snprintf(work, sizeof(work), "%s/w", dir);
	fp = fopen(conf, "w");
	if (fp == NULL)
		return -1;
	fprintf(fp,
		"job: bench-job\n"
		"state_dir: %s\n"
		"detection: {interval: 1s}\n"
		"server: {listen: \"127.0.0.1:0\"}\n"
		"credentials:\n"
		"  - {name: agents, token: %s, roles: [agent], jobs: "
		"[bench-job]}\n"
		"  - {name: ops, token: %s, roles: [ctl]}\n",
		dir, DL_AGENT_TOKEN, DL_OPS_TOKEN);
	fclose(fp);
	snprintf(master, sizeof(master), "%s/../daemons/c4d-master/c4d-master",
		 dl_bin);
	snprintf(sim, sizeof(sim), "%s/../tools/c4sim/c4sim", dl_bin);
	{
		char *argv[] = {master, (char *)"-d", (char *)"-f", conf, NULL};

		mp = bp_spawn(argv, mlog);
	}
	for (int i = 0; i < 200 && dl_master_addr(mlog, addr, sizeof(addr)) < 0;
	     i++)
		usleep(50000);
	snprintf(seed, sizeof(seed), "%u", 100 + run);
	snprintf(fat, sizeof(fat), "%d", DL_FAULT_AT);
	snprintf(nint, sizeof(nint), "%d", DL_INTERVALS);
	{
		char *argv[] = {sim,
				(char *)"--master",
				addr,
				(char *)"--token",
				(char *)DL_AGENT_TOKEN,
				(char *)"--job",
				(char *)"bench-job",
				(char *)"--ranks",
				(char *)"64",
				(char *)"--fault",
				(char *)fault,
				(char *)"--slowdown",
				(char *)"3",
				(char *)"--fault_at",
				fat,
				(char *)"--intervals",
				nint,
				(char *)"--seed",
				seed,
				(char *)"--workdir",
				work,
				(char *)"--truth",
				truth,
				NULL};

		sp = bp_spawn(argv, slog);
	}
	start = bp_now();
	while (bp_now() - start < DL_FAULT_AT + 2 + DL_WAIT_S) {
		uint64_t onset = dl_json_u64(truth, "onset_ns");
		uint64_t seen = dl_first_event(addr, kind, klen);

		if (onset != 0 && seen != 0) {
			lat = ((double)seen - (double)onset) / 1e9;
			break;
		}
		usleep(100000);
	}
	kill(sp, SIGTERM);
	waitpid(sp, &status, 0);
	kill(mp, SIGTERM);
	waitpid(mp, &status, 0);
	fprintf(stderr, "run %2u: %-9s %s %.2f s\n", run, fault,
		lat >= 0 ? kind : "missed", lat);
	return lat;
}

static int
dl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : DL_RUNS_DEFAULT;
	double *lat;
	unsigned got = 0;
	char kind[64];

	if (bp_self_dir(dl_bin, sizeof(dl_bin)) < 0 || runs == 0)
		return 1;
	lat = calloc(runs, sizeof(*lat));
	if (lat == NULL)
		return 1;
	for (unsigned r = 0; r < runs; r++) {
		double l = dl_run(r, kind, sizeof(kind));

		if (l >= 0)
			lat[got++] = l;
	}
	qsort(lat, got, sizeof(*lat), dl_cmp);
	printf("metric detect_latency_runs %u runs\n", runs);
	printf("metric detect_latency_detected %u runs\n", got);
	printf("metric detect_latency_interval 1.0 s\n");
	if (got > 0) {
		printf("metric detect_latency_median %.2f s\n", lat[got / 2]);
		printf("metric detect_latency_p95 %.2f s\n",
		       lat[(size_t)ceil(0.95 * got) - 1]);
		printf("metric detect_latency_max %.2f s\n", lat[got - 1]);
	}
	free(lat);
	return got == runs ? 0 : 1;
}
