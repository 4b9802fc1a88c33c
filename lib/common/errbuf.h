/*
 * errbuf.h - formatting an error message into a caller's buffer, for the
 * functions that report failures through a (char *err, size_t len) pair.
 * libc only.
 */
#ifndef C4_ERRBUF_H
#define C4_ERRBUF_H

#include <stddef.h>

/*
 * printf fmt and its arguments into err, len bytes with the terminating
 * NUL (truncating as snprintf does). Does nothing when err is NULL or len
 * is 0. The buffer is the caller's; nothing else changes.
 */
void errbuf_set(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
