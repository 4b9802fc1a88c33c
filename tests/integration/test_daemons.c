/*
 * test_daemons.c - the three daemons as real processes: start, ping with
 * the real c4ctl, malformed input of every kind while a good client keeps
 * being served, credentials and jobs, configuration check and reload, and
 * a clean stop.
 */
#include <check.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "harness.h"
#include "net.h"

#define OPS_TOKEN   "operator-token-0001"
#define AGENT_TOKEN "agent-token-job-42"
#define CCL_TOKEN   "ccl-token-local-01"
#define TIMEOUT_MS  10000

static const char master_conf[] = "job: job-42\n"
				  "state_dir: @DIR@\n"
				  "server:\n"
				  "  listen: 127.0.0.1:0\n"
				  "  hello_timeout: 500ms\n"
				  "  max_frame: 64KiB\n"
				  "credentials:\n"
				  "  - name: ops\n"
				  "    token: " OPS_TOKEN "\n"
				  "    roles: [ctl]\n"
				  "  - name: agents\n"
				  "    token: " AGENT_TOKEN "\n"
				  "    roles: [agent]\n"
				  "  - name: any-agents\n"
				  "    token: agent-token-any-job\n"
				  "    roles: [agent]\n"
				  "    jobs: ['*']\n"
				  "log:\n"
				  "  level: debug\n";

static const char c4p_conf[] = "server:\n"
			       "  listen: 127.0.0.1:0\n"
			       "topology: @SRC@/conf/topology-example.yaml\n"
			       "state_dir: @DIR@\n"
			       "credentials:\n"
			       "  - name: ops\n"
			       "    token: " OPS_TOKEN "\n"
			       "    roles: [ctl]\n";

/* CCL clients of job-42 are served; its master is never up here. */
static const char agent_conf[] = "node_name: node-a\n"
				 "masters:\n"
				 "  - job: job-42\n"
				 "    address: 127.0.0.1:1\n"
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
				 "    roles: [ctl]\n";

/* Each daemon with a configuration that starts it on loopback. */
static const struct {
	const char *name;
	const char *conf;
} daemons[] = {{"c4d-master", master_conf},
	       {"c4p-master", c4p_conf},
	       {"c4a-agent", agent_conf}};

/* c4ctl [args...] against d; returns its exit status. */
static int
ctl(const struct th_daemon *d, const char *token, char *out, size_t outlen,
    const char *a1, const char *a2, const char *a3, const char *a4)
{
	return th_ctl(d->tcp, token, out, outlen, a1, a2, a3, a4, NULL);
}

/* Reads one counter from `c4ctl -o json status` output. */
static long long
counter(const struct th_daemon *d, const char *name)
{
	char out[8192], key[128];
	const char *p;

	ck_assert_int_eq(ctl(d, OPS_TOKEN, out, sizeof(out), "-o", "json",
			     "status", NULL),
			 0);
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(out, key);
	ck_assert_msg(p != NULL, "no counter %s in %s", name, out);
	return atoll(p + strlen(key));
}

static void
good_client(struct cli *c, const struct th_daemon *d, C4__Role role,
	    const char *token, const char *job)
{
	struct cli_hello h = {role, token, job, "test-node"};

	ck_assert_msg(cli_connect(c, d->tcp, &h, TIMEOUT_MS) == 0, "%s",
		      c->err);
}

/* One heartbeat round trip on an open session. */
static void
heartbeat_ok(struct cli *c)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	C4__Envelope *env;

	hb.has_nonce = 1;
	hb.nonce = 4242;
	env = cli_call(c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	ck_assert_msg(env != NULL, "%s", c->err);
	ck_assert(env->heartbeat->echo);
	ck_assert_uint_eq(env->heartbeat->nonce, 4242);
	msg_free(env);
}

/* A raw TCP connection to d. */
static int
raw_connect(struct cli *c, const struct th_daemon *d)
{
	struct net_addr a;
	char err[256];

	memset(c, 0, sizeof(*c));
	frame_buf_init(&c->in);
	c->max_frame = FRAME_MAX_LIMIT;
	c->timeout_ms = TIMEOUT_MS;
	ck_assert_int_eq(net_addr_parse(d->tcp, &a, err, sizeof(err)), 0);
	c->fd = net_connect(&a, TIMEOUT_MS, err, sizeof(err));
	ck_assert_msg(c->fd >= 0, "%s", err);
	return c->fd;
}

