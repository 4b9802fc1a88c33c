/*
 * log.c - stderr or journal output with levels, subsystem tags, the
 * caller's code location and fields (log.h).
 */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "c4_build.h"
#if C4_HAVE_SYSTEMD
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>
#endif

#define LOG_LINE_MAX	 2048
#define LOG_JOURNAL_SOCK "/run/systemd/journal/socket"

static struct {
	const char *ident;
	int journal;
	enum log_level level;
} log_state = {"c4", 0, LOG_LVL_INFO};

static const char *const log_names[] = {"error", "warning", "info", "debug"};

/* 1 when $JOURNAL_STREAM is "DEV:INODE" of the file stderr is. */
static int
log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

/* Where messages go when not in the foreground: 1 journal, 0 stderr. */
static int
log_pick_journal(void)
{
	const char *t = getenv("C4_LOG_TARGET");

	if (!C4_HAVE_SYSTEMD)
		return 0;
	if (t != NULL && strcmp(t, "stderr") == 0)
		return 0;
	if (t != NULL && strcmp(t, "journal") == 0)
		return 1;
	return log_stderr_is_journal() || access(LOG_JOURNAL_SOCK, W_OK) == 0;
}

void
log_init(const char *ident, int foreground, enum log_level level)
{
	log_state.ident = ident;
	log_state.journal = foreground ? 0 : log_pick_journal();
	log_state.level = level;
}

void
log_set_level(enum log_level level)
{
	log_state.level = level;
}

int
log_to_journal(void)
{
	return log_state.journal;
}

static void
log_stderr(enum log_level level, const char *subsys, const struct log_ctx *ctx,
	   const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	flockfile(stderr);
	fprintf(stderr, "%s.%03ld %s %s[%s]: %s", when, ts.tv_nsec / 1000000,
		log_names[level], log_state.ident, subsys, msg);
	if (ctx != NULL && ctx->job != NULL)
		fprintf(stderr, " job=%s", ctx->job);
	if (ctx != NULL && ctx->event != NULL)
		fprintf(stderr, " event=%s", ctx->event);
	if (ctx != NULL && ctx->peer != NULL)
		fprintf(stderr, " peer=%s", ctx->peer);
	fputc('\n', stderr);
	fflush(stderr);
	funlockfile(stderr);
}

#if C4_HAVE_SYSTEMD
/* Appends "NAME=value" to the entry being built in buf; v NULL: nothing. */
static void
log_field(struct iovec *iov, size_t *n, char **buf, size_t *left,
	  const char *name, const char *v)
{
	int k;

	if (v == NULL || *left == 0)
		return;
	k = snprintf(*buf, *left, "%s=%s", name, v);
	if (k < 0)
		return;
	if ((size_t)k >= *left)
		k = (int)*left - 1;
	iov[*n].iov_base = *buf;
	iov[(*n)++].iov_len = (size_t)k;
	*buf += k + 1;
	*left -= (size_t)k + 1;
}

/* One journal entry with the fields ctx has; -1 when journald refused it. */
static int
log_journal(enum log_level level, const char *subsys, const struct log_ctx *ctx,
	    const char *msg)
{
	static const char *const prio[] = {"3", "4", "6", "7"};
	char buf[LOG_LINE_MAX + 1024], line[16], text[LOG_LINE_MAX + 64];
	char *p = buf;
	size_t left = sizeof(buf), n = 0;
	struct iovec iov[10];

	snprintf(text, sizeof(text), "%s: %s", subsys, msg);
	log_field(iov, &n, &p, &left, "MESSAGE", text);
	log_field(iov, &n, &p, &left, "PRIORITY", prio[level]);
	log_field(iov, &n, &p, &left, "SYSLOG_IDENTIFIER", log_state.ident);
	log_field(iov, &n, &p, &left, "C4_SUBSYSTEM", subsys);
	if (ctx != NULL) {
		snprintf(line, sizeof(line), "%d", ctx->line);
		log_field(iov, &n, &p, &left, "CODE_FILE", ctx->file);
		log_field(iov, &n, &p, &left, "CODE_LINE", line);
		log_field(iov, &n, &p, &left, "CODE_FUNC", ctx->func);
		log_field(iov, &n, &p, &left, "C4_JOB", ctx->job);
		log_field(iov, &n, &p, &left, "C4_EVENT", ctx->event);
		log_field(iov, &n, &p, &left, "C4_PEER", ctx->peer);
	}
	return sd_journal_sendv(iov, (int)n) < 0 ? -1 : 0;
}
#endif

void
log_vemit_ctx(enum log_level level, const char *subsys, int with_errno,
	      const struct log_ctx *ctx, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[LOG_LINE_MAX];
	int n;

	if (level > log_state.level) {
		errno = saved;
		return;
	}
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		msg[0] = '\0';
	if (with_errno) {
		size_t len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, ": %s", strerror(saved));
	}
#if C4_HAVE_SYSTEMD
	if (log_state.journal && log_journal(level, subsys, ctx, msg) == 0) {
		errno = saved;
		return;
	}
#endif
	log_stderr(level, subsys, ctx, msg);
	errno = saved;
}

void
log_emit_ctx(enum log_level level, const char *subsys, int with_errno,
	     const struct log_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit_ctx(level, subsys, with_errno, ctx, fmt, ap);
	va_end(ap);
}

void
log_emit(enum log_level level, const char *subsys, int with_errno,
	 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit_ctx(level, subsys, with_errno, NULL, fmt, ap);
	va_end(ap);
}
