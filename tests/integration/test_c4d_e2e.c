/*
 * test_c4d_e2e.c - C4D end to end with real processes only: c4sim drives
 * a synthetic 64-rank job through 8 real c4a-agents into a real c4d-master
 * with its SQLite store and a webhook pointed at a real HTTP receiver
 * (c4-test-sink).
 *
 * - A slow receive NIC injected by c4sim becomes exactly one event: one
 *   id in SQLite, one "open" delivery, and it resolves when the fault
 *   clears.  While it is open, c4ctl's JSON views parse with their
 *   documented keys.
 * - An agent killed with SIGKILL (c4sim's node loss) is a lost node.
 * - The master killed with SIGKILL mid-run and restarted on its port and
 *   state: the agents come back, the open event continues under its id,
 *   and no delivery carries a new id for it.
 *
 * Intervals are 500 ms so the runs stay short; the checks are on events,
 * not on time.
 */
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define OPS_TOKEN   "e2e-operator-token"
#define AGENT_TOKEN "e2e-agent-token-01"
#define WAIT_MS	    40000

/* A child process with its output in log; killed with the test. */
/* th_spawn, failing the test when fork fails. */
static pid_t
spawn_ok(char *const argv[], const char *log)
{
	pid_t pid = th_spawn(argv, log, NULL);

	ck_assert_int_ge(pid, 0);
	return pid;
}

struct sink {
	pid_t pid;
	char dir[64];
	int port;
};

static void
sink_start(struct sink *s)
{
	char port[16] = "0", path[128], log[128];
	char *argv[] = {(char *)th_bin("tests/integration/c4-test-sink"),
			s->dir, port, NULL};
	long deadline = th_now_ms() + WAIT_MS;
	FILE *fp = NULL;

	snprintf(s->dir, sizeof(s->dir), "/tmp/c4-e2e-sink-XXXXXX");
	ck_assert_ptr_nonnull(th_mkdtemp(s->dir));
	snprintf(path, sizeof(path), "%s/port", s->dir);
	snprintf(log, sizeof(log), "%s/sink.log", s->dir);
	s->pid = spawn_ok(argv, log);
	while (th_now_ms() < deadline && (fp = fopen(path, "r")) == NULL)
		usleep(20000);
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fscanf(fp, "%d", &s->port), 1);
	fclose(fp);
}

/* Lines of the sink's received bodies that contain needle. */
static int
sink_count(const struct sink *s, const char *needle)
{
	char path[128], *line = malloc(1 << 20);
	int n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/received", s->dir);
	fp = fopen(path, "r");
	if (fp != NULL) {
		while (fgets(line, 1 << 20, fp) != NULL)
			n += strstr(line, needle) != NULL;
		fclose(fp);
	}
	free(line);
	return n;
}

struct master {
	struct th_daemon d;
	char state[64];
	char conf[4096];
	int port;
};

static void
master_start(struct master *m, const struct sink *s)
{
	if (m->state[0] == '\0') {
		snprintf(m->state, sizeof(m->state),
			 "/tmp/c4-e2e-state-XXXXXX");
		ck_assert_ptr_nonnull(th_mkdtemp(m->state));
		m->port = th_free_port();
		ck_assert_int_gt(m->port, 0);
		snprintf(m->conf, sizeof(m->conf),
			 "job: e2e-job\n"
			 "state_dir: %s\n"
			 /*
			  * c4sim's 64 ranks share this machine: under load
			  * (a sanitizer build beside other suites) they
			  * stalled past a 1 s node timeout together, and
			  * every host read as lost
			  */
			 "detection: {interval: 500ms, hang_timeout: 1s, "
			 "node_timeout: 3s}\n"
			 "server: {listen: \"127.0.0.1:%d\", heartbeat: 500ms, "
			 "idle_timeout: 5s}\n"
			 "webhooks:\n"
			 "  - {name: steering, url: "
			 "\"http://127.0.0.1:%d/hooks/c4\", max_backoff: 1s}\n"
			 "credentials:\n"
			 "  - {name: agents, token: " AGENT_TOKEN
			 ", roles: [agent], jobs: [e2e-job]}\n"
			 "  - {name: ops, token: " OPS_TOKEN
			 ", roles: [ctl]}\n",
			 m->state, m->port, s->port);
	}
	ck_assert_int_eq(th_start(&m->d, "c4d-master", m->conf), 0);
}

