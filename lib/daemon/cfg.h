/*
 * cfg.h - table-driven YAML configuration with precise error positions.
 *
 * A configuration is described by a schema: a table of fields, each with a
 * key, a type, the offset of its storage in a C struct, bounds, a default and
 * flags.  cfg_load_file() parses the YAML file with libyaml into a fresh,
 * zeroed struct, applies defaults, converts and range-checks every value,
 * runs the schema's cross-field validators, and collects *every* problem as
 * "file:line:col: message" in a cfg_diag.  Nothing is half-applied: on error
 * the caller frees the new struct and keeps its old configuration.
 *
 * Nested mappings are CFG_SECTION fields (a struct embedded at the offset);
 * sequences of mappings are CFG_LIST fields (a struct cfg_list of items, each
 * of the sub-schema's size).  CFG_POS stores where something was written:
 * with a NULL key the position of the enclosing mapping, with a key the
 * position of that key's value, so validators can point at the exact text.
 */
#ifndef C4_CFG_H
#define C4_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CFG_FILE_MAX   (16u * 1024 * 1024) /* bytes of YAML we accept */
#define CFG_DEPTH_MAX  32		   /* nesting of mappings/lists */
#define CFG_NODES_MAX  1000000		   /* mappings walked (alias bombs) */
#define CFG_STR_MAX    4096		   /* one scalar value */
#define CFG_LIST_MAX   100000		   /* items in one list */
#define CFG_ERRORS_MAX 200		   /* errors kept per load */

struct cfg_pos {
	unsigned line; /* 1-based; 0 means "not from a file" */
	unsigned col;  /* 1-based */
};

/* Collected diagnostics, each already formatted "file:line:col: message". */
struct cfg_diag {
	char *file;
	char **msgs;
	size_t n, cap;
	size_t dropped; /* errors beyond CFG_ERRORS_MAX, counted only */
};

/*
 * Makes *d empty, for messages about file ("-" when NULL), which is
 * copied: the caller keeps its string.  Whatever *d held is forgotten,
 * not freed.  Cannot fail: without memory for the copy, messages name
 * the file "-".
 */
void cfg_diag_init(struct cfg_diag *d, const char *file);
/* Frees every message and the file name, and zeroes *d. */
void cfg_diag_free(struct cfg_diag *d);
/*
 * Formats one message (cut at 1023 bytes), prefixes it with the file and,
 * when pos.line is not 0, the line and column, and keeps it in d, which
 * owns it.  Past CFG_ERRORS_MAX messages, or without memory, the message
 * is only counted in d->dropped.  Never fails otherwise.
 */
void cfg_diag_add(struct cfg_diag *d, struct cfg_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Writes each message on its own line to fp, then how many were dropped
 * if any.  Does not change d.
 */
void cfg_diag_print(const struct cfg_diag *d, FILE *fp);

enum cfg_type {
	CFG_STR,      /* char *, owned */
	CFG_INT,      /* int64_t */
	CFG_DOUBLE,   /* double */
	CFG_BOOL,     /* bool */
	CFG_DURATION, /* int64_t milliseconds; text "250ms", "5s", "2m", "1h" */
	CFG_SIZE,     /* int64_t bytes; text "4MiB", "512KiB", "1GiB", "100" */
	CFG_ENUM,     /* int index into the NULL-terminated names in .sub */
	CFG_ADDR,     /* char *: "host:port", "[v6]:port" or "unix:/path" */
	CFG_STRLIST,  /* struct cfg_strlist */
	CFG_SECTION,  /* embedded struct described by .sub */
	CFG_LIST,     /* struct cfg_list of structs described by .sub */
	CFG_POS,      /* struct cfg_pos, see above */
};

#define CFG_REQUIRED 0x1u /* a missing key is an error */
#define CFG_SECRET   0x2u /* never printed by cfg_print() */
#define CFG_OCTAL    0x4u /* CFG_INT written in octal, e.g. 0660 */

struct cfg_strlist {
	char **v;
	size_t n;
};

struct cfg_list {
	void *items; /* n items of the sub-schema's size */
	size_t n;
};

struct cfg_schema;

struct cfg_field {
	const char *key;
	enum cfg_type type;
	size_t offset;
	unsigned flags;
	double min, max;  /* inclusive bounds; both 0 means unbounded */
	const char *def;  /* default, as it would be written in the file */
	const void *sub;  /* struct cfg_schema, or const char *const names[] */
	const char *help; /* one line, for documentation and errors */
};

/* Cross-field checks on one object; report with cfg_diag_add(). */
typedef void (*cfg_validate_fn)(void *obj, struct cfg_pos at,
				struct cfg_diag *d);

struct cfg_schema {
	const char *name; /* what the mapping is, e.g. "credential" */
	size_t size;	  /* sizeof the struct */
	const struct cfg_field *fields;
	size_t nfields;
	cfg_validate_fn validate; /* may be NULL */
};

#define CFG_NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Load the YAML file at path into obj (size schema->size; it is zeroed
 * first).  Returns 0 when the file is valid; -1 with every problem in d
 * otherwise (d is initialised by the call).  obj must be released with
 * cfg_free() in both cases.
 */
int cfg_load_file(const char *path, const struct cfg_schema *schema, void *obj,
		  struct cfg_diag *d);
/* The same from memory; name is used in messages in place of a path. */
int cfg_load_buffer(const char *name, const void *buf, size_t len,
		    const struct cfg_schema *schema, void *obj,
		    struct cfg_diag *d);
/*
 * Frees what cfg_load_file() or cfg_load_buffer() allocated inside obj
 * (strings, string lists, lists and their items, recursively) and sets
 * those fields to NULL / 0; scalars are left as they are.  obj itself
 * stays the caller's.  Safe on a zeroed obj and to call twice.
 */
void cfg_free(const struct cfg_schema *schema, void *obj);

/* Canonical YAML of obj, keys in schema order, secrets masked (for -nv). */
void cfg_print(FILE *fp, const struct cfg_schema *schema, const void *obj);

/*
 * Value helpers, shared with other parsers of human-written numbers.  Each
 * parses the whole of s and returns 0 with *out set, or -1 with *out
 * untouched.  cfg_parse_duration_ms() takes a non-negative number with a
 * unit of us, ms, s, m, h or d, rounded to milliseconds;
 * cfg_parse_size() a non-negative number with no unit, B, K/KiB, M/MiB,
 * G/GiB or T/TiB (powers of 1024) that comes to whole bytes;
 * cfg_parse_bool() true/yes/on or false/no/off, lower case.
 */
int cfg_parse_duration_ms(const char *s, int64_t *out);
int cfg_parse_size(const char *s, int64_t *out);
int cfg_parse_bool(const char *s, bool *out);

#endif
