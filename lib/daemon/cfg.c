/*
 * cfg.c - load YAML into C structs described by field tables.
 */
#include "cfg.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "net.h"

struct cfg_ctx {
	yaml_document_t *doc;
	struct cfg_diag *d;
	size_t visited;
};

/* ---- diagnostics ----------------------------------------------------------
 */

void
cfg_diag_init(struct cfg_diag *d, const char *file)
{
	memset(d, 0, sizeof(*d));
	d->file = strdup(file != NULL ? file : "-");
}

void
cfg_diag_free(struct cfg_diag *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->msgs[i]);
	free(d->msgs);
	free(d->file);
	memset(d, 0, sizeof(*d));
}

void
cfg_diag_add(struct cfg_diag *d, struct cfg_pos pos, const char *fmt, ...)
{
	char msg[1024], *line;
	va_list ap;
	int n;

	if (d->n >= CFG_ERRORS_MAX) {
		d->dropped++;
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		char **v = realloc(d->msgs, cap * sizeof(*v));

		if (v == NULL) {
			d->dropped++;
			return;
		}
		d->msgs = v;
		d->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (pos.line > 0)
		n = asprintf(&line, "%s:%u:%u: %s", d->file ? d->file : "-",
			     pos.line, pos.col, msg);
	else
		n = asprintf(&line, "%s: %s", d->file ? d->file : "-", msg);
	if (n < 0) {
		d->dropped++;
		return;
	}
	d->msgs[d->n++] = line;
}

void
cfg_diag_print(const struct cfg_diag *d, FILE *fp)
{
	for (size_t i = 0; i < d->n; i++)
		fprintf(fp, "%s\n", d->msgs[i]);
	if (d->dropped > 0)
		fprintf(fp, "%s: %zu more errors not shown\n", d->file,
			d->dropped);
}

/* ---- value parsing --------------------------------------------------------
 */

/* Splits "12.5ms" into 12.5 and "ms"; the number part is required. */
static int
cfg_split_number(const char *s, double *num, const char **unit)
{
	char *end;

	if (s[0] == '\0' || s[0] == ' ' || s[0] == '+')
		return -1;
	errno = 0;
	*num = strtod(s, &end);
	if (end == s || errno != 0 || !isfinite(*num))
		return -1;
	*unit = end;
	return 0;
}

struct cfg_unit {
	const char *unit;
	double mult;
};
#define CFG_UNITS(u) (sizeof(u) / sizeof((u)[0]))

/*
 * Parses s as a number not below 0 followed by one of the n units: *v gets
 * the number times the unit's multiplier.  0, or -1 for anything else.
 */
static int
cfg_parse_units(const char *s, const struct cfg_unit *units, size_t n,
		double *v)
{
	const char *unit;

	if (cfg_split_number(s, v, &unit) < 0 || *v < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(unit, units[i].unit) == 0) {
			*v *= units[i].mult;
			return 0;
		}
	}
	return -1;
}

int
cfg_parse_duration_ms(const char *s, int64_t *out)
{
	static const struct cfg_unit units[] = {
		{"us", 0.001}, {"ms", 1},      {"s", 1000},
		{"m", 60000},  {"h", 3600000}, {"d", 86400000}};
	double v;

	if (cfg_parse_units(s, units, CFG_UNITS(units), &v) < 0 || v > 9.2e15)
		return -1;
	*out = (int64_t)llround(v);
	return 0;
}

int
cfg_parse_size(const char *s, int64_t *out)
{
	static const struct cfg_unit units[] = {{"", 1},
						{"B", 1},
						{"K", 1024.0},
						{"KiB", 1024.0},
						{"M", 1048576.0},
						{"MiB", 1048576.0},
						{"G", 1073741824.0},
						{"GiB", 1073741824.0},
						{"T", 1099511627776.0},
						{"TiB", 1099511627776.0}};
	double v;

	if (cfg_parse_units(s, units, CFG_UNITS(units), &v) < 0 || v > 9.2e18 ||
	    v != floor(v))
		return -1;
	*out = (int64_t)v;
	return 0;
}

