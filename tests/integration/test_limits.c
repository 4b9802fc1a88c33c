/*
 * test_limits.c - the server core's layered limits against a real
 * c4d-master over loopback TCP: valid logins get in during a flood of
 * connections that never log in; peers that never read their replies keep
 * the daemon's memory under max_output_total; failed logins from one
 * address are delayed and logged once per log_interval; a frame begun and
 * never finished ends its session at frame_timeout; a reload that removes
 * a credential closes its sessions; a sketch bucket index out of range is
 * refused; communicators beyond limits.max_comms* are refused while known
 * ones keep working.
 *
 * Every wait is on a condition (a counter, a reply, a closed socket) with
 * a generous bound; no assertion depends on the machine's speed except in
 * the safe direction (a loaded machine answers fewer failed logins within
 * a second, not more).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cli.h"
#include "harness.h"
#include "net.h"

#define OPS_TOKEN   "operator-token-0001"
#define OPS2_TOKEN  "operator-token-0002"
#define AGENT_TOKEN "agent-token-job-42"
#define TIMEOUT_MS  30000
#define WAIT_MS	    90000 /* bound of any wait on a condition */

/* Common part; each test appends its server: and limits: keys. */
#define CONF_HEAD                                                              \
	"job: job-42\n"                                                        \
	"state_dir: @DIR@\n"                                                   \
	"log:\n"                                                               \
	"  level: info\n"                                                      \
	"credentials:\n"                                                       \
	"  - name: ops\n"                                                      \
	"    token: " OPS_TOKEN "\n"                                           \
	"    roles: [ctl]\n"                                                   \
	"  - name: agents\n"                                                   \
	"    token: " AGENT_TOKEN "\n"                                         \
	"    roles: [agent]\n"

/* A counter of d (the test fails when it has none). */
static long long
counter(const struct th_daemon *d, const char *name)
{
	long long v = th_counter(d, OPS_TOKEN, name);

	ck_assert_msg(v >= 0, "no counter %s", name);
	return v;
}

/* Waits until counter name reaches at least want; its value. */
static long long
wait_counter(const struct th_daemon *d, const char *name, long long want)
{
	long long v = th_wait_counter(d, OPS_TOKEN, name, want, WAIT_MS);

	ck_assert_msg(v >= want, "%s stayed at %lld (want %lld)", name, v,
		      want);
	return v;
}

/* VmRSS of pid in KiB. */
static long
rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	ck_assert_int_ge(kib, 0);
	return kib;
}

