/*
 * test_tls.c - TLS 1.3 and mutual TLS between real daemons on loopback:
 * an agent delivers telemetry to a c4d-master that knows it only by its
 * client certificate; c4ctl works over TLS; clients without a valid
 * certificate (none, another CA, plaintext) are refused and counted; a
 * token bound to a certificate does not authenticate without it; bytes
 * recorded on the wire replay to nothing; a recording relay sees
 * neither the token nor the telemetry's host name; and an https webhook
 * is delivered to a receiver its CA trusts, and not to another.  The CA and
 * every certificate are made at run time with the openssl command.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4client.h"
#include "cli.h"
#include "harness.h"
#include "net.h"
#include "tls.h"
#include "../unit/tmain.h"

#define OPS_TOKEN   "operator-token-tls-0001"
#define CCL_TOKEN   "ccl-token-local-tls-01"
#define HOST_NAME   "tlshost-zebra-17"
#define TIMEOUT_MS  10000
#define WAIT_MS	    30000
#define RELAY_MAX   16	       /* connections a relay carries */
#define CAPTURE_MAX (4u << 20) /* bytes a relay records */

static char pki[64]; /* the directory of the CA and certificates */

/* Runs the openssl command with args (NULL-terminated); asserts success. */
static void
openssl(const char *first, ...)
{
	char *argv[40] = {(char *)"/usr/bin/openssl", (char *)first};
	char out[4096], err[4096];
	size_t n = 2;
	va_list ap;

	va_start(ap, first);
	while ((argv[n] = va_arg(ap, char *)) != NULL && n < 38)
		n++;
	va_end(ap);
	ck_assert_msg(th_run(argv, out, sizeof(out), err, sizeof(err), 60000) ==
			      0,
		      "openssl %s: %s", first, err);
}

static const char *
pki_path(const char *name)
{
	static char buf[8][256];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", pki, name);
	return buf[i];
}

/* A P-256 certificate name.crt/.key signed by ca, with the SAN given. */
static void
make_cert(const char *ca, const char *name, const char *san)
{
	char crt[256], key[256], cacrt[256], cakey[256], ext[300];

	snprintf(crt, sizeof(crt), "%s/%s.crt", pki, name);
	snprintf(key, sizeof(key), "%s/%s.key", pki, name);
	snprintf(cacrt, sizeof(cacrt), "%s/%s.crt", pki, ca);
	snprintf(cakey, sizeof(cakey), "%s/%s.key", pki, ca);
	snprintf(ext, sizeof(ext), "subjectAltName=%s", san);
	openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
		"ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
		"/CN=c4-test", "-keyout", key, "-out", crt, "-CA", cacrt,
		"-CAkey", cakey, "-addext", ext, "-addext",
		"basicConstraints=critical,CA:FALSE", NULL);
}

static void
make_ca(const char *name)
{
	char crt[256], key[256];

	snprintf(crt, sizeof(crt), "%s/%s.crt", pki, name);
	snprintf(key, sizeof(key), "%s/%s.key", pki, name);
	openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
		"ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
		"/CN=c4-test-ca", "-keyout", key, "-out", crt, NULL);
}

/* Two CAs; the server, the agent and an operator under "ca"; a rogue. */
static void
make_pki(void)
{
	snprintf(pki, sizeof(pki), "/tmp/c4-tls-XXXXXX");
	ck_assert_ptr_nonnull(th_mkdtemp(pki));
	make_ca("ca");
	make_ca("other");
	make_cert("ca", "server", "DNS:localhost,IP:127.0.0.1");
	make_cert("ca", "agent", "DNS:node-a.agents.c4");
	make_cert("ca", "ops", "URI:spiffe://c4/ops");
	make_cert("other", "rogue", "URI:spiffe://c4/ops");
}

static void
start_master(struct th_daemon *d)
{
	char conf[4096];

	snprintf(conf, sizeof(conf),
		 "job: job-a\n"
		 "state_dir: @DIR@\n"
		 "server:\n"
		 "  listen: 127.0.0.1:0\n"
		 "  heartbeat: 500ms\n"
		 "  idle_timeout: 10s\n"
		 "  auth_fail_free: 1000\n"
		 "  log_interval: 0ms\n"
		 "  tls:\n"
		 "    cert: %s\n"
		 "    key: %s\n"
		 "    ca: %s\n"
		 "credentials:\n"
		 "  - name: ops\n"
		 "    token: " OPS_TOKEN "\n"
		 "    cert_subject: [\"spiffe://c4/ops\"]\n"
		 "    roles: [ctl]\n"
		 "  - name: agents\n"
		 "    cert_subject: [node-a.agents.c4]\n"
		 "    roles: [agent]\n"
		 "log:\n"
		 "  level: debug\n",
		 pki_path("server.crt"), pki_path("server.key"),
		 pki_path("ca.crt"));
	ck_assert_int_eq(th_start(d, "c4d-master", conf), 0);
}

