/*
 * test_cfg_print.c - the canonical YAML of a configuration, printed from
 * objects built here (not loaded) and compared with the exact expected
 * text: every field type, string escapes, octal, doubles at full
 * precision, durations and sizes in their largest exact unit, secrets
 * masked (strings and string lists), unset strings left out, empty
 * sections as {} and empty lists as [], list items whose first key is
 * unset, and position fields never printed.
 */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "tmain.h"

enum shade { SHADE_DARK, SHADE_LIGHT };
static const char *const shade_names[] = {"dark", "light", NULL};

struct inner {
	char *host;
	char *note;
};

struct item {
	char *label;
	int64_t size;
	struct cfg_pos pos;
};

struct pconf {
	char *text;
	char *token;
	char *unset;
	int64_t perm;
	int64_t delta;
	double ratio;
	double tenth;
	bool on;
	int64_t wait;
	int64_t idle;
	int64_t big;
	int64_t none;
	int shade;
	char *addr;
	struct cfg_strlist words;
	struct cfg_strlist keys;
	struct inner full;
	struct inner empty;
	struct cfg_list items;
	struct cfg_list nothing;
	int64_t derived;
	struct cfg_pos pos;
};

/* A field of struct st without bounds, default or help. */
#define FLD(st, key, type, member, flags, sub)                                 \
	{                                                                      \
		key, type, offsetof(struct st, member), flags, 0, 0, NULL,     \
			sub, NULL                                              \
	}
#define F(key, type, member, flags, sub)                                       \
	FLD(pconf, key, type, member, flags, sub)

static const struct cfg_field inner_fields[] = {
	FLD(inner, "host", CFG_STR, host, 0, NULL),
	FLD(inner, "note", CFG_STR, note, 0, NULL),
};
static const struct cfg_schema inner_schema = {"inner", sizeof(struct inner),
					       inner_fields,
					       CFG_NFIELDS(inner_fields), NULL};

static const struct cfg_field item_fields[] = {
	FLD(item, "label", CFG_STR, label, 0, NULL),
	FLD(item, "label", CFG_POS, pos, 0, NULL),
	FLD(item, "size", CFG_SIZE, size, 0, NULL),
};
static const struct cfg_schema item_schema = {"item", sizeof(struct item),
					      item_fields,
					      CFG_NFIELDS(item_fields), NULL};

static const struct cfg_field pconf_fields[] = {
	F("text", CFG_STR, text, 0, NULL),
	F("token", CFG_STR, token, CFG_SECRET, NULL),
	F("unset", CFG_STR, unset, 0, NULL),
	F("perm", CFG_INT, perm, CFG_OCTAL, NULL),
	F("delta", CFG_INT, delta, 0, NULL),
	F("ratio", CFG_DOUBLE, ratio, 0, NULL),
	F("tenth", CFG_DOUBLE, tenth, 0, NULL),
	F("on", CFG_BOOL, on, 0, NULL),
	F("wait", CFG_DURATION, wait, 0, NULL),
	F("idle", CFG_DURATION, idle, 0, NULL),
	F("big", CFG_SIZE, big, 0, NULL),
	F("none", CFG_SIZE, none, 0, NULL),
	F("shade", CFG_ENUM, shade, 0, shade_names),
	F("addr", CFG_ADDR, addr, 0, NULL),
	F("words", CFG_STRLIST, words, 0, NULL),
	F("keys", CFG_STRLIST, keys, CFG_SECRET, NULL),
	F("full", CFG_SECTION, full, 0, &inner_schema),
	F("empty", CFG_SECTION, empty, 0, &inner_schema),
	F("items", CFG_LIST, items, 0, &item_schema),
	F("nothing", CFG_LIST, nothing, 0, &item_schema),
	F(NULL, CFG_INT, derived, 0, NULL),
	F(NULL, CFG_POS, pos, 0, NULL),
};
static const struct cfg_schema pconf_schema = {"print", sizeof(struct pconf),
					       pconf_fields,
					       CFG_NFIELDS(pconf_fields), NULL};

/* What cfg_print() writes for obj under schema s, in buf of size n. */
static const char *
printed(const struct cfg_schema *s, const void *obj, char *buf, size_t n)
{
	FILE *fp = fmemopen(buf, n, "w");

	ck_assert_ptr_nonnull(fp);
	cfg_print(fp, s, obj);
	ck_assert_int_lt(ftell(fp), (long)n - 1); /* it all fitted */
	ck_assert_int_eq(fclose(fp), 0);
	return buf;
}