static void
sockaddr_of(const struct th_daemon *d, struct sockaddr_in *sa)
{
	struct net_addr a;
	char err[256];

	ck_assert_int_eq(net_addr_parse(d->tcp, &a, err, sizeof(err)), 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(a.port);
	ck_assert_int_eq(inet_pton(AF_INET, a.host, &sa->sin_addr), 1);
}

/*
 * A TCP connection to d from source address src (127.x.y.z, NULL: any),
 * with a receive buffer of rcvbuf bytes (0: the default); blocking
 * connect, then non-blocking if nb.  The descriptor, or -1.
 */
static int
tcp_to(const struct th_daemon *d, const char *src, int rcvbuf, int nb)
{
	struct sockaddr_in sa, from;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (src != NULL) {
		memset(&from, 0, sizeof(from));
		from.sin_family = AF_INET;
		inet_pton(AF_INET, src, &from.sin_addr);
		if (bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0) {
			close(fd);
			return -1;
		}
	}
	if (nb)
		fcntl(fd, F_SETFL, O_NONBLOCK);
	sockaddr_of(d, &sa);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* c wraps fd (not owned by cli_close: the caller closes it). */
static void
cli_wrap(struct cli *c, int fd)
{
	memset(c, 0, sizeof(*c));
	frame_buf_init(&c->in);
	c->max_frame = FRAME_MAX_LIMIT;
	c->timeout_ms = TIMEOUT_MS;
	c->fd = fd;
}

static void
send_hello(struct cli *c, C4__Role role, const char *token)
{
	C4__Hello h = C4__HELLO__INIT;

	h.has_role = 1;
	h.role = role;
	h.job_id = (char *)"job-42";
	h.node_name = (char *)"node-limits";
	h.has_credential = 1;
	h.credential.data = (uint8_t *)token;
	h.credential.len = strlen(token);
	ck_assert_int_eq(cli_send(c, C4__MSG_TYPE__MSG_HELLO, &h, NULL), 0);
}

/* A session on a blocking socket with a small receive buffer. */
static void
session(struct cli *c, const struct th_daemon *d, C4__Role role,
	const char *token, int rcvbuf)
{
	C4__Envelope *env;
	int fd = tcp_to(d, NULL, rcvbuf, 0);

	ck_assert_int_ge(fd, 0);
	cli_wrap(c, fd);
	send_hello(c, role, token);
	env = cli_recv(c);
	ck_assert_msg(env != NULL, "%s", c->err);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_HELLO_REPLY);
	msg_free(env);
}

static void
session_end(struct cli *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	frame_buf_free(&c->in);
	if (c->hello_env != NULL)
		msg_free(c->hello_env);
	c->hello_env = NULL;
}

static void
heartbeat_ok(struct cli *c)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	C4__Envelope *env;

	hb.has_nonce = 1;
	hb.nonce = 77;
	env = cli_call(c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	ck_assert_msg(env != NULL, "%s", c->err);
	ck_assert_uint_eq(env->heartbeat->nonce, 77);
	msg_free(env);
}

/* The session ends: the daemon closes it (after any error it sends). */
static void
expect_closed(struct cli *c)
{
	long deadline = th_now_ms() + WAIT_MS;
	C4__Envelope *env;

	while ((env = cli_recv(c)) != NULL && th_now_ms() < deadline)
		msg_free(env);
	ck_assert_ptr_null(env);
	ck_assert_str_eq(c->err, "connection closed by the daemon");
}

/* ---- a. a flood of connections that never log in ------------------------ */

#define FLOOD_MAX     4096
#define FLOOD_SOURCES 64

/*
 * The source address of flood connection i: a quarter from one address
 * (past max_unauthenticated_per_source), the rest spread over
 * FLOOD_SOURCES addresses (past max_unauthenticated).
 */
static void
flood_src(int i, char *src, size_t len)
{
	if (i % 4 == 0)
		snprintf(src, len, "127.0.2.1");
	else
		snprintf(src, len, "127.0.1.%d", 1 + i % FLOOD_SOURCES);
}

/*
 * Holds n connections that never send a byte, from flood_src()
 * addresses, and opens a new one for each the daemon closes, until
 * killed or a minute passes (at most 20 n reopenings).  Never returns.
 */
static void __attribute__((noreturn)) flood(const struct th_daemon *d, int n)
{
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	long end = th_now_ms() + 60000, reopened = 0;
	char src[32];

	if (p == NULL)
		_exit(1);
	for (int i = 0; i < n; i++) {
		flood_src(i, src, sizeof(src));
		p[i].fd = tcp_to(d, src, 0, 1);
		p[i].events = POLLIN;
	}
	while (th_now_ms() < end && reopened < 20L * n) {
		if (poll(p, (nfds_t)n, 200) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			char b[64];

			if (p[i].fd >= 0 && p[i].revents == 0)
				continue;
			if (p[i].fd >= 0 && (p[i].revents & POLLIN) &&
			    read(p[i].fd, b, sizeof(b)) > 0)
				continue;
			if (p[i].fd >= 0)
				close(p[i].fd);
			flood_src(i, src, sizeof(src));
			p[i].fd = tcp_to(d, src, 0, 1);
			reopened++;
		}
	}
	_exit(0);
}

/* As many descriptors as the hard limit allows, up to want; how many. */
static int
raise_nofile(int want)
{
	struct rlimit r;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &r), 0);
	if (r.rlim_cur < (rlim_t)want) {
		r.rlim_cur =
			r.rlim_max < (rlim_t)want ? r.rlim_max : (rlim_t)want;
		setrlimit(RLIMIT_NOFILE, &r);
		getrlimit(RLIMIT_NOFILE, &r);
	}
	return (int)r.rlim_cur;
}

