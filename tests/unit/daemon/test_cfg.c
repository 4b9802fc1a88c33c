/*
 * test_cfg.c - the table-driven YAML loader: every field type, defaults,
 * required and unknown keys, exact "file:line:col: message" diagnostics,
 * the limits, canonical printing and the value helpers.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"

/* ---- the test schema -------------------------------------------------------
 */

enum color { COLOR_RED, COLOR_GREEN, COLOR_BLUE };
static const char *const color_names[] = {"red", "green", "blue", NULL};

struct limits {
	int64_t max_conns;
	int64_t timeout; /* ms */
	int64_t buf;	 /* bytes */
	double ratio;
};

struct peer {
	char *name;
	struct cfg_pos name_pos; /* where the name's value was written */
	struct cfg_pos pos;	 /* where the item's mapping starts */
	int64_t weight;
	char *addr;
};

struct tconf {
	char *name;
	char *secret;
	int64_t mode;
	int64_t count;
	double scale;
	bool enabled;
	int color;
	char *listen;
	struct cfg_strlist tags;
	struct limits limits;
	struct cfg_list peers;
	struct cfg_pos pos;
};

static const struct cfg_field limits_fields[] = {
	{"max_conns", CFG_INT, offsetof(struct limits, max_conns), 0, 1, 1000,
	 "100", NULL, "connections"},
	{"timeout", CFG_DURATION, offsetof(struct limits, timeout), 0, 100,
	 60000, "5s", NULL, "a timeout"},
	{"buf", CFG_SIZE, offsetof(struct limits, buf), 0, 1024, 1073741824,
	 "64KiB", NULL, "a buffer size"},
	{"ratio", CFG_DOUBLE, offsetof(struct limits, ratio), 0, 0, 1, "0.5",
	 NULL, "a fraction"},
};

static const struct cfg_schema limits_schema = {
	"limits", sizeof(struct limits), limits_fields,
	CFG_NFIELDS(limits_fields), NULL};

/* Cross-field check pointing at the exact text of the name. */
static void
peer_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct peer *p = obj;

	(void)at;
	if (p->weight > 50 && p->addr == NULL)
		cfg_diag_add(d, p->name_pos,
			     "peer '%s': a weight above 50 needs an addr",
			     p->name);
}

static const struct cfg_field peer_fields[] = {
	{"name", CFG_STR, offsetof(struct peer, name), CFG_REQUIRED, 0, 0, NULL,
	 NULL, "the peer's name"},
	{"name", CFG_POS, offsetof(struct peer, name_pos), 0, 0, 0, NULL, NULL,
	 NULL},
	{NULL, CFG_POS, offsetof(struct peer, pos), 0, 0, 0, NULL, NULL, NULL},
	{"weight", CFG_INT, offsetof(struct peer, weight), 0, 1, 100, "1", NULL,
	 "relative weight"},
	{"addr", CFG_ADDR, offsetof(struct peer, addr), 0, 0, 0, NULL, NULL,
	 "where it listens"},
};

static const struct cfg_schema peer_schema = {
	"peer", sizeof(struct peer), peer_fields, CFG_NFIELDS(peer_fields),
	peer_validate};

static void
tconf_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct tconf *c = obj;

	if ((int64_t)c->peers.n > c->limits.max_conns)
		cfg_diag_add(d, at,
			     "test: %zu peers but limits.max_conns is "
			     "%lld",
			     c->peers.n, (long long)c->limits.max_conns);
}

static const struct cfg_field tconf_fields[] = {
	{"name", CFG_STR, offsetof(struct tconf, name), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "a required string"},
	{"secret", CFG_STR, offsetof(struct tconf, secret), CFG_SECRET, 0, 0,
	 NULL, NULL, "never printed"},
	{"mode", CFG_INT, offsetof(struct tconf, mode), CFG_OCTAL, 0, 0777,
	 "0640", NULL, "permissions"},
	{"count", CFG_INT, offsetof(struct tconf, count), 0, 0, 0, "7", NULL,
	 "an unbounded integer"},
	{"scale", CFG_DOUBLE, offsetof(struct tconf, scale), 0, 0, 0, "1.5",
	 NULL, "an unbounded number"},
	{"enabled", CFG_BOOL, offsetof(struct tconf, enabled), 0, 0, 0, "true",
	 NULL, "a switch"},
	{"color", CFG_ENUM, offsetof(struct tconf, color), 0, 0, 0, "green",
	 color_names, "one of three"},
	{"listen", CFG_ADDR, offsetof(struct tconf, listen), 0, 0, 0,
	 "127.0.0.1:7000", NULL, "an address"},
	{"tags", CFG_STRLIST, offsetof(struct tconf, tags), 0, 0, 0, NULL, NULL,
	 "free-form labels"},
	{"limits", CFG_SECTION, offsetof(struct tconf, limits), 0, 0, 0, NULL,
	 &limits_schema, "a nested section"},
	{"peers", CFG_LIST, offsetof(struct tconf, peers), 0, 0, 0, NULL,
	 &peer_schema, "a list of sections"},
	{NULL, CFG_POS, offsetof(struct tconf, pos), 0, 0, 0, NULL, NULL, NULL},
};

static const struct cfg_schema tconf_schema = {
	"test", sizeof(struct tconf), tconf_fields, CFG_NFIELDS(tconf_fields),
	tconf_validate};

#define KNOWN_ROOT                                                             \
	"name, secret, mode, count, scale, enabled, color, listen, tags, "     \
	"limits, peers"

/* A self-similar schema for nesting and alias tests. */
struct tree {
	int64_t v;
	struct cfg_list kids;
};

static const struct cfg_schema tree_schema;

static const struct cfg_field tree_fields[] = {
	{"v", CFG_INT, offsetof(struct tree, v), 0, 0, 0, NULL, NULL, NULL},
	{"kids", CFG_LIST, offsetof(struct tree, kids), 0, 0, 0, NULL,
	 &tree_schema, NULL},
};

static const struct cfg_schema tree_schema = {"tree", sizeof(struct tree),
					      tree_fields,
					      CFG_NFIELDS(tree_fields), NULL};

/* ---- helpers ----------------------------------------------------------------
 */

static void *
xmalloc(size_t n)
{
	void *p = malloc(n);

	if (p == NULL)
		abort();
	return p;
}

static int
load_str(const struct cfg_schema *s, const char *yaml, void *obj,
	 struct cfg_diag *d)
{
	return cfg_load_buffer("t.yaml", yaml, strlen(yaml), s, obj, d);
}

static char *
data_path(const char *name)
{
	const char *dir = getenv("C4_TEST_DATA");
	char *p;

	if (dir == NULL || dir[0] == '\0')
		dir = "tests/data";
	ck_assert_int_gt(asprintf(&p, "%s/cfg/%s", dir, name), 0);
	return p;
}

static void
check_diag(const struct cfg_diag *d, const char *const *want)
{
	size_t n = 0;

	for (; want[n] != NULL; n++) {
		ck_assert_msg(n < d->n, "missing message %zu: %s", n, want[n]);
		ck_assert_str_eq(d->msgs[n], want[n]);
	}
	if (d->n > n)
		ck_abort_msg("unexpected extra message: %s", d->msgs[n]);
	ck_assert_uint_eq(d->dropped, 0);
}

