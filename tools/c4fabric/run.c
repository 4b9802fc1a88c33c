/*
 * run.c: running ip, tc and nft inside a namespace (fork, setns, exec),
 * sysctls, and the list of namespaces (see c4fabric.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "c4fabric.h"

volatile sig_atomic_t fab_stop;

void
buf_printf(struct fab_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL,
			      b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p != NULL && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap ? b->cap : 4096;
		while (ncap <= b->len + (size_t)n)
			ncap *= 2;
		char *np = realloc(b->p, ncap);
		if (np == NULL) {
			fprintf(stderr, "c4fabric: out of memory\n");
			exit(1);
		}
		b->p = np;
		b->cap = ncap;
	}
}

void
buf_free(struct fab_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void
run_on_signal(int sig)
{
	(void)sig;
	fab_stop = 1;
}

void
run_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = run_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* An anonymous file holding b (or empty); -1 on error. */
static int
run_memfd(const char *name, const struct fab_buf *b)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (b != NULL && off < b->len) {
		ssize_t w = write(fd, b->p + off, b->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Appends the contents of fd to out. */
static void
run_slurp(int fd, struct fab_buf *out)
{
	char tmp[4096];
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, tmp, sizeof(tmp))) > 0)
		buf_printf(out, "%.*s", (int)n, tmp);
}

int
run_ns_enter(const char *ns, int *back)
{
	char path[sizeof(FAB_NETNS_DIR) + FAB_NS_MAX + 1];
	int fd;

	*back = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*back < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", FAB_NETNS_DIR, ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "c4fabric: enter namespace %s: %s\n", ns,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		close(*back);
		*back = -1;
		return -1;
	}
	close(fd);
	return 0;
}

void
run_ns_leave(int back)
{
	if (back < 0)
		return;
	if (setns(back, CLONE_NEWNET) < 0) {
		fprintf(stderr, "c4fabric: back to the first namespace: %s\n",
			strerror(errno));
		exit(1);
	}
	close(back);
}

/* Prints line n (1-based) of b to stderr. */
static void
run_print_line(const struct fab_buf *b, unsigned long n)
{
	size_t i = 0, start;

	while (b != NULL && i < b->len && --n > 0) {
		const char *nl = memchr(b->p + i, '\n', b->len - i);

		if (nl == NULL)
			return;
		i = (size_t)(nl - b->p) + 1;
	}
	if (b == NULL || i >= b->len)
		return;
	start = i;
	while (i < b->len && b->p[i] != '\n')
		i++;
	fprintf(stderr, "c4fabric:   failed line: %.*s\n", (int)(i - start),
		b->p + start);
}

int
run_cmd(const char *ns, const char *const argv[], const struct fab_buf *in,
	struct fab_buf *out, bool quiet)
{
	int infd = -1, outfd = -1, errfd = -1, status = 0, rc = -1, back = -1;
	struct fab_buf err = {0};
	pid_t pid, parent;

	infd = run_memfd("in", in);
	errfd = run_memfd("err", NULL);
	if (out != NULL)
		outfd = run_memfd("out", NULL);
	if (infd < 0 || errfd < 0 || (out != NULL && outfd < 0)) {
		fprintf(stderr, "c4fabric: memfd: %s\n", strerror(errno));
		goto done;
	}
	/* enter here so that a missing namespace is reported once */
	if (ns != NULL && run_ns_enter(ns, &back) < 0)
		goto done;
	parent = getpid();
	pid = fork();
	if (pid == 0) {
		/* a killed c4fabric must not leave ip building behind it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(infd, 0);
		if (outfd >= 0)
			dup2(outfd, 1);
		dup2(errfd, 2);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	run_ns_leave(back);
	if (pid < 0) {
		fprintf(stderr, "c4fabric: fork: %s\n", strerror(errno));
		goto done;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "c4fabric: waitpid: %s\n",
				strerror(errno));
			goto done;
		}
	}
	if (out != NULL)
		run_slurp(outfd, out);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		rc = 0;
		goto done;
	}
	if (quiet)
		goto done;
	fprintf(stderr, "c4fabric: failed (%s %d):",
		WIFEXITED(status) ? "exit" : "signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	if (ns != NULL)
		fprintf(stderr, " [netns %s]", ns);
	for (int i = 0; argv[i] != NULL; i++)
		fprintf(stderr, " %s", argv[i]);
	fprintf(stderr, "\n");
	run_slurp(errfd, &err);
	if (err.len > 0) {
		const char *cf;

		fprintf(stderr, "%.*s%s", (int)err.len, err.p,
			err.p[err.len - 1] == '\n' ? "" : "\n");
		buf_printf(&err, "%c", '\0');
		cf = strstr(err.p, "Command failed -:");
		if (cf != NULL)
			run_print_line(in, strtoul(cf + 17, NULL, 10));
	}
done:
	buf_free(&err);
	if (infd >= 0)
		close(infd);
	if (outfd >= 0)
		close(outfd);
	if (errfd >= 0)
		close(errfd);
	return rc;
}

int
run_ip(const char *ns, const struct fab_buf *b)
{
	static const char *const argv[] = {"ip", "-batch", "-", NULL};

	if (b->len == 0)
		return 0;
	return run_cmd(ns, argv, b, NULL, false);
}

int
run_tc(const char *ns, const struct fab_buf *b)
{
	static const char *const argv[] = {"tc", "-batch", "-", NULL};

	if (b->len == 0)
		return 0;
	return run_cmd(ns, argv, b, NULL, false);
}

int
run_sysctl(const char *key, const char *val)
{
	char path[256];
	size_t i, n;
	int fd;

	n = (size_t)snprintf(path, sizeof(path), "/proc/sys/%s", key);
	if (n >= sizeof(path))
		return -1;
	for (i = strlen("/proc/sys/"); i < n; i++)
		if (path[i] == '.')
			path[i] = '/';
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val)) {
		fprintf(stderr, "c4fabric: sysctl %s=%s: %s\n", key, val,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int
run_ns_list(const char *prefix, struct fab_buf *out)
{
	DIR *d = opendir(FAB_NETNS_DIR);
	struct dirent *e;

	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
		    strlen(e->d_name) < FAB_NS_MAX)
			buf_printf(out, "%s%c", e->d_name, '\0');
	}
	closedir(d);
	return 0;
}