START_TEST(test_flood_keeps_logins)
{
	static const char conf[] =
		CONF_HEAD "server:\n"
			  "  listen: 127.0.0.1:0\n"
			  "  hello_timeout: 5s\n"
			  "  max_unauthenticated: 256\n"
			  "  max_unauthenticated_per_source: 16\n";
	struct th_daemon d;
	int lim = raise_nofile(FLOOD_MAX + 256), n, ok = 0, status;
	long worst = 0;
	pid_t kid;

	n = lim - 256 < FLOOD_MAX ? lim - 256 : FLOOD_MAX;
	ck_assert_int_gt(n, 256); /* enough to pass max_unauthenticated */
	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0)
		flood(&d, n);
	/* The flood is on once the daemon has refused and evicted some. */
	wait_counter(&d, "unauth_refused", 1);
	wait_counter(&d, "unauth_evicted", 1);
	for (int i = 0; i < 10; i++) {
		char out[4096];
		long t0 = th_now_ms();

		if (th_ctl(d.tcp, OPS_TOKEN, out, sizeof(out), "ping", "-c",
			   "1", NULL) == 0 &&
		    strstr(out, "1 sent, 1 received") != NULL)
			ok++;
		if (th_now_ms() - t0 > worst)
			worst = th_now_ms() - t0;
	}
	fprintf(stderr, "flood of %d: %d of 10 logins, slowest %ld ms\n", n, ok,
		worst);
	ck_assert_int_eq(ok, 10);
	kill(kid, SIGKILL);
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(th_alive(&d));
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* ---- b. peers that never read ------------------------------------------- */

/* One peer that sends frames and never reads. */
struct writer {
	int fd;
	uint8_t *buf; /* the frame being sent */
	size_t len, off;
	uint64_t seq;
	C4__Role role;
};

/* Sends what the socket takes of w's frames; a new frame when one ends. */
static void
writer_push(struct writer *w)
{
	for (int k = 0; k < 64 && w->fd >= 0; k++) {
		ssize_t r;

		if (w->buf == NULL) {
			C4__Heartbeat hb = C4__HEARTBEAT__INIT;
			C4__AdminRequest q = C4__ADMIN_REQUEST__INIT;
			C4__Envelope env;

			if (w->role == C4__ROLE__ROLE_CTL) {
				q.has_op = 1;
				q.op = C4__ADMIN_OP__ADMIN_STATUS;
				msg_init_seq(&env,
					     C4__MSG_TYPE__MSG_ADMIN_REQUEST,
					     &q, ++w->seq);
			} else {
				hb.has_nonce = 1;
				hb.nonce = w->seq;
				msg_init_seq(&env, C4__MSG_TYPE__MSG_HEARTBEAT,
					     &hb, ++w->seq);
			}
			w->buf = msg_frame_new(&env, &w->len);
			ck_assert_ptr_nonnull(w->buf);
			w->off = 0;
		}
		r = send(w->fd, w->buf + w->off, w->len - w->off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) { /* closed by the daemon */
			close(w->fd);
			w->fd = -1;
			return;
		}
		w->off += (size_t)r;
		if (w->off == w->len) {
			free(w->buf);
			w->buf = NULL;
		}
	}
}

#ifdef __SANITIZE_ADDRESS__
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

START_TEST(test_nonreading_peers_bounded)
{
	static const char conf[] = CONF_HEAD "server:\n"
					     "  listen: 127.0.0.1:0\n"
					     "  max_frame: 1MiB\n"
					     "  output_low: 1MiB\n"
					     "  max_output: 4MiB\n"
					     "  max_output_total: 16MiB\n"
					     "  heartbeat: 1s\n"
					     "  idle_timeout: 4s\n";
	enum { AGENTS = 8, CTLS = 4, N = AGENTS + CTLS };
	struct writer w[N];
	struct th_daemon d;
	long idle, peak = 0, end;
	int open_n;

#ifdef UNDER_ASAN
	/* Freed memory held in quarantine is not the daemon's queues. */
	{
		const char *o = getenv("ASAN_OPTIONS");
		char opts[1024];

		snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=4",
			 o ? o : "", o && *o ? ":" : "");
		setenv("ASAN_OPTIONS", opts, 1);
	}
