/*
 * log.h - leveled logging shared by every c4 program.
 *
 * In the foreground (or when stderr is not managed by systemd) messages go to
 * stderr as "LEVEL subsystem: text"; as a daemon they go to the journal with
 * the subsystem as a structured field (C4_SUBSYSTEM=), or to syslog where the
 * journal is not available.  Every function preserves errno, so a caller can
 * log and then still report the original error.
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

/* Each .c file may define LOG_SUBSYS before including this header. */
#ifndef LOG_SUBSYS
#define LOG_SUBSYS "c4"
#endif

/*
 * Sets the program's identity, where messages go and the most verbose
 * level written.  ident is kept, not copied: it must outlive logging (a
 * string literal or argv[0]).  When not in the foreground it opens
 * syslog.  Call it once, before other threads log: the settings are
 * plain globals.
 */
void log_init(const char *ident, int foreground, enum log_level level);
/*
 * Changes the most verbose level written (a plain store: messages racing
 * with it in other threads may see either level).
 */
void log_set_level(enum log_level level);

/*
 * Writes one message of the given level, if the level is enabled, tagged
 * with subsys; with_errno appends ": " and strerror(errno).  The text is
 * cut at 2047 bytes.  May be called from any thread; errno is preserved.
 * log_vemit() is the same with a va_list, which it consumes.
 */
void log_emit(enum log_level level, const char *subsys, int with_errno,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void log_vemit(enum log_level level, const char *subsys, int with_errno,
	       const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* log_warn appends ": strerror(errno)"; the x variants do not. */
#define log_warn(...)  log_emit(LOG_LVL_WARNING, LOG_SUBSYS, 1, __VA_ARGS__)
#define log_warnx(...) log_emit(LOG_LVL_WARNING, LOG_SUBSYS, 0, __VA_ARGS__)
#define log_errx(...)  log_emit(LOG_LVL_ERROR, LOG_SUBSYS, 0, __VA_ARGS__)
#define log_info(...)  log_emit(LOG_LVL_INFO, LOG_SUBSYS, 0, __VA_ARGS__)
#define log_debug(...) log_emit(LOG_LVL_DEBUG, LOG_SUBSYS, 0, __VA_ARGS__)

#endif
