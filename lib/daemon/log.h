/*
 * log.h - leveled logging shared by every c4 program.
 *
 * Messages go to one of two places, chosen by log_init():
 *
 *   stderr   one line per message, "HH:MM:SS.mmm LEVEL ident[subsys]: text"
 *            then " job=J event=E peer=P" for the fields the caller gave.
 *   journal  one structured entry per message (sd_journal_send): MESSAGE,
 *            PRIORITY, SYSLOG_IDENTIFIER, C4_SUBSYSTEM, the caller's code
 *            location (CODE_FILE, CODE_LINE, CODE_FUNC) and C4_JOB,
 *            C4_EVENT, C4_PEER where given.
 *
 * In the foreground (-d) it is stderr.  Otherwise the journal when the
 * build has libsystemd and either $JOURNAL_STREAM names the file stderr
 * is (systemd connected it to journald) or journald's socket exists;
 * stderr in every other case (a container without journald, a shell), so
 * a daemon is never silent.  $C4_LOG_TARGET=stderr or =journal overrides
 * the detection.  An entry the journal refuses is written to stderr.
 *
 * Every function preserves errno, so a caller can log and then still
 * report the original error.
 */
#ifndef C4_LOG_H
#define C4_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARNING,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

/* Where a message was written from, and what it is about (NULL: none). */
struct log_ctx {
	const char *file, *func;
	int line;
	const char *job, *event, *peer;
};

/* Each .c file may define LOG_SUBSYS before including this header. */
#ifndef LOG_SUBSYS
#define LOG_SUBSYS "c4"
#endif

/*
 * Sets the program's identity, where messages go (as the header comment
 * says) and the most verbose level written.  ident is kept, not copied:
 * it must outlive logging (a string literal or argv[0]).  Call it once,
 * before other threads log: the settings are plain globals.
 */
void log_init(const char *ident, int foreground, enum log_level level);
/*
 * Changes the most verbose level written (a plain store: messages racing
 * with it in other threads may see either level).
 */
void log_set_level(enum log_level level);
/* 1 when messages go to the journal, 0 when to stderr. */
int log_to_journal(void);

/*
 * Writes one message of the given level, if the level is enabled, tagged
 * with subsys and the fields of ctx (NULL: none; the struct and its
 * strings are read during the call only); with_errno appends ": " and
 * strerror(errno).  The text is cut at 2047 bytes.  May be called from
 * any thread; errno is preserved.  log_vemit_ctx() is the same with a
 * va_list, which it consumes.  log_emit() is log_emit_ctx() without a
 * context.
 */
void log_emit_ctx(enum log_level level, const char *subsys, int with_errno,
		  const struct log_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void log_vemit_ctx(enum log_level level, const char *subsys, int with_errno,
		   const struct log_ctx *ctx, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
void log_emit(enum log_level level, const char *subsys, int with_errno,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The caller's code location, with job, event and peer (each may be NULL). */
#define LOG_CTX(job, event, peer)                                              \
	(&(const struct log_ctx){__FILE__, __func__, __LINE__, (job), (event), \
				 (peer)})
#define LOG_AT(level, e, ...)                                                  \
	log_emit_ctx((level), LOG_SUBSYS, (e), LOG_CTX(NULL, NULL, NULL),      \
		     __VA_ARGS__)

/* log_warn appends ": strerror(errno)"; the x variants do not. */
#define log_warn(...)  LOG_AT(LOG_LVL_WARNING, 1, __VA_ARGS__)
#define log_warnx(...) LOG_AT(LOG_LVL_WARNING, 0, __VA_ARGS__)
#define log_errx(...)  LOG_AT(LOG_LVL_ERROR, 0, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOG_LVL_INFO, 0, __VA_ARGS__)
#define log_debug(...) LOG_AT(LOG_LVL_DEBUG, 0, __VA_ARGS__)
/*
 * A message about one job, event kind and peer (any may be NULL), which
 * the journal can then select on: journalctl C4_JOB=J C4_PEER=P.
 */
#define log_event(level, job, event, peer, ...)                                \
	log_emit_ctx((level), LOG_SUBSYS, 0, LOG_CTX((job), (event), (peer)),  \
		     __VA_ARGS__)

#endif
