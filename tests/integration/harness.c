/*
 * harness.c - daemon processes for integration tests.
 */
#include "harness.h"

#include <errno.h>
#include <ftw.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

long
th_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int
th_free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

int
th_ctl(const char *addr, const char *token, char *out, size_t outlen, ...)
{
	char *argv[TH_CTL_ARGS_MAX + 6], err[4096];
	const char *a;
	va_list ap;
	int n = 0, rc;

	argv[n++] = (char *)th_bin("ctl/c4ctl");
	argv[n++] = (char *)"-s";
	argv[n++] = (char *)addr;
	argv[n++] = (char *)"-t";
	argv[n++] = (char *)token;
	va_start(ap, outlen);
	while (n < TH_CTL_ARGS_MAX + 5 &&
	       (a = va_arg(ap, const char *)) != NULL)
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	rc = th_run(argv, out, outlen, err, sizeof(err), TH_CTL_TIMEOUT_MS);
	if (rc != 0)
		fprintf(stderr, "c4ctl exit %d: %s\n", rc, err);
	return rc;
}

/* env's directory (or fallback) joined with relpath, in a small ring. */
static const char *
th_path(const char *env, const char *fallback, const char *relpath)
{
	static char buf[16][PATH_MAX];
	static int next;
	const char *root = getenv(env);
	char *b = buf[next++ % 16];

	snprintf(b, PATH_MAX, "%s/%s", root ? root : fallback, relpath);
	return b;
}

const char *
th_bin(const char *relpath)
{
	return th_path("C4_BUILD_ROOT", ".", relpath);
}

const char *
th_data(const char *relpath)
{
	return th_path("C4_TEST_DATA", "tests/data", relpath);
}

static int
th_write_config(struct th_daemon *d, const char *config)
{
	FILE *fp = fopen(d->conf, "w");
	const char *p = config;

	if (fp == NULL)
		return -1;
	while (*p) {
		if (strncmp(p, "@DIR@", 5) == 0) {
			fputs(d->dir, fp);
			p += 5;
		} else if (strncmp(p, "@SRC@", 5) == 0) {
			const char *src = getenv("C4_SOURCE_ROOT");

			fputs(src ? src : ".", fp);
			p += 5;
		} else {
			fputc(*p++, fp);
		}
	}
	return fclose(fp);
}

static void
th_dump_log(const struct th_daemon *d)
{
	char line[1024];
	FILE *fp = fopen(d->log, "r");

	if (fp == NULL)
		return;
	fprintf(stderr, "---- %s log ----\n", d->name);
	while (fgets(line, sizeof(line), fp))
		fputs(line, stderr);
	fclose(fp);
}

/* Parses "C4_LISTEN=a b c" from a notify datagram. */
static void
th_parse_listen(struct th_daemon *d, const char *msg)
{
	const char *l = strstr(msg, "C4_LISTEN=");
	char copy[2048], *tok, *save;

	if (l == NULL)
		return;
	snprintf(copy, sizeof(copy), "%s", l + 10);
	copy[strcspn(copy, "\n")] = '\0';
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		if (strncmp(tok, "http://", 7) == 0) {
			if (d->http[0] == '\0')
				snprintf(d->http, sizeof(d->http), "%s",
					 tok + 7);
		} else if (strncmp(tok, "unix:", 5) == 0) {
			if (d->unix_path[0] == '\0')
				snprintf(d->unix_path, sizeof(d->unix_path),
					 "%s", tok + 5);
		} else if (d->tcp[0] == '\0') {
			snprintf(d->tcp, sizeof(d->tcp), "%s", tok);
		}
	}
}

/* The exit status of a waitpid() status, or -1 for a death by signal. */
static int
th_exit_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The one place that reaps a daemon: with block set it waits for the end,
 * otherwise it only looks.  Once the daemon is reaped its status is kept
 * in d and d->pid becomes -1, so nothing signals or waits for a pid that
 * may since belong to another process.  Returns 1 if it has ended (or
 * never started), 0 if it still runs.
 */
static int
th_collect(struct th_daemon *d, int block)
{
	pid_t w;
	int status;

	if (d->pid <= 0)
		return 1;
	do
		w = waitpid(d->pid, &status, block ? 0 : WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w == 0)
		return 0;
	d->status = w == d->pid ? th_exit_status(status) : -1;
	d->ended = 1;
	d->pid = -1;
	return 1;
}

/*
 * Reads the notify datagrams queued on d (waiting at most ms for the
 * first); 1 once one holds READY=1, whose C4_LISTEN= it parses.
 */