/* Loads yaml with schema s; expects failure and exactly want (NULL-ended). */
static void
expect_errors_s(const struct cfg_schema *s, const char *yaml,
		const char *const *want)
{
	void *obj = xmalloc(s->size);
	struct cfg_diag d;

	ck_assert_int_eq(load_str(s, yaml, obj, &d), -1);
	check_diag(&d, want);
	cfg_diag_free(&d);
	cfg_free(s, obj);
	free(obj);
}

static void
expect_errors(const char *yaml, const char *const *want)
{
	expect_errors_s(&tconf_schema, yaml, want);
}

static void
expect_error(const char *yaml, const char *want)
{
	const char *const v[] = {want, NULL};

	expect_errors_s(&tconf_schema, yaml, v);
}

static const struct peer *
peer_at(const struct tconf *c, size_t i)
{
	ck_assert_uint_lt(i, c->peers.n);
	return (const struct peer *)c->peers.items + i;
}

static char *
print_conf(const struct cfg_schema *s, const void *obj)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(fp);
	cfg_print(fp, s, obj);
	ck_assert_int_eq(fclose(fp), 0);
	return buf;
}

/* The values good.yaml holds, defaults included. */
static void
check_good(const struct tconf *c, const char *secret)
{
	ck_assert_str_eq(c->name, "alpha");
	ck_assert_str_eq(c->secret, secret);
	ck_assert_int_eq(c->mode, 0750);
	ck_assert_int_eq(c->count, -42);
	ck_assert(c->scale == 2.25);
	ck_assert(!c->enabled);
	ck_assert_int_eq(c->color, COLOR_BLUE);
	ck_assert_str_eq(c->listen, "[::1]:9000");
	ck_assert_uint_eq(c->tags.n, 3);
	ck_assert_str_eq(c->tags.v[0], "one");
	ck_assert_str_eq(c->tags.v[1], "two words");
	ck_assert_str_eq(c->tags.v[2], "three");
	ck_assert_int_eq(c->limits.max_conns, 500);
	ck_assert_int_eq(c->limits.timeout, 1500);
	ck_assert_int_eq(c->limits.buf, 1048576);
	ck_assert(c->limits.ratio == 0.5); /* default */
	ck_assert_uint_eq(c->peers.n, 2);
	ck_assert_str_eq(peer_at(c, 0)->name, "p1");
	ck_assert_int_eq(peer_at(c, 0)->weight, 1); /* default */
	ck_assert_str_eq(peer_at(c, 0)->addr, "host1:7001");
	ck_assert_str_eq(peer_at(c, 1)->name, "p2");
	ck_assert_int_eq(peer_at(c, 1)->weight, 9);
	ck_assert_ptr_null(peer_at(c, 1)->addr);
}

/* ---- loading good input
 * ------------------------------------------------------
 */

START_TEST(test_good_file)
{
	char *path = data_path("good.yaml");
	struct tconf c;
	struct cfg_diag d;

	ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d), 0);
	ck_assert_uint_eq(d.n, 0);
	ck_assert_uint_eq(d.dropped, 0);
	check_good(&c, "hunter2-very-secret");
	/* Positions: the root mapping, each item, each item's name value. */
	ck_assert_uint_eq(c.pos.line, 2);
	ck_assert_uint_eq(c.pos.col, 1);
	ck_assert_uint_eq(peer_at(&c, 0)->pos.line, 16);
	ck_assert_uint_eq(peer_at(&c, 0)->pos.col, 5);
	ck_assert_uint_eq(peer_at(&c, 0)->name_pos.line, 16);
	ck_assert_uint_eq(peer_at(&c, 0)->name_pos.col, 11);
	ck_assert_uint_eq(peer_at(&c, 1)->pos.line, 18);
	ck_assert_uint_eq(peer_at(&c, 1)->pos.col, 5);
	ck_assert_uint_eq(peer_at(&c, 1)->name_pos.line, 19);
	ck_assert_uint_eq(peer_at(&c, 1)->name_pos.col, 11);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	ck_assert_ptr_null(c.name);
	ck_assert_ptr_null(c.peers.items);
	free(path);
}
END_TEST

/* The same text from memory gives the same values. */
START_TEST(test_good_buffer)
{
	char *path = data_path("good.yaml");
	char buf[4096];
	FILE *fp = fopen(path, "r");
	size_t n;
	struct tconf c;
	struct cfg_diag d;

	ck_assert_ptr_nonnull(fp);
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_lt(n, sizeof(buf));
	ck_assert_int_eq(cfg_load_buffer("mem", buf, n, &tconf_schema, &c, &d),
			 0);
	check_good(&c, "hunter2-very-secret");
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(path);
}
END_TEST

START_TEST(test_defaults)
{
	struct tconf c;
	struct cfg_diag d;

	/* obj is zeroed by the load: garbage in it must not survive. */
	memset(&c, 0x5a, sizeof(c));
	ck_assert_int_eq(load_str(&tconf_schema, "name: x\n", &c, &d), 0);
	ck_assert_str_eq(c.name, "x");
	ck_assert_ptr_null(c.secret);
	ck_assert_int_eq(c.mode, 0640);
	ck_assert_int_eq(c.count, 7);
	ck_assert(c.scale == 1.5);
	ck_assert(c.enabled);
	ck_assert_int_eq(c.color, COLOR_GREEN);
	ck_assert_str_eq(c.listen, "127.0.0.1:7000");
	ck_assert_uint_eq(c.tags.n, 0);
	ck_assert_ptr_null(c.tags.v);
	ck_assert_int_eq(c.limits.max_conns, 100);
	ck_assert_int_eq(c.limits.timeout, 5000);
	ck_assert_int_eq(c.limits.buf, 65536);
	ck_assert(c.limits.ratio == 0.5);
	ck_assert_uint_eq(c.peers.n, 0);
	ck_assert_ptr_null(c.peers.items);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);

	/* A partly written section keeps the defaults of the rest. */
	ck_assert_int_eq(load_str(&tconf_schema,
				  "name: x\nlimits: {buf: 2KiB}\npeers: []\n"
				  "tags: []\n",
				  &c, &d),
			 0);
	ck_assert_int_eq(c.limits.max_conns, 100);
	ck_assert_int_eq(c.limits.timeout, 5000);
	ck_assert_int_eq(c.limits.buf, 2048);
	ck_assert_uint_eq(c.peers.n, 0);
	ck_assert_uint_eq(c.tags.n, 0);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