#endif
	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	counter(&d, "output_paused");
	idle = rss_kib(d.pid);
	for (int i = 0; i < N; i++) {
		struct cli c;

		w[i].role =
			i < AGENTS ? C4__ROLE__ROLE_AGENT : C4__ROLE__ROLE_CTL;
		session(&c, &d, w[i].role, i < AGENTS ? AGENT_TOKEN : OPS_TOKEN,
			4096);
		w[i].fd = c.fd;
		w[i].buf = NULL;
		w[i].seq = c.seq;
		frame_buf_free(&c.in);
	}
	/* Until the stalled sessions are closed, or at most a minute. */
	end = th_now_ms() + 60000;
	do {
		open_n = 0;
		for (int i = 0; i < N; i++) {
			writer_push(&w[i]);
			open_n += w[i].fd >= 0;
		}
		if (rss_kib(d.pid) > peak)
			peak = rss_kib(d.pid);
		usleep(2000);
	} while (open_n > 0 && th_now_ms() < end);
	fprintf(stderr, "idle %ld KiB, peak %ld KiB, %d sessions left\n", idle,
		peak, open_n);
	/* The queues are capped at 16 MiB; the rest is decoding and slack. */
	ck_assert_int_lt(peak - idle, 3 * 16 * 1024 + 32 * 1024);
	ck_assert_int_ge(counter(&d, "output_paused"), 1);
	ck_assert_int_ge(counter(&d, "output_stalled") +
				 counter(&d, "outbuf_overflow") +
				 counter(&d, "output_total_overflow"),
			 1);
	for (int i = 0; i < N; i++)
		free(w[i].buf);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* ---- c. failed logins from one address ---------------------------------- */

#define FAIL_FREE  3
#define FAIL_TRIES 24

/*
 * Sends FAIL_TRIES wrong-token hellos at once from 127.0.0.1 and waits
 * for every answer; *first_s gets how many were checked (answered with
 * "unknown credential", not refused unchecked) within the first second.
 */
static void
bad_logins(const struct th_daemon *d, int *first_s, int *checked)
{
	struct cli c[FAIL_TRIES];
	long t0, deadline;

	*first_s = *checked = 0;
	for (int i = 0; i < FAIL_TRIES; i++) {
		int fd = tcp_to(d, NULL, 0, 0);

		ck_assert_int_ge(fd, 0);
		cli_wrap(&c[i], fd);
	}
	t0 = th_now_ms();
	for (int i = 0; i < FAIL_TRIES; i++)
		send_hello(&c[i], C4__ROLE__ROLE_CTL, "wrong-token-guess");
	deadline = t0 + WAIT_MS;
	for (int i = 0; i < FAIL_TRIES; i++) {
		C4__Envelope *env;

		c[i].timeout_ms = (int)(deadline - th_now_ms());
		env = cli_recv(&c[i]);
		ck_assert_msg(env != NULL, "hello %d: %s", i, c[i].err);
		ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_ERROR);
		ck_assert_int_eq(env->error->code, C4__ERROR_CODE__ERR_AUTH);
		if (strstr(env->error->text, "unchecked") == NULL) {
			(*checked)++;
			*first_s += th_now_ms() - t0 <= 1000;
		}
		msg_free(env);
		session_end(&c[i]);
	}
}