static int
th_take_ready(struct th_daemon *d, int ms)
{
	struct pollfd pfd = {d->notify_fd, POLLIN, 0};
	char msg[4096];
	ssize_t n;

	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	while ((n = recv(d->notify_fd, msg, sizeof(msg) - 1, MSG_DONTWAIT)) >
	       0) {
		msg[n] = '\0';
		if (strstr(msg, "READY=1") != NULL) {
			th_parse_listen(d, msg);
			return 1;
		}
	}
	return 0;
}

int
th_wait_ready(struct th_daemon *d)
{
	long deadline = th_now_ms() + TH_READY_TIMEOUT_MS;

	while (th_now_ms() < deadline) {
		if (th_take_ready(d, 100))
			return 0;
		if (th_collect(d, 0)) {
			/* A READY=1 sent just before the exit is queued. */
			if (th_take_ready(d, 0))
				return 0;
			fprintf(stderr,
				"%s exited before READY=1 (exit status %d)\n",
				d->name, d->status);
			th_dump_log(d);
			return -1;
		}
	}
	fprintf(stderr, "%s: no READY=1 within %d ms\n", d->name,
		TH_READY_TIMEOUT_MS);
	th_dump_log(d);
	return -1;
}

#define TH_TMPDIRS_MAX 64

static char th_tmpdirs[TH_TMPDIRS_MAX][64];
static int th_ntmpdirs;

static int
th_rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* on_exit(): a passing test leaves no directory behind. */
static void
th_rm_tmpdirs(int status, void *arg)
{
	(void)arg;
	if (status != 0)
		return;
	for (int i = 0; i < th_ntmpdirs; i++)
		nftw(th_tmpdirs[i], th_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	th_ntmpdirs = 0;
}

char *
th_mkdtemp(char *tmpl)
{
	static pid_t registered;

	if (mkdtemp(tmpl) == NULL)
		return NULL;
	/* a forked test inherits its parent's list: start its own */
	if (registered != getpid()) {
		registered = getpid();
		th_ntmpdirs = 0;
		on_exit(th_rm_tmpdirs, NULL);
	}
	if (th_ntmpdirs < TH_TMPDIRS_MAX &&
	    strlen(tmpl) < sizeof(th_tmpdirs[0]))
		strcpy(th_tmpdirs[th_ntmpdirs++], tmpl);
	return tmpl;
}

/* Writes config into a new directory and starts bin there (see th_start). */
static int
th_launch(struct th_daemon *d, const char *name, const char *relpath,
	  const char *config)
{
	struct sockaddr_un sun;
	char tmpl[] = "/tmp/c4-test-XXXXXX", notify[96];
	const char *bin;

	memset(d, 0, sizeof(*d));
	d->pid = -1;
	d->notify_fd = -1;
	d->status = -1;
	snprintf(d->name, sizeof(d->name), "%s", name);
	if (th_mkdtemp(tmpl) == NULL)
		return -1;
	snprintf(d->dir, sizeof(d->dir), "%s", tmpl);
	snprintf(d->conf, sizeof(d->conf), "%s/%s.yaml", d->dir, name);
	snprintf(d->log, sizeof(d->log), "%s/%s.log", d->dir, name);
	snprintf(notify, sizeof(notify), "%s/notify", d->dir);
	if (th_write_config(d, config) < 0)
		return -1;
	d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", notify);
	if (d->notify_fd < 0 ||
	    bind(d->notify_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -1;
	bin = th_bin(relpath);
	{
		char *argv[] = {(char *)bin, (char *)"-d", (char *)"-f",
				d->conf, NULL};

		d->pid = th_spawn(argv, d->log, notify);
	}
	if (d->pid < 0)
		return -1;
	return th_wait_ready(d);
}

int
th_start(struct th_daemon *d, const char *name, const char *config)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "daemons/%s/%s", name, name);
	return th_launch(d, name, rel, config);
}

int
th_start_program(struct th_daemon *d, const char *name, const char *relpath,
		 const char *config)
{
	return th_launch(d, name, relpath, config);
}

pid_t
th_spawn(char *const argv[], const char *log, const char *notify)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		if (notify != NULL)
			setenv("NOTIFY_SOCKET", notify, 1);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int
th_reap(pid_t pid, long ms)
{
	long deadline = th_now_ms() + ms;
	pid_t w;
	int status;

	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			return th_exit_status(status);
		/* Not (or no longer) our child: nothing of ours to kill. */
		if (w < 0 && errno != EINTR)
			return -1;
		if (th_now_ms() >= deadline)
			break;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

int
th_alive(struct th_daemon *d)
{
	return !th_collect(d, 0);
}

/* Closes what th_start opened, once the process is reaped. */
static void
th_close(struct th_daemon *d)
{
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	d->notify_fd = -1;
}

int
th_kill(struct th_daemon *d)
{
	if (!d->ended && d->pid <= 0)
		return -1;
	/* Unreaped, the pid is still ours even if the process has ended. */
	if (d->pid > 0)
		kill(d->pid, SIGKILL);
	th_collect(d, 1);
	th_close(d);
	return 0;
}

int
th_stop(struct th_daemon *d)
{
	long deadline = th_now_ms() + TH_STOP_TIMEOUT_MS;

	if (!d->ended && d->pid <= 0)
		return -1;
	if (d->pid > 0)
		kill(d->pid, SIGTERM);
	while (!th_collect(d, 0) && th_now_ms() < deadline)
		usleep(10000);
	if (!d->ended) {
		fprintf(stderr, "%s did not stop; killing\n", d->name);
		kill(d->pid, SIGKILL);
		th_collect(d, 1);
		th_dump_log(d);
		th_close(d);
		return -1;
	}
	if (d->status != 0)
		th_dump_log(d);
	th_close(d);
	return d->status;
}

int
th_log_has(const struct th_daemon *d, const char *s)
{
	char line[4096];
	FILE *fp = fopen(d->log, "r");
	int found = 0;

	if (fp == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), fp))
		found = strstr(line, s) != NULL;
	fclose(fp);
	return found;
}