START_TEST(test_value_forms)
{
	struct tconf c;
	struct cfg_diag d;

	ck_assert_int_eq(load_str(&tconf_schema,
				  "name: 'quoted: yes'\n"
				  "mode: 750\n"
				  "count: -9223372036854775808\n"
				  "scale: -1e-3\n"
				  "enabled: on\n"
				  "color: red\n"
				  "listen: unix:/run/c4.sock\n"
				  "tags:\n"
				  "  - a\n"
				  "  - \"\"\n"
				  "limits:\n"
				  "  timeout: 1m\n"
				  "  buf: 1GiB\n"
				  "  ratio: 1\n"
				  "  max_conns: 1000\n",
				  &c, &d),
			 0);
	ck_assert_str_eq(c.name, "quoted: yes");
	ck_assert_int_eq(c.mode, 0750); /* octal even without the 0 */
	ck_assert_int_eq(c.count, INT64_MIN);
	ck_assert(c.scale == -0.001);
	ck_assert(c.enabled);
	ck_assert_int_eq(c.color, COLOR_RED);
	ck_assert_str_eq(c.listen, "unix:/run/c4.sock");
	ck_assert_uint_eq(c.tags.n, 2);
	ck_assert_str_eq(c.tags.v[1], "");
	ck_assert_int_eq(c.limits.timeout, 60000); /* bounds are inclusive */
	ck_assert_int_eq(c.limits.buf, 1073741824);
	ck_assert(c.limits.ratio == 1.0);
	ck_assert_int_eq(c.limits.max_conns, 1000);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

START_TEST(test_validators)
{
	struct tconf c;
	struct cfg_diag d;

	/* A list item's validator points at the name's value. */
	expect_error("name: a\n"
		     "peers:\n"
		     "  - {weight: 60, name: heavy}\n",
		     "t.yaml:3:24: peer 'heavy': a weight above 50 needs an "
		     "addr");
	/* The root validator reports at the root mapping. */
	expect_error("\n"
		     "  name: a\n"
		     "  limits: {max_conns: 1}\n"
		     "  peers: [{name: a}, {name: b}]\n",
		     "t.yaml:2:3: test: 2 peers but limits.max_conns is 1");
	/* Validators pass on good input and the result is kept. */
	ck_assert_int_eq(load_str(&tconf_schema,
				  "name: a\npeers:\n"
				  "  - {weight: 60, name: h, addr: 'h:1'}\n",
				  &c, &d),
			 0);
	ck_assert_int_eq(peer_at(&c, 0)->weight, 60);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

/* ---- one bad value at a time
 * ---------------------------------------------------
 */

START_TEST(test_wrong_type)
{
	expect_error("name: a\ncount: abc\n",
		     "t.yaml:2:8: count: expected an integer, got 'abc'");
	expect_error("name: a\ncount: 1.5\n",
		     "t.yaml:2:8: count: expected an integer, got '1.5'");
	expect_error("name: a\ncount: ''\n",
		     "t.yaml:2:8: count: expected an integer, got ''");
	expect_error("name: a\ncount: 99999999999999999999\n",
		     "t.yaml:2:8: count: expected an integer, got "
		     "'99999999999999999999'");
	expect_error("name: a\nmode: 0789\n",
		     "t.yaml:2:7: mode: expected an integer in octal, got "
		     "'0789'");
	expect_error("name: a\nmode: 0x1ff\n",
		     "t.yaml:2:7: mode: expected an integer in octal, got "
		     "'0x1ff'");
	expect_error("name: a\nscale: 1.5x\n",
		     "t.yaml:2:8: scale: expected a number, got '1.5x'");
	expect_error("name: a\nscale: nan\n",
		     "t.yaml:2:8: scale: expected a number, got 'nan'");
	expect_error("name: a\nscale: .inf\n",
		     "t.yaml:2:8: scale: expected a number, got '.inf'");
	expect_error("name: a\nenabled: maybe\n",
		     "t.yaml:2:10: enabled: expected true or false, got "
		     "'maybe'");
	expect_error("name: a\nenabled: True\n",
		     "t.yaml:2:10: enabled: expected true or false, got "
		     "'True'");
	expect_error("name: a\ncolor: purple\n",
		     "t.yaml:2:8: color: 'purple' is not one of: red, green, "
		     "blue");
	expect_error("name: a\ncolor: Red\n",
		     "t.yaml:2:8: color: 'Red' is not one of: red, green, "
		     "blue");
	expect_error("name: a\nlisten: nohost\n",
		     "t.yaml:2:9: listen: invalid address 'nohost': expected "
		     "host:port or unix:/path");
	expect_error("name: a\nlisten: 'h:65536'\n",
		     "t.yaml:2:9: listen: invalid address 'h:65536': port "
		     "must be a number from 0 to 65535");
	expect_error("name: a\nlisten: unix:run/x\n",
		     "t.yaml:2:9: listen: invalid address 'unix:run/x': unix "
		     "socket path must be absolute");
	expect_error("name: a\nlimits:\n  timeout: 5\n",
		     "t.yaml:3:12: timeout: expected a duration such as 500ms, "
		     "5s, 2m or 1h, got '5'");
	expect_error("name: a\nlimits:\n  timeout: -1s\n",
		     "t.yaml:3:12: timeout: expected a duration such as 500ms, "
		     "5s, 2m or 1h, got '-1s'");
	expect_error("name: a\nlimits:\n  timeout: 5 s\n",
		     "t.yaml:3:12: timeout: expected a duration such as 500ms, "
		     "5s, 2m or 1h, got '5 s'");
	expect_error("name: a\nlimits:\n  buf: 4MB\n",
		     "t.yaml:3:8: buf: expected a size such as 4096, 64KiB or "
		     "4MiB, got '4MB'");
	expect_error("name: a\nlimits:\n  buf: 1.5\n",
		     "t.yaml:3:8: buf: expected a size such as 4096, 64KiB or "
		     "4MiB, got '1.5'");
	expect_error("name: a\nlimits:\n  buf: -4KiB\n",
		     "t.yaml:3:8: buf: expected a size such as 4096, 64KiB or "
		     "4MiB, got '-4KiB'");
}
END_TEST

START_TEST(test_out_of_range)
{
	expect_error("name: a\nlimits: {max_conns: 1001}\n",
		     "t.yaml:2:21: max_conns: 1001 is out of range [1, 1000]");
	expect_error("name: a\nlimits: {max_conns: 0}\n",
		     "t.yaml:2:21: max_conns: 0 is out of range [1, 1000]");
	expect_error("name: a\nlimits: {max_conns: -5}\n",
		     "t.yaml:2:21: max_conns: -5 is out of range [1, 1000]");
	expect_error("name: a\nmode: 01000\n",
		     "t.yaml:2:7: mode: 01000 is out of range [0, 0777]");
	expect_error("name: a\nmode: -1\n",
		     "t.yaml:2:7: mode: -1 is out of range [0, 0777]");
	expect_error("name: a\nlimits: {timeout: 99ms}\n",
		     "t.yaml:2:19: timeout: 99ms is out of range [100ms, "
		     "60000ms]");
	expect_error("name: a\nlimits: {timeout: 2m}\n",
		     "t.yaml:2:19: timeout: 2m is out of range [100ms, "
		     "60000ms]");
	expect_error("name: a\nlimits: {buf: 1023}\n",
		     "t.yaml:2:15: buf: 1023 is out of range [1024, "
		     "1073741824] bytes");
	expect_error("name: a\nlimits: {buf: 2GiB}\n",
		     "t.yaml:2:15: buf: 2GiB is out of range [1024, "
		     "1073741824] bytes");
	expect_error("name: a\nlimits: {ratio: 1.5}\n",
		     "t.yaml:2:17: ratio: 1.5 is out of range [0, 1]");
	expect_error("name: a\nlimits: {ratio: -0.1}\n",
		     "t.yaml:2:17: ratio: -0.1 is out of range [0, 1]");
	expect_error("name: a\npeers: [{name: p, weight: 101}]\n",
		     "t.yaml:2:27: weight: 101 is out of range [1, 100]");
}
END_TEST

START_TEST(test_unknown_key)
{
	expect_error(
		"name: a\ncolour: red\n",
		"t.yaml:2:1: unknown key 'colour' in test (known: " KNOWN_ROOT
		")");
	expect_error("name: a\nlimits:\n  max_conn: 5\n",
		     "t.yaml:3:3: unknown key 'max_conn' in limits (known: "
		     "max_conns, timeout, buf, ratio)");
	/* Keyed CFG_POS entries and internal fields are not listed. */
	expect_error("name: a\npeers:\n  - {name: p, port: 1}\n",
		     "t.yaml:3:15: unknown key 'port' in peer (known: name, "
		     "weight, addr)");
	/* Keys are case-sensitive. */
	expect_error(
		"Name: a\nname: a\n",
		"t.yaml:1:1: unknown key 'Name' in test (known: " KNOWN_ROOT
		")");
}
END_TEST

START_TEST(test_duplicate_key)
{
	expect_error("name: a\ncount: 1\nname: b\n",
		     "t.yaml:3:1: duplicate key 'name'");
	expect_error("name: a\nlimits:\n  buf: 2KiB\n  buf: 4KiB\n",
		     "t.yaml:4:3: duplicate key 'buf'");
	expect_error("name: a\npeers: [{name: p, weight: 2, weight: 3}]\n",
		     "t.yaml:2:30: duplicate key 'weight'");
	/* A duplicated section or list is reported once, not loaded twice. */
	expect_error("name: a\npeers: [{name: p}]\npeers: [{name: q}]\n",
		     "t.yaml:3:1: duplicate key 'peers'");
	expect_error("name: a\nlimits: {buf: 2KiB}\nlimits: {buf: x}\n",
		     "t.yaml:3:1: duplicate key 'limits'");
}
END_TEST

START_TEST(test_missing_required)
{
	/* At the position of the mapping that lacks it. */
	expect_error("count: 1\nmode: 0600\n",
		     "t.yaml:1:1: test: missing required key 'name'");
	expect_error("# leading comment\n\n  count: 1\n",
		     "t.yaml:3:3: test: missing required key 'name'");
	expect_error("name: a\npeers:\n  - name: p\n  - weight: 3\n"
		     "    addr: 'h:1'\n",
		     "t.yaml:4:5: peer: missing required key 'name'");
	expect_error("name: a\npeers: [{name: p}, {weight: 3}]\n",
		     "t.yaml:2:20: peer: missing required key 'name'");
	expect_error("name: a\npeers: [{}]\n",
		     "t.yaml:2:9: peer: missing required key 'name'");
}
END_TEST

START_TEST(test_empty_required_string)
{
	expect_error("name: \"\"\n", "t.yaml:1:7: name: must not be empty");
	expect_error("name: ''\n", "t.yaml:1:7: name: must not be empty");
	expect_error("name: a\npeers:\n  - name: ''\n",
		     "t.yaml:3:11: name: must not be empty");
}
END_TEST

START_TEST(test_shape_mismatch)
{
	/* List items that are not mappings. */
	expect_error("name: a\npeers: [p1]\n",
		     "t.yaml:2:9: peers: each item must be a peer mapping, got "
		     "a scalar");
	expect_error("name: a\npeers:\n  - [x]\n",
		     "t.yaml:3:5: peers: each item must be a peer mapping, got "
		     "a list");
	/* A mapping or list where a single value is expected. */
	expect_error("name: a\ncount: {a: 1}\n",
		     "t.yaml:2:8: count: expected a single value, got a "
		     "mapping");
	expect_error("name: a\ncount: [1]\n",
		     "t.yaml:2:8: count: expected a single value, got a list");
	expect_error("name:\n  first: a\n",
		     "t.yaml:2:3: name: expected a single value, got a "
		     "mapping");
	expect_error("name: a\nlimits:\n  timeout: [1s]\n",
		     "t.yaml:3:12: timeout: expected a single value, got a "
		     "list");
	/* The wrong kind of collection. */
	expect_error("name: a\nlimits: [1]\n",
		     "t.yaml:2:9: limits: expected a mapping, got a list");
	expect_error("name: a\npeers: {name: p}\n",
		     "t.yaml:2:8: peers: expected a list of mappings, got a "
		     "mapping");
	expect_error("name: a\ntags: {a: b}\n",
		     "t.yaml:2:7: tags: expected a list of strings, got a "
		     "mapping");
	expect_error(
		"name: a\ntags: one\n",
		"t.yaml:2:7: tags: expected a list of strings, got a scalar");
	{
		const char *const want[] = {
			"t.yaml:2:11: tags: items must be strings, got a list",
			"t.yaml:2:16: tags: items must be strings, got a "
			"mapping",
			NULL};

		expect_errors("name: a\ntags: [a, [b], {c: d}, e]\n", want);
	}
	/* Keys must be scalars. */
	expect_error("name: a\n[x]: 1\n",
		     "t.yaml:2:1: keys must be plain strings, got a list");
}
END_TEST

/*
 * Regression (fixed):  A scalar given
 * for a CFG_SECTION or CFG_LIST field says "expected a mapping or list",
 * which names a shape the field does not accept and omits what was found,
 * unlike the list/mapping cases just above (cfg.c:529-535), which say
 * "limits: expected a mapping, got a list".  An empty "limits:" (all
 * children commented out) is the common way to hit it.
 */
START_TEST(test_regression_scalar_for_collection)
{
	expect_error("name: a\nlimits: 5\n",
		     "t.yaml:2:9: limits: expected a mapping, got a scalar");
	expect_error("name: a\npeers: p1\n",
		     "t.yaml:2:8: peers: expected a list of mappings, got a "
		     "scalar");
}
END_TEST

/* ---- whole-file problems ----------------------------------------------------
 */

START_TEST(test_yaml_syntax_error)
{
	char *path = data_path("syntax-error.yaml");
	char *want;
	struct tconf c;
	struct cfg_diag d;

	ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d), -1);
	ck_assert_int_gt(asprintf(&want,
				  "%s:3:7: YAML syntax error: did not find "
				  "expected ',' or ']' while parsing a flow "
				  "sequence",
				  path),
			 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], want);
	/* Nothing is half-applied. */
	ck_assert_ptr_null(c.name);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(want);
	free(path);

	expect_error("name: a\n  count: 1\n",
		     "t.yaml:2:8: YAML syntax error: mapping values are not "
		     "allowed in this context");
	expect_error("name: a\ncount: *nope\n",
		     "t.yaml:2:8: YAML syntax error: found undefined alias");
	expect_error("name: \"open\n",
		     "t.yaml:2:1: YAML syntax error: found unexpected end of "
		     "stream while scanning a quoted scalar");
}
END_TEST

