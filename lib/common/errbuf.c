/*
 * errbuf.c - formatting an error message into a caller's buffer (errbuf.h).
 */
#include "errbuf.h"

#include <stdarg.h>
#include <stdio.h>

void
errbuf_set(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}