/* Reads what is available on fd into buf (bounded); returns 0 at EOF. */
static int
th_slurp(int fd, char *buf, size_t len, size_t *used)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n <= 0)
		return 0;
	if (buf != NULL && *used + 1 < len) {
		size_t k = (size_t)n < len - 1 - *used ? (size_t)n
						       : len - 1 - *used;

		memcpy(buf + *used, tmp, k);
		*used += k;
		buf[*used] = '\0';
	}
	return 1;
}

int
th_run(char *const argv[], char *out, size_t outlen, char *err, size_t errlen,
       int timeout_ms)
{
	int po[2], pe[2], status;
	size_t uo = 0, ue = 0;
	long deadline = th_now_ms() + timeout_ms;
	int open_o = 1, open_e = 1;
	pid_t pid;

	if (out && outlen)
		out[0] = '\0';
	if (err && errlen)
		err[0] = '\0';
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	while ((open_o || open_e) && th_now_ms() < deadline) {
		struct pollfd p[2] = {{open_o ? po[0] : -1, POLLIN, 0},
				      {open_e ? pe[0] : -1, POLLIN, 0}};

		if (poll(p, 2, 100) <= 0)
			continue;
		if (p[0].revents && !th_slurp(po[0], out, outlen, &uo))
			open_o = 0;
		if (p[1].revents && !th_slurp(pe[0], err, errlen, &ue))
			open_e = 0;
	}
	close(po[0]);
	close(pe[0]);
	if (open_o || open_e)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (open_o || open_e)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int
th_http_get(const char *hostport, const char *method, const char *path,
	    char *out, size_t outlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64], req[512];
	const char *colon = strrchr(hostport, ':');
	size_t n = 0;
	ssize_t r;
	int fd, code = -1;

	if (outlen == 0 || colon == NULL ||
	    (size_t)(colon - hostport) >= sizeof(host))
		return -1;
	out[0] = '\0';
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out;
	snprintf(req, sizeof(req),
		 "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 method, path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	while (n + 1 < outlen && (r = read(fd, out + n, outlen - n - 1)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	sscanf(out, "HTTP/1.%*d %d", &code);
out:
	close(fd);
	return code;
}

long long
th_counter(const struct th_daemon *d, const char *token, const char *name)
{
	static char out[65536];
	char key[128];
	const char *p;

	if (th_ctl(d->tcp, token, out, sizeof(out), "-o", "json", "status",
		   NULL) != 0)
		return -1;
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(out, key);
	return p != NULL ? atoll(p + strlen(key)) : -1;
}

long long
th_wait_counter(const struct th_daemon *d, const char *token, const char *name,
		long long want, long ms)
{
	long deadline = th_now_ms() + ms;
	long long v;

	while ((v = th_counter(d, token, name)) < want &&
	       th_now_ms() < deadline)
		usleep(100 * 1000);
	return v;
}