START_TEST(test_root_not_mapping)
{
	char *path = data_path("list-root.yaml");
	char *want;
	struct tconf c;
	struct cfg_diag d;

	ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d), -1);
	ck_assert_int_gt(asprintf(&want,
				  "%s:1:1: the configuration must be a "
				  "mapping, got a list",
				  path),
			 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], want);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(want);
	free(path);

	expect_error("hello\n", "t.yaml:1:1: the configuration must be a "
				"mapping, got a scalar");
	expect_error("\n\n  'x'\n", "t.yaml:3:3: the configuration must be a "
				    "mapping, got a scalar");
	expect_error("[a, b]\n", "t.yaml:1:1: the configuration must be a "
				 "mapping, got a list");
}
END_TEST

START_TEST(test_empty_file)
{
	static const char *const names[] = {"empty.yaml", "comments-only.yaml"};
	static const char *const bufs[] = {"", "\n\n", "---\n", "# c\n"};
	struct tconf c;
	struct limits l;
	struct cfg_diag d;

	/* Required keys are still reported, at the top of the file. */
	for (size_t i = 0; i < 2; i++) {
		char *path = data_path(names[i]);
		char *want;

		ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d),
				 -1);
		ck_assert_int_gt(asprintf(&want,
					  "%s:1:1: test: missing required "
					  "key 'name'",
					  path),
				 0);
		ck_assert_uint_eq(d.n, 1);
		ck_assert_str_eq(d.msgs[0], want);
		/* The defaults were applied all the same. */
		ck_assert_int_eq(c.count, 7);
		ck_assert_int_eq(c.limits.buf, 65536);
		cfg_diag_free(&d);
		cfg_free(&tconf_schema, &c);
		free(want);
		free(path);
	}
	/* With nothing required, an empty file is all defaults. */
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		ck_assert_int_eq(load_str(&limits_schema, bufs[i], &l, &d), 0);
		ck_assert_uint_eq(d.n, 0);
		ck_assert_int_eq(l.max_conns, 100);
		ck_assert_int_eq(l.timeout, 5000);
		ck_assert_int_eq(l.buf, 65536);
		ck_assert(l.ratio == 0.5);
		cfg_diag_free(&d);
		cfg_free(&limits_schema, &l);
	}
}
END_TEST

