/*
 * test_nccl.c - the built NCCL profiler plugin against a real c4a-agent
 * and c4d-master: a process that loads libnccl-profiler-c4.so as NCCL
 * does (dlopen, ncclProfiler_v5) and plays two ranks of an all-reduce
 * loop with kernel channels, proxy ops and steps gets its registrations
 * and interval summaries through the agent to the master, none refused.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nccl_abi.h"

#define OPS_TOKEN   "operator-token-0001"
#define AGENT_TOKEN "agent-token-aaaa-01"
#define CCL_TOKEN   "ccl-token-local-01"
#define TIMEOUT_MS  10000
#define WAIT_MS	    20000
#define LOOPS	    150 /* about 1.5 s of collectives */

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static long long
counter(const struct th_daemon *d, const char *name)
{
	char *argv[] = {(char *)th_bin("ctl/c4ctl"),
			(char *)"-s",
			(char *)d->tcp,
			(char *)"-t",
			(char *)OPS_TOKEN,
			(char *)"-o",
			(char *)"json",
			(char *)"status",
			NULL};
	char out[16384], err[1024], key[256];
	const char *p;

	if (th_run(argv, out, sizeof(out), err, sizeof(err), TIMEOUT_MS) != 0)
		return -1;
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(out, key);
	ck_assert_msg(p != NULL, "no counter %s in %s", key, out);
	return atoll(p + strlen(key));
}

static long long
wait_counter(const struct th_daemon *d, const char *name, long long min)
{
	long deadline = now_ms() + WAIT_MS;
	long long v;

	while ((v = counter(d, name)) < min && now_ms() < deadline)
		usleep(50000);
	ck_assert_msg(v >= min, "%s is %lld, expected at least %lld", name, v,
		      min);
	return v;
}

/* The CCL process: runs in a child, exits 0 when all went through. */
static int
ccl_process(const char *so, const char *sock)
{
	struct nccl_profiler_v5 *p;
	struct nccl_v5_descr d;
	union nccl_abi_state_args a;
	void *dl, *ctx[2], *c, *k, *o, *s;
	int mask, it, r;

	setenv("C4_JOB_ID", "job-a", 1);
	setenv("C4_AGENT_SOCKET", sock, 1);
	setenv("C4_TOKEN", CCL_TOKEN, 1);
	setenv("C4_INTERVAL_MS", "100", 1);
	dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL || (p = dlsym(dl, "ncclProfiler_v5")) == NULL)
		return 10;
	for (r = 0; r < 2; r++)
		if (p->init(&ctx[r], 0xc4c4ull, &mask, "dp", 1, 2, r, NULL) !=
			    0 ||
		    ctx[r] == NULL)
			return 11;
	for (it = 0; it < LOOPS; it++) {
		for (r = 0; r < 2; r++) {
			memset(&d, 0, sizeof(d));
			d.type = NCCL_EV_COLL;
			d.coll.seqNumber = (uint64_t)it;
			d.coll.func = "AllReduce";
			d.coll.datatype = "ncclBfloat16";
			d.coll.count = 1u << 20;
			d.coll.algo = "Ring";
			d.coll.proto = "Simple";
			d.coll.nChannels = 1;
			p->startEvent(ctx[r], &c, &d);
			p->stopEvent(c);
			memset(&d, 0, sizeof(d));
			d.type = NCCL_EV_PROXY_OP;
			d.parentObj = c;
			d.proxyOp.pid = getpid();
			d.proxyOp.peer = 1 - r;
			d.proxyOp.nSteps = 1;
			d.proxyOp.chunkSize = 1 << 21;
			d.proxyOp.isSend = 1;
			p->startEvent(ctx[r], &o, &d);
			memset(&d, 0, sizeof(d));
			d.type = NCCL_EV_KERNEL_CH;
			d.parentObj = c;
			d.kernelCh.pTimer = (uint64_t)it * 1000000u;
			p->startEvent(ctx[r], &k, &d);
			memset(&d, 0, sizeof(d));
			d.type = NCCL_EV_PROXY_STEP;
			d.parentObj = o;
			p->startEvent(ctx[r], &s, &d);
			a.proxyStep.transSize = 1 << 21;
			p->recordEventState(s, NCCL_ST_STEP_SEND_GPU_WAIT, &a);
			p->recordEventState(s, NCCL_ST_STEP_SEND_PEER_WAIT, &a);
			p->recordEventState(s, NCCL_ST_STEP_SEND_WAIT, &a);
			usleep(1000);
			p->stopEvent(s);
			p->stopEvent(o);
			a.kernelCh.pTimer = (uint64_t)it * 1000000u + 400000u;
			p->recordEventState(k, NCCL_ST_KERNEL_CH_STOP, &a);
			p->stopEvent(k);
		}
		usleep(8000);
	}
	for (r = 0; r < 2; r++)
		p->finalize(ctx[r]);
	dlclose(dl);
	return 0;
}

START_TEST(test_plugin_reaches_master)
{
	struct th_daemon m, ag;
	char conf[4096];
	pid_t pid;
	int st;

	snprintf(conf, sizeof(conf),
		 "job: job-a\n"
		 "state_dir: @DIR@\n"
		 "server:\n"
		 "  listen: 127.0.0.1:0\n"
		 "credentials:\n"
		 "  - name: ops\n"
		 "    token: " OPS_TOKEN "\n"
		 "    roles: [ctl]\n"
		 "  - name: agents\n"
		 "    token: " AGENT_TOKEN "\n"
		 "    roles: [agent]\n");
	ck_assert_int_eq(th_start(&m, "c4d-master", conf), 0);
	snprintf(conf, sizeof(conf),
		 "node_name: node-a\n"
		 "interval: 100ms\n"
		 "masters:\n"
		 "  - job: job-a\n"
		 "    address: %s\n"
		 "    token: " AGENT_TOKEN "\n"
		 "socket:\n"
		 "  path: @DIR@/agent.sock\n"
		 "  mode: 0600\n"
		 "server:\n"
		 "  listen: 127.0.0.1:0\n"
		 "credentials:\n"
		 "  - name: ccl\n"
		 "    token: " CCL_TOKEN "\n"
		 "    roles: [ccl-client]\n"
		 "  - name: ops\n"
		 "    token: " OPS_TOKEN "\n"
		 "    roles: [ctl]\n",
		 m.tcp);
	ck_assert_int_eq(th_start(&ag, "c4a-agent", conf), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(ccl_process(getenv("C4_PLUGIN_SO"), ag.unix_path));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "CCL process status %d", st);

	wait_counter(&ag, "registrations_received", 2);
	wait_counter(&ag, "batches_received", 5);
	ck_assert_int_eq(counter(&ag, "records_refused"), 0);
	ck_assert_int_eq(counter(&ag, "clients_refused"), 0);
	ck_assert_int_eq(counter(&ag, "invalid"), 0);
	wait_counter(&m, "comm_registrations", 1);
	wait_counter(&m, "telemetry_records", 10);
	ck_assert_int_eq(counter(&m, "invalid"), 0);
	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

static Suite *
nccl_suite(void)
{
	Suite *s = suite_create("nccl-integration");
	TCase *tc = tcase_create("plugin");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_plugin_reaches_master);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(nccl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
