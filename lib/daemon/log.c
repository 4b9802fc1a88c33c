/*
 * log.c - stderr, journal or syslog output with levels and subsystem tags.
 */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "c4_build.h"
#if C4_HAVE_SYSTEMD
#include <systemd/sd-journal.h>
#endif

#define LOG_LINE_MAX 2048

static struct {
	const char *ident;
	int foreground;
	enum log_level level;
} log_state = {"c4", 1, LOG_LVL_INFO};

static const char *const log_names[] = {"error", "warning", "info", "debug"};
static const int log_syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO,
				      LOG_DEBUG};

void
log_init(const char *ident, int foreground, enum log_level level)
{
	log_state.ident = ident;
	log_state.foreground = foreground;
	log_state.level = level;
	if (!foreground)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_level(enum log_level level)
{
	log_state.level = level;
}

void
log_vemit(enum log_level level, const char *subsys, int with_errno,
	  const char *fmt, va_list ap)
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
	if (log_state.foreground) {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s %s[%s]: %s\n", when,
			ts.tv_nsec / 1000000, log_names[level], log_state.ident,
			subsys, msg);
		fflush(stderr);
	} else {
#if C4_HAVE_SYSTEMD
		if (sd_journal_send("MESSAGE=%s: %s", subsys, msg,
				    "PRIORITY=%d", log_syslog_prio[level],
				    "SYSLOG_IDENTIFIER=%s", log_state.ident,
				    "C4_SUBSYSTEM=%s", subsys, NULL) < 0)
			syslog(log_syslog_prio[level], "%s: %s", subsys, msg);
#else
		syslog(log_syslog_prio[level], "%s: %s", subsys, msg);
#endif
	}
	errno = saved;
}

void
log_emit(enum log_level level, const char *subsys, int with_errno,
	 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(level, subsys, with_errno, fmt, ap);
	va_end(ap);
}