START_TEST(test_two_documents)
{
	char *path = data_path("two-docs.yaml");
	char *want;
	struct tconf c;
	struct cfg_diag d;

	ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d), -1);
	ck_assert_int_gt(
		asprintf(&want, "%s:3:1: more than one YAML document", path),
		0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], want);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(want);
	free(path);

	expect_error("name: a\n---\n",
		     "t.yaml:3:1: more than one YAML document");
	expect_error("name: a\n...\n---\n[1]\n",
		     "t.yaml:4:1: more than one YAML document");
	/* An explicit end of the only document is fine. */
	ck_assert_int_eq(load_str(&tconf_schema, "---\nname: a\n...\n", &c, &d),
			 0);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

/*
 * Regression (fixed):  When the first document is valid, a YAML syntax
 * error in a second document is ignored (yaml_parser_load() fails, and the
 * failure is dropped), so a file that is not valid YAML loads as valid.
 */
START_TEST(test_regression_second_document_syntax_error)
{
	struct tconf c;
	struct cfg_diag d;

	ck_assert_int_eq(
		load_str(&tconf_schema, "name: a\n---\n[1, 2\n", &c, &d), -1);
	ck_assert_uint_ge(d.n, 1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], "t.yaml:"));
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

START_TEST(test_missing_file)
{
	struct tconf c;
	struct cfg_diag d;

	memset(&c, 0x5a, sizeof(c));
	ck_assert_int_eq(cfg_load_file("/nonexistent-c4-dir/conf.yaml",
				       &tconf_schema, &c, &d),
			 -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], "/nonexistent-c4-dir/conf.yaml: cannot "
				    "read: No such file or directory");
	/* obj is zeroed, so cfg_free() is safe. */
	ck_assert_ptr_null(c.name);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

/*
 * Regression (fixed):  cfg_load_file() ignores read errors: open() of a
 * directory succeeds, read() fails with EISDIR, and what was read (nothing)
 * is parsed as an empty file.  A schema without required keys (c4a-agent's)
 * then loads a directory given as the configuration path as all defaults.
 */
START_TEST(test_regression_directory_path)
{
	struct limits l;
	struct cfg_diag d;
	char *dir = data_path("");
	int rc;

	rc = cfg_load_file(dir, &limits_schema, &l, &d);
	ck_assert_int_eq(rc, -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_ptr_nonnull(strstr(d.msgs[0], strerror(EISDIR)));
	cfg_diag_free(&d);
	cfg_free(&limits_schema, &l);
	free(dir);
}
END_TEST

START_TEST(test_many_errors_in_order)
{
	char *path = data_path("many-errors.yaml");
	static const char *const tail[] = {
		"2:8: count: expected an integer, got 'abc'",
		"3:8: color: 'purple' is not one of: red, green, blue",
		"5:14: max_conns: 0 is out of range [1, 1000]",
		"6:3: unknown key 'bogus' in limits (known: max_conns, "
		"timeout, buf, ratio)",
		"8:11: name: must not be empty",
		"9:5: peers: each item must be a peer mapping, got a scalar",
		"10:11: addr: invalid address 'nohost': expected host:port or "
		"unix:/path",
		"10:5: peer: missing required key 'name'",
		"11:10: enabled: expected true or false, got 'maybe'",
	};
	const size_t n = sizeof(tail) / sizeof(tail[0]);
	struct tconf c;
	struct cfg_diag d;
	char *text = NULL, *want = NULL;
	size_t tlen = 0, wlen = 0;
	FILE *fp;

	ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d), -1);
	ck_assert_uint_eq(d.n, n);
	ck_assert_uint_eq(d.dropped, 0);
	for (size_t i = 0; i < n; i++) {
		char *w;

		ck_assert_int_gt(asprintf(&w, "%s:%s", path, tail[i]), 0);
		ck_assert_str_eq(d.msgs[i], w);
		free(w);
	}
	/* cfg_diag_print writes them one per line, in order. */
	fp = open_memstream(&text, &tlen);
	cfg_diag_print(&d, fp);
	fclose(fp);
	fp = open_memstream(&want, &wlen);
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "%s:%s\n", path, tail[i]);
	fclose(fp);
	ck_assert_str_eq(text, want);
	free(text);
	free(want);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(path);
}
END_TEST

/* ---- limits -----------------------------------------------------------------
 */