/* Lines of d's log that contain both a and b. */
static int
log_lines(const struct th_daemon *d, const char *a, const char *b)
{
	char line[2048];
	int n = 0;
	FILE *f = fopen(d->log, "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, a) != NULL && strstr(line, b) != NULL;
	fclose(f);
	return n;
}

START_TEST(test_failed_logins_delayed)
{
	static const char conf[] =
		CONF_HEAD "server:\n"
			  "  listen: 127.0.0.1:0\n"
			  "  max_unauthenticated_per_source: 64\n"
			  "  auth_fail_free: 3\n"
			  "  auth_fail_delay: 200ms\n"
			  "  auth_fail_delay_max: 1s\n"
			  "  log_interval: 1h\n";
	struct th_daemon d;
	int first_s, checked, lines;

	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	bad_logins(&d, &first_s, &checked);
	fprintf(stderr, "%d checked, %d in the first second\n", checked,
		first_s);
	/*
	 * Three free, then turns at 0, 200, 600 and 1000 ms at the earliest
	 * (later ones are refused unchecked):
	 * a loaded machine only answers fewer within the second.
	 */
	ck_assert_int_le(first_s, FAIL_FREE + 4);
	ck_assert_int_ge(checked, FAIL_FREE + 1);
	ck_assert_int_lt(checked, FAIL_TRIES);
	ck_assert_int_ge(counter(&d, "auth_delayed"), 1);
	ck_assert_int_ge(counter(&d, "auth_throttled"), 1);
	ck_assert_int_ge(counter(&d, "log_suppressed"), 1);
	/* One line for the address in the interval (1 h), then none. */
	lines = log_lines(&d, "127.0.0.1:", "WARN");
	ck_assert_int_le(lines, 1);
	/* A valid login from the same address is still checked in turn. */
	ck_assert_int_eq(
		th_ctl(d.tcp, OPS_TOKEN, NULL, 0, "ping", "-c", "1", NULL), 0);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

START_TEST(test_failed_logins_log_interval)
{
	static const char conf[] =
		CONF_HEAD "server:\n"
			  "  listen: 127.0.0.1:0\n"
			  "  max_unauthenticated_per_source: 64\n"
			  "  auth_fail_free: 3\n"
			  "  auth_fail_delay: 10ms\n"
			  "  auth_fail_delay_max: 50ms\n"
			  "  log_interval: 1s\n";
	struct th_daemon d;
	int first_s, checked;
	long t0 = th_now_ms(), rounds;

	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	bad_logins(&d, &first_s, &checked);
	/* Past the interval: the next line names what was left out. */
	usleep(1200 * 1000);
	bad_logins(&d, &first_s, &checked);
	rounds = (th_now_ms() - t0) / 1000 + 1;
	ck_assert_int_ge(log_lines(&d, "127.0.0.1:", "more from this address"),
			 1);
	ck_assert_int_le(log_lines(&d, "127.0.0.1:", "WARN"), rounds);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* ---- d. a frame begun and never finished -------------------------------- */

START_TEST(test_slowloris_frame_timeout)
{
	static const char conf[] = CONF_HEAD "server:\n"
					     "  listen: 127.0.0.1:0\n"
					     "  frame_timeout: 1s\n";
	struct th_daemon d;
	struct cli slow, good;
	uint8_t hdr[FRAME_HDR_LEN];
	long deadline;
	int closed = 0;

	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	session(&slow, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	session(&good, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	frame_put_header(hdr, 200);
	ck_assert_int_eq(cli_send_raw(&slow, hdr, sizeof(hdr)), 0);
	/* One byte a second (each restarts idle_timeout, not the frame). */
	deadline = th_now_ms() + WAIT_MS;
	for (int i = 0; i < 199 && th_now_ms() < deadline && !closed; i++) {
		struct pollfd p = {slow.fd, POLLIN, 0};

		heartbeat_ok(&good);
		if (send(slow.fd, "x", 1, MSG_NOSIGNAL) != 1 ||
		    poll(&p, 1, 1000) > 0)
			closed = 1;
	}
	ck_assert_msg(closed, "the slow session was never closed");
	expect_closed(&slow);
	heartbeat_ok(&good);
	ck_assert_int_ge(counter(&d, "frame_timeout"), 1);
	session_end(&slow);
	session_end(&good);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* ---- e. a credential removed by a reload -------------------------------- */

/* Rewrites path without the n lines that start at the one containing s. */
static void
drop_lines(const char *path, const char *s, int n)
{
	char buf[8192], *out = buf, *line, *save = NULL;
	int skip = 0;
	size_t len;
	FILE *f = fopen(path, "r");

	ck_assert_ptr_nonnull(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (line = strtok_r(out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, s) != NULL)
			skip = n;
		if (skip > 0)
			skip--;
		else
			fprintf(f, "%s\n", line);
	}
	fclose(f);
}

START_TEST(test_reload_revokes)
{
	static const char conf[] = CONF_HEAD "  - name: ops2\n"
					     "    token: " OPS2_TOKEN "\n"
					     "    roles: [ctl]\n"
					     "server:\n"
					     "  listen: 127.0.0.1:0\n";
	struct th_daemon d;
	struct cli a, keep;
	C4__AdminRequest q = C4__ADMIN_REQUEST__INIT;
	C4__Envelope *env;

	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	session(&a, &d, C4__ROLE__ROLE_CTL, OPS2_TOKEN, 0);
	session(&keep, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	heartbeat_ok(&a);
	/* The same file without ops2. */
	drop_lines(d.conf, "ops2", 3);
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	ck_assert_int_eq(th_wait_ready(&d), 0);
	q.has_op = 1;
	q.op = C4__ADMIN_OP__ADMIN_STATUS;
	env = cli_call(&a, C4__MSG_TYPE__MSG_ADMIN_REQUEST, &q);
	ck_assert_ptr_null(env);
	ck_assert_msg(strstr(a.err, "revoked") != NULL ||
			      strstr(a.err, "closed") != NULL,
		      "%s", a.err);
	heartbeat_ok(&keep);
	ck_assert_int_ge(counter(&d, "revoked"), 1);
	ck_assert_int_ne(th_ctl(d.tcp, OPS2_TOKEN, NULL, 0, "ping", NULL), 0);
	session_end(&a);
	session_end(&keep);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* ---- f. a sketch bucket index out of range ------------------------------ */

/*
 * Sends a message that has no reply when accepted, then a heartbeat: 0
 * when the heartbeat's answer comes first, -1 with the error's text in
 * err when the daemon refused the message.
 */
static int
sent_ok(struct cli *c, C4__MsgType type, void *body, char *err, size_t len)
{
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	uint64_t seq, hseq;

	ck_assert_int_eq(cli_send(c, type, body, &seq), 0);
	hb.has_nonce = 1;
	hb.nonce = 5;
	ck_assert_int_eq(cli_send(c, C4__MSG_TYPE__MSG_HEARTBEAT, &hb, &hseq),
			 0);
	for (;;) {
		C4__Envelope *env = cli_recv(c);
		int rc = 1;

		ck_assert_msg(env != NULL, "%s", c->err);
		if (env->type == C4__MSG_TYPE__MSG_ERROR &&
		    env->error->ref_seq == seq) {
			snprintf(err, len, "%s", env->error->text);
			rc = -1;
		} else if (env->type == C4__MSG_TYPE__MSG_HEARTBEAT &&
			   env->reply_to == hseq) {
			rc = 0;
		}
		msg_free(env);
		if (rc <= 0)
			return rc;
	}
}

START_TEST(test_sketch_overflow_refused)
{
	static const char conf[] = CONF_HEAD "server:\n"
					     "  listen: 127.0.0.1:0\n";
	struct th_daemon d;
	struct cli c;
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	C4__RankCollSummary s = C4__RANK_COLL_SUMMARY__INIT, *sp = &s;
	C4__OpStats op = C4__OP_STATS__INIT, *opp = &op;
	C4__DurationStats ds = C4__DURATION_STATS__INIT;
	C4__QuantileSketch sk = C4__QUANTILE_SKETCH__INIT;
	int32_t idx = INT32_MAX;
	uint64_t cnt = 1;
	struct cli other;
	C4__Envelope *env;

	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	session(&c, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	session(&other, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	sk.has_relative_accuracy_ppm = 1;
	sk.relative_accuracy_ppm = 10000;
	sk.n_index = sk.n_count = 1;
	sk.index = &idx;
	sk.count = &cnt;
	ds.has_count = 1;
	ds.count = 1;
	ds.sketch = &sk;
	op.has_func = 1;
	op.func = C4__COLL_FUNC__COLL_ALLREDUCE;
	op.has_count = 1;
	op.count = 1;
	op.kernel_time = &ds;
	s.has_comm_hash = 1;
	s.comm_hash = 0xabc;
	s.has_rank = 1;
	s.rank = 0;
	s.n_ops = 1;
	s.ops = &opp;
	b.job_id = (char *)"job-42";
	b.host = (char *)"node-limits";
	b.has_interval_id = 1;
	b.interval_id = 1;
	b.n_colls = 1;
	b.colls = &sp;
	ck_assert_int_eq(cli_send(&c, C4__MSG_TYPE__MSG_TELEMETRY, &b, NULL),
			 0);
	/* Malformed input ends its session with an error naming it. */
	env = cli_recv(&c);
	ck_assert_msg(env != NULL, "%s", c.err);
	ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_ERROR);
	ck_assert_int_eq(env->error->code, C4__ERROR_CODE__ERR_INVALID);
	ck_assert_msg(strstr(env->error->text, "bucket index") != NULL, "%s",
		      env->error->text);
	msg_free(env);
	expect_closed(&c);
	/* Everyone else is still served. */
	heartbeat_ok(&other);
	ck_assert_int_eq(th_ctl(d.tcp, OPS_TOKEN, NULL, 0, "ping", NULL), 0);
	session_end(&other);
	ck_assert(th_alive(&d));
	session_end(&c);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* ---- communicators beyond limits.max_comms* ----------------------------- */

/* Registers communicator hash (2 ranks, both on node-limits); 0 or -1. */
static int
comm_register(struct cli *c, uint64_t hash, char *err, size_t len)
{
	C4__CommRegister m = C4__COMM_REGISTER__INIT;
	C4__RankInfo r[2], *rp[2];

	for (int i = 0; i < 2; i++) {
		c4__rank_info__init(&r[i]);
		r[i].has_rank = 1;
		r[i].rank = (uint32_t)i;
		r[i].host = (char *)"node-limits";
		r[i].has_gpu = 1;
		r[i].gpu = (uint32_t)i;
		rp[i] = &r[i];
	}
	m.job_id = (char *)"job-42";
	m.has_comm_hash = 1;
	m.comm_hash = hash;
	m.has_nranks = 1;
	m.nranks = 2;
	m.n_ranks = 2;
	m.ranks = rp;
	return sent_ok(c, C4__MSG_TYPE__MSG_COMM_REGISTER, &m, err, len);
}

START_TEST(test_comm_caps)
{
	static const char conf[] = CONF_HEAD "server:\n"
					     "  listen: 127.0.0.1:0\n"
					     "limits:\n"
					     "  max_comms: 12\n"
					     "  max_comms_per_session: 8\n";
	struct th_daemon d;
	struct cli a, b;
	char err[512];

	ck_assert_int_eq(th_start(&d, "c4d-master", conf), 0);
	session(&a, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	session(&b, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	for (uint64_t h = 1; h <= 8; h++)
		ck_assert_msg(comm_register(&a, h, err, sizeof(err)) == 0, "%s",
			      err);
	/* The session's cap; a known communicator still registers. */
	ck_assert_int_eq(comm_register(&a, 9, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "max_comms_per_session") != NULL, "%s", err);
	ck_assert_int_eq(comm_register(&a, 3, err, sizeof(err)), 0);
	heartbeat_ok(&a);
	/* Another session, up to the job's cap. */
	for (uint64_t h = 100; h < 104; h++)
		ck_assert_msg(comm_register(&b, h, err, sizeof(err)) == 0, "%s",
			      err);
	ck_assert_int_eq(comm_register(&b, 104, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "limits.max_comms)") != NULL, "%s", err);
	ck_assert_int_eq(comm_register(&b, 5, err, sizeof(err)), 0);
	ck_assert_int_eq(counter(&d, "comms"), 12);
	ck_assert_int_eq(counter(&d, "comms_refused"), 2);
	/* The job's cap holds for a new session too. */
	session_end(&a);
	session(&a, &d, C4__ROLE__ROLE_AGENT, AGENT_TOKEN, 0);
	ck_assert_int_eq(comm_register(&a, 200, err, sizeof(err)), -1);
	heartbeat_ok(&a);
	session_end(&a);
	session_end(&b);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

static Suite *
limits_suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_flood_keeps_logins);
	tcase_add_test(tc, test_nonreading_peers_bounded);
	tcase_add_test(tc, test_failed_logins_delayed);
	tcase_add_test(tc, test_failed_logins_log_interval);
	tcase_add_test(tc, test_slowloris_frame_timeout);
	tcase_add_test(tc, test_reload_revokes);
	tcase_add_test(tc, test_sketch_overflow_refused);
	tcase_add_test(tc, test_comm_caps);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(limits_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