static void
start_agent(struct th_daemon *d, const char *master)
{
	char conf[4096];

	snprintf(conf, sizeof(conf),
		 "node_name: " HOST_NAME "\n"
		 "interval: 100ms\n"
		 "masters:\n"
		 "  - job: job-a\n"
		 "    address: %s\n"
		 "    tls:\n"
		 "      cert: %s\n"
		 "      key: %s\n"
		 "      ca: %s\n"
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
		 "  level: debug\n",
		 master, pki_path("agent.crt"), pki_path("agent.key"),
		 pki_path("ca.crt"));
	ck_assert_int_eq(th_start(d, "c4a-agent", conf), 0);
}

/*
 * c4ctl over TLS with the CA and, when cert is not NULL, the certificate
 * cert.crt/.key; token may be NULL.  Its exit status; stdout in out.
 */
static int
ctl(const char *addr, const char *cert, const char *token, char *out,
    size_t outlen, const char *cmd)
{
	char *argv[16];
	char err[4096];
	size_t n = 0;
	int rc;

	argv[n++] = (char *)th_bin("ctl/c4ctl");
	argv[n++] = (char *)"-s";
	argv[n++] = (char *)addr;
	argv[n++] = (char *)"--tls-ca";
	argv[n++] = (char *)pki_path("ca.crt");
	if (cert != NULL) {
		char crt[64], key[64];

		snprintf(crt, sizeof(crt), "%s.crt", cert);
		snprintf(key, sizeof(key), "%s.key", cert);
		argv[n++] = (char *)"--tls-cert";
		argv[n++] = (char *)pki_path(crt);
		argv[n++] = (char *)"--tls-key";
		argv[n++] = (char *)pki_path(key);
	}
	argv[n++] = (char *)"-t";
	argv[n++] = (char *)(token ? token : "");
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"json";
	argv[n++] = (char *)cmd;
	argv[n] = NULL;
	rc = th_run(argv, out, outlen, err, sizeof(err), TIMEOUT_MS);
	if (rc != 0)
		fprintf(stderr, "c4ctl %s: %s\n", cmd, err);
	return rc;
}

/* A counter of the master's status, asked with the operator certificate. */
static long long
counter(const struct th_daemon *d, const char *name)
{
	char out[32768], key[128];
	const char *p;

	if (ctl(d->tcp, "ops", NULL, out, sizeof(out), "status") != 0)
		return -1;
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(out, key);
	ck_assert_msg(p != NULL, "no counter %s in %s", key, out);
	return atoll(p + strlen(key));
}

static long long
wait_counter(const struct th_daemon *d, const char *name, long long min)
{
	long deadline = th_now_ms() + WAIT_MS;
	long long v;

	while ((v = counter(d, name)) < min && th_now_ms() < deadline)
		usleep(50000);
	ck_assert_msg(v >= min, "%s is %lld, expected at least %lld", name, v,
		      min);
	return v;
}

/* ---- a recording TCP relay --------------------------------------------- */

struct relay {
	int lfd;
	int port;
	struct net_addr to;
	pthread_t thread;
	int stop[2]; /* a pipe: a byte ends the thread */
	pthread_mutex_t mu;
	unsigned char *all; /* every byte, both directions */
	size_t nall;
	unsigned char *first; /* client-to-server bytes of the first conn */
	size_t nfirst;
};

static void
relay_record(struct relay *r, const unsigned char *p, size_t n, int first)
{
	pthread_mutex_lock(&r->mu);
	if (r->nall + n <= CAPTURE_MAX) {
		memcpy(r->all + r->nall, p, n);
		r->nall += n;
	}
	if (first && r->nfirst + n <= CAPTURE_MAX) {
		memcpy(r->first + r->nfirst, p, n);
		r->nfirst += n;
	}
	pthread_mutex_unlock(&r->mu);
}