START_TEST(test_error_cap)
{
	const int keys = CFG_ERRORS_MAX + 5;
	char *yaml = xmalloc((size_t)keys * 16 + 16), *p = yaml;
	char *text = NULL;
	size_t len = 0;
	struct tconf c;
	struct cfg_diag d;
	FILE *fp;

	p += sprintf(p, "name: a\n");
	for (int i = 0; i < keys; i++)
		p += sprintf(p, "k%d: 1\n", i);
	ck_assert_int_eq(load_str(&tconf_schema, yaml, &c, &d), -1);
	ck_assert_uint_eq(d.n, CFG_ERRORS_MAX);
	ck_assert_uint_eq(d.dropped, 5);
	ck_assert_str_eq(d.msgs[0], "t.yaml:2:1: unknown key 'k0' in test "
				    "(known: " KNOWN_ROOT ")");
	ck_assert_str_eq(
		d.msgs[CFG_ERRORS_MAX - 1],
		"t.yaml:201:1: unknown key 'k199' in test (known: " KNOWN_ROOT
		")");
	fp = open_memstream(&text, &len);
	cfg_diag_print(&d, fp);
	fclose(fp);
	ck_assert_ptr_nonnull(
		strstr(text, "t.yaml: 5 more errors not shown\n"));
	ck_assert_str_eq(text + len -
				 strlen("t.yaml: 5 more errors not shown\n"),
			 "t.yaml: 5 more errors not shown\n");
	free(text);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(yaml);
}
END_TEST

START_TEST(test_value_too_long)
{
	char *yaml = xmalloc(CFG_STR_MAX + 64);
	struct tconf c;
	struct cfg_diag d;

	strcpy(yaml, "name: ");
	memset(yaml + 6, 'x', CFG_STR_MAX);
	strcpy(yaml + 6 + CFG_STR_MAX, "\n");
	ck_assert_int_eq(load_str(&tconf_schema, yaml, &c, &d), 0);
	ck_assert_uint_eq(strlen(c.name), CFG_STR_MAX);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);

	strcpy(yaml + 6 + CFG_STR_MAX, "y\n");
	ck_assert_int_eq(load_str(&tconf_schema, yaml, &c, &d), -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0],
			 "t.yaml:1:7: name: value longer than 4096 characters");
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(yaml);
}
END_TEST

START_TEST(test_list_too_long)
{
	const size_t items = CFG_LIST_MAX + 1;
	char *yaml = xmalloc(items * 3 + 32), *p = yaml;
	struct tconf c;
	struct cfg_diag d;

	p += sprintf(p, "name: a\ntags: [");
	for (size_t i = 0; i < items; i++)
		p += sprintf(p, "%s", i ? ",x" : "x");
	sprintf(p, "]\n");
	ck_assert_int_eq(load_str(&tconf_schema, yaml, &c, &d), -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], "t.yaml:2:7: tags: more than 100000 items");
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(yaml);
}
END_TEST

START_TEST(test_buffer_too_large)
{
	/* calloc of this size maps zero pages; only the length is checked. */
	char *big = calloc(1, (size_t)CFG_FILE_MAX + 1);
	struct tconf c;
	struct cfg_diag d;

	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(cfg_load_buffer("big.yaml", big,
					 (size_t)CFG_FILE_MAX + 1,
					 &tconf_schema, &c, &d),
			 -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0],
			 "big.yaml:1:1: file larger than 16777216 bytes");
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(big);
}
END_TEST

/* Builds "kids: [{kids: [ ... {v: 1} ... ]}]" with levels list levels. */
static char *
nested(int levels)
{
	char *s = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&s, &len);

	ck_assert_ptr_nonnull(fp);
	fputs("kids: [", fp);
	for (int i = 1; i < levels; i++)
		fputs("{kids: [", fp);
	fputs("{v: 1}", fp);
	for (int i = 1; i < levels; i++)
		fputs("]}", fp);
	fputs("]\n", fp);
	ck_assert_int_eq(fclose(fp), 0);
	return s;
}

START_TEST(test_depth_cap)
{
	struct tree t;
	struct cfg_diag d;
	char *yaml;

	/* The root is depth 0; CFG_DEPTH_MAX levels below it are fine. */
	yaml = nested(CFG_DEPTH_MAX);
	ck_assert_int_eq(load_str(&tree_schema, yaml, &t, &d), 0);
	cfg_diag_free(&d);
	cfg_free(&tree_schema, &t);
	free(yaml);

	/* One more is refused at the mapping that is too deep. */
	yaml = nested(CFG_DEPTH_MAX + 1);
	ck_assert_int_eq(load_str(&tree_schema, yaml, &t, &d), -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], "t.yaml:1:264: nesting deeper than 32");
	cfg_diag_free(&d);
	cfg_free(&tree_schema, &t);
	free(yaml);

	/* Far deeper: still one message, nothing below the cap is walked. */
	yaml = nested(500);
	ck_assert_int_eq(load_str(&tree_schema, yaml, &t, &d), -1);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.msgs[0], "t.yaml:1:264: nesting deeper than 32");
	cfg_diag_free(&d);
	cfg_free(&tree_schema, &t);
	free(yaml);
}
END_TEST

/*
 * Aliases make depth cheap to write: &lK is a list of one alias of &l(K-1),
 * so one short line adds a level.  Each top-level item &lK is a chain K+1
 * mappings deep; those that go past the cap are refused at the mapping at
 * depth 33, which is the anchored node &l(K-32), quickly and in order.
 */
START_TEST(test_alias_depth)
{
	char *yaml = xmalloc(64 * 48), *p = yaml;
	const char *want[16];
	char buf[16][64];
	struct tree t;
	struct cfg_diag d;
	int n = 0;

	p += sprintf(p, "kids:\n  - &l0 {v: 0}\n");
	for (int i = 1; i <= 40; i++)
		p += sprintf(p, "  - &l%d {kids: [*l%d]}\n", i, i - 1);
	for (int k = 32; k <= 40; k++) {
		snprintf(buf[n], sizeof(buf[n]),
			 "t.yaml:%d:5: nesting deeper than 32", 2 + k - 32);
		want[n] = buf[n];
		n++;
	}
	want[n] = NULL;
	ck_assert_int_eq(load_str(&tree_schema, yaml, &t, &d), -1);
	check_diag(&d, want);
	cfg_diag_free(&d);
	cfg_free(&tree_schema, &t);
	free(yaml);
}
END_TEST

/*
 * A classic alias bomb: &lK lists ten aliases of &l(K-1), so nine short
 * lines describe over 10^9 mappings.  The walk takes the items in order;
 * &l0..&l5 hold 123,456 mappings, and the cap is crossed inside &l6 at one
 * of its leaves, all of which are the node &l0 (line 2).  Every later
 * mapping is refused at once, so this stops after about 10^6 visits.
 */
START_TEST(test_alias_node_bomb)
{
	char *yaml = xmalloc(4096), *p = yaml;
	struct tree t;
	struct cfg_diag d;

	p += sprintf(p, "kids:\n  - &l0 {v: 0}\n");
	for (int i = 1; i <= 9; i++) {
		p += sprintf(p, "  - &l%d {kids: [", i);
		for (int k = 0; k < 10; k++)
			p += sprintf(p, "%s*l%d", k ? ", " : "", i - 1);
		p += sprintf(p, "]}\n");
	}
	ck_assert_int_eq(load_str(&tree_schema, yaml, &t, &d), -1);
	ck_assert_uint_ge(d.n, 1);
	ck_assert_str_eq(d.msgs[0], "t.yaml:2:5: document too large (more "
				    "than 1000000 mappings)");
	for (size_t i = 0; i < d.n; i++)
		ck_assert_ptr_nonnull(strstr(
			d.msgs[i], "document too large (more than 1000000 "
				   "mappings)"));
	cfg_diag_free(&d);
	cfg_free(&tree_schema, &t);
	free(yaml);
}
END_TEST