/*
 * Expects the daemon's answer on c to be a fatal Error with this code,
 * followed by the connection closing.
 */
static void
expect_fatal(struct cli *c, C4__ErrorCode code)
{
	C4__Envelope *env = cli_recv(c);

	ck_assert_msg(env != NULL, "no error reply: %s", c->err);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_ERROR);
	ck_assert_int_eq(env->error->code, code);
	ck_assert(env->error->fatal);
	msg_free(env);
	ck_assert_ptr_null(cli_recv(c));
	ck_assert_str_eq(c->err, "connection closed by the daemon");
	close(c->fd);
	c->fd = -1;
	frame_buf_free(&c->in);
}

static void
send_hello(struct cli *c, C4__Role role, const char *token, const char *job)
{
	C4__Hello h = C4__HELLO__INIT;

	h.has_role = 1;
	h.role = role;
	h.job_id = (char *)job;
	h.has_credential = 1;
	h.credential.data = (uint8_t *)token;
	h.credential.len = strlen(token);
	ck_assert_int_eq(cli_send(c, C4__MSG_TYPE__MSG_HELLO, &h, NULL), 0);
}

START_TEST(test_each_daemon_ping_status_stop)
{
	for (size_t i = 0; i < 3; i++) {
		struct th_daemon d;
		char out[8192], want[128];

		ck_assert_int_eq(th_start(&d, daemons[i].name, daemons[i].conf),
				 0);
		ck_assert_int_eq(ctl(&d, OPS_TOKEN, out, sizeof(out), "ping",
				     "-c", "3", NULL),
				 0);
		ck_assert_msg(strstr(out, "3 sent, 3 received") != NULL, "%s",
			      out);
		snprintf(want, sizeof(want), "PING %s ", daemons[i].name);
		ck_assert_msg(strstr(out, want) != NULL, "%s", out);
		ck_assert_int_eq(ctl(&d, OPS_TOKEN, out, sizeof(out), "-o",
				     "json", "status", NULL),
				 0);
		snprintf(want, sizeof(want), "{\"daemon\":\"%s\"",
			 daemons[i].name);
		ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
		ck_assert_int_eq(th_stop(&d), 0);
		ck_assert(th_log_has(&d, "stopped"));
	}
}
END_TEST

