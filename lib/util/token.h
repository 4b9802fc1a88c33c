/*
 * token.h - the secret of a token file: its first line.
 */
#ifndef C4_TOKEN_H
#define C4_TOKEN_H

#include <stddef.h>

/*
 * Reads the first line of the file at path, up to the first CR or LF or
 * the end of the file, and returns it as a string the caller frees.  At
 * most keep bytes of the line are kept: a caller that accepts tokens of up
 * to N bytes passes N + 1, so that a longer line stays longer than N and
 * is refused as such.  keep must be above 0.  Returns NULL with err filled
 * (errbuf_set) when the file cannot be opened or read ("No such file or
 * directory", ...), when it is empty ("file is empty"), or when out of
 * memory.  Reads only the file; changes nothing else but err and errno.
 */
char *token_read(const char *path, size_t keep, char *err, size_t errlen);

#endif
