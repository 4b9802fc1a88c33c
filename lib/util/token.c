/*
 * token.c - reading a token file.
 */
#include "token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

char *
token_read(const char *path, size_t keep, char *err, size_t errlen)
{
	char *line, *out;
	FILE *fp;
	int saved;

	line = malloc(keep + 1);
	if (line == NULL) {
		errbuf_set(err, errlen, "%s", strerror(ENOMEM));
		return NULL;
	}
	fp = fopen(path, "re");
	if (fp == NULL) {
		saved = errno;
		errbuf_set(err, errlen, "%s", strerror(saved));
		free(line);
		return NULL;
	}
	if (fgets(line, (int)(keep + 1), fp) == NULL) {
		saved = ferror(fp) ? errno : 0;
		fclose(fp);
		errbuf_set(err, errlen, "%s",
			   saved != 0 ? strerror(saved) : "file is empty");
		free(line);
		return NULL;
	}
	fclose(fp);
	line[strcspn(line, "\r\n")] = '\0';
	out = strdup(line);
	free(line);
	if (out == NULL)
		errbuf_set(err, errlen, "%s", strerror(ENOMEM));
	return out;
}
