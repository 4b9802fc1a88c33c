/*
 * bench_ingest.c - `bench/run ingest`: what a job's telemetry costs the
 * job master.
 *
 * For each job size a real c4d-master process is started, and c4sim feeds
 * it a synthetic job (every host's session straight to the master, one
 * session per host of 8 GPUs, reporting every second: 512 sessions at
 * 4,096 ranks, 2,048 at 16,384).  After a warm-up the master's CPU time
 * (/proc/PID/stat) and telemetry counters (admin status) are sampled over
 * the steady state; its peak RSS is VmHWM.  Only 'metric' lines on stdout.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchproc.h"
#include "cli.h"

#define ING_WARMUP_S  4
#define ING_MEASURE_S 12
#define ING_OPS_TOKEN "bench-operator-token"
#define ING_CCL_TOKEN "bench-ccl-token-0001"

static char ing_bin[PATH_MAX];

/* utime + stime of pid in seconds, or -1. */
static double
ing_cpu(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	if (fp == NULL || fgets(buf, sizeof(buf), fp) == NULL) {
		if (fp)
			fclose(fp);
		return -1;
	}
	fclose(fp);
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (p == NULL || sscanf(p + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
				"%lu %lu",
				&ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long
ing_hwm_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "r");
	if (fp == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(fp);
	return kib;
}

/* Reads counters from the master's admin status. */
static int
ing_status(const char *addr, uint64_t *records, uint64_t *batches,
	   uint64_t *analysis_us)
{
	struct cli_hello h = {C4__ROLE__ROLE_CTL, ING_OPS_TOKEN, NULL, "bench"};
	C4__AdminRequest q = C4__ADMIN_REQUEST__INIT;
	C4__Envelope *env;
	struct cli c;

	if (cli_connect(&c, addr, &h, 10000) < 0)
		return -1;
	q.has_op = 1;
	q.op = C4__ADMIN_OP__ADMIN_STATUS;
	env = cli_call(&c, C4__MSG_TYPE__MSG_ADMIN_REQUEST, &q);
	if (env == NULL) {
		cli_close(&c);
		return -1;
	}
	for (size_t i = 0; i < env->admin_reply->n_counters; i++) {
		const C4__Counter *k = env->admin_reply->counters[i];

		if (strcmp(k->name, "telemetry_records") == 0)
			*records = k->value;
		else if (strcmp(k->name, "telemetry_batches") == 0)
			*batches = k->value;
		else if (strcmp(k->name, "analysis_us_last") == 0)
			*analysis_us = k->value;
	}
	msg_free(env);
	cli_close(&c);
	return 0;
}

static int
ing_run(unsigned ranks)
{
	char dir[] = "/tmp/c4-bench-ingest-XXXXXX", conf[128], sock[128],
	     addr[160], mlog[128], slog[128], master[PATH_MAX + 64],
	     sim[PATH_MAX + 64], nranks[16], nint[16];
	uint64_t r0 = 0, r1 = 0, b0 = 0, b1 = 0, an = 0;
	double t0, t1, c0, c1;
	pid_t mp, sp;
	FILE *fp;
	int status;

	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(conf, sizeof(conf), "%s/master.yaml", dir);
	snprintf(sock, sizeof(sock), "%s/master.sock", dir);
	snprintf(addr, sizeof(addr), "unix:%s", sock);
	snprintf(mlog, sizeof(mlog), "%s/master.log", dir);
	snprintf(slog, sizeof(slog), "%s/sim.log", dir);
	fp = fopen(conf, "w");
	if (fp == NULL)
		return -1;
	fprintf(fp,
		"job: bench-job\n"
		"state_dir: %s\n"
		"detection: {interval: 1s}\n"
		"server: {listen: \"%s\", max_connections: 65536}\n"
		"credentials:\n"
		"  - {name: ccl, token: %s, roles: [ccl-client], jobs: "
		"[bench-job]}\n"
		"  - {name: ops, token: %s, roles: [ctl]}\n"
		"log: {level: warning}\n",
		dir, addr, ING_CCL_TOKEN, ING_OPS_TOKEN);
	fclose(fp);
	snprintf(master, sizeof(master), "%s/../daemons/c4d-master/c4d-master",
		 ing_bin);
	snprintf(sim, sizeof(sim), "%s/../tools/c4sim/c4sim", ing_bin);
	{
		char *argv[] = {master, (char *)"-d", (char *)"-f", conf, NULL};

		mp = bp_spawn(argv, mlog);
	}
	for (int i = 0; i < 200 && access(sock, F_OK) < 0; i++)
		usleep(50000);
	snprintf(nranks, sizeof(nranks), "%u", ranks);
	snprintf(nint, sizeof(nint), "%d", ING_WARMUP_S + ING_MEASURE_S + 2);
	{
		char *argv[] = {sim,
				(char *)"--job",
				(char *)"bench-job",
				(char *)"--direct",
				sock,
				(char *)"--direct_token",
				(char *)ING_CCL_TOKEN,
				(char *)"--ranks",
				nranks,
				(char *)"--intervals",
				nint,
				(char *)"--interval",
				(char *)"1s",
				NULL};

		sp = bp_spawn(argv, slog);
	}
	sleep(ING_WARMUP_S);
	t0 = bp_now();
	c0 = ing_cpu(mp);
	if (ing_status(addr, &r0, &b0, &an) < 0)
		goto fail;
	sleep(ING_MEASURE_S);
	t1 = bp_now();
	c1 = ing_cpu(mp);
	if (ing_status(addr, &r1, &b1, &an) < 0)
		goto fail;
	printf("metric ingest_%u_ranks_sessions %u sessions\n", ranks,
	       ranks / 8);
	printf("metric ingest_%u_ranks_records_rate %.0f records/s\n", ranks,
	       (double)(r1 - r0) / (t1 - t0));
	printf("metric ingest_%u_ranks_batches_rate %.0f batches/s\n", ranks,
	       (double)(b1 - b0) / (t1 - t0));
	printf("metric ingest_%u_ranks_master_cpu %.1f %%core\n", ranks,
	       100.0 * (c1 - c0) / (t1 - t0));
	printf("metric ingest_%u_ranks_master_rss %.1f MiB\n", ranks,
	       (double)ing_hwm_kib(mp) / 1024.0);
	printf("metric ingest_%u_ranks_analysis_time %.1f ms\n", ranks,
	       (double)an / 1e3);
	fflush(stdout);
	waitpid(sp, &status, 0);
	kill(mp, SIGTERM);
	waitpid(mp, &status, 0);
	return 0;
fail:
	fprintf(stderr, "bench-ingest: the master did not answer; see %s\n",
		dir);
	kill(sp, SIGKILL);
	kill(mp, SIGKILL);
	waitpid(sp, &status, 0);
	waitpid(mp, &status, 0);
	return -1;
}

int
main(int argc, char **argv)
{
	unsigned sizes[] = {4096, 16384};

	(void)argc;
	(void)argv;
	if (bp_self_dir(ing_bin, sizeof(ing_bin)) < 0)
		return 1;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fprintf(stderr, "bench-ingest: %u ranks, %d s\n", sizes[i],
			ING_WARMUP_S + ING_MEASURE_S);
		if (ing_run(sizes[i]) < 0)
			return 1;
	}
	return 0;
}