int
cfg_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", NULL};
	static const char *const no[] = {"false", "no", "off", NULL};

	for (int i = 0; yes[i] != NULL; i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static int
cfg_parse_int(const char *s, int base, int64_t *out)
{
	char *end;
	long long v;

	if (s[0] == '\0')
		return -1;
	errno = 0;
	v = strtoll(s, &end, base);
	if (*end != '\0' || errno != 0)
		return -1;
	*out = v;
	return 0;
}

/* ---- the walk -------------------------------------------------------------
 */

static struct cfg_pos
cfg_node_pos(const yaml_node_t *n)
{
	struct cfg_pos p = {(unsigned)n->start_mark.line + 1,
			    (unsigned)n->start_mark.column + 1};
	return p;
}

static const char *
cfg_node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

static int cfg_load_mapping(struct cfg_ctx *c, const struct cfg_schema *s,
			    void *obj, yaml_node_t *map, int depth);

static int
cfg_bounds_ok(const struct cfg_field *f, double v)
{
	if (f->min == 0 && f->max == 0)
		return 1;
	return v >= f->min && v <= f->max;
}

static void
cfg_bounds_error(struct cfg_ctx *c, struct cfg_pos p, const struct cfg_field *f,
		 const char *text)
{
	cfg_diag_add(c->d, p, "%s: %s is out of range [%.15g, %.15g]", f->key,
		     text, f->min, f->max);
}

/*
 * Stores an int64 written with units (durations, sizes): parse converts
 * the text, what describes the expected form, and the range error shows
 * the bounds with unit after each bound and tail after the range.
 */
static int
cfg_store_unit(struct cfg_ctx *c, const struct cfg_field *f, char *slot,
	       const char *text, struct cfg_pos p,
	       int (*parse)(const char *, int64_t *), const char *what,
	       const char *unit, const char *tail)
{
	int64_t iv;

	if (parse(text, &iv) < 0) {
		cfg_diag_add(c->d, p, "%s: expected %s, got '%s'", f->key, what,
			     text);
		return -1;
	}
	if (!cfg_bounds_ok(f, (double)iv)) {
		cfg_diag_add(c->d, p,
			     "%s: %s is out of range [%.15g%s, %.15g%s]%s",
			     f->key, text, f->min, unit, f->max, unit, tail);
		return -1;
	}
	memcpy(slot, &iv, sizeof(iv));
	return 0;
}

/*
 * Converts one scalar for field f and stores it.  p is where the value was
 * written (for defaults, a zero position).  Returns 0 or -1 after reporting.
 */
static int
cfg_store_scalar(struct cfg_ctx *c, const struct cfg_field *f, void *obj,
		 const char *text, struct cfg_pos p)
{
	char *slot = (char *)obj + f->offset;
	char err[128];
	int64_t iv;
	double dv;
	bool bv;

	if (strlen(text) > CFG_STR_MAX) {
		cfg_diag_add(c->d, p, "%s: value longer than %d characters",
			     f->key, CFG_STR_MAX);
		return -1;
	}
	switch (f->type) {
	case CFG_STR:
	case CFG_ADDR: {
		char **sp = (char **)(void *)slot;

		if (f->type == CFG_ADDR) {
			struct net_addr a;

			if (net_addr_parse(text, &a, err, sizeof(err)) < 0) {
				cfg_diag_add(c->d, p,
					     "%s: invalid address '%s': %s",
					     f->key, text, err);
				return -1;
			}
		} else if ((f->flags & CFG_REQUIRED) && text[0] == '\0') {
			cfg_diag_add(c->d, p, "%s: must not be empty", f->key);
			return -1;
		}
		free(*sp);
		*sp = strdup(text);
		return *sp ? 0 : -1;
	}
	case CFG_INT:
		if (cfg_parse_int(text, (f->flags & CFG_OCTAL) ? 8 : 10, &iv) <
		    0) {
			cfg_diag_add(c->d, p,
				     "%s: expected an integer%s, got '%s'",
				     f->key,
				     (f->flags & CFG_OCTAL) ? " in octal" : "",
				     text);
			return -1;
		}
		if (!cfg_bounds_ok(f, (double)iv)) {
			if (f->flags & CFG_OCTAL)
				cfg_diag_add(
					c->d, p,
					"%s: %s is out of range [%#o, %#o]",
					f->key, text, (unsigned)f->min,
					(unsigned)f->max);
			else
				cfg_bounds_error(c, p, f, text);
			return -1;
		}
		memcpy(slot, &iv, sizeof(iv));
		return 0;
	case CFG_DOUBLE: {
		const char *unit;

		if (cfg_split_number(text, &dv, &unit) < 0 || *unit != '\0') {
			cfg_diag_add(c->d, p, "%s: expected a number, got '%s'",
				     f->key, text);
			return -1;
		}
		if (!cfg_bounds_ok(f, dv)) {
			cfg_bounds_error(c, p, f, text);
			return -1;
		}
		memcpy(slot, &dv, sizeof(dv));
		return 0;
	}
	case CFG_BOOL:
		if (cfg_parse_bool(text, &bv) < 0) {
			cfg_diag_add(c->d, p,
				     "%s: expected true or false, got '%s'",
				     f->key, text);
			return -1;
		}
		memcpy(slot, &bv, sizeof(bv));
		return 0;
	case CFG_DURATION:
		return cfg_store_unit(
			c, f, slot, text, p, cfg_parse_duration_ms,
			"a duration such as 500ms, 5s, 2m or 1h", "ms", "");
	case CFG_SIZE:
		return cfg_store_unit(c, f, slot, text, p, cfg_parse_size,
				      "a size such as 4096, 64KiB or 4MiB", "",
				      " bytes");
	case CFG_ENUM: {
		const char *const *names = f->sub;
		char choices[512] = "";

		for (int i = 0; names[i] != NULL; i++) {
			if (strcmp(text, names[i]) == 0) {
				memcpy(slot, &i, sizeof(i));
				return 0;
			}
			if (i > 0)
				strncat(choices, ", ",
					sizeof(choices) - strlen(choices) - 1);
			strncat(choices, names[i],
				sizeof(choices) - strlen(choices) - 1);
		}
		cfg_diag_add(c->d, p, "%s: '%s' is not one of: %s", f->key,
			     text, choices);
		return -1;
	}
	default:
		cfg_diag_add(c->d, p, "%s: expected %s", f->key,
			     f->type == CFG_STRLIST ? "a list of strings"
						    : "a mapping or list");
		return -1;
	}
}

/*
 * Sets *n to the number of items of the sequence seq, the value of f;
 * with more than CFG_LIST_MAX, reports it and returns -1.
 */
static int
cfg_seq_len(struct cfg_ctx *c, const struct cfg_field *f, yaml_node_t *seq,
	    size_t *n)
{
	*n = (size_t)(seq->data.sequence.items.top -
		      seq->data.sequence.items.start);
	if (*n > CFG_LIST_MAX) {
		cfg_diag_add(c->d, cfg_node_pos(seq), "%s: more than %d items",
			     f->key, CFG_LIST_MAX);
		return -1;
	}
	return 0;
}

static int
cfg_load_strlist(struct cfg_ctx *c, const struct cfg_field *f, void *obj,
		 yaml_node_t *seq)
{
	struct cfg_strlist *l =
		(struct cfg_strlist *)(void *)((char *)obj + f->offset);
	yaml_node_item_t *it;
	size_t n;
	int rc = 0;

	if (cfg_seq_len(c, f, seq, &n) < 0)
		return -1;
	l->v = calloc(n ? n : 1, sizeof(char *));
	if (l->v == NULL)
		return -1;
	for (it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++) {
		yaml_node_t *item = yaml_document_get_node(c->doc, *it);

		if (item == NULL || item->type != YAML_SCALAR_NODE) {
			cfg_diag_add(c->d,
				     item ? cfg_node_pos(item)
					  : cfg_node_pos(seq),
				     "%s: items must be strings, got %s",
				     f->key, item ? cfg_node_kind(item) : "?");
			rc = -1;
			continue;
		}
		if (strlen((const char *)item->data.scalar.value) >
		    CFG_STR_MAX) {
			cfg_diag_add(c->d, cfg_node_pos(item),
				     "%s: item longer than %d characters",
				     f->key, CFG_STR_MAX);
			rc = -1;
			continue;
		}
		l->v[l->n] = strdup((const char *)item->data.scalar.value);
		if (l->v[l->n] == NULL)
			return -1;
		l->n++;
	}
	return rc;
}

static int
cfg_load_list(struct cfg_ctx *c, const struct cfg_field *f, void *obj,
	      yaml_node_t *seq, int depth)
{
	const struct cfg_schema *sub = f->sub;
	struct cfg_list *l =
		(struct cfg_list *)(void *)((char *)obj + f->offset);
	yaml_node_item_t *it;
	size_t n;
	int rc = 0;

	if (cfg_seq_len(c, f, seq, &n) < 0)
		return -1;
	l->items = calloc(n ? n : 1, sub->size);
	if (l->items == NULL)
		return -1;
	for (it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++) {
		yaml_node_t *item = yaml_document_get_node(c->doc, *it);
		void *elem = (char *)l->items + l->n * sub->size;

		/* Counted even on error, so cfg_free() releases its fields. */
		l->n++;
		if (item == NULL || item->type != YAML_MAPPING_NODE) {
			cfg_diag_add(
				c->d,
				item ? cfg_node_pos(item) : cfg_node_pos(seq),
				"%s: each item must be a %s mapping, got %s",
				f->key, sub->name,
				item ? cfg_node_kind(item) : "?");
			rc = -1;
			continue;
		}
		if (cfg_load_mapping(c, sub, elem, item, depth + 1) < 0)
			rc = -1;
	}
	return rc;
}

static int
cfg_apply_default(struct cfg_ctx *c, const struct cfg_field *f, void *obj)
{
	struct cfg_pos none = {0, 0};

	if (f->def == NULL)
		return 0;
	return cfg_store_scalar(c, f, obj, f->def, none);
}

/* Fills every default of s (recursing into sections), before the file. */
static void
cfg_defaults(struct cfg_ctx *c, const struct cfg_schema *s, void *obj)
{
	for (size_t i = 0; i < s->nfields; i++) {
		const struct cfg_field *f = &s->fields[i];

		if (f->type == CFG_SECTION)
			cfg_defaults(c, f->sub, (char *)obj + f->offset);
		else if (f->type != CFG_POS && f->type != CFG_LIST &&
			 f->type != CFG_STRLIST)
			cfg_apply_default(c, f, obj);
	}
}

static int
cfg_load_value(struct cfg_ctx *c, const struct cfg_field *f, void *obj,
	       yaml_node_t *val, int depth)
{
	if (f->type == CFG_POS) {
		struct cfg_pos p = cfg_node_pos(val);

		memcpy((char *)obj + f->offset, &p, sizeof(p));
		return 0;
	}
	switch (val->type) {
	case YAML_SCALAR_NODE:
		if (f->type == CFG_SECTION || f->type == CFG_LIST ||
		    f->type == CFG_STRLIST)
			break; /* reported below, as for any wrong kind */
		return cfg_store_scalar(c, f, obj,
					(const char *)val->data.scalar.value,
					cfg_node_pos(val));
	case YAML_SEQUENCE_NODE:
		if (f->type == CFG_STRLIST)
			return cfg_load_strlist(c, f, obj, val);
		if (f->type == CFG_LIST)
			return cfg_load_list(c, f, obj, val, depth);
		break;
	case YAML_MAPPING_NODE:
		if (f->type == CFG_SECTION)
			return cfg_load_mapping(c, f->sub,
						(char *)obj + f->offset, val,
						depth + 1);
		break;
	default:
		break;
	}
	cfg_diag_add(c->d, cfg_node_pos(val), "%s: expected %s, got %s", f->key,
		     f->type == CFG_SECTION   ? "a mapping"
		     : f->type == CFG_LIST    ? "a list of mappings"
		     : f->type == CFG_STRLIST ? "a list of strings"
					      : "a single value",
		     cfg_node_kind(val));
	return -1;
}

static int
cfg_load_mapping(struct cfg_ctx *c, const struct cfg_schema *s, void *obj,
		 yaml_node_t *map, int depth)
{
	yaml_node_pair_t *pair;
	unsigned char seen[256];
	int rc = 0;

	if (depth > CFG_DEPTH_MAX) {
		cfg_diag_add(c->d, cfg_node_pos(map), "nesting deeper than %d",
			     CFG_DEPTH_MAX);
		return -1;
	}
	if (++c->visited > CFG_NODES_MAX) {
		cfg_diag_add(c->d, cfg_node_pos(map),
			     "document too large (more than %d mappings)",
			     CFG_NODES_MAX);
		return -1;
	}
	memset(seen, 0, sizeof(seen));
	cfg_defaults(c, s, obj);
	for (size_t i = 0; i < s->nfields && i < sizeof(seen); i++) {
		const struct cfg_field *f = &s->fields[i];

		if (f->type == CFG_POS && f->key == NULL) {
			struct cfg_pos p = cfg_node_pos(map);

			memcpy((char *)obj + f->offset, &p, sizeof(p));
		}
	}
	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(c->doc, pair->value);
		const char *key;
		int found = 0;

		if (k == NULL || v == NULL)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			cfg_diag_add(c->d, cfg_node_pos(k),
				     "keys must be plain strings, got %s",
				     cfg_node_kind(k));
			rc = -1;
			continue;
		}
		key = (const char *)k->data.scalar.value;
		for (size_t i = 0; i < s->nfields; i++) {
			const struct cfg_field *f = &s->fields[i];

			if (f->key == NULL || strcmp(f->key, key) != 0)
				continue;
			if (f->type != CFG_POS && i < sizeof(seen)) {
				if (seen[i]) {
					cfg_diag_add(c->d, cfg_node_pos(k),
						     "duplicate key '%s'", key);
					rc = -1;
					found = 1;
					break;
				}
				seen[i] = 1;
			}
			found = 1;
			if (cfg_load_value(c, f, obj, v, depth) < 0)
				rc = -1;
		}
		if (!found) {
			char choices[512] = "";

			for (size_t i = 0; i < s->nfields; i++) {
				const struct cfg_field *f = &s->fields[i];

				if (f->key == NULL || f->type == CFG_POS)
					continue;
				if (choices[0] != '\0')
					strncat(choices, ", ",
						sizeof(choices) -
							strlen(choices) - 1);
				strncat(choices, f->key,
					sizeof(choices) - strlen(choices) - 1);
			}
			cfg_diag_add(c->d, cfg_node_pos(k),
				     "unknown key '%s' in %s (known: %s)", key,
				     s->name, choices);
			rc = -1;
		}
	}
	for (size_t i = 0; i < s->nfields && i < sizeof(seen); i++) {
		const struct cfg_field *f = &s->fields[i];

		if ((f->flags & CFG_REQUIRED) && !seen[i]) {
			cfg_diag_add(c->d, cfg_node_pos(map),
				     "%s: missing required key '%s'", s->name,
				     f->key);
			rc = -1;
		}
	}
	if (rc == 0 && s->validate != NULL) {
		size_t before = c->d->n + c->d->dropped;

		s->validate(obj, cfg_node_pos(map), c->d);
		if (c->d->n + c->d->dropped != before)
			rc = -1;
	}
	return rc;
}

