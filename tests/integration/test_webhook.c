/*
 * test_webhook.c - the event store and webhook delivery end to end: the
 * master's event path (c4d-test-pipe, linking the real store, senders and
 * HTTP endpoints) against real SQLite files and a real HTTP receiver
 * (c4-test-sink), including a receiver outage and kill -9 of the sender
 * mid-delivery; then the real c4d-master continuing those events, its
 * /metrics and /healthz, and c4ctl events -o json.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness.h"
#include "net.h"

#define OPS_TOKEN  "operator-token-0001"
#define HOOK_TOKEN "hook-token-0001"
#define WAIT_MS	   60000
#define LINE_MAX_  65536

struct proc {
	pid_t pid;
	int in;	 /* its stdin */
	int out; /* its stdout */
};

static void
nap(void)
{
	struct timespec ts = {0, 20 * 1000000L};

	nanosleep(&ts, NULL);
}

static void
proc_start(struct proc *p, char *const argv[])
{
	int in[2], out[2];

	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
}

/* Reads one line of p's stdout within WAIT_MS; 0 or -1. */
static int
proc_line(struct proc *p, char *buf, size_t len)
{
	long deadline = th_now_ms() + WAIT_MS;
	size_t n = 0;

	while (n + 1 < len && th_now_ms() < deadline) {
		struct pollfd pfd = {p->out, POLLIN, 0};

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(p->out, buf + n, 1) != 1)
			return -1;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	return -1;
}

static int
proc_wait(struct proc *p)
{
	long deadline = th_now_ms() + WAIT_MS;
	int status;

	close(p->in);
	close(p->out);
	while (th_now_ms() < deadline) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		nap();
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	return -1;
}

static void
proc_kill9(struct proc *p)
{
	int status;

	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	close(p->in);
	close(p->out);
}

/* ---- the sink ----------------------------------------------------------- */

struct sink {
	struct proc p;
	char dir[64];
	int port;
};

static void
sink_file(const struct sink *s, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->dir, name);
}

static void
sink_set(const struct sink *s, const char *flag, int on)
{
	char path[128];

	sink_file(s, flag, path, sizeof(path));
	if (on)
		close(open(path, O_CREAT | O_WRONLY, 0644));
	else
		unlink(path);
}

static void
sink_start(struct sink *s)
{
	char port[16];
	char *argv[] = {(char *)th_bin("tests/integration/c4-test-sink"),
			s->dir, port, NULL};
	char path[128];
	long deadline = th_now_ms() + WAIT_MS;
	FILE *fp = NULL;

	/* A restarted sink takes its old port, where the webhook points. */
	snprintf(port, sizeof(port), "%d", s->port);

	if (s->dir[0] == '\0') {
		snprintf(s->dir, sizeof(s->dir), "/tmp/c4-sink-XXXXXX");
		ck_assert_ptr_nonnull(th_mkdtemp(s->dir));
	}
	sink_file(s, "port", path, sizeof(path));
	unlink(path);
	proc_start(&s->p, argv);
	while (th_now_ms() < deadline && (fp = fopen(path, "r")) == NULL)
		nap();
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fscanf(fp, "%d", &s->port), 1);
	fclose(fp);
}

static void
sink_stop(struct sink *s)
{
	kill(s->p.pid, SIGTERM);
	ck_assert_int_eq(proc_wait(&s->p), 0);
}

/* The CloudEvent ids of the bodies in a sink file, in order. */
static int
sink_ids(const struct sink *s, const char *name, char ids[][64], int max)
{
	char path[128], *line = malloc(LINE_MAX_);
	FILE *fp;
	int n = 0;

	sink_file(s, name, path, sizeof(path));
	fp = fopen(path, "r");
	if (fp == NULL) {
		free(line);
		return 0;
	}
	while (n < max && fgets(line, LINE_MAX_, fp) != NULL) {
		char *id = strstr(line, "\"id\":\"");

		if (id == NULL)
			continue;
		id += 6;
		snprintf(ids[n], 64, "%.*s", (int)strcspn(id, "\""), id);
		n++;
	}
	fclose(fp);
	free(line);
	return n;
}

static int
sink_count(const struct sink *s, const char *name)
{
	char ids[512][64];

	return sink_ids(s, name, ids, 512);
}