START_TEST(test_malformed_input_keeps_serving)
{
	struct th_daemon d;
	struct cli good, bad;
	uint8_t hdr[4];

	ck_assert_int_eq(th_start(&d, "c4d-master", master_conf), 0);
	/* A well-behaved agent connected before the abuse starts. */
	good_client(&good, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, "job-42");
	heartbeat_ok(&good);

	/* 1. garbage bytes that happen to frame a small body */
	raw_connect(&bad, &d);
	ck_assert_int_eq(cli_send_raw(&bad, "\0\0\0\x08garbage!", 12), 0);
	expect_fatal(&bad, C4__ERROR_CODE__ERR_MALFORMED);
	heartbeat_ok(&good);

	/* 2. a header announcing more than max_frame (64 KiB) */
	raw_connect(&bad, &d);
	frame_put_header(hdr, 64 * 1024 + 1);
	ck_assert_int_eq(cli_send_raw(&bad, hdr, 4), 0);
	expect_fatal(&bad, C4__ERROR_CODE__ERR_TOO_LARGE);

	/* 3. an HTTP request: its first 4 bytes are a huge length */
	raw_connect(&bad, &d);
	ck_assert_int_eq(cli_send_raw(&bad, "GET / HTTP/1.1\r\n\r\n", 18), 0);
	expect_fatal(&bad, C4__ERROR_CODE__ERR_TOO_LARGE);

	/* 4. a truncated frame, then the peer goes away */
	raw_connect(&bad, &d);
	frame_put_header(hdr, 100);
	ck_assert_int_eq(cli_send_raw(&bad, hdr, 4), 0);
	ck_assert_int_eq(cli_send_raw(&bad, "abc", 3), 0);
	close(bad.fd);
	frame_buf_free(&bad.in);

	/* 5. a well-formed message of another protocol version */
	{
		C4__Heartbeat hb = C4__HEARTBEAT__INIT;
		C4__Envelope env;
		uint8_t buf[64];
		size_t n;

		raw_connect(&bad, &d);
		msg_init(&env, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
		env.version = 9;
		n = msg_pack_frame(&env, buf);
		ck_assert_int_eq(cli_send_raw(&bad, buf, n), 0);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_BAD_VERSION);
	}

	/* 6. a message before hello */
	{
		C4__Heartbeat hb = C4__HEARTBEAT__INIT;

		raw_connect(&bad, &d);
		ck_assert_int_eq(
			cli_send(&bad, C4__MSG_TYPE__MSG_HEARTBEAT, &hb, NULL),
			0);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_STATE);
	}

	/* 7. a wrong credential */
	raw_connect(&bad, &d);
	send_hello(&bad, C4__ROLE__ROLE_AGENT, "not-a-known-token", "job-42");
	expect_fatal(&bad, C4__ERROR_CODE__ERR_AUTH);

	/* 8. a good credential claiming a role it does not have */
	raw_connect(&bad, &d);
	send_hello(&bad, C4__ROLE__ROLE_CTL, AGENT_TOKEN, NULL);
	expect_fatal(&bad, C4__ERROR_CODE__ERR_AUTH);

	/* 9. an agent of another job (its credential allows any job) */
	raw_connect(&bad, &d);
	send_hello(&bad, C4__ROLE__ROLE_AGENT, "agent-token-any-job", "job-7");
	expect_fatal(&bad, C4__ERROR_CODE__ERR_AUTH);

	/* 10. an operator sending telemetry (out of role) */
	{
		C4__TelemetryBatch t = C4__TELEMETRY_BATCH__INIT;

		good_client(&bad, &d, C4__ROLE__ROLE_CTL, OPS_TOKEN, NULL);
		t.has_interval_id = 1;
		ck_assert_int_eq(
			cli_send(&bad, C4__MSG_TYPE__MSG_TELEMETRY, &t, NULL),
			0);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_ROLE);
		msg_free(bad.hello_env);
	}

	/* 11. a second hello on an open session */
	good_client(&bad, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, "job-42");
	send_hello(&bad, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, "job-42");
	expect_fatal(&bad, C4__ERROR_CODE__ERR_STATE);
	msg_free(bad.hello_env);

	/* 12. a server-only message from a client (an agent's own reply) */
	{
		C4__AdminReply r = C4__ADMIN_REPLY__INIT;

		good_client(&bad, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN,
			    "job-42");
		ck_assert_int_eq(
			cli_send(&bad, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, NULL),
			0);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_ROLE);
		msg_free(bad.hello_env);
	}

	/* 13. connect and say nothing: closed after hello_timeout */
	raw_connect(&bad, &d);
	expect_fatal(&bad, C4__ERROR_CODE__ERR_TIMEOUT);

	/* 14. a valid message the daemon does not serve: non-fatal */
	{
		C4__PathRelease r = C4__PATH_RELEASE__INIT;
		C4__Envelope *env;

		r.job_id = (char *)"job-42";
		r.has_all_of_job = 1;
		r.all_of_job = 1;
		env = cli_call(&good, C4__MSG_TYPE__MSG_PATH_RELEASE, &r);
		ck_assert_ptr_null(env);
		ck_assert_str_eq(good.err,
				 "path_release is not served by c4d-master");
	}

	/* The agent's session survived all of it, and new clients work. */
	heartbeat_ok(&good);
	{
		C4__TelemetryBatch t = C4__TELEMETRY_BATCH__INIT;

		t.has_interval_id = 1;
		ck_assert_int_eq(
			cli_send(&good, C4__MSG_TYPE__MSG_TELEMETRY, &t, NULL),
			0);
		heartbeat_ok(&good);
	}
	ck_assert(th_alive(&d));
	ck_assert_int_eq(counter(&d, "malformed"), 1);
	ck_assert_int_eq(counter(&d, "too_large"), 2);
	ck_assert_int_eq(counter(&d, "bad_version"), 1);
	ck_assert_int_eq(counter(&d, "bad_state"), 2);
	ck_assert_int_eq(counter(&d, "auth_failed"), 3);
	ck_assert_int_eq(counter(&d, "out_of_role"), 2);
	ck_assert_int_eq(counter(&d, "hello_timeout"), 1);
	ck_assert_int_eq(counter(&d, "invalid"), 1);
	ck_assert_int_eq(counter(&d, "telemetry_batches"), 1);
	/* Telemetry naming another job is refused, the session stays. */
	{
		C4__TelemetryBatch t = C4__TELEMETRY_BATCH__INIT;

		t.has_interval_id = 1;
		t.job_id = (char *)"job-7";
		ck_assert_ptr_null(
			cli_call(&good, C4__MSG_TYPE__MSG_TELEMETRY, &t));
		ck_assert_str_eq(good.err, "telemetry for job 'job-7' sent to "
					   "the master of job 'job-42'");
		heartbeat_ok(&good);
		ck_assert_int_eq(counter(&d, "telemetry_batches"), 1);
	}
	ck_assert_int_eq(counter(&d, "agents_connected"), 1);
	ck_assert(th_log_has(&d, "unknown credential"));
	ck_assert(th_log_has(&d, "agent of job 'job-7' may not talk to the "
				 "master of job 'job-42'"));
	cli_close(&good);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* The same session layer guards every daemon: a short round for each. */