/* ---- printing
 * -----------------------------------------------------------------
 */

static const char good_printed[] = "name: \"alpha\"\n"
				   "secret: \"********\"\n"
				   "mode: 0750\n"
				   "count: -42\n"
				   "scale: 2.25\n"
				   "enabled: false\n"
				   "color: blue\n"
				   "listen: \"[::1]:9000\"\n"
				   "tags: [\"one\", \"two words\", \"three\"]\n"
				   "limits:\n"
				   "  max_conns: 500\n"
				   "  timeout: 1500ms\n"
				   "  buf: 1MiB\n"
				   "  ratio: 0.5\n"
				   "peers:\n"
				   "  - name: \"p1\"\n"
				   "    weight: 1\n"
				   "    addr: \"host1:7001\"\n"
				   "  - name: \"p2\"\n"
				   "    weight: 9\n";

START_TEST(test_print_canonical)
{
	char *path = data_path("good.yaml");
	struct tconf c;
	struct cfg_diag d;
	char *out;

	ck_assert_int_eq(cfg_load_file(path, &tconf_schema, &c, &d), 0);
	out = print_conf(&tconf_schema, &c);
	ck_assert_str_eq(out, good_printed);
	ck_assert_ptr_null(strstr(out, "hunter2"));
	free(out);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(path);
}
END_TEST

START_TEST(test_print_round_trip)
{
	struct tconf c, c2;
	struct cfg_diag d;
	char *out, *out2;

	/* good.yaml: print, load the text, compare; the secret stays masked. */
	ck_assert_int_eq(load_str(&tconf_schema, good_printed, &c, &d), 0);
	check_good(&c, "********");
	out = print_conf(&tconf_schema, &c);
	ck_assert_str_eq(out, good_printed);
	free(out);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);

	/* Awkward values survive print + load unchanged. */
	ck_assert_int_eq(
		load_str(&tconf_schema,
			 "name: \"q\\\"uote \\\\ back\\ttab\\x01 #x: y\"\n"
			 "mode: 0\n"
			 "count: 9223372036854775807\n"
			 "scale: 0.1\n"
			 "listen: unix:/tmp/a b\n"
			 "tags: ['- dash', '[x]', '', 'a, b', \"\\n\"]\n"
			 "limits: {timeout: 45s, buf: 1536, ratio: 1e-9}\n"
			 "peers:\n"
			 "  - {name: 'x: y', weight: 50}\n",
			 &c, &d),
		0);
	out = print_conf(&tconf_schema, &c);
	cfg_diag_free(&d);
	ck_assert_msg(load_str(&tconf_schema, out, &c2, &d) == 0,
		      "printed text did not load: %s\n%s", d.n ? d.msgs[0] : "",
		      out);
	ck_assert_str_eq(c2.name, "q\"uote \\ back\ttab\x01 #x: y");
	ck_assert_str_eq(c2.name, c.name);
	ck_assert_int_eq(c2.mode, 0);
	ck_assert_int_eq(c2.count, INT64_MAX);
	ck_assert(c2.scale == 0.1);
	ck_assert_str_eq(c2.listen, "unix:/tmp/a b");
	ck_assert_uint_eq(c2.tags.n, 5);
	for (size_t i = 0; i < c.tags.n; i++)
		ck_assert_str_eq(c2.tags.v[i], c.tags.v[i]);
	ck_assert_int_eq(c2.limits.timeout, 45000);
	ck_assert_int_eq(c2.limits.buf, 1536);
	ck_assert(c2.limits.ratio == 1e-9);
	ck_assert_uint_eq(c2.peers.n, 1);
	ck_assert_str_eq(peer_at(&c2, 0)->name, "x: y");
	ck_assert_int_eq(peer_at(&c2, 0)->weight, 50);
	/* And printing again gives the same text. */
	out2 = print_conf(&tconf_schema, &c2);
	ck_assert_str_eq(out2, out);
	free(out2);
	free(out);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	cfg_free(&tconf_schema, &c2);
}
END_TEST

START_TEST(test_print_units)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"{timeout: 3600000ms}", "  timeout: 1h\n"},
		{"{timeout: 1d}", "  timeout: 24h\n"},
		{"{timeout: 120s}", "  timeout: 2m\n"},
		{"{timeout: 61s}", "  timeout: 61s\n"},
		{"{timeout: 1001ms}", "  timeout: 1001ms\n"},
		{"{buf: 3072}", "  buf: 3KiB\n"},
		{"{buf: 1025}", "  buf: 1025\n"},
		{"{buf: 2048MiB}", "  buf: 2GiB\n"},
		{"{buf: 1.5MiB}", "  buf: 1536KiB\n"},
	};
	struct limits l;
	struct cfg_diag d;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out;
		struct limits l2;
		/* Bounds differ from the test schema's, to allow 1d and 2GiB.
		 */
		static const struct cfg_field f[] = {
			{"timeout", CFG_DURATION,
			 offsetof(struct limits, timeout), 0, 0, 0, NULL, NULL,
			 NULL},
			{"buf", CFG_SIZE, offsetof(struct limits, buf), 0, 0, 0,
			 NULL, NULL, NULL},
		};
		static const struct cfg_schema s = {"units",
						    sizeof(struct limits), f,
						    CFG_NFIELDS(f), NULL};
		static const struct cfg_field wrap_f[] = {
			{"l", CFG_SECTION, 0, 0, 0, 0, NULL, &s, NULL},
		};
		static const struct cfg_schema wrap = {
			"wrap", sizeof(struct limits), wrap_f,
			CFG_NFIELDS(wrap_f), NULL};
		char *yaml;

		ck_assert_int_gt(asprintf(&yaml, "l: %s\n", cases[i].in), 0);
		ck_assert_int_eq(load_str(&wrap, yaml, &l, &d), 0);
		cfg_diag_free(&d);
		out = print_conf(&wrap, &l);
		ck_assert_ptr_nonnull(strstr(out, cases[i].out));
		ck_assert_int_eq(load_str(&wrap, out, &l2, &d), 0);
		ck_assert_int_eq(l2.timeout, l.timeout);
		ck_assert_int_eq(l2.buf, l.buf);
		cfg_diag_free(&d);
		cfg_free(&wrap, &l2);
		cfg_free(&wrap, &l);
		free(out);
		free(yaml);
	}
}
END_TEST

/* ---- value helpers
 * ------------------------------------------------------------
 */

static int64_t
dur(const char *s)
{
	int64_t v = -12345;

	ck_assert_msg(cfg_parse_duration_ms(s, &v) == 0, "refused '%s'", s);
	return v;
}

static void
dur_bad(const char *s)
{
	int64_t v = -12345;

	ck_assert_msg(cfg_parse_duration_ms(s, &v) == -1, "accepted '%s'", s);
	ck_assert_int_eq(v, -12345); /* untouched */
}