static int
wait_count(const struct sink *s, const char *name, int want)
{
	long deadline = th_now_ms() + WAIT_MS;

	while (th_now_ms() < deadline) {
		if (sink_count(s, name) >= want)
			return 0;
		nap();
	}
	return -1;
}

/* ---- the master's event path -------------------------------------------- */

static void
write_conf(const char *dir, const struct sink *s, char *path, size_t len)
{
	FILE *fp;

	snprintf(path, len, "%s/pipe.yaml", dir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp,
		"job: job-42\n"
		"state_dir: %s\n"
		"server:\n  listen: 127.0.0.1:0\n"
		"credentials:\n"
		"  - name: ops\n    token: " OPS_TOKEN "\n    roles: [ctl]\n"
		"http:\n  listen: 127.0.0.1:0\n"
		"webhooks:\n"
		"  - name: steering\n"
		"    url: http://127.0.0.1:%d/hooks/c4\n"
		"    timeout: 2s\n"
		"    max_backoff: 400ms\n"
		"    token: " HOOK_TOKEN "\n",
		dir, s->port);
	fclose(fp);
}

static void
pipe_start(struct proc *p, const char *conf, char *http, size_t len)
{
	char *argv[] = {(char *)th_bin("tests/integration/c4d-test-pipe"),
			(char *)conf, NULL};
	char line[512];

	proc_start(p, argv);
	ck_assert_int_eq(proc_line(p, line, sizeof(line)), 0);
	ck_assert_msg(strncmp(line, "ready ", 6) == 0, "got '%s'", line);
	if (http != NULL)
		snprintf(http, len, "%.200s", line + 6);
}

static void
pipe_cmd(struct proc *p, const char *fmt, ...)
{
	char cmd[512], line[512];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	va_end(ap);
	n = strlen(cmd);
	cmd[n++] = '\n';
	ck_assert_int_eq(write(p->in, cmd, n), (ssize_t)n);
	ck_assert_int_eq(proc_line(p, line, sizeof(line)), 0);
	ck_assert_str_eq(line, "ok");
}

static void
pipe_quit(struct proc *p)
{
	ck_assert_int_eq(write(p->in, "quit\n", 5), 5);
	ck_assert_int_eq(proc_wait(p), 0);
}

/* One integer from the database (a real reader beside the master). */
static long long
db_int(const char *dir, const char *sql)
{
	char path[600];
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/c4d-master.db", dir);
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static int
wait_db(const char *dir, const char *sql, long long want)
{
	long deadline = th_now_ms() + WAIT_MS;

	while (th_now_ms() < deadline) {
		if (db_int(dir, sql) == want)
			return 0;
		nap();
	}
	return -1;
}

static void
tmpdir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/c4-store-XXXXXX");
	ck_assert_ptr_nonnull(th_mkdtemp(dir));
}