/* c4sim against m, in the background; its ground truth in truth. */
static pid_t
sim_start(const struct master *m, const char *fault, const char *clear_at,
	  const char *intervals, const char *truth, const char *log)
{
	char addr[64], work[96];
	char *argv[] = {(char *)th_bin("tools/c4sim/c4sim"),
			(char *)"--master",
			addr,
			(char *)"--token",
			(char *)AGENT_TOKEN,
			(char *)"--job",
			(char *)"e2e-job",
			(char *)"--ranks",
			(char *)"64",
			(char *)"--fault",
			(char *)fault,
			(char *)"--fault_at",
			(char *)"4",
			(char *)"--clear_at",
			(char *)clear_at,
			(char *)"--intervals",
			(char *)intervals,
			(char *)"--interval",
			(char *)"500ms",
			(char *)"--seed",
			(char *)"11",
			(char *)"--workdir",
			work,
			(char *)"--truth",
			(char *)truth,
			(char *)"--agent",
			(char *)th_bin("daemons/c4a-agent/c4a-agent"),
			NULL};

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", m->port);
	snprintf(work, sizeof(work), "%s/sim", m->state);
	return spawn_ok(argv, log);
}

/* c4ctl -o json CMD against m; its stdout in out. */
static int
ctl_json(const struct master *m, const char *cmd, char *out, size_t len)
{
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", m->port);
	return th_ctl(addr, OPS_TOKEN, out, len, "-o", "json", cmd, NULL);
}

/* Polls events until one line holds every needle; 0 or -1. */
static int
wait_event(const struct master *m, const char *n1, const char *n2, char *line,
	   size_t len)
{
	long deadline = th_now_ms() + WAIT_MS;
	static char out[1 << 16];

	while (th_now_ms() < deadline) {
		char *save, *l;

		if (ctl_json(m, "events", out, sizeof(out)) == 0)
			for (l = strtok_r(out, "\n", &save); l;
			     l = strtok_r(NULL, "\n", &save))
				if (strstr(l, n1) && (!n2 || strstr(l, n2))) {
					snprintf(line, len, "%s", l);
					return 0;
				}
		usleep(200000);
	}
	return -1;
}

/* "key":"value" of a JSON line (first occurrence), into buf. */
static const char *
json_str(const char *line, const char *key, char *buf, size_t len)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(line, pat);
	ck_assert_msg(p != NULL, "no %s in %s", key, line);
	p += strlen(pat);
	snprintf(buf, len, "%.*s", (int)strcspn(p, "\""), p);
	return buf;
}

