/*
 * test_agent.c - the CCL client library against a real c4a-agent, and the
 * agent against real c4d-masters: routing of several clients of two jobs,
 * a master crash and restart on the same port, drops under a tiny buffer,
 * a client without an agent, and a client of a job with no master.
 */
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c4client.h"
#include "cli.h"
#include "harness.h"

#define OPS_TOKEN   "operator-token-0001"
#define AGENT_TOKEN "agent-token-aaaa-01"
#define CCL_TOKEN   "ccl-token-local-01"
#define TIMEOUT_MS  10000
#define WAIT_MS	    20000 /* bound on waiting for a counter */
#define REPORTS	    4

static void
start_master(struct th_daemon *d, const char *job, const char *listen)
{
	char conf[2048];

	snprintf(conf, sizeof(conf),
		 "job: %s\n"
		 "state_dir: @DIR@\n"
		 "server:\n"
		 "  listen: %s\n"
		 "  heartbeat: 500ms\n"
		 "  idle_timeout: 10s\n"
		 "credentials:\n"
		 "  - name: ops\n"
		 "    token: " OPS_TOKEN "\n"
		 "    roles: [ctl]\n"
		 "  - name: agents\n"
		 "    token: " AGENT_TOKEN "\n"
		 "    roles: [agent]\n"
		 "log:\n"
		 "  level: debug\n",
		 job, listen);
	ck_assert_int_eq(th_start(d, "c4d-master", conf), 0);
}

/* An agent with the given masters ("job=addr" pairs, NULL-terminated). */
static void
start_agent(struct th_daemon *d, const char *buffer_limit,
	    const char *const *masters)
{
	char conf[4096];
	size_t n;

	n = (size_t)snprintf(conf, sizeof(conf),
			     "node_name: node-a\n"
			     "interval: 100ms\n"
			     "buffer_limit: %s\n"
			     "masters:\n",
			     buffer_limit);
	for (size_t i = 0; masters[i] != NULL; i += 2)
		n += (size_t)snprintf(conf + n, sizeof(conf) - n,
				      "  - job: %s\n"
				      "    address: %s\n"
				      "    token: " AGENT_TOKEN "\n",
				      masters[i], masters[i + 1]);
	snprintf(conf + n, sizeof(conf) - n,
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
		 "    roles: [ctl]\n"
		 "log:\n"
		 "  level: debug\n");
	ck_assert_int_eq(th_start(d, "c4a-agent", conf), 0);
	ck_assert(d->unix_path[0] != '\0');
}

/*
 * One counter of `c4ctl -o json status`; label is the job of a per-job
 * counter or NULL.  -1 when the daemon does not answer.
 */
static long long
counter(const struct th_daemon *d, const char *name, const char *label)
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
	if (label != NULL)
		snprintf(key, sizeof(key), "\"%s{job=\\\"%s\\\"}\":", name,
			 label);
	else
		snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(out, key);
	ck_assert_msg(p != NULL, "no counter %s in %s", key, out);
	return atoll(p + strlen(key));
}

/* Waits until the counter reaches at least min; returns its value. */
static long long
wait_counter(const struct th_daemon *d, const char *name, const char *label,
	     long long min)
{
	long deadline = th_now_ms() + WAIT_MS;
	long long v;

	while ((v = counter(d, name, label)) < min && th_now_ms() < deadline)
		usleep(50000);
	ck_assert_msg(v >= min, "%s%s%s is %lld, expected at least %lld", name,
		      label ? " of " : "", label ? label : "", v, min);
	return v;
}

struct client_arg {
	const char *path;
	const char *job;
	uint64_t comm;
	uint32_t rank, nranks;
	int reports;
	size_t queue_limit;
	struct c4client_stats st;
};