START_TEST(test_every_daemon_refuses_bad_input)
{
	for (size_t i = 0; i < 3; i++) {
		struct th_daemon d;
		struct cli good, bad;
		uint8_t hdr[4];

		ck_assert_int_eq(th_start(&d, daemons[i].name, daemons[i].conf),
				 0);
		good_client(&good, &d, C4__ROLE__ROLE_CTL, OPS_TOKEN, NULL);
		raw_connect(&bad, &d);
		ck_assert_int_eq(cli_send_raw(&bad, "\0\0\0\x05junk!", 9), 0);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_MALFORMED);
		raw_connect(&bad, &d);
		frame_put_header(hdr, 0x7fffffff);
		ck_assert_int_eq(cli_send_raw(&bad, hdr, 4), 0);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_TOO_LARGE);
		raw_connect(&bad, &d);
		send_hello(&bad, C4__ROLE__ROLE_CTL, "wrong-operator-token",
			   NULL);
		expect_fatal(&bad, C4__ERROR_CODE__ERR_AUTH);
		heartbeat_ok(&good);
		ck_assert(th_alive(&d));
		ck_assert_int_eq(counter(&d, "malformed"), 1);
		ck_assert_int_eq(counter(&d, "too_large"), 1);
		ck_assert_int_eq(counter(&d, "auth_failed"), 1);
		cli_close(&good);
		ck_assert_int_eq(th_stop(&d), 0);
	}
}
END_TEST

