/*
 * errbuf.h - the error text of functions that take a caller's buffer
 * (char *err, size_t len) and return -1 on failure.
 */
#ifndef C4_ERRBUF_H
#define C4_ERRBUF_H

#include <stddef.h>

/*
 * Formats fmt and its arguments into err, truncated to len bytes with
 * its NUL.  Does nothing when err is NULL or len is 0, so callers may
 * pass a buffer they do not want filled.  Changes nothing but err, and
 * not errno.
 */
void errbuf_set(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