/* One rank: registers, reports REPORTS intervals of 4 records, closes. */
static void *
client_run(void *p)
{
	struct client_arg *a = p;
	struct c4client_opts o = {a->path, a->job, CCL_TOKEN, "node-a",
				  a->queue_limit};
	struct c4client_rank r = {a->rank,  NULL, a->rank, NULL,
				  "mlx5_0", 1,	  a->rank};
	struct c4client_comm cm = {a->comm, a->nranks, "dp", 1, &r};
	struct c4client *c = c4client_open(&o);
	struct sketch k;
	long deadline;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(sketch_init(&k, 0), 0);
	ck_assert_int_eq(c4client_register(c, &cm), 0);
	for (int i = 0; i < a->reports; i++) {
		struct c4client_op op = {C4CLIENT_ALLREDUCE,
					 10,
					 1 << 20,
					 C4CLIENT_ALGO_RING,
					 C4CLIENT_PROTO_SIMPLE,
					 8,
					 &k,
					 NULL,
					 NULL};
		struct c4client_coll co = {a->comm,
					   a->rank,
					   1,
					   &op,
					   (uint64_t)i * 10 + 1,
					   (uint64_t)i * 10 + 10,
					   (uint64_t)i * 10 + 1,
					   (uint64_t)i * 10 + 10,
					   0,
					   0};
		struct c4client_conn cn = {a->comm,
					   a->rank,
					   (a->rank + 1) % a->nranks,
					   0x3,
					   C4CLIENT_NET,
					   C4CLIENT_ALGO_RING,
					   1 << 20,
					   16,
					   0,
					   0,
					   &k};
		struct c4client_wait w = {a->comm, a->rank, &k, NULL,
					  NULL,	   NULL,    16};
		struct c4client_progress pg = {a->comm,
					       a->rank,
					       (uint64_t)i * 10 + 10,
					       (uint64_t)i * 10 + 10,
					       1,
					       0,
					       0,
					       NULL};
		struct c4client_report rep = {0, 0,   100, 1,  1,  1,
					      1, &co, &cn, &w, &pg};

		for (int s = 1; s <= 100; s++)
			ck_assert_int_eq(sketch_add(&k, (uint64_t)s * 1000), 0);
		ck_assert_int_eq(c4client_report(c, &rep), 0);
		sketch_reset(&k);
	}
	/* Sent before close, so that close's bounded flush is not needed. */
	deadline = th_now_ms() + WAIT_MS;
	do {
		c4client_stats(c, &a->st);
		if (a->st.reports_sent == (uint64_t)a->reports)
			break;
		usleep(10000);
	} while (th_now_ms() < deadline);
	c4client_close(c);
	sketch_free(&k);
	return NULL;
}

START_TEST(test_two_jobs_reach_their_masters)
{
	struct th_daemon ma, mb, ag;
	struct client_arg args[5];
	pthread_t th[5];
	pid_t child;
	int status;
	const char *masters[5];

	start_master(&ma, "job-a", "127.0.0.1:0");
	start_master(&mb, "job-b", "127.0.0.1:0");
	masters[0] = "job-a";
	masters[1] = ma.tcp;
	masters[2] = "job-b";
	masters[3] = mb.tcp;
	masters[4] = NULL;
	start_agent(&ag, "1MiB", masters);
	wait_counter(&ag, "master_connected", "job-a", 1);
	wait_counter(&ag, "master_connected", "job-b", 1);

	/*
	 * A process of job-b (forked before any thread exists: a child of a
	 * threaded process may inherit a held lock), three threads of job-a
	 * and two of job-b.
	 */
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct client_arg a = {ag.unix_path, "job-b", 0xbbbb, 2, 3,
				       REPORTS,	     0,	      {0}};

		client_run(&a);
		_exit(a.st.reports_queued == REPORTS ? 0 : 1);
	}
	for (int i = 0; i < 5; i++) {
		args[i] = (struct client_arg){ag.unix_path,
					      i < 3 ? "job-a" : "job-b",
					      i < 3 ? 0xaaaa : 0xbbbb,
					      (uint32_t)(i < 3 ? i : i - 3),
					      3,
					      REPORTS,
					      0,
					      {0}};
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, client_run, &args[i]), 0);
	}
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_uint_eq(args[i].st.reports_queued, REPORTS);
		ck_assert_uint_eq(args[i].st.reports_dropped, 0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Every batch reached the agent, and its records the right master. */
	wait_counter(&ag, "batches_received", NULL, 6 * REPORTS);
	ck_assert_int_eq(counter(&ag, "records_received", NULL),
			 6 * REPORTS * 4);
	wait_counter(&ma, "telemetry_records", NULL, 3 * REPORTS * 4);
	wait_counter(&mb, "telemetry_records", NULL, 3 * REPORTS * 4);
	wait_counter(&ma, "comm_registrations", NULL, 1);
	wait_counter(&mb, "comm_registrations", NULL, 1);
	/* A master refuses data of another job; none was refused. */
	ck_assert_int_eq(counter(&ma, "invalid", NULL), 0);
	ck_assert_int_eq(counter(&mb, "invalid", NULL), 0);
	ck_assert_int_eq(counter(&ag, "clients_refused", NULL), 0);
	ck_assert_int_eq(counter(&ag, "master_records_dropped", "job-a"), 0);

	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&ma), 0);
	ck_assert_int_eq(th_stop(&mb), 0);
}
END_TEST