START_TEST(test_agent_unix_socket)
{
	struct th_daemon d;
	struct cli c;
	struct cli_hello h = {C4__ROLE__ROLE_CCL_CLIENT, CCL_TOKEN, "job-42",
			      "node-a"};
	char addr[PATH_MAX + 8];
	struct stat st;

	ck_assert_int_eq(th_start(&d, "c4a-agent", agent_conf), 0);
	ck_assert(d.unix_path[0] != '\0');
	ck_assert_int_eq(stat(d.unix_path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	snprintf(addr, sizeof(addr), "unix:%s", d.unix_path);
	ck_assert_msg(cli_connect(&c, addr, &h, TIMEOUT_MS) == 0, "%s", c.err);
	ck_assert_str_eq(c.hello->daemon, "c4a-agent");
	ck_assert_int_eq(c.hello->role, C4__ROLE__ROLE_AGENT);
	heartbeat_ok(&c);
	cli_close(&c);
	ck_assert_int_eq(th_stop(&d), 0);
	/* The socket file goes with the daemon. */
	ck_assert_int_ne(stat(d.unix_path, &st), 0);
}
END_TEST

/*
 * Regression: under DynamicUser the socket file kept the daemon's own
 * group, so CCL users could not connect; socket.group gives it theirs.
 */
START_TEST(test_agent_socket_group)
{
	struct group *g = getgrgid(getegid());
	struct th_daemon d;
	char conf[2048];
	struct stat st;

	ck_assert_ptr_nonnull(g);
	snprintf(conf, sizeof(conf),
		 "socket:\n  path: @DIR@/agent.sock\n  mode: 0660\n"
		 "  group: %s\n"
		 "credentials:\n  - name: ccl\n    token: " CCL_TOKEN "\n"
		 "    roles: [ccl-client]\n",
		 g->gr_name);
	ck_assert_int_eq(th_start(&d, "c4a-agent", conf), 0);
	ck_assert_int_eq(stat(d.unix_path, &st), 0);
	ck_assert_int_eq(st.st_gid, g->gr_gid);
	ck_assert_int_eq(st.st_mode & 0777, 0660);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

START_TEST(test_many_sessions)
{
	enum { N = 64 };
	static struct cli c[N];
	struct th_daemon d;

	ck_assert_int_eq(th_start(&d, "c4d-master", master_conf), 0);
	for (int i = 0; i < N; i++)
		good_client(&c[i], &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN,
			    "job-42");
	for (int i = 0; i < N; i++)
		heartbeat_ok(&c[i]);
	ck_assert_int_eq(counter(&d, "agents_connected"), N);
	for (int i = 0; i < N; i++)
		cli_close(&c[i]);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

START_TEST(test_reload)
{
	struct th_daemon d;
	char out[4096];
	FILE *fp;

	ck_assert_int_eq(th_start(&d, "c4p-master", c4p_conf), 0);
	/* A broken file: the running configuration stays. */
	fp = fopen(d.conf, "a");
	fputs("bogus: 1\n", fp);
	fclose(fp);
	kill(d.pid, SIGHUP);
	ck_assert_int_eq(th_wait_ready(&d), 0);
	ck_assert(th_log_has(&d, "unknown key 'bogus'"));
	ck_assert(th_log_has(&d, "keeping the running configuration"));
	ck_assert_int_eq(
		ctl(&d, OPS_TOKEN, out, sizeof(out), "ping", NULL, NULL, NULL),
		0);
	/* A new token replaces the old one at once. */
	fp = fopen(d.conf, "w");
	fprintf(fp,
		"server:\n  listen: 127.0.0.1:0\ncredentials:\n"
		"  - name: ops2\n    token: rotated-operator-token\n"
		"    roles: [ctl]\n"
		"topology: %s/conf/topology-example.yaml\n"
		"state_dir: %s\n",
		getenv("C4_SOURCE_ROOT") ? getenv("C4_SOURCE_ROOT") : ".",
		d.dir);
	fclose(fp);
	kill(d.pid, SIGHUP);
	ck_assert_int_eq(th_wait_ready(&d), 0);
	ck_assert(th_log_has(&d, "configuration reloaded"));
	ck_assert_int_eq(ctl(&d, "rotated-operator-token", out, sizeof(out),
			     "ping", NULL, NULL, NULL),
			 0);
	ck_assert_int_eq(
		ctl(&d, OPS_TOKEN, out, sizeof(out), "ping", NULL, NULL, NULL),
		1);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/*
 * Copy the shipped configuration name (conf/NAME.yaml) to dir with its
 * /etc/c4/ paths pointing into dir, the token files it names created
 * there (0600), the socket's group this process's (the packages create
 * group c4) and a relative topology made absolute; path gets the copy.
 */
static void
shipped_conf(const char *name, const char *dir, char *path, size_t len)
{
	static const char *const tokens[] = {"agent", "ccl", "ctl"};
	const char *src = getenv("C4_SOURCE_ROOT");
	char in[PATH_MAX], line[1024], tok[PATH_MAX];
	const struct group *gr = getgrgid(getgid()); /* packages make 'c4' */
	FILE *fi, *fo;

	snprintf(in, sizeof(in), "%s/conf/%s.yaml", src ? src : ".", name);
	snprintf(path, len, "%s/%s.yaml", dir, name);
	for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		snprintf(tok, sizeof(tok), "%s/%s.token", dir, tokens[i]);
		fo = fopen(tok, "w");
		ck_assert_ptr_nonnull(fo);
		fprintf(fo, "shipped-config-%s-token-0123456789\n", tokens[i]);
		fclose(fo);
		ck_assert_int_eq(chmod(tok, 0600), 0);
	}
	fi = fopen(in, "r");
	fo = fopen(path, "w");
	ck_assert_ptr_nonnull(fi);
	ck_assert_ptr_nonnull(fo);
	while (fgets(line, sizeof(line), fi) != NULL) {
		char *at = strstr(line, "/etc/c4/");
		const char *hash = strchr(line, '#');

		if (at != NULL && (hash == NULL || hash > at))
			fprintf(fo, "%.*s%s/%s", (int)(at - line), line, dir,
				at + strlen("/etc/c4/"));
		else if (strncmp(line, "  group: ", 9) == 0 && gr != NULL)
			fprintf(fo, "  group: %s\n", gr->gr_name);
		else if (strncmp(line, "topology: ", 10) == 0)
			fprintf(fo, "topology: %s/conf/%s", src ? src : ".",
				line + 10);
		else
			fputs(line, fo);
	}
	fclose(fi);
	fclose(fo);
}

/*
 * -n on the shipped examples (with the token files they name), and on a
 * broken file with every error.
 */
START_TEST(test_check_config)
{
	static const char *const names[] = {"c4d-master", "c4p-master",
					    "c4a-agent"};
	char out[8192], err[8192], bin[256], conf[PATH_MAX], want[8192];
	char dir[] = "/tmp/c4-shipped-XXXXXX";
	FILE *fp;
	size_t n;

	ck_assert_ptr_nonnull(th_mkdtemp(dir));

	for (int i = 0; i < 3; i++) {
		char *argv[] = {bin, (char *)"-n", (char *)"-f", conf, NULL};

		snprintf(bin, sizeof(bin), "%s",
			 th_bin(names[i][2] == 'a'
					? "daemons/c4a-agent/c4a-agent"
				: names[i][2] == 'd'
					? "daemons/c4d-master/c4d-master"
					: "daemons/c4p-master/c4p-master"));
		shipped_conf(names[i], dir, conf, sizeof(conf));
		ck_assert_msg(th_run(argv, out, sizeof(out), err, sizeof(err),
				     TIMEOUT_MS) == 0,
			      "%s: %s", names[i], err);
		ck_assert_str_eq(out, "configuration OK\n");
	}
	{
		char *argv[] = {bin, (char *)"-n", (char *)"-f", conf, NULL};

		snprintf(bin, sizeof(bin), "%s",
			 th_bin("daemons/c4d-master/c4d-master"));
		snprintf(conf, sizeof(conf), "%s",
			 th_data("config/bad-c4d-master.yaml"));
		ck_assert_int_eq(th_run(argv, out, sizeof(out), err,
					sizeof(err), TIMEOUT_MS),
				 1);
		fp = fopen(th_data("config/bad-c4d-master.err"), "r");
		ck_assert_ptr_nonnull(fp);
		n = fread(want, 1, sizeof(want) - 1, fp);
		want[n] = '\0';
		fclose(fp);
		/* The expected file names the config by a placeholder. */
		{
			char expect[8192] = "", *p = want, *at;

			while ((at = strstr(p, "@FILE@")) != NULL) {
				strncat(expect, p, (size_t)(at - p));
				strcat(expect, conf);
				p = at + 6;
			}
			strcat(expect, p);
			ck_assert_str_eq(err, expect);
		}
	}
}
END_TEST

static Suite *
daemons_suite(void)
{
	Suite *s = suite_create("daemons");
	TCase *tc = tcase_create("processes");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_each_daemon_ping_status_stop);
	tcase_add_test(tc, test_malformed_input_keeps_serving);
	tcase_add_test(tc, test_every_daemon_refuses_bad_input);
	tcase_add_test(tc, test_agent_unix_socket);
	tcase_add_test(tc, test_agent_socket_group);
	tcase_add_test(tc, test_many_sessions);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_check_config);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(daemons_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