/* A GET of path with nhdr 256-byte headers; the status code, or -1. */
static int
http_get_hdr(const char *hostport, const char *path, int nhdr, char *out,
	     size_t outlen)
{
	struct net_addr a;
	char err[256], line[300];
	size_t n = 0;
	ssize_t r;
	int fd, code = -1;

	ck_assert_int_eq(net_addr_parse(hostport, &a, err, sizeof(err)), 0);
	fd = net_connect(&a, 5000, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	dprintf(fd, "GET %s HTTP/1.1\r\nHost: x\r\n", path);
	memset(line, 'x', sizeof(line));
	for (int i = 0; i < nhdr; i++)
		if (dprintf(fd, "X-Filler-%03d: %.240s\r\n", i, line) < 0)
			break;
	dprintf(fd, "Connection: close\r\n\r\n");
	while (n + 1 < outlen && (r = read(fd, out + n, outlen - n - 1)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fd);
	sscanf(out, "HTTP/1.%*d %d", &code);
	return code;
}

/* ---- tests -------------------------------------------------------------- */

/*
 * A fault becomes exactly one open event in SQLite and one delivery; its
 * clearing resolves it: the same event id, the next revision.
 */
START_TEST(test_one_fault_one_delivery)
{
	struct sink s = {0};
	struct proc p;
	char dir[64], conf[256], http[256], ids[16][64];
	char *line = malloc(LINE_MAX_), path[128], body[65536];
	FILE *fp;

	tmpdir(dir, sizeof(dir));
	sink_start(&s);
	write_conf(dir, &s, conf, sizeof(conf));
	pipe_start(&p, conf, http, sizeof(http));
	pipe_cmd(&p, "publish job-42/rx-7 open comm_slow_rx rank 7 receives "
		     "slowly");
	ck_assert_int_eq(wait_count(&s, "received", 1), 0);
	ck_assert_int_eq(
		wait_db(dir, "SELECT count(*) FROM events WHERE state = 1", 1),
		0);
	ck_assert_int_eq(
		wait_db(dir,
			"SELECT count(*) FROM outbox WHERE delivered_ns IS "
			"NOT NULL",
			1),
		0);

	/* The request: headers, and a CloudEvent around the event. */
	sink_file(&s, "received", path, sizeof(path));
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(line, LINE_MAX_, fp));
	fclose(fp);
	ck_assert_msg(strncmp(line,
			      "200\tBearer " HOOK_TOKEN
			      "\tapplication/cloudevents+json\t",
			      strlen("200\tBearer " HOOK_TOKEN
				     "\tapplication/cloudevents+json\t")) == 0,
		      "%s", line);
	ck_assert_ptr_nonnull(strstr(line, "\"specversion\":\"1.0\""));
	ck_assert_ptr_nonnull(strstr(line, "\"id\":\"job-42/rx-7/1\""));
	ck_assert_ptr_nonnull(strstr(line, "\"source\":\"c4d-master/job-42\""));
	ck_assert_ptr_nonnull(strstr(line, "\"type\":\"io.c4.event.open\""));
	ck_assert_ptr_nonnull(strstr(line, "\"subject\":\"job-42/rx-7\""));
	ck_assert_ptr_nonnull(
		strstr(line, "\"datacontenttype\":\"application/json\""));
	ck_assert_ptr_nonnull(strstr(line, "\"kind\":\"comm_slow_rx\""));
	/* what a controller acts on, and the evidence behind it */
	ck_assert_ptr_nonnull(strstr(line, "\"action\":\"isolate host "
					   "node-07\",\"domain\":\"host\","
					   "\"action_type\":\"isolate_host\","
					   "\"target\":\"node-07\","
					   "\"confidence\":0.75,"));
	ck_assert_ptr_nonnull(strstr(line, "\"peer_host\":\"node-08\","
					   "\"peer_gpu\":0,\"peer_nic\":"
					   "\"mlx5_8\",\"transport\":\"net\""));
	ck_assert_ptr_nonnull(strstr(
		line, "\"evidence\":{\"basis\":\"kernel\",\"z_open\":7.5,"
		      "\"slowdown_open\":1.5,\"hot_intervals\":3,"
		      "\"window\":4,\"member_gpus\":[3,7],\"members\":2,"
		      "\"hosts_blamed\":0,\"accumulated\":false}}"));
	ck_assert_ptr_nonnull(strstr(line, "\"state\":\"open\""));
	ck_assert_ptr_nonnull(strstr(line, "\"summary\":\"rank 7 receives "
					   "slowly\""));

	/* Clearing the fault resolves the same event. */
	pipe_cmd(&p, "publish job-42/rx-7 resolved comm_slow_rx cleared");
	ck_assert_int_eq(wait_count(&s, "received", 2), 0);
	ck_assert_int_eq(sink_ids(&s, "received", ids, 16), 2);
	ck_assert_str_eq(ids[0], "job-42/rx-7/1");
	ck_assert_str_eq(ids[1], "job-42/rx-7/2");
	ck_assert_int_eq(wait_db(dir,
				 "SELECT count(*) FROM events WHERE state = 3 "
				 "AND revision = 2",
				 1),
			 0);
	ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM events"), 1);
	ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM event_history"), 2);

	/* The HTTP endpoints of the same process. */
	ck_assert_int_eq(
		th_http_get(http, "GET", "/healthz", body, sizeof(body)), 200);
	ck_assert_int_eq(
		th_http_get(http, "GET", "/metrics", body, sizeof(body)), 200);
	ck_assert_ptr_nonnull(strstr(body, "# TYPE c4d_events_published_total "
					   "counter\n"));
	ck_assert_ptr_nonnull(strstr(
		body, "c4d_webhook_delivered_total{daemon=\"c4d-master\","
		      "job=\"job-42\",webhook=\"steering\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(body, "# TYPE c4d_events_open gauge\n"));
	ck_assert_int_eq(th_http_get(http, "GET", "/nope", body, sizeof(body)),
			 404);
	ck_assert_int_eq(
		th_http_get(http, "POST", "/metrics", body, sizeof(body)), 405);
	/* Oversized headers are refused; the endpoints go on serving. */
	{
		char big[300];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		memcpy(big, "/metrics?", 9);
		ck_assert_int_ne(
			http_get_hdr(http, big, 40, body, sizeof(body)), 200);
	}
	ck_assert_int_eq(
		th_http_get(http, "GET", "/healthz", body, sizeof(body)), 200);

	pipe_quit(&p);
	sink_stop(&s);
	free(line);
}
END_TEST

/*
 * The receiver is down for a while (and the master restarts meanwhile):
 * every event arrives once it returns, in order.
 */
START_TEST(test_outage_in_order)
{
	struct sink s = {0};
	struct proc p;
	char dir[64], conf[256], ids[256][64], want[64];
	int n;

	tmpdir(dir, sizeof(dir));
	sink_start(&s);
	sink_set(&s, "down", 1);
	write_conf(dir, &s, conf, sizeof(conf));
	pipe_start(&p, conf, NULL, 0);
	for (int i = 0; i < 10; i++)
		pipe_cmd(&p, "publish ev-%02d open", i);
	/* Several refused attempts, all of them for the first event. */
	ck_assert_int_eq(wait_count(&s, "attempts", 4), 0);
	n = sink_ids(&s, "attempts", ids, 256);
	for (int i = 0; i < n; i++)
		ck_assert_str_eq(ids[i], "ev-00/1");
	ck_assert_int_eq(sink_count(&s, "received"), 0);
	/* A clean stop while a retry is pending, and a start still in it. */
	pipe_quit(&p);
	pipe_start(&p, conf, NULL, 0);
	n = sink_count(&s, "attempts");
	ck_assert_int_eq(wait_count(&s, "attempts", n + 2), 0);
	/* Then the receiver is gone altogether (connections refused). */
	sink_stop(&s);
	{
		struct timespec ts = {1, 0};

		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(sink_count(&s, "received"), 0);
	sink_set(&s, "down", 0);
	sink_start(&s);
	ck_assert_int_eq(wait_count(&s, "received", 10), 0);
	n = sink_ids(&s, "received", ids, 256);
	ck_assert_int_eq(n, 10);
	for (int i = 0; i < 10; i++) {
		snprintf(want, sizeof(want), "ev-%02d/1", i);
		ck_assert_str_eq(ids[i], want);
	}
	pipe_quit(&p);
	sink_stop(&s);
}
END_TEST

/*
 * The database is locked by another process for longer than the busy
 * timeout: /healthz turns 503, the transition waits (nothing is dropped,
 * order is kept), and once the lock is gone it is committed, delivered,
 * and /healthz is 200 again.
 */
START_TEST(test_store_blocked_health)
{
	struct sink s = {0};
	struct proc p;
	char dir[64], conf[256], http[256], body[65536], path[600];
	char ids[8][64];
	sqlite3 *db;
	long deadline;
	int code = 0;

	tmpdir(dir, sizeof(dir));
	sink_start(&s);
	write_conf(dir, &s, conf, sizeof(conf));
	pipe_start(&p, conf, http, sizeof(http));
	pipe_cmd(&p, "publish b-1 open");
	ck_assert_int_eq(wait_count(&s, "received", 1), 0);

	snprintf(path, sizeof(path), "%s/c4d-master.db", dir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL),
			 SQLITE_OK);
	pipe_cmd(&p, "publish b-2 open");
	pipe_cmd(&p, "publish b-1 resolved");
	deadline = th_now_ms() + WAIT_MS;
	while (th_now_ms() < deadline &&
	       (code = th_http_get(http, "GET", "/healthz", body,
				   sizeof(body))) == 200)
		nap();
	ck_assert_int_eq(code, 503);
	ck_assert_ptr_nonnull(strstr(body, "unhealthy: store writes are "
					   "failing"));
	ck_assert_int_eq(sink_count(&s, "received"), 1);
	ck_assert_int_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);

	ck_assert_int_eq(wait_count(&s, "received", 3), 0);
	ck_assert_int_eq(sink_ids(&s, "received", ids, 8), 3);
	ck_assert_str_eq(ids[1], "b-2/1");
	ck_assert_str_eq(ids[2], "b-1/2");
	deadline = th_now_ms() + WAIT_MS;
	while (th_now_ms() < deadline &&
	       (code = th_http_get(http, "GET", "/healthz", body,
				   sizeof(body))) != 200)
		nap();
	ck_assert_int_eq(code, 200);
	ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM event_history"), 3);
	pipe_quit(&p);
	sink_stop(&s);
}
END_TEST

/*
 * kill -9 of the master's event path while it delivers, then a restart:
 * the history is intact, every committed event is delivered, no event gets
 * a new id, duplicates are only the same id again, the order holds, and
 * the events go on under their ids.
 */
START_TEST(test_kill9_mid_delivery)
{
	enum { N = 30 };
	struct sink s = {0};
	struct proc p;
	char dir[64], conf[256], ids[512][64], want[64];
	int n, next = 0;

	tmpdir(dir, sizeof(dir));
	sink_start(&s);
	sink_set(&s, "slow", 1);
	write_conf(dir, &s, conf, sizeof(conf));
	pipe_start(&p, conf, NULL, 0);
	for (int i = 0; i < N; i++)
		pipe_cmd(&p, "publish k-%02d open", i);
	ck_assert_int_eq(wait_db(dir, "SELECT count(*) FROM event_history", N),
			 0);
	ck_assert_int_eq(wait_count(&s, "attempts", 3), 0);
	proc_kill9(&p); /* a request is in flight: the sink is slow */

	ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM event_history"), N);
	ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM outbox"), N);
	sink_set(&s, "slow", 0);
	pipe_start(&p, conf, NULL, 0);
	ck_assert_int_eq(wait_db(dir,
				 "SELECT count(*) FROM outbox WHERE "
				 "delivered_ns IS NULL",
				 0),
			 0);
	/* Continued under the same id: the next revision. */
	pipe_cmd(&p, "publish k-00 resolved");
	ck_assert_int_eq(wait_db(dir,
				 "SELECT revision FROM events WHERE id = "
				 "'k-00'",
				 2),
			 0);
	ck_assert_int_eq(wait_db(dir,
				 "SELECT count(*) FROM outbox WHERE "
				 "delivered_ns IS NULL",
				 0),
			 0);
	pipe_quit(&p);

	n = sink_ids(&s, "attempts", ids, 512);
	/* Every received id, in order; a repeat only of the last one. */
	for (int i = 0; i < n; i++) {
		if (next == N) {
			if (strcmp(ids[i], "k-00/2") == 0)
				continue;
			ck_assert_str_eq(ids[i], "k-29/1");
			continue;
		}
		snprintf(want, sizeof(want), "k-%02d/1", next);
		if (strcmp(ids[i], want) == 0) {
			next++;
			continue;
		}
		ck_assert_msg(next > 0, "first delivery %s", ids[i]);
		snprintf(want, sizeof(want), "k-%02d/1", next - 1);
		ck_assert_msg(strcmp(ids[i], want) == 0,
			      "%s after %s: out of order or a new id", ids[i],
			      want);
	}
	ck_assert_int_eq(next, N);
	ck_assert_str_eq(ids[n - 1], "k-00/2");
	ck_assert_int_eq(db_int(dir, "SELECT count(*) FROM event_history"),
			 N + 1);
	sink_stop(&s);
}
END_TEST

static const char master_conf[] =
	"job: job-42\n"
	"state_dir: @DIR@\n"
	"server:\n  listen: 127.0.0.1:0\n"
	"credentials:\n"
	"  - name: ops\n    token: " OPS_TOKEN "\n    roles: [ctl]\n"
	"http:\n  listen: 127.0.0.1:0\n"
	"log:\n  level: debug\n";

/*
 * The real c4d-master continues the events a previous run left (here the
 * event path's), delivers what that run could not, answers c4ctl events
 * -o json with the documented event objects, and serves /metrics and
 * /healthz.
 */
START_TEST(test_master_events_and_metrics)
{
	struct th_daemon d;
	struct sink s = {0};
	struct proc p;
	char conf[256], out[65536], body[65536];
	char *argv[12];

	ck_assert_int_eq(th_start(&d, "c4d-master", master_conf), 0);
	ck_assert_int_ne(d.http[0], '\0');
	ck_assert_int_eq(
		th_http_get(d.http, "GET", "/healthz", body, sizeof(body)),
		200);
	ck_assert_ptr_nonnull(strstr(body, "\r\n\r\nok\n"));
	ck_assert_int_eq(
		th_http_get(d.http, "GET", "/metrics", body, sizeof(body)),
		200);
	ck_assert_ptr_nonnull(
		strstr(body, "# TYPE c4_srv_hello_ok_total counter\n"));
	ck_assert_ptr_nonnull(strstr(body, "c4_srv_conns_active{daemon=\"c4d-"
					   "master\",job=\"job-42\"} "));
	ck_assert_ptr_nonnull(strstr(body, "c4d_store_healthy{"));
	ck_assert_int_eq(th_stop(&d), 0);

	/*
	 * Events written by an earlier run in the same state_dir while the
	 * receiver was down: the daemon delivers them after its start.
	 */
	sink_start(&s);
	sink_set(&s, "down", 1);
	write_conf(d.dir, &s, conf, sizeof(conf));
	pipe_start(&p, conf, NULL, 0);
	pipe_cmd(&p, "publish a-1 open comm_slow_tx tx of rank 7");
	pipe_cmd(&p, "publish a-2 open node_lost node-07 is silent");
	pipe_cmd(&p, "publish a-2 resolved node_lost back");
	pipe_quit(&p);
	ck_assert_int_eq(sink_count(&s, "received"), 0);
	sink_set(&s, "down", 0);

	/* th_start() makes a new directory: point state_dir at the old one. */
	{
		char text[2048];

		snprintf(text, sizeof(text),
			 "job: job-42\nstate_dir: %s\n"
			 "server:\n  listen: 127.0.0.1:0\n"
			 "credentials:\n  - name: ops\n    token: " OPS_TOKEN
			 "\n    roles: [ctl]\n"
			 "http:\n  listen: 127.0.0.1:0\n"
			 "webhooks:\n  - name: steering\n"
			 "    url: http://127.0.0.1:%d/hooks/c4\n"
			 "    max_backoff: 400ms\n",
			 d.dir, s.port);
		ck_assert_int_eq(th_start(&d, "c4d-master", text), 0);
	}
	ck_assert_int_eq(wait_count(&s, "received", 3), 0);
	{
		char ids[8][64];

		ck_assert_int_eq(sink_ids(&s, "received", ids, 8), 3);
		ck_assert_str_eq(ids[0], "a-1/1");
		ck_assert_str_eq(ids[1], "a-2/1");
		ck_assert_str_eq(ids[2], "a-2/2");
	}
	{
		long deadline = th_now_ms() + WAIT_MS;
		int ok = 0;

		/* The mark follows the answer: poll until it shows. */
		while (!ok && th_now_ms() < deadline) {
			ck_assert_int_eq(th_http_get(d.http, "GET", "/metrics",
						     body, sizeof(body)),
					 200);
			ok = strstr(body, "c4d_webhook_delivered_total{daemon="
					  "\"c4d-master\",job=\"job-42\","
					  "webhook=\"steering\"} 3\n") != NULL;
			if (!ok)
				nap();
		}
		ck_assert_msg(ok, "%s", body);
	}
	ck_assert_ptr_nonnull(strstr(body, "c4d_events_open{daemon=\"c4d-"
					   "master\",job=\"job-42\"} 1\n"));
	sink_stop(&s);
	argv[0] = (char *)th_bin("ctl/c4ctl");
	argv[1] = (char *)"-s";
	argv[2] = d.tcp;
	argv[3] = (char *)"-t";
	argv[4] = (char *)OPS_TOKEN;
	argv[5] = (char *)"-o";
	argv[6] = (char *)"json";
	argv[7] = (char *)"events";
	argv[8] = NULL;
	ck_assert_int_eq(th_run(argv, out, sizeof(out), NULL, 0, 10000), 0);
	/* One object per line, oldest change first. */
	{
		char *l1 = out, *l2 = strchr(out, '\n');

		ck_assert_ptr_nonnull(l2);
		*l2++ = '\0';
		ck_assert_msg(
			strncmp(l1,
				"{\"id\":\"a-1\",\"job\":\"job-42\","
				"\"kind\":\"comm_slow_tx\","
				"\"state\":\"open\",\"revision\":1,",
				strlen("{\"id\":\"a-1\",\"job\":\"job-42\","
				       "\"kind\":\"comm_slow_tx\","
				       "\"state\":\"open\","
				       "\"revision\":1,")) == 0,
			"%s", l1);
		ck_assert_ptr_nonnull(strstr(
			l1, "\"suspects\":[{\"role\":\"rx\","
			    "\"rank\":7,\"host\":\"node-07\"},"
			    "{\"role\":\"link\",\"rank\":7,\"host\":"
			    "\"node-07\",\"nic\":\"mlx5_7\",\"peer_rank\":8,"
			    "\"peer_host\":\"node-08\",\"peer_gpu\":0,"
			    "\"peer_nic\":\"mlx5_8\",\"transport\":\"net\"}]"));
		ck_assert_ptr_nonnull(
			strstr(l1, "\"domain\":\"host\",\"action_type\":"
				   "\"isolate_host\",\"target\":\"node-07\","));
		ck_assert_ptr_nonnull(strstr(l2, "\"id\":\"a-2\""));
		ck_assert_ptr_nonnull(strstr(l2, "\"state\":\"resolved\","
						 "\"revision\":2"));
		ck_assert_ptr_nonnull(strchr(l2, '\n'));
		ck_assert_str_eq(strchr(l2, '\n'), "\n");
	}
	/* --since: an hour back shows both; a time to come shows nothing. */
	argv[8] = (char *)"--since";
	argv[9] = (char *)"1h";
	argv[10] = NULL;
	ck_assert_int_eq(th_run(argv, out, sizeof(out), NULL, 0, 10000), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"id\":\"a-2\""));
	argv[9] = (char *)"2100-01-01T00:00:00Z";
	ck_assert_int_eq(th_run(argv, out, sizeof(out), NULL, 0, 10000), 0);
	ck_assert_str_eq(out, "");
	argv[9] = (char *)"yesterday";
	ck_assert_int_eq(th_run(argv, out, sizeof(out), NULL, 0, 10000), 2);
	/* The table. */
	argv[5] = (char *)"events";
	argv[6] = NULL;
	ck_assert_int_eq(th_run(argv, out, sizeof(out), NULL, 0, 10000), 0);
	ck_assert_ptr_nonnull(strstr(out, "a-1"));
	ck_assert_ptr_nonnull(strstr(out, "  DOMAIN  "));
	ck_assert_msg(strstr(out, "  host      ") != NULL, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "link node-07/mlx5_7 r7->node-08/"
					  "mlx5_8 r8"));
	ck_assert_ptr_nonnull(strstr(out, "isolate_host node-07\n"));
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* A database that is not one is a clear start-up error. */
START_TEST(test_master_corrupt_db)
{
	struct th_daemon d;
	char path[256];
	FILE *fp;
	char dir[64];

	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/c4d-master.db", dir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	for (int i = 0; i < 512; i++)
		fputs("this is not an SQLite database. ", fp);
	fclose(fp);
	{
		char text[1024];

		snprintf(text, sizeof(text),
			 "job: job-42\nstate_dir: %s\n"
			 "server:\n  listen: 127.0.0.1:0\n"
			 "credentials:\n  - name: ops\n    token: " OPS_TOKEN
			 "\n    roles: [ctl]\n",
			 dir);
		ck_assert_int_eq(th_start(&d, "c4d-master", text), -1);
	}
	ck_assert(th_log_has(&d, "c4d-master.db: not a usable database"));
	ck_assert_int_ne(th_stop(&d), 0);
}
END_TEST

/* Webhook and HTTP mistakes are configuration errors with positions. */
static void
check_config(const char *dir, const char *text, int nwant,
	     const char *const *want)
{
	char path[128], out[4096], err[4096];
	char *argv[] = {(char *)th_bin("daemons/c4d-master/c4d-master"),
			(char *)"-n", (char *)"-f", path, NULL};
	FILE *fp;

	snprintf(path, sizeof(path), "%s/bad.yaml", dir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("job: job-42\n"
	      "server:\n  listen: 127.0.0.1:0\n"
	      "credentials:\n  - name: ops\n    token: " OPS_TOKEN
	      "\n    roles: [ctl]\n",
	      fp);
	fputs(text, fp);
	fclose(fp);
	ck_assert_int_eq(
		th_run(argv, out, sizeof(out), err, sizeof(err), 10000), 1);
	for (int i = 0; i < nwant; i++)
		ck_assert_msg(strstr(err, want[i]) != NULL, "no '%s' in: %s",
			      want[i], err);
}

START_TEST(test_config_errors)
{
	static const char *const items[] = {
		"bad.yaml:11:5: webhook b: token and token_file exclude each "
		"other",
		"bad.yaml:15:5: webhook c: 'ftp://x/' is not an http:// or "
		"https:// URL",
		"bad.yaml:19:14: timeout: 1ms is out of range",
	};
	static const char *const whole[] = {
		"bad.yaml:1:1: http.listen must be host:port",
		"bad.yaml:15:5: webhook name 'a' is used twice",
	};
	char dir[64];

	tmpdir(dir, sizeof(dir));
	check_config(dir,
		     "webhooks:\n"
		     "  - name: a\n    url: https://example.com/x\n"
		     "  - name: b\n    url: http://127.0.0.1:1/\n"
		     "    token: abcdefgh\n    token_file: /nonexistent\n"
		     "  - name: c\n    url: ftp://x/\n"
		     "  - name: d\n    url: http://x/\n    timeout: 1ms\n",
		     3, items);
	check_config(dir,
		     "http:\n  listen: unix:/tmp/x\n"
		     "webhooks:\n"
		     "  - name: a\n    url: http://127.0.0.1:1/a\n"
		     "  - name: b\n    url: http://127.0.0.1:1/b\n"
		     "  - name: a\n    url: http://127.0.0.1:1/c\n",
		     2, whole);
}
END_TEST

/*
 * Regression: -nv printed an http section without listen as a bare
 * "http:", which does not load again.
 */
START_TEST(test_regression_canonical_empty_section)
{
	char dir[64], path[128], path2[128], out[8192];
	char *argv[] = {(char *)th_bin("daemons/c4d-master/c4d-master"),
			(char *)"-nv", (char *)"-f", path, NULL};
	char *argv2[] = {(char *)th_bin("daemons/c4d-master/c4d-master"),
			 (char *)"-n", (char *)"-f", path2, NULL};
	FILE *fp;

	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/a.yaml", dir);
	snprintf(path2, sizeof(path2), "%s/b.yaml", dir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("job: job-42\nserver:\n  listen: 127.0.0.1:0\n"
	      "credentials:\n  - name: ops\n    token: " OPS_TOKEN
	      "\n    roles: [ctl]\n",
	      fp);
	fclose(fp);
	ck_assert_int_eq(th_run(argv, out, sizeof(out), NULL, 0, 10000), 0);
	ck_assert_ptr_nonnull(strstr(out, "\nhttp: {}\n"));
	*strstr(out, "configuration OK") = '\0';
	fp = fopen(path2, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(out, fp);
	fclose(fp);
	ck_assert_int_eq(th_run(argv2, out, sizeof(out), NULL, 0, 10000), 0);
}
END_TEST

static Suite *
webhook_suite(void)
{
	Suite *s = suite_create("webhook");
	TCase *tc = tcase_create("delivery");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_one_fault_one_delivery);
	tcase_add_test(tc, test_outage_in_order);
	tcase_add_test(tc, test_kill9_mid_delivery);
	tcase_add_test(tc, test_store_blocked_health);
	tcase_add_test(tc, test_master_events_and_metrics);
	tcase_add_test(tc, test_master_corrupt_db);
	tcase_add_test(tc, test_config_errors);
	tcase_add_test(tc, test_regression_canonical_empty_section);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(webhook_suite());
	int failed;

	/* A server that closes on an oversized request must not kill us. */
	signal(SIGPIPE, SIG_IGN);

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