/* ADMIN_JOBS: one JobInfo per configured job with its master and ranks. */
START_TEST(test_agent_jobs)
{
	struct th_daemon ma, ag;
	struct cli c;
	struct cli_hello h = {C4__ROLE__ROLE_CTL, OPS_TOKEN, NULL, "t"};
	C4__AdminRequest rq = C4__ADMIN_REQUEST__INIT;
	C4__Envelope *env;
	const char *masters[5] = {"job-a", NULL, "job-z", "127.0.0.1:1", NULL};
	struct client_arg a;

	start_master(&ma, "job-a", "127.0.0.1:0");
	masters[1] = ma.tcp;
	start_agent(&ag, "1MiB", masters);
	wait_counter(&ag, "master_connected", "job-a", 1);
	a = (struct client_arg){ag.unix_path, "job-a", 0x77, 1, 4, 1, 0, {0}};
	client_run(&a);
	wait_counter(&ag, "batches_received", NULL, 1);

	ck_assert_msg(cli_connect(&c, ag.tcp, &h, TIMEOUT_MS) == 0, "%s",
		      c.err);
	rq.has_op = 1;
	rq.op = C4__ADMIN_OP__ADMIN_JOBS;
	env = cli_call(&c, C4__MSG_TYPE__MSG_ADMIN_REQUEST, &rq);
	ck_assert_msg(env != NULL, "%s", c.err);
	ck_assert_uint_eq(env->admin_reply->n_jobs, 2);
	ck_assert_str_eq(env->admin_reply->jobs[0]->job_id, "job-a");
	ck_assert_str_eq(env->admin_reply->jobs[0]->master, ma.tcp);
	ck_assert(env->admin_reply->jobs[0]->connected);
	ck_assert_uint_eq(env->admin_reply->jobs[0]->ranks, 1);
	ck_assert_str_eq(env->admin_reply->jobs[1]->job_id, "job-z");
	ck_assert(!env->admin_reply->jobs[1]->connected);
	msg_free(env);
	cli_close(&c);

	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&ma), 0);
}
END_TEST

