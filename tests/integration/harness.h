/*
 * harness.h - start real c4 daemons for integration tests, and stop them.
 *
 * Each daemon runs in its own temporary directory with a generated
 * configuration, listening on port 0 of loopback; readiness and the bound
 * addresses come over a real NOTIFY_SOCKET (sd_notify READY=1 and
 * C4_LISTEN=).  The daemon dies with the test process (PR_SET_PDEATHSIG),
 * and th_stop() sends SIGTERM and requires a clean exit within a bound.
 *
 * A daemon is reaped exactly once, by whichever call first sees it end
 * (th_wait_ready, th_alive, th_stop or th_kill); its exit status is kept
 * and later calls report it without signalling or waiting again, so a
 * daemon that exits by itself gives the same answers whatever the timing.
 * The time bounds only end a hung run: they are far above what a loaded
 * machine under a sanitizer needs, and no result depends on them.
 */
#ifndef C4_TEST_HARNESS_H
#define C4_TEST_HARNESS_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define TH_READY_TIMEOUT_MS 60000
#define TH_STOP_TIMEOUT_MS  60000

struct th_daemon {
	pid_t pid;  /* -1 once reaped (or never started) */
	int ended;  /* reaped: status holds how it ended */
	int status; /* its exit status, or -1 for a death by signal */
	int notify_fd;
	char name[64];
	char dir[64]; /* /tmp/c4-test-XXXXXX */
	char conf[256];
	char log[256];
	char tcp[256];		  /* first host:port it listens on */
	char unix_path[PATH_MAX]; /* a unix socket it listens on, if any */
	char http[256];		  /* host:port of its HTTP endpoints, if any */
};

#define TH_CTL_ARGS_MAX	  10
#define TH_CTL_TIMEOUT_MS 30000

/* Milliseconds of CLOCK_MONOTONIC. */
long th_now_ms(void);
/* A loopback TCP port free at the time of the call (restarts in place). */
int th_free_port(void);
/*
 * mkdtemp(tmpl), and the directory is removed with everything in it when
 * the process (one test: Check forks per test) exits with status 0; a
 * failed test keeps it for its logs.  Returns tmpl, or NULL as mkdtemp.
 */
char *th_mkdtemp(char *tmpl);
/*
 * Runs c4ctl -s addr -t token ARGS... (NULL-terminated, at most
 * TH_CTL_ARGS_MAX) with stdout in out; its stderr is printed on failure.
 * Returns the exit status, or -1.
 */
int th_ctl(const char *addr, const char *token, char *out, size_t outlen, ...);

/*
 * The counter name of `c4ctl -o json status` against d with token, or -1
 * when c4ctl fails or the daemon has no such counter.
 */
long long th_counter(const struct th_daemon *d, const char *token,
		     const char *name);
/*
 * Polls th_counter() every 100 ms until it reaches want or ms pass; the
 * last value read.
 */
long long th_wait_counter(const struct th_daemon *d, const char *token,
			  const char *name, long long want, long ms);

/* Absolute path of a built program, e.g. "daemons/c4d-master/c4d-master". */
const char *th_bin(const char *relpath);
/* Path of a file in tests/data. */
const char *th_data(const char *relpath);

/*
 * Writes config (where "@DIR@" stands for the daemon's directory and
 * "@SRC@" for the source tree, $C4_SOURCE_ROOT) and
 * starts the daemon; returns 0 once it is ready, -1 otherwise (its log is
 * printed to stderr).
 */
int th_start(struct th_daemon *d, const char *name, const char *config);
/*
 * As th_start, for the program at relpath of the build tree (a stand-in
 * daemon of the tests); name names its files and messages.
 */
int th_start_program(struct th_daemon *d, const char *name, const char *relpath,
		     const char *config);
/*
 * Starts argv[0] with argv, stdout and stderr in log, dying with the test
 * (PR_SET_PDEATHSIG); with notify set, NOTIFY_SOCKET is that path.
 * Returns the pid, or -1.
 */
pid_t th_spawn(char *const argv[], const char *log, const char *notify);
/*
 * Waits at most ms for pid, a child not yet reaped (then kills it); its
 * exit status, or -1 (at once if pid is not a child of ours).
 */
int th_reap(pid_t pid, long ms);
/*
 * Waits for the next READY=1 (after a SIGHUP reload); 0, or -1 if the
 * daemon ended first (its exit status kept in d) or none came in time.
 */
int th_wait_ready(struct th_daemon *d);
/*
 * SIGTERM (unless it has already ended) and reap; returns the exit
 * status, or -1 if it died by a signal, had to be killed or never started.
 * A daemon that exited by itself is not signalled: its kept status is
 * returned.
 */
int th_stop(struct th_daemon *d);
/*
 * SIGKILL (a crash, for tests of recovery) and reap; 0, or -1 if it never
 * started.  A daemon that already ended is only reaped.
 */
int th_kill(struct th_daemon *d);
/* Is the process still running?  Reaps it (keeping its status) if not. */
int th_alive(struct th_daemon *d);
/* Does its log contain s? */
int th_log_has(const struct th_daemon *d, const char *s);

/*
 * One HTTP/1.1 request (method path, no body, Connection: close) to
 * hostport (IPv4 a.b.c.d:port) over a real TCP connection; the whole
 * answer, headers included, goes to out.  Returns the status code, or -1.
 */
int th_http_get(const char *hostport, const char *method, const char *path,
		char *out, size_t outlen);

/*
 * Runs argv (argv[0] a path) with a timeout, capturing stdout (and stderr
 * if err is not NULL).  Returns the exit status, or -1.
 */
int th_run(char *const argv[], char *out, size_t outlen, char *err,
	   size_t errlen, int timeout_ms);

#endif