static void *
relay_run(void *arg)
{
	struct relay *r = arg;
	int a[RELAY_MAX], b[RELAY_MAX], idx[RELAY_MAX];
	size_t n = 0, conns = 0;

	for (;;) {
		struct pollfd pf[2 + 2 * RELAY_MAX];
		size_t k = 0;

		pf[k++] = (struct pollfd){r->stop[0], POLLIN, 0};
		pf[k++] = (struct pollfd){r->lfd, POLLIN, 0};
		for (size_t i = 0; i < n; i++) {
			pf[k++] = (struct pollfd){a[i], POLLIN, 0};
			pf[k++] = (struct pollfd){b[i], POLLIN, 0};
		}
		if (poll(pf, k, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if ((pf[1].revents & POLLIN) && n < RELAY_MAX) {
			char err[256];
			int c = accept(r->lfd, NULL, NULL);
			int s = c >= 0 ? net_connect(&r->to, TIMEOUT_MS, err,
						     sizeof(err))
				       : -1;

			if (s >= 0) {
				a[n] = c;
				b[n] = s;
				idx[n++] = (int)conns++;
			} else if (c >= 0) {
				close(c);
			}
		}
		for (size_t i = 0; i < n; i++) {
			unsigned char buf[16384];
			short ra = pf[2 + 2 * i].revents;
			short rb = pf[3 + 2 * i].revents;
			ssize_t got = 0;

			if (ra & (POLLIN | POLLHUP | POLLERR)) {
				got = read(a[i], buf, sizeof(buf));
				if (got > 0) {
					relay_record(r, buf, (size_t)got,
						     idx[i] == 0);
					net_send_all(b[i], buf, (size_t)got);
				}
			}
			if (got >= 0 && (rb & (POLLIN | POLLHUP | POLLERR))) {
				got = read(b[i], buf, sizeof(buf));
				if (got > 0) {
					relay_record(r, buf, (size_t)got, 0);
					net_send_all(a[i], buf, (size_t)got);
				}
			}
			if (got <= 0 &&
			    ((ra | rb) & (POLLIN | POLLHUP | POLLERR))) {
				close(a[i]);
				close(b[i]);
				a[i] = a[n - 1];
				b[i] = b[n - 1];
				idx[i] = idx[n - 1];
				n--;
				break; /* pf no longer matches: poll again */
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		close(a[i]);
		close(b[i]);
	}
	return NULL;
}

/* A TCP listener on a free loopback port, written to *port. */
static int
listen_loopback(int *port)
{
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void
relay_start(struct relay *r, const char *to)
{
	char err[256];

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(net_addr_parse(to, &r->to, err, sizeof(err)), 0);
	r->all = malloc(CAPTURE_MAX);
	r->first = malloc(CAPTURE_MAX);
	ck_assert(r->all != NULL && r->first != NULL);
	pthread_mutex_init(&r->mu, NULL);
	ck_assert_int_eq(pipe(r->stop), 0);
	r->lfd = listen_loopback(&r->port);
	ck_assert_int_eq(pthread_create(&r->thread, NULL, relay_run, r), 0);
}

static void
relay_stop(struct relay *r)
{
	ck_assert_int_eq(write(r->stop[1], "x", 1), 1);
	pthread_join(r->thread, NULL);
	close(r->lfd);
	close(r->stop[0]);
	close(r->stop[1]);
}

/* Did the relay see s, in either direction? */
static int
relay_saw(struct relay *r, const char *s)
{
	int seen;

	pthread_mutex_lock(&r->mu);
	seen = memmem(r->all, r->nall, s, strlen(s)) != NULL;
	pthread_mutex_unlock(&r->mu);
	return seen;
}

static void
relay_free(struct relay *r)
{
	free(r->all);
	free(r->first);
	pthread_mutex_destroy(&r->mu);
}

/* One CCL client of job-a on the agent: registers and reports. */
static void
report(const struct th_daemon *ag)
{
	struct c4client_opts o = {ag->unix_path, "job-a", CCL_TOKEN, HOST_NAME,
				  0};
	struct c4client_rank rk = {0, NULL, 0, NULL, "mlx5_0", 1, 0};
	struct c4client_comm cm = {0x77, 1, "dp", 1, &rk};
	struct c4client *c = c4client_open(&o);

	ck_assert_ptr_nonnull(c);
	struct c4client_stats st;
	long deadline = th_now_ms() + WAIT_MS;

	ck_assert_int_eq(c4client_register(c, &cm), 0);
	do {
		c4client_stats(c, &st);
		if (st.registers_sent >= 1)
			break;
		usleep(10000);
	} while (th_now_ms() < deadline);
	ck_assert_msg(st.registers_sent >= 1, "registration not sent: %s",
		      st.last_error);
	c4client_close(c);
}

START_TEST(test_agent_mtls_delivers_and_wire_is_opaque)
{
	struct th_daemon m, ag;
	struct relay r;
	char relay_addr[64], out[32768];

	make_pki();
	start_master(&m);
	relay_start(&r, m.tcp);
	snprintf(relay_addr, sizeof(relay_addr), "127.0.0.1:%d", r.port);
	start_agent(&ag, relay_addr);
	/* The agent's session holds the certificate-only credential. */
	wait_counter(&m, "hello_ok", 2);
	report(&ag);
	wait_counter(&m, "comm_registrations", 1);
	ck_assert(th_log_has(&m, "authenticated as 'agents'"));
	/* c4ctl through the relay, with a token and a certificate. */
	ck_assert_int_eq(
		ctl(relay_addr, "ops", OPS_TOKEN, out, sizeof(out), "status"),
		0);
	ck_assert_ptr_nonnull(strstr(out, "hello_ok"));
	relay_stop(&r);
	ck_assert_msg(r.nall > 1000, "the relay carried %zu bytes", r.nall);
	ck_assert(!relay_saw(&r, OPS_TOKEN));
	ck_assert(!relay_saw(&r, HOST_NAME));
	ck_assert(!relay_saw(&r, "node-a.agents.c4"));
	ck_assert(!relay_saw(&r, "hello_ok"));
	relay_free(&r);
	ck_assert_int_eq(th_stop(&ag), 0);
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

/* A cli session to the master; 0 when its hello is accepted. */
static int
cli_try(const char *addr, const char *cert, const char *token, int role,
	char *why, size_t len)
{
	struct tls_files f = {NULL, NULL, (char *)pki_path("ca.crt")};
	struct cli_hello h = {(C4__Role)role, token, NULL, "t", &f};
	struct cli c;
	char crt[64], key[64];
	int rc;

	if (cert != NULL) {
		snprintf(crt, sizeof(crt), "%s.crt", cert);
		snprintf(key, sizeof(key), "%s.key", cert);
		f.cert = (char *)pki_path(crt);
		f.key = (char *)pki_path(key);
	}
	rc = cli_connect(&c, addr, &h, TIMEOUT_MS);
	snprintf(why, len, "%s", c.err);
	cli_close(&c);
	return rc;
}

START_TEST(test_invalid_certificates_are_refused)
{
	struct th_daemon m;
	struct cli plain;
	struct cli_hello ph = {C4__ROLE__ROLE_CTL, OPS_TOKEN, NULL, "t"};
	char why[512], out[32768];
	long long failed;

	make_pki();
	start_master(&m);
	/* The operator's certificate alone authenticates. */
	ck_assert_int_eq(cli_try(m.tcp, "ops", NULL, C4__ROLE__ROLE_CTL, why,
				 sizeof(why)),
			 0);
	/* No certificate, a certificate of another CA, plaintext. */
	ck_assert_int_ne(cli_try(m.tcp, NULL, OPS_TOKEN, C4__ROLE__ROLE_CTL,
				 why, sizeof(why)),
			 0);
	ck_assert_int_ne(cli_try(m.tcp, "rogue", OPS_TOKEN, C4__ROLE__ROLE_CTL,
				 why, sizeof(why)),
			 0);
	ck_assert_int_ne(cli_connect(&plain, m.tcp, &ph, TIMEOUT_MS), 0);
	cli_close(&plain);
	ck_assert_int_ne(
		ctl(m.tcp, "rogue", OPS_TOKEN, out, sizeof(out), "status"), 0);
	failed = wait_counter(&m, "tls_handshake_failed", 4);
	/*
	 * A valid certificate of another identity with the operator's token:
	 * the token is bound to the operator's certificate, so it does not
	 * make this session the operator.
	 */
	ck_assert_int_ne(cli_try(m.tcp, "agent", OPS_TOKEN, C4__ROLE__ROLE_CTL,
				 why, sizeof(why)),
			 0);
	ck_assert_msg(strstr(why, "may not act as ctl") != NULL, "%s", why);
	ck_assert_int_ge(counter(&m, "auth_failed"), 1);
	ck_assert(th_log_has(&m, "TLS handshake failed"));
	(void)failed;
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

START_TEST(test_recorded_session_does_not_replay)
{
	struct th_daemon m;
	struct relay r;
	struct net_addr a;
	char relay_addr[64], out[32768], err[256];
	unsigned char buf[4096];
	long long ok0, ok1, failed0, failed1;
	int fd, queries;

	make_pki();
	start_master(&m);
	relay_start(&r, m.tcp);
	snprintf(relay_addr, sizeof(relay_addr), "127.0.0.1:%d", r.port);
	/* A real operator session with a token, recorded by the relay. */
	ck_assert_int_eq(
		ctl(relay_addr, "ops", OPS_TOKEN, out, sizeof(out), "status"),
		0);
	relay_stop(&r);
	ck_assert_msg(r.nfirst > 200, "recorded %zu bytes", r.nfirst);
	failed0 = counter(&m, "tls_handshake_failed");
	ok0 = counter(&m, "hello_ok");
	/* Its client bytes sent again on a fresh connection. */
	ck_assert_int_eq(net_addr_parse(m.tcp, &a, err, sizeof(err)), 0);
	fd = net_connect(&a, TIMEOUT_MS, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	(void)net_send_all(fd, r.first, r.nfirst);
	/* The daemon closes it; whatever it answers, no session is made. */
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	/* Each status query is a session of its own: count them. */
	queries = 0;
	do {
		failed1 = counter(&m, "tls_handshake_failed");
		queries++;
	} while (failed1 < failed0 + 1 && queries < 400 && !usleep(50000));
	ok1 = counter(&m, "hello_ok");
	/* hello_ok counts the status queries, nothing else. */
	ck_assert_int_eq(ok1, ok0 + queries + 1);
	ck_assert_int_ge(failed1, failed0 + 1);
	relay_free(&r);
	ck_assert_int_eq(th_stop(&m), 0);
}
END_TEST

/* ---- an https webhook receiver (OpenSSL) -------------------------------- */

#define HOOK_TOKEN "hook-bearer-token-tls-77"

struct receiver {
	int lfd, port;
	SSL_CTX *ctx;
	pthread_t thread;
	volatile int stop;
	pthread_mutex_t mu;
	int requests; /* complete requests answered 200 */
	int handshakes_failed;
	char last[8192]; /* the last request, headers and body */
};

/* Serves one connection: a TLS handshake, one request, a 200. */
static void
receiver_serve(struct receiver *r, int fd)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
				 "Connection: close\r\n\r\n";
	SSL *ssl = SSL_new(r->ctx);
	char buf[8192];
	size_t n = 0;
	struct timeval tv = {TIMEOUT_MS / 1000, 0};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1) {
		pthread_mutex_lock(&r->mu);
		r->handshakes_failed++;
		pthread_mutex_unlock(&r->mu);
		goto out;
	}
	for (;;) {
		const char *end, *cl;
		int got = SSL_read(ssl, buf + n, (int)(sizeof(buf) - 1 - n));

		if (got <= 0)
			goto out;
		n += (size_t)got;
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
		cl = strcasestr(buf, "Content-Length:");
		if (end != NULL && cl != NULL &&
		    n >= (size_t)(end + 4 - buf) + (size_t)atoi(cl + 15))
			break;
		if (n + 1 >= sizeof(buf))
			goto out;
	}
	SSL_write(ssl, ok, (int)strlen(ok));
	pthread_mutex_lock(&r->mu);
	r->requests++;
	snprintf(r->last, sizeof(r->last), "%s", buf);
	pthread_mutex_unlock(&r->mu);
out:
	SSL_free(ssl);
	close(fd);
}

static void *
receiver_run(void *arg)
{
	struct receiver *r = arg;

	while (!r->stop) {
		struct pollfd pf = {r->lfd, POLLIN, 0};
		int fd;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		fd = accept(r->lfd, NULL, NULL);
		if (fd >= 0)
			receiver_serve(r, fd);
	}
	return NULL;
}

static void
receiver_start(struct receiver *r)
{
	struct tls_files f = {(char *)pki_path("server.crt"),
			      (char *)pki_path("server.key"), NULL};
	char err[512];

	memset(r, 0, sizeof(*r));
	r->ctx = tls_ctx_new(&f, 1, err, sizeof(err));
	ck_assert_msg(r->ctx != NULL, "%s", err);
	pthread_mutex_init(&r->mu, NULL);
	r->lfd = listen_loopback(&r->port);
	ck_assert_int_eq(pthread_create(&r->thread, NULL, receiver_run, r), 0);
}

static void
receiver_stop(struct receiver *r)
{
	r->stop = 1;
	pthread_join(r->thread, NULL);
	close(r->lfd);
	SSL_CTX_free(r->ctx);
	pthread_mutex_destroy(&r->mu);
}

/* Waits until the receiver's field at off reaches min; its value. */
static int
receiver_wait(struct receiver *r, const int *field, int min)
{
	long deadline = th_now_ms() + WAIT_MS;
	int v;

	do {
		pthread_mutex_lock(&r->mu);
		v = *field;
		pthread_mutex_unlock(&r->mu);
		if (v >= min)
			break;
		usleep(20000);
	} while (th_now_ms() < deadline);
	return v;
}

/*
 * Runs the master's event path (c4d-test-pipe) with one https webhook to
 * url verified by the CA file ca, publishes one event and returns the
 * process, its stdin kept open in *in.
 */
static pid_t
pipe_publish(const char *dir, const char *url, const char *ca, int *in)
{
	char conf[512], log[512], text[2048];
	int p[2];
	pid_t pid;
	FILE *fp;

	snprintf(conf, sizeof(conf), "%s/pipe.yaml", dir);
	snprintf(log, sizeof(log), "%s/pipe.log", dir);
	snprintf(text, sizeof(text),
		 "job: job-42\n"
		 "state_dir: %s\n"
		 "server:\n  listen: 127.0.0.1:0\n"
		 "credentials:\n"
		 "  - name: ops\n    token: " OPS_TOKEN "\n    roles: [ctl]\n"
		 "webhooks:\n"
		 "  - name: tls-hook\n"
		 "    url: %s\n"
		 "    timeout: 2s\n"
		 "    max_backoff: 400ms\n"
		 "    token: " HOOK_TOKEN "\n"
		 "    tls: {ca: %s}\n",
		 dir, url, ca);
	fp = fopen(conf, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(text, fp);
	fclose(fp);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[0], 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(th_bin("tests/integration/c4d-test-pipe"),
		      "c4d-test-pipe", conf, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*in = p[1];
	ck_assert_int_eq(write(*in, "publish tls-ev-1 open\n", 22), 22);
	return pid;
}

static void
pipe_end(pid_t pid, int in)
{
	int status;

	ck_assert_int_eq(write(in, "quit\n", 5), 5);
	close(in);
	ck_assert_int_eq(th_reap(pid, WAIT_MS), 0);
	(void)status;
}

START_TEST(test_https_webhook)
{
	struct receiver rc;
	struct relay r;
	char dir[64] = "/tmp/c4-tls-hook-XXXXXX", url[128], to[64];
	pid_t pid;
	int in;

	make_pki();
	receiver_start(&rc);
	snprintf(to, sizeof(to), "127.0.0.1:%d", rc.port);
	relay_start(&r, to);
	ck_assert_ptr_nonnull(th_mkdtemp(dir));
	/* The right CA, through the recording relay. */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/hooks/c4", r.port);
	pid = pipe_publish(dir, url, pki_path("ca.crt"), &in);
	ck_assert_int_ge(receiver_wait(&rc, &rc.requests, 1), 1);
	pipe_end(pid, in);
	pthread_mutex_lock(&rc.mu);
	ck_assert_ptr_nonnull(strstr(rc.last, "Bearer " HOOK_TOKEN));
	ck_assert_ptr_nonnull(strstr(rc.last, "tls-ev-1"));
	pthread_mutex_unlock(&rc.mu);
	relay_stop(&r);
	ck_assert(!relay_saw(&r, HOOK_TOKEN));
	ck_assert(!relay_saw(&r, "tls-ev-1"));
	relay_free(&r);
	/* Another CA: the receiver is not trusted, nothing is delivered. */
	snprintf(dir, sizeof(dir), "/tmp/c4-tls-hook-XXXXXX");
	ck_assert_ptr_nonnull(th_mkdtemp(dir));
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/hooks/c4", rc.port);
	pthread_mutex_lock(&rc.mu);
	rc.requests = 0;
	pthread_mutex_unlock(&rc.mu);
	pid = pipe_publish(dir, url, pki_path("other.crt"), &in);
	ck_assert_int_ge(receiver_wait(&rc, &rc.handshakes_failed, 2), 2);
	pipe_end(pid, in);
	ck_assert_int_eq(rc.requests, 0);
	receiver_stop(&rc);
}
END_TEST

TMAIN("tls", test_agent_mtls_delivers_and_wire_is_opaque,
      test_invalid_certificates_are_refused,
      test_recorded_session_does_not_replay, test_https_webhook)
