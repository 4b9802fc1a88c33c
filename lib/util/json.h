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
	int depth;
	int first[JSON_DEPTH_MAX]; /* no member written yet at this depth */
	int after_key;
};

void json_init(struct json *j, FILE *fp);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s); /* NULL writes null */
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_double(struct json *j, double v); /* non-finite: null */
void json_bool(struct json *j, int v);
/* Ends the document with a newline. */
void json_end(struct json *j);

#endif
