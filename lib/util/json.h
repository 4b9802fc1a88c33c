/*
 * json.h - a streaming JSON writer for machine-readable output (-o json).
 *
 * Calls nest objects and arrays; commas and string escaping are handled
 * here so callers cannot produce invalid JSON.  Output is one line.
 */
#ifndef C4_JSON_H
#define C4_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 32

struct json {
	FILE *fp;
	int depth;		   /* open objects and arrays */
	int first[JSON_DEPTH_MAX]; /* no member written yet at this depth */
	int after_key;
};

/*
 * Starts a document written to fp.  The writer keeps fp, which stays the
 * caller's to close, and allocates nothing, so there is nothing to free.
 */
void json_init(struct json *j, FILE *fp);
/*
 * Open and close an object or an array.  A begin writes the comma owed
 * before it, then nests one level; an end writes the closing bracket and
 * leaves the level.  Calls must pair up: the writer does not check that an
 * end matches its begin.  Nesting has no limit: past JSON_DEPTH_MAX - 1
 * levels the writer keeps no flag per level, and needs none, so the
 * commas stay right at any depth (json.c says why).
 */
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
/*
 * Writes an object member's name, escaped, and its colon; the next value
 * written is that member's.  key stays the caller's.
 */
void json_key(struct json *j, const char *key);
/*
 * Each writes one value, preceded by the comma it owes.  json_str()
 * escapes s (which stays the caller's) and writes null for NULL;
 * json_double() writes a non-finite v as null, a finite one in the
 * fewest significant digits (15 to 17) that read back as v; json_bool() writes true for any non-zero v.  None
 * of them reports write errors: check ferror() on the stream.
 */
void json_str(struct json *j, const char *s); /* NULL writes null */
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_double(struct json *j, double v); /* non-finite: null */
void json_bool(struct json *j, int v);
/*
 * Ends the document with a newline and flushes the stream.  It does not
 * close open objects or arrays, nor the stream.
 */
void json_end(struct json *j);

#endif