START_TEST(test_print_every_type)
{
	static const char want[] = "text: \"say \\\"hi\\\" \\\\ \\x01\\x0a\"\n"
				   "token: \"********\"\n"
				   "perm: 0640\n"
				   "delta: -7\n"
				   "ratio: 2.5\n"
				   "tenth: 0.10000000000000001\n"
				   "on: true\n"
				   "wait: 90s\n"
				   "idle: 0ms\n"
				   "big: 5GiB\n"
				   "none: 0\n"
				   "shade: light\n"
				   "addr: \"[::1]:80\"\n"
				   "words: [\"a b\", \"c\"]\n"
				   "keys: [\"********\", \"********\"]\n"
				   "full:\n"
				   "  host: \"h1\"\n"
				   "empty: {}\n"
				   "items:\n"
				   "  - label: \"first\"\n"
				   "    size: 3KiB\n"
				   "  - size: 1025\n"
				   "nothing: []\n";
	char *words[] = {"a b", "c"};
	char *keys[] = {"k1", "k2"};
	struct item items[2] = {{"first", 3072, {0}}, {NULL, 1025, {0}}};
	struct pconf c;
	char out[4096];

	memset(&c, 0, sizeof(c));
	c.text = "say \"hi\" \\ \x01\n";
	c.token = "hunter2";
	c.perm = 0640;
	c.delta = -7;
	c.ratio = 2.5;
	c.tenth = 0.1;
	c.on = true;
	c.wait = 90000;
	c.big = 5ll << 30;
	c.shade = SHADE_LIGHT;
	c.addr = "[::1]:80";
	c.words = (struct cfg_strlist){words, 2};
	c.keys = (struct cfg_strlist){keys, 2};
	c.full.host = "h1";
	c.items = (struct cfg_list){items, 2};
	c.derived = 99;
	printed(&pconf_schema, &c, out, sizeof(out));
	ck_assert_str_eq(out, want);
	ck_assert_ptr_null(strstr(out, "hunter2"));
	ck_assert_ptr_null(strstr(out, "k1"));
}
END_TEST

START_TEST(test_print_zeroed)
{
	/* Nothing set: scalars at zero, no strings, empty collections. */
	static const char want[] = "perm: 00\n"
				   "delta: 0\n"
				   "ratio: 0\n"
				   "tenth: 0\n"
				   "on: false\n"
				   "wait: 0ms\n"
				   "idle: 0ms\n"
				   "big: 0\n"
				   "none: 0\n"
				   "shade: dark\n"
				   "words: []\n"
				   "keys: []\n"
				   "full: {}\n"
				   "empty: {}\n"
				   "items: []\n"
				   "nothing: []\n";
	struct pconf c;
	char out[4096];

	memset(&c, 0, sizeof(c));
	ck_assert_str_eq(printed(&pconf_schema, &c, out, sizeof(out)), want);
}
END_TEST

START_TEST(test_printed_reads_back)
{
	/* Secrets aside, the text loads as the same object. */
	char *words[] = {"x, y", "[z]"};
	struct item items[1] = {{"only", 2 << 20, {0}}};
	struct pconf c, c2;
	struct cfg_diag d;
	char out[4096], out2[4096];

	memset(&c, 0, sizeof(c));
	c.text = "a: b # c";
	c.perm = 0755;
	c.ratio = 1e-9;
	c.wait = 61000;
	c.big = 1536;
	c.shade = SHADE_LIGHT;
	c.words = (struct cfg_strlist){words, 2};
	c.full.note = "n";
	c.items = (struct cfg_list){items, 1};
	printed(&pconf_schema, &c, out, sizeof(out));
	ck_assert_msg(cfg_load_buffer("printed", out, strlen(out),
				      &pconf_schema, &c2, &d) == 0,
		      "%s", d.n ? d.msgs[0] : "");
	ck_assert_str_eq(c2.text, c.text);
	ck_assert_int_eq(c2.perm, 0755);
	ck_assert(c2.ratio == 1e-9);
	ck_assert_int_eq(c2.wait, 61000);
	ck_assert_int_eq(c2.big, 1536);
	ck_assert_uint_eq(c2.words.n, 2);
	ck_assert_str_eq(c2.words.v[1], "[z]");
	ck_assert_str_eq(c2.full.note, "n");
	ck_assert_uint_eq(c2.items.n, 1);
	printed(&pconf_schema, &c2, out2, sizeof(out2));
	ck_assert_str_eq(out2, out);
	cfg_diag_free(&d);
	cfg_free(&pconf_schema, &c2);
}
END_TEST

TMAIN("cfg-print", test_print_every_type, test_print_zeroed,
      test_printed_reads_back)
