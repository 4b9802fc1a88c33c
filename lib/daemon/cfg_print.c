/*
 * cfg_print.c - the canonical YAML form of a loaded configuration
 * (cfg_print() in cfg.h): every key of the schema in order, defaults
 * included, durations and sizes in their largest exact unit, secrets
 * masked.  It reads back as the same configuration.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

static void
cfg_print_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(fp, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(fp, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

struct cfg_unit {
	int64_t mult;
	const char *name;
};

static const struct cfg_unit cfg_duration_units[] = {
	{3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
static const struct cfg_unit cfg_size_units[] = {
	{1073741824, "GiB"}, {1048576, "MiB"}, {1024, "KiB"}, {1, ""}};

/* Writes v in the largest unit that divides it (units largest first). */
static void
cfg_print_unit(FILE *fp, int64_t v, const struct cfg_unit *u, size_t n)
{
	size_t i = 0;

	while (i + 1 < n && (v == 0 || v % u[i].mult != 0))
		i++;
	fprintf(fp, "%" PRId64 "%s", v / u[i].mult, u[i].name);
}

static void cfg_print_mapping(FILE *fp, const struct cfg_schema *s,
			      const void *obj, int indent, int first_dash);

/* A list of strings in flow style, each masked when f is a secret. */
static void
cfg_print_strlist(FILE *fp, const struct cfg_field *f, const char *slot,
		  int indent)
{
	const struct cfg_strlist *l =
		(const struct cfg_strlist *)(const void *)slot;

	fprintf(fp, "%*s%s: [", indent, "", f->key);
	for (size_t i = 0; i < l->n; i++) {
		if (i > 0)
			fputs(", ", fp);
		if (f->flags & CFG_SECRET)
			fputs("\"********\"", fp);
		else
			cfg_print_str(fp, l->v[i]);
	}
	fputs("]\n", fp);
}

static void
cfg_print_section(FILE *fp, const struct cfg_field *f, const char *slot,
		  int indent)
{
	/*
	 * A section whose keys are all unset prints "key: {}": a bare
	 * "key:" would read back as a scalar, not a mapping.
	 */
	char *body = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&body, &len);

	if (mem != NULL) {
		cfg_print_mapping(mem, f->sub, slot, indent + 2, 0);
		if (fclose(mem) != 0)
			len = 0;
	}
	if (mem != NULL && len == 0) {
		fprintf(fp, "%*s%s: {}\n", indent, "", f->key);
	} else {
		fprintf(fp, "%*s%s:\n", indent, "", f->key);
		if (mem != NULL)
			fputs(body, fp);
		else
			cfg_print_mapping(fp, f->sub, slot, indent + 2, 0);
	}
	free(body);
}

static void
cfg_print_list(FILE *fp, const struct cfg_field *f, const char *slot,
	       int indent)
{
	const struct cfg_schema *sub = f->sub;
	const struct cfg_list *l = (const struct cfg_list *)(const void *)slot;

	if (l->n == 0) {
		fprintf(fp, "%*s%s: []\n", indent, "", f->key);
		return;
	}
	fprintf(fp, "%*s%s:\n", indent, "", f->key);
	for (size_t i = 0; i < l->n; i++)
		cfg_print_mapping(fp, sub,
				  (const char *)l->items + i * sub->size,
				  indent + 2, 1);
}

static void
cfg_print_field(FILE *fp, const struct cfg_field *f, const void *obj,
		int indent)
{
	const char *slot = (const char *)obj + f->offset;

	if (f->key == NULL)
		return; /* internal, derived fields */
	switch (f->type) {
	case CFG_STR:
	case CFG_ADDR: {
		const char *v = *(char *const *)(const void *)slot;

		if (v == NULL)
			return;
		fprintf(fp, "%*s%s: ", indent, "", f->key);
		if (f->flags & CFG_SECRET)
			fputs("\"********\"", fp);
		else
			cfg_print_str(fp, v);
		fputc('\n', fp);
		return;
	}
	case CFG_INT: {
		int64_t v;

		memcpy(&v, slot, sizeof(v));
		if (f->flags & CFG_OCTAL)
			fprintf(fp, "%*s%s: 0%" PRIo64 "\n", indent, "", f->key,
				v);
		else
			fprintf(fp, "%*s%s: %" PRId64 "\n", indent, "", f->key,
				v);
		return;
	}
	case CFG_DOUBLE: {
		double v;

		memcpy(&v, slot, sizeof(v));
		fprintf(fp, "%*s%s: %.17g\n", indent, "", f->key, v);
		return;
	}
	case CFG_BOOL: {
		bool v;

		memcpy(&v, slot, sizeof(v));
		fprintf(fp, "%*s%s: %s\n", indent, "", f->key,
			v ? "true" : "false");
		return;
	}
	case CFG_DURATION:
	case CFG_SIZE: {
		int64_t v;

		memcpy(&v, slot, sizeof(v));
		fprintf(fp, "%*s%s: ", indent, "", f->key);
		if (f->type == CFG_DURATION)
			cfg_print_unit(fp, v, cfg_duration_units,
				       sizeof(cfg_duration_units) /
					       sizeof(cfg_duration_units[0]));
		else
			cfg_print_unit(fp, v, cfg_size_units,
				       sizeof(cfg_size_units) /
					       sizeof(cfg_size_units[0]));
		fputc('\n', fp);
		return;
	}
	case CFG_ENUM: {
		const char *const *names = f->sub;
		int v;

		memcpy(&v, slot, sizeof(v));
		fprintf(fp, "%*s%s: %s\n", indent, "", f->key, names[v]);
		return;
	}
	case CFG_STRLIST:
		cfg_print_strlist(fp, f, slot, indent);
		return;
	case CFG_SECTION:
		cfg_print_section(fp, f, slot, indent);
		return;
	case CFG_LIST:
		cfg_print_list(fp, f, slot, indent);
		return;
	case CFG_POS:
		return;
	}
}

static void
cfg_print_mapping(FILE *fp, const struct cfg_schema *s, const void *obj,
		  int indent, int first_dash)
{
	/* A list item's keys line up after its "- ". */
	int body = first_dash ? indent + 2 : indent;

	for (size_t i = 0; i < s->nfields; i++) {
		const struct cfg_field *f = &s->fields[i];

		if (f->type == CFG_POS || f->key == NULL)
			continue;
		if (first_dash) {
			/* "- key: v" for the first line of a list item. */
			char *line = NULL;
			size_t len = 0;
			FILE *mem = open_memstream(&line, &len);

			if (mem == NULL)
				return;
			cfg_print_field(mem, f, obj, body);
			fclose(mem);
			if (len > 0) {
				fprintf(fp, "%*s- %s", indent, "", line + body);
				first_dash = 0;
			}
			free(line);
			continue;
		}
		cfg_print_field(fp, f, obj, body);
	}
}

void
cfg_print(FILE *fp, const struct cfg_schema *schema, const void *obj)
{
	cfg_print_mapping(fp, schema, obj, 0, 0);
}