/* The master's event store, read-only; NULL when it does not open. */
static sqlite3 *
db_open(const struct master *m)
{
	char path[128];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/c4d-master.db", m->state);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static sqlite3_int64
db_count(const struct master *m, const char *sql, const char *id)
{
	sqlite3 *db = db_open(m);
	sqlite3_stmt *st;
	sqlite3_int64 n = -1;

	ck_assert_ptr_nonnull(db);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (id != NULL)
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* The stored events' kinds and first intervals, for a failure message. */
static const char *
db_kinds(const struct master *m, char *buf, size_t len)
{
	sqlite3 *db = db_open(m);
	sqlite3_stmt *st;

	snprintf(buf, len, "?");
	if (db == NULL)
		return buf;
	if (sqlite3_prepare_v2(
		    db,
		    "SELECT group_concat('kind ' || kind || ' from "
		    "interval ' || first_interval, ', ') FROM events",
		    -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW &&
		    sqlite3_column_text(st, 0) != NULL)
			snprintf(buf, len, "%s", sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return buf;
}

START_TEST(test_fault_to_store_and_webhook)
{
	static char out[1 << 16];
	char truth[128], slog[128], line[8192], id[96], host[32], nic[32];
	struct master m = {0};
	struct sink s;
	pid_t sim;
	FILE *fp;

	sink_start(&s);
	master_start(&m, &s);
	snprintf(truth, sizeof(truth), "%s/truth.json", m.state);
	snprintf(slog, sizeof(slog), "%s/sim.log", m.state);
	sim = sim_start(&m, "slow-rx", "14", "30", truth, slog);
	ck_assert_int_eq(wait_event(&m, "\"kind\":\"comm_slow_rx\"", NULL, line,
				    sizeof(line)),
			 0);
	json_str(line, "id", id, sizeof(id));
	/* The event names the host and NIC c4sim slowed. */
	fp = fopen(truth, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(out, sizeof(out), fp));
	fclose(fp);
	json_str(out, "host", host, sizeof(host));
	json_str(out, "nic", nic, sizeof(nic));
	{
		char want[96];

		snprintf(want, sizeof(want), "\"host\":\"%s\"", host);
		ck_assert_msg(strstr(line, want) != NULL, "%s vs %s", line,
			      out);
		snprintf(want, sizeof(want), "\"nic\":\"%s\"", nic);
		ck_assert_msg(strstr(line, want) != NULL, "%s vs %s", line,
			      out);
	}
	/* The JSON views, while the job runs. */
	ck_assert_int_eq(ctl_json(&m, "jobs", out, sizeof(out)), 0);
	ck_assert_msg(strstr(out,
			     "{\"jobs\":[{\"job\":\"e2e-job\",\"agents\":8,"
			     "\"ranks\":64,") != NULL,
		      "%s", out);
	ck_assert_int_eq(ctl_json(&m, "ranks", out, sizeof(out)), 0);
	ck_assert_msg(strncmp(out, "{\"ranks\":[{\"rank\":0,\"host\":", 27) ==
			      0,
		      "%s", out);
	ck_assert_int_eq(ctl_json(&m, "matrix", out, sizeof(out)), 0);
	ck_assert_msg(strncmp(out, "{\"comm\":\"", 9) == 0 &&
			      strstr(out, "\"cells\":[{\"src\":") != NULL &&
			      strstr(out, "\"hot\":true") != NULL,
		      "%s", out);
	/* The fault clears at interval 14: the same event resolves. */
	ck_assert_int_eq(wait_event(&m, id, "\"state\":\"resolved\"", line,
				    sizeof(line)),
			 0);
	ck_assert_int_eq(th_reap(sim, WAIT_MS), 0);
	/* Exactly one event, its life in the history, in the store. */
	ck_assert_msg(db_count(&m, "SELECT COUNT(*) FROM events", NULL) == 1,
		      "events: %s", db_kinds(&m, line, sizeof(line)));
	ck_assert_int_eq(db_count(&m,
				  "SELECT COUNT(*) FROM event_history WHERE "
				  "id = ?1 AND state = 1",
				  id),
			 1);
	ck_assert_int_eq(db_count(&m,
				  "SELECT COUNT(*) FROM event_history WHERE "
				  "id = ?1 AND state = 3",
				  id),
			 1);
	/* One delivery of the open and one of the resolution. */
	{
		long deadline = th_now_ms() + WAIT_MS;

		while (th_now_ms() < deadline &&
		       sink_count(&s, "\"type\":\"io.c4.event.resolved\"") < 1)
			usleep(100000);
	}
	ck_assert_int_eq(sink_count(&s, "\"type\":\"io.c4.event.open\""), 1);
	ck_assert_int_eq(sink_count(&s, "\"type\":\"io.c4.event.resolved\""),
			 1);
	ck_assert_int_eq(th_stop(&m.d), 0);
	kill(s.pid, SIGTERM);
	th_reap(s.pid, WAIT_MS);
}
END_TEST

START_TEST(test_agent_killed_is_node_lost)
{
	char truth[128], slog[128], line[8192], host[32], want[64];
	static char out[4096];
	struct master m = {0};
	struct sink s;
	pid_t sim;
	FILE *fp;

	sink_start(&s);
	master_start(&m, &s);
	snprintf(truth, sizeof(truth), "%s/truth.json", m.state);
	snprintf(slog, sizeof(slog), "%s/sim.log", m.state);
	sim = sim_start(&m, "node-lost", "0", "16", truth, slog);
	ck_assert_int_eq(wait_event(&m, "\"kind\":\"node_lost\"", NULL, line,
				    sizeof(line)),
			 0);
	fp = fopen(truth, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(out, sizeof(out), fp));
	fclose(fp);
	json_str(out, "host", host, sizeof(host));
	snprintf(want, sizeof(want), "\"action\":\"isolate host %s\"", host);
	ck_assert_msg(strstr(line, want) != NULL, "%s vs %s", line, out);
	ck_assert_int_eq(th_reap(sim, WAIT_MS), 0);
	ck_assert_int_eq(th_stop(&m.d), 0);
	kill(s.pid, SIGTERM);
	th_reap(s.pid, WAIT_MS);
}
END_TEST

START_TEST(test_master_killed_and_restarted)
{
	char truth[128], slog[128], line[8192], id[96], pat[160];
	static char out[1 << 16];
	struct master m = {0};
	struct sink s;
	long deadline;
	pid_t sim;

	sink_start(&s);
	master_start(&m, &s);
	snprintf(truth, sizeof(truth), "%s/truth.json", m.state);
	snprintf(slog, sizeof(slog), "%s/sim.log", m.state);
	sim = sim_start(&m, "slow-rx", "0", "70", truth, slog);
	ck_assert_int_eq(wait_event(&m, "\"kind\":\"comm_slow_rx\"", NULL, line,
				    sizeof(line)),
			 0);
	json_str(line, "id", id, sizeof(id));
	/* The open is committed (delivered) before the crash. */
	deadline = th_now_ms() + WAIT_MS;
	while (th_now_ms() < deadline &&
	       sink_count(&s, "\"type\":\"io.c4.event.open\"") < 1)
		usleep(100000);
	ck_assert_int_eq(th_kill(&m.d), 0);
	/* Same port, same state: the agents reconnect on their own. */
	master_start(&m, &s);
	snprintf(pat, sizeof(pat), "\"id\":\"%s\"", id);
	deadline = th_now_ms() + WAIT_MS;
	for (;;) {
		ck_assert_int_lt(th_now_ms(), deadline);
		ck_assert_int_eq(ctl_json(&m, "events", out, sizeof(out)), 0);
		/* The event continues: updated under its id after restart. */
		if (strstr(out, pat) && strstr(out, "\"state\":\"updated\""))
			break;
		usleep(200000);
	}
	/* Nothing else opened: one event id in the store, one open sent. */
	kill(sim, SIGTERM);
	th_reap(sim, WAIT_MS);
	ck_assert_int_eq(th_stop(&m.d), 0);
	ck_assert_msg(db_count(&m, "SELECT COUNT(*) FROM events", NULL) == 1,
		      "events: %s", db_kinds(&m, out, sizeof(out)));
	ck_assert_int_eq(
		db_count(&m,
			 "SELECT COUNT(*) FROM event_history WHERE "
			 "id = ?1",
			 id),
		db_count(&m, "SELECT MAX(revision) FROM events", NULL));
	ck_assert_int_eq(sink_count(&s, "\"type\":\"io.c4.event.open\""), 1);
	/* Every delivery, before and after the crash, is of that event. */
	snprintf(pat, sizeof(pat), "\"subject\":\"%s\"", id);
	ck_assert_int_gt(sink_count(&s, pat), 0);
	ck_assert_int_eq(sink_count(&s, "\"subject\":\""), sink_count(&s, pat));
	kill(s.pid, SIGTERM);
	th_reap(s.pid, WAIT_MS);
}
END_TEST

static Suite *
e2e_suite(void)
{
	Suite *s = suite_create("c4d-e2e");
	TCase *tc = tcase_create("processes");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_fault_to_store_and_webhook);
	tcase_add_test(tc, test_agent_killed_is_node_lost);
	tcase_add_test(tc, test_master_killed_and_restarted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(e2e_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