int
cfg_load_buffer(const char *name, const void *buf, size_t len,
		const struct cfg_schema *schema, void *obj, struct cfg_diag *d)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct cfg_ctx c;
	yaml_node_t *root;
	struct cfg_pos top = {1, 1};
	int rc = -1;

	cfg_diag_init(d, name);
	memset(obj, 0, schema->size);
	if (len > CFG_FILE_MAX) {
		cfg_diag_add(d, top, "file larger than %u bytes", CFG_FILE_MAX);
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		cfg_diag_add(d, top, "out of memory");
		return -1;
	}
	/* libyaml insists on a buffer even for zero bytes. */
	yaml_parser_set_input_string(&parser,
				     buf != NULL ? buf : (const void *)"",
				     buf != NULL ? len : 0);
	if (!yaml_parser_load(&parser, &doc)) {
		struct cfg_pos p = {(unsigned)parser.problem_mark.line + 1,
				    (unsigned)parser.problem_mark.column + 1};

		cfg_diag_add(d, p, "YAML syntax error: %s%s%s",
			     parser.problem ? parser.problem : "unknown",
			     parser.context ? " " : "",
			     parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		return -1;
	}
	memset(&c, 0, sizeof(c));
	c.doc = &doc;
	c.d = d;
	root = yaml_document_get_root_node(&doc);
	if (root == NULL ||
	    (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)) {
		/* An empty file: defaults only; required keys still missing. */
		yaml_mapping_style_t style = YAML_BLOCK_MAPPING_STYLE;
		yaml_document_t empty;
		yaml_mark_t m = {0, 0, 0};

		yaml_document_initialize(&empty, NULL, NULL, NULL, 1, 1);
		yaml_document_add_mapping(&empty, NULL, style);
		empty.nodes.start[0].start_mark = m;
		c.doc = &empty;
		rc = cfg_load_mapping(&c, schema, obj,
				      yaml_document_get_root_node(&empty), 0);
		yaml_document_delete(&empty);
	} else if (root->type != YAML_MAPPING_NODE) {
		cfg_diag_add(d, cfg_node_pos(root),
			     "the configuration must be a mapping, got %s",
			     cfg_node_kind(root));
	} else {
		rc = cfg_load_mapping(&c, schema, obj, root, 0);
	}
	/* A second document in one file is a mistake worth reporting. */
	if (rc == 0) {
		yaml_document_t next;

		if (yaml_parser_load(&parser, &next)) {
			yaml_node_t *r2 = yaml_document_get_root_node(&next);

			if (r2 != NULL) {
				cfg_diag_add(d, cfg_node_pos(r2),
					     "more than one YAML document");
				rc = -1;
			}
			yaml_document_delete(&next);
		} else {
			struct cfg_pos p = {
				(unsigned)parser.problem_mark.line + 1,
				(unsigned)parser.problem_mark.column + 1};

			cfg_diag_add(d, p, "YAML syntax error: %s%s%s",
				     parser.problem ? parser.problem
						    : "unknown",
				     parser.context ? " " : "",
				     parser.context ? parser.context : "");
			rc = -1;
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (d->n > 0 || d->dropped > 0)
		rc = -1;
	return rc;
}

int
cfg_load_file(const char *path, const struct cfg_schema *schema, void *obj,
	      struct cfg_diag *d)
{
	struct cfg_pos top = {0, 0};
	struct stat st;
	char *buf = NULL;
	ssize_t got;
	size_t off = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		cfg_diag_init(d, path);
		memset(obj, 0, schema->size);
		cfg_diag_add(d, top, "cannot read: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		cfg_diag_init(d, path);
		memset(obj, 0, schema->size);
		cfg_diag_add(d, top, "cannot read: %s",
			     S_ISDIR(st.st_mode) ? strerror(EISDIR)
						 : "not a regular file");
		return -1;
	}
	if ((size_t)st.st_size > CFG_FILE_MAX) {
		close(fd);
		cfg_diag_init(d, path);
		memset(obj, 0, schema->size);
		cfg_diag_add(d, top, "file larger than %u bytes", CFG_FILE_MAX);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		cfg_diag_init(d, path);
		memset(obj, 0, schema->size);
		cfg_diag_add(d, top, "out of memory");
		return -1;
	}
	while (off < (size_t)st.st_size) {
		got = read(fd, buf + off, (size_t)st.st_size - off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;

			close(fd);
			free(buf);
			cfg_diag_init(d, path);
			memset(obj, 0, schema->size);
			cfg_diag_add(d, top, "cannot read: %s", strerror(e));
			return -1;
		}
		if (got == 0)
			break;
		off += (size_t)got;
	}
	close(fd);
	rc = cfg_load_buffer(path, buf, off, schema, obj, d);
	free(buf);
	return rc;
}

void
cfg_free(const struct cfg_schema *s, void *obj)
{
	for (size_t i = 0; i < s->nfields; i++) {
		const struct cfg_field *f = &s->fields[i];
		char *slot = (char *)obj + f->offset;

		switch (f->type) {
		case CFG_STR:
		case CFG_ADDR: {
			char **sp = (char **)(void *)slot;

			free(*sp);
			*sp = NULL;
			break;
		}
		case CFG_STRLIST: {
			struct cfg_strlist *l =
				(struct cfg_strlist *)(void *)slot;

			for (size_t j = 0; j < l->n; j++)
				free(l->v[j]);
			free(l->v);
			l->v = NULL;
			l->n = 0;
			break;
		}
		case CFG_SECTION:
			cfg_free(f->sub, slot);
			break;
		case CFG_LIST: {
			const struct cfg_schema *sub = f->sub;
			struct cfg_list *l = (struct cfg_list *)(void *)slot;

			for (size_t j = 0; j < l->n; j++)
				cfg_free(sub, (char *)l->items + j * sub->size);
			free(l->items);
			l->items = NULL;
			l->n = 0;
			break;
		}
		default:
			break;
		}
	}
}
