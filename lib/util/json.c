/*
 * json.c - streaming JSON writer.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

void
json_init(struct json *j, FILE *fp)
{
	j->fp = fp;
	j->depth = 0;
	j->first[0] = 1;
	j->after_key = 0;
}

/*
 * The "no member yet" flag of the current level.  Levels from
 * JSON_DEPTH_MAX - 1 down share the last slot: a level's flag only has to
 * survive until its first child opens, and json_close() sets the flag of
 * the level it returns to, which then holds that child.
 */
static int *
json_first(struct json *j)
{
	return &j->first[j->depth < JSON_DEPTH_MAX ? j->depth
						   : JSON_DEPTH_MAX - 1];
}

/* Writes the separator owed before a value or key at the current depth. */
static void
json_sep(struct json *j)
{
	int *first = json_first(j);

	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (!*first)
		fputc(',', j->fp);
	*first = 0;
}

static void
json_open(struct json *j, char c)
{
	json_sep(j);
	fputc(c, j->fp);
	j->depth++;
	*json_first(j) = 1;
}

static void
json_close(struct json *j, char c)
{
	fputc(c, j->fp);
	if (j->depth > 0)
		j->depth--;
	*json_first(j) = 0; /* the level holds the container just closed */
}

void
json_obj_begin(struct json *j)
{
	json_open(j, '{');
}

void
json_obj_end(struct json *j)
{
	json_close(j, '}');
}

void
json_arr_begin(struct json *j)
{
	json_open(j, '[');
}

void
json_arr_end(struct json *j)
{
	json_close(j, ']');
}

static void
json_quote(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", fp);
			break;
		case '\\':
			fputs("\\\\", fp);
			break;
		case '\n':
			fputs("\\n", fp);
			break;
		case '\r':
			fputs("\\r", fp);
			break;
		case '\t':
			fputs("\\t", fp);
			break;
		default:
			if (*p < 0x20)
				fprintf(fp, "\\u%04x", *p);
			else
				fputc(*p, fp);
		}
	}
	fputc('"', fp);
}

void
json_key(struct json *j, const char *key)
{
	json_sep(j);
	json_quote(j->fp, key);
	fputc(':', j->fp);
	j->after_key = 1;
}

void
json_str(struct json *j, const char *s)
{
	json_sep(j);
	if (s == NULL)
		fputs("null", j->fp);
	else
		json_quote(j->fp, s);
}

void
json_u64(struct json *j, uint64_t v)
{
	json_sep(j);
	fprintf(j->fp, "%" PRIu64, v);
}

void
json_i64(struct json *j, int64_t v)
{
	json_sep(j);
	fprintf(j->fp, "%" PRId64, v);
}

void
json_double(struct json *j, double v)
{
	char buf[32];
	int prec;

	json_sep(j);
	if (!isfinite(v)) {
		fputs("null", j->fp);
		return;
	}
	/* the shortest form that reads back as v: 0.9, not 0.90000000000000002
	 */
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, j->fp);
}

void
json_bool(struct json *j, int v)
{
	json_sep(j);
	fputs(v ? "true" : "false", j->fp);
}

void
json_end(struct json *j)
{
	fputc('\n', j->fp);
	fflush(j->fp);
}