START_TEST(test_master_crash_and_restart)
{
	struct th_daemon m, ag;
	char addr[64];
	const char *masters[3] = {"job-a", addr, NULL};
	struct client_arg a;
	long long buffered, regs;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", th_free_port());
	start_master(&m, "job-a", addr);
	start_agent(&ag, "1MiB", masters);
	wait_counter(&ag, "master_connected", "job-a", 1);
	a = (struct client_arg){ag.unix_path, "job-a", 0x55, 0, 2, 1, 0, {0}};
	client_run(&a);
	wait_counter(&m, "comm_registrations", NULL, 1);
	wait_counter(&m, "telemetry_batches", NULL, 2);

	/* A crash: the agent keeps its batches while nobody listens. */
	ck_assert_int_eq(th_kill(&m), 0);
	buffered = wait_counter(&ag, "master_frames_buffered", "job-a", 5);
	ck_assert_int_eq(counter(&ag, "master_connected", "job-a"), 0);

	start_master(&m, "job-a", addr);
	wait_counter(&ag, "master_reconnects", "job-a", 1);
	/* What was buffered arrives, after the registrations again. */
	wait_counter(&m, "telemetry_batches", NULL, buffered);
	regs = wait_counter(&m, "comm_registrations", NULL, 1);
	ck_assert_int_ge(regs, 1);
	ck_assert_int_eq(counter(&m, "invalid", NULL), 0);
	ck_assert_int_eq(counter(&ag, "master_frames_dropped", "job-a"), 0);

	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

START_TEST(test_tiny_buffer_drops_are_reported)
{
	struct th_daemon m, ag;
	char addr[64];
	const char *masters[3] = {"job-a", addr, NULL};
	struct client_arg a;

	/* No master yet: the agent buffers into 1 KiB and drops. */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", th_free_port());
	start_agent(&ag, "1KiB", masters);
	a = (struct client_arg){ag.unix_path, "job-a", 0x66, 0, 8, 3, 0, {0}};
	client_run(&a);
	wait_counter(&ag, "master_frames_dropped", "job-a", 2);
	wait_counter(&ag, "master_records_dropped", "job-a", 2);
	ck_assert_int_le(counter(&ag, "master_bytes_buffered", "job-a"), 1024);

	/* The master learns how much was lost. */
	start_master(&m, "job-a", addr);
	wait_counter(&ag, "master_connected", "job-a", 1);
	wait_counter(&m, "dropped_records", NULL, 2);

	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

/*
 * A summary the queue cannot take is counted, and the count reaches the
 * agent in the next summary and the master in the agent's next batch.
 */
START_TEST(test_client_drops_travel)
{
	struct th_daemon m, ag;
	const char *masters[3] = {"job-a", NULL, NULL};
	struct c4client_opts o;
	struct c4client *c;
	struct c4client_progress pg[400];
	struct c4client_report big = {0,   0,	 100,  0,    0, 0,
				      400, NULL, NULL, NULL, pg};
	struct c4client_report small = {0, 0,	 100,  0,    0, 0,
					1, NULL, NULL, NULL, pg};
	struct c4client_stats st;
	long deadline;

	start_master(&m, "job-a", "127.0.0.1:0");
	masters[1] = m.tcp;
	start_agent(&ag, "1MiB", masters);
	for (uint32_t i = 0; i < 400; i++)
		pg[i] = (struct c4client_progress){0x9, i, 7, 7, 1, 0, 0, NULL};
	o = (struct c4client_opts){ag.unix_path, "job-a", CCL_TOKEN, NULL,
				   C4CLIENT_QUEUE_MIN};
	c = c4client_open(&o);
	ck_assert_ptr_nonnull(c);
	/* 400 progress records do not fit 4 KiB: refused and counted. */
	ck_assert_int_eq(c4client_report(c, &big), -1);
	ck_assert_int_eq(c4client_report(c, &small), 0);
	c4client_stats(c, &st);
	ck_assert_uint_eq(st.reports_dropped, 1);
	ck_assert_uint_eq(st.records_dropped, 400);
	deadline = th_now_ms() + WAIT_MS;
	while (st.reports_sent < 1 && th_now_ms() < deadline) {
		usleep(10000);
		c4client_stats(c, &st);
	}
	ck_assert_uint_eq(st.reports_sent, 1);
	c4client_close(c);

	wait_counter(&ag, "client_dropped_records", NULL, 400);
	ck_assert_int_eq(counter(&ag, "client_dropped_records", NULL), 400);
	wait_counter(&m, "dropped_records", NULL, 400);
	ck_assert_int_eq(counter(&m, "dropped_records", NULL), 400);

	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

START_TEST(test_client_without_agent)
{
	struct c4client_opts o = {"/nonexistent/c4/agent.sock", "job-a",
				  CCL_TOKEN, NULL, C4CLIENT_QUEUE_MIN};
	struct c4client *c = c4client_open(&o);
	struct c4client_progress pg = {0x1, 0, 5, 5, 1, 0, 0, NULL};
	struct c4client_report rep = {0, 0,    100,  0,	   0,  0,
				      1, NULL, NULL, NULL, &pg};
	struct c4client_stats st;

	ck_assert_ptr_nonnull(c);
	/* Returns at once every time (the test's timeout is the bound). */
	for (int i = 0; i < 2000; i++)
		ck_assert_int_eq(c4client_report(c, &rep), 0);
	c4client_stats(c, &st);
	ck_assert_uint_eq(st.reports_queued, 2000);
	ck_assert_uint_gt(st.reports_dropped, 0);
	ck_assert_uint_eq(st.records_dropped, st.reports_dropped);
	ck_assert_uint_le(st.queue_bytes, C4CLIENT_QUEUE_MIN);
	ck_assert_uint_eq(st.reports_dropped + st.queue_reports, 2000);
	ck_assert_int_eq(st.connected, 0);
	ck_assert_uint_eq(st.reports_sent, 0);
	/* What the agent would refuse is refused here, not sent. */
	{
		char longname[300];
		struct c4client_rank r = {0, NULL, 0, NULL, longname, 1, 0};
		struct c4client_comm cm = {0x1, 2, NULL, 1, &r};

		memset(longname, 'x', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		ck_assert_int_eq(c4client_register(c, &cm), -1);
		r.nic = "mlx5_0";
		r.rank = 2;
		ck_assert_int_eq(c4client_register(c, &cm), -1);
		r.rank = 1;
		ck_assert_int_eq(c4client_register(c, &cm), 0);
	}
	/* Bad options are the only failure of open. */
	o.job_id = NULL;
	ck_assert_ptr_null(c4client_open(&o));
	c4client_close(c);
}
END_TEST

START_TEST(test_unconfigured_job_refused)
{
	struct th_daemon ma, ag;
	const char *masters[3] = {"job-a", NULL, NULL};
	struct cli c;
	struct cli_hello h = {C4__ROLE__ROLE_CCL_CLIENT, CCL_TOKEN, "job-x",
			      "node-a"};
	char addr[4200];
	struct c4client_opts o;
	struct c4client *cl;
	struct c4client_stats st;
	long deadline;

	start_master(&ma, "job-a", "127.0.0.1:0");
	masters[1] = ma.tcp;
	start_agent(&ag, "1MiB", masters);
	snprintf(addr, sizeof(addr), "unix:%s", ag.unix_path);
	ck_assert_int_eq(cli_connect(&c, addr, &h, TIMEOUT_MS), -1);
	ck_assert_msg(strstr(c.err, "no master is configured for job 'job-x'"),
		      "%s", c.err);

	/* The library sees the same refusal and keeps its data counted. */
	o = (struct c4client_opts){ag.unix_path, "job-x", CCL_TOKEN, NULL, 0};
	cl = c4client_open(&o);
	ck_assert_ptr_nonnull(cl);
	deadline = th_now_ms() + WAIT_MS;
	do {
		usleep(20000);
		c4client_stats(cl, &st);
	} while (strstr(st.last_error, "no master") == NULL &&
		 th_now_ms() < deadline);
	ck_assert_msg(strstr(st.last_error, "no master") != NULL, "%s",
		      st.last_error);
	ck_assert_int_eq(st.connected, 0);
	c4client_close(cl);
	ck_assert_int_ge(counter(&ag, "clients_refused", NULL), 2);
	ck_assert_int_eq(counter(&ag, "clients_connected", NULL), 0);

	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&ma), 0);
}
END_TEST

static Suite *
agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("agent");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_two_jobs_reach_their_masters);
	tcase_add_test(tc, test_agent_jobs);
	tcase_add_test(tc, test_master_crash_and_restart);
	tcase_add_test(tc, test_tiny_buffer_drops_are_reported);
	tcase_add_test(tc, test_client_drops_travel);
	tcase_add_test(tc, test_client_without_agent);
	tcase_add_test(tc, test_unconfigured_job_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(agent_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
