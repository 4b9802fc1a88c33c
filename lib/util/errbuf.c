/*
 * errbuf.c - formatting into a caller's error buffer.
 */
#include "errbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

void
errbuf_set(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (err == NULL || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	errno = saved;
}