START_TEST(test_parse_duration)
{
	ck_assert_int_eq(dur("250ms"), 250);
	ck_assert_int_eq(dur("5s"), 5000);
	ck_assert_int_eq(dur("2m"), 120000);
	ck_assert_int_eq(dur("1h"), 3600000);
	ck_assert_int_eq(dur("1d"), 86400000);
	ck_assert_int_eq(dur("1000us"), 1);
	ck_assert_int_eq(dur("0s"), 0);
	ck_assert_int_eq(dur("0ms"), 0);
	ck_assert_int_eq(dur("1.5s"), 1500);
	ck_assert_int_eq(dur("0.25m"), 15000);
	ck_assert_int_eq(dur("1e3ms"), 1000);
	ck_assert_int_eq(dur("9.2e15ms"), INT64_C(9200000000000000));
	/* Syntax. */
	dur_bad("");
	dur_bad("5");
	dur_bad("ms");
	dur_bad("s5");
	dur_bad("5 s");
	dur_bad(" 5s");
	dur_bad("5s ");
	dur_bad("+5s");
	dur_bad("5S");
	dur_bad("5sec");
	dur_bad("5ss");
	dur_bad("1h30m");
	dur_bad("5ns");
	/* Negative, non-finite, overflow. */
	dur_bad("-1s");
	dur_bad("-0.5ms");
	dur_bad("nans");
	dur_bad("infh");
	dur_bad("1e400s");
	dur_bad("9.3e15ms");
	dur_bad("1e13d");
}
END_TEST

static int64_t
size_ok(const char *s)
{
	int64_t v = -12345;

	ck_assert_msg(cfg_parse_size(s, &v) == 0, "refused '%s'", s);
	return v;
}

static void
size_bad(const char *s)
{
	int64_t v = -12345;

	ck_assert_msg(cfg_parse_size(s, &v) == -1, "accepted '%s'", s);
	ck_assert_int_eq(v, -12345);
}

START_TEST(test_parse_size)
{
	ck_assert_int_eq(size_ok("0"), 0);
	ck_assert_int_eq(size_ok("100"), 100);
	ck_assert_int_eq(size_ok("100B"), 100);
	ck_assert_int_eq(size_ok("4K"), 4096);
	ck_assert_int_eq(size_ok("512KiB"), 524288);
	ck_assert_int_eq(size_ok("4M"), 4194304);
	ck_assert_int_eq(size_ok("4MiB"), 4194304);
	ck_assert_int_eq(size_ok("1G"), 1073741824);
	ck_assert_int_eq(size_ok("1GiB"), 1073741824);
	ck_assert_int_eq(size_ok("2TiB"), INT64_C(2199023255552));
	ck_assert_int_eq(size_ok("1T"), INT64_C(1099511627776));
	/* A fraction is fine when the result is a whole number of bytes. */
	ck_assert_int_eq(size_ok("1.5KiB"), 1536);
	ck_assert_int_eq(size_ok("0.5MiB"), 524288);
	ck_assert_int_eq(size_ok("8e18"), INT64_C(8000000000000000000));
	/* Fractional bytes. */
	size_bad("0.5");
	size_bad("1.1KiB");
	size_bad("100.25B");
	/* Syntax and units. */
	size_bad("");
	size_bad("KiB");
	size_bad("4 KiB");
	size_bad(" 4");
	size_bad("+4");
	size_bad("4KB");
	size_bad("4MB");
	size_bad("4kib");
	size_bad("4k");
	size_bad("4Ki");
	size_bad("4PiB");
	size_bad("4KiBs");
	/* Negative, non-finite, overflow. */
	size_bad("-1");
	size_bad("-1KiB");
	size_bad("nan");
	size_bad("inf");
	size_bad("1e19");
	size_bad("8388608TiB");
	size_bad("1e400");
}
END_TEST

START_TEST(test_parse_bool)
{
	static const char *const yes[] = {"true", "yes", "on"};
	static const char *const no[] = {"false", "no", "off"};
	static const char *const bad[] = {
		"",   "1",     "0",	"y",	"n",   "True", "FALSE", "YES",
		"On", " true", "true ", "yess", "tru", "of",   "null",	"~"};
	bool v;

	for (size_t i = 0; i < 3; i++) {
		v = false;
		ck_assert_int_eq(cfg_parse_bool(yes[i], &v), 0);
		ck_assert(v);
		v = true;
		ck_assert_int_eq(cfg_parse_bool(no[i], &v), 0);
		ck_assert(!v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = true;
		ck_assert_msg(cfg_parse_bool(bad[i], &v) == -1, "accepted '%s'",
			      bad[i]);
		ck_assert(v);
	}
}
END_TEST

static Suite *
cfg_suite(void)
{
	Suite *s = suite_create("cfg");
	TCase *load = tcase_create("load");
	TCase *bad = tcase_create("errors");
	TCase *lim = tcase_create("limits");
	TCase *print = tcase_create("print");
	TCase *parse = tcase_create("parse");
	TCase *bugs = tcase_create("regressions");

	tcase_add_test(load, test_good_file);
	tcase_add_test(load, test_good_buffer);
	tcase_add_test(load, test_defaults);
	tcase_add_test(load, test_value_forms);
	tcase_add_test(load, test_validators);
	suite_add_tcase(s, load);

	tcase_add_test(bad, test_wrong_type);
	tcase_add_test(bad, test_out_of_range);
	tcase_add_test(bad, test_unknown_key);
	tcase_add_test(bad, test_duplicate_key);
	tcase_add_test(bad, test_missing_required);
	tcase_add_test(bad, test_empty_required_string);
	tcase_add_test(bad, test_shape_mismatch);
	tcase_add_test(bad, test_yaml_syntax_error);
	tcase_add_test(bad, test_root_not_mapping);
	tcase_add_test(bad, test_empty_file);
	tcase_add_test(bad, test_two_documents);
	tcase_add_test(bad, test_missing_file);
	tcase_add_test(bad, test_many_errors_in_order);
	suite_add_tcase(s, bad);

	tcase_add_test(lim, test_error_cap);
	tcase_add_test(lim, test_value_too_long);
	tcase_add_test(lim, test_list_too_long);
	tcase_add_test(lim, test_buffer_too_large);
	tcase_add_test(lim, test_depth_cap);
	tcase_add_test(lim, test_alias_depth);
	tcase_add_test(lim, test_alias_node_bomb);
	suite_add_tcase(s, lim);

	tcase_add_test(print, test_print_canonical);
	tcase_add_test(print, test_print_round_trip);
	tcase_add_test(print, test_print_units);
	suite_add_tcase(s, print);

	tcase_add_test(parse, test_parse_duration);
	tcase_add_test(parse, test_parse_size);
	tcase_add_test(parse, test_parse_bool);
	suite_add_tcase(s, parse);

	tcase_add_test(bugs, test_regression_scalar_for_collection);
	tcase_add_test(bugs, test_regression_second_document_syntax_error);
	tcase_add_test(bugs, test_regression_directory_path);
	suite_add_tcase(s, bugs);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cfg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
