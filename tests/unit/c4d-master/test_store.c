/*
 * test_store.c - the event store on real SQLite files: one transaction per
 * transition with its history and outbox rows, revisions (stale puts are
 * no-ops), outbox order, attempts and delivery marks, restart recovery,
 * refreshes of an open event's last sighting, the verdict columns and the
 * migration from schema 1, and refusing a corrupt or foreign database.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "master.h"

struct next_result {
	int done, rc, found;
	uint64_t seq, attempts, pending;
	char ce_id[128];
	char payload[256];
};

struct fixture {
	char dir[64];
	char path[128];
	struct event_base *base;
	struct store *st;
	char ids[16][64];
	uint64_t last_iv[16]; /* of the restored events */
	int nids;
};

static void
restore_cb(const C4__Event *ev, uint64_t updated_ns, void *arg)
{
	struct fixture *f = arg;

	(void)updated_ns;
	ck_assert_int_lt(f->nids, 16);
	f->last_iv[f->nids] = ev->last_interval;
	snprintf(f->ids[f->nids++], 64, "%s", ev->id);
}

static void
fx_open(struct fixture *f, size_t keep_resolved)
{
	char err[512];

	f->nids = 0;
	ck_assert_msg(store_open(&f->st, f->base, f->path, keep_resolved,
				 restore_cb, f, err, sizeof(err)) == 0,
		      "%s", err);
}

static void
fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/c4-unit-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/c4d-master.db", f->dir);
	f->base = event_base_new();
	ck_assert_ptr_nonnull(f->base);
}

static void
fx_done(struct fixture *f)
{
	char cmd[256];

	store_close(f->st);
	f->st = NULL;
	event_base_free(f->base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void
next_cb(int rc, const struct store_row *row, uint64_t pending,
	uint64_t oldest_ns, void *arg)
{
	struct next_result *r = arg;

	(void)oldest_ns;
	r->done = 1;
	r->rc = rc;
	r->pending = pending;
	r->found = row != NULL;
	if (row != NULL) {
		r->seq = row->seq;
		r->attempts = row->attempts;
		snprintf(r->ce_id, sizeof(r->ce_id), "%s", row->ce_id);
		snprintf(r->payload, sizeof(r->payload), "%s", row->payload);
	}
}

/* Reads the next row of webhook; also a barrier for every earlier job. */
static void
fx_next(struct fixture *f, const char *webhook, struct next_result *r)
{
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(store_outbox_next(f->st, webhook, next_cb, r), 0);
	while (!r->done)
		event_base_loop(f->base, EVLOOP_ONCE);
	ck_assert_int_eq(r->rc, 0);
}

static void
fx_put(struct fixture *f, const char *id, int state, uint64_t rev,
       const char *const *hooks, size_t nhooks)
{
	C4__Event ev = C4__EVENT__INIT;
	char payload[128];
	static uint64_t at = 1000;

	ev.id = (char *)id;
	ev.has_state = 1;
	ev.state = state;
	ev.has_kind = 1;
	ev.kind = C4__EVENT_KIND__EVENT_COMM_SLOW_RX;
	ev.has_revision = 1;
	ev.revision = rev;
	snprintf(payload, sizeof(payload), "{\"id\":\"%s/%llu\"}", id,
		 (unsigned long long)rev);
	ck_assert_int_eq(store_put_event(f->st, &ev, at++, hooks, nhooks,
					 payload, strlen(payload)),
			 0);
}

static long long
db_int(const struct fixture *f, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	long long v = -1;

	ck_assert_int_eq(
		sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL),
		SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static const char *const two_hooks[] = {"a", "b"};

START_TEST(test_transition_is_one_transaction)
{
	struct fixture f;
	struct store_stats ss;
	struct next_result r;

	fx_init(&f);
	fx_open(&f, 10);
	fx_put(&f, "e1", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 2);
	fx_put(&f, "e1", C4__EVENT_STATE__EVENT_UPDATED, 2, two_hooks, 2);
	fx_put(&f, "e1", C4__EVENT_STATE__EVENT_RESOLVED, 3, two_hooks, 2);
	fx_next(&f, "a", &r);
	store_get_stats(f.st, &ss);
	ck_assert_uint_eq(ss.puts, 3);
	ck_assert_uint_eq(ss.errors, 0);
	ck_assert_int_eq(ss.healthy, 1);
	ck_assert_int_eq(db_int(&f, "SELECT journal_mode = 'wal' FROM "
				    "pragma_journal_mode"),
			 1);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM events"), 1);
	ck_assert_int_eq(db_int(&f, "SELECT revision FROM events"), 3);
	ck_assert_int_eq(db_int(&f, "SELECT state FROM events"), 3);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM event_history"), 3);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM outbox"), 6);
	ck_assert_int_eq(db_int(&f, "SELECT count(DISTINCT ce_id) FROM outbox"),
			 3);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM outbox WHERE "
				    "webhook = 'b' AND ce_id = 'e1/2'"),
			 1);
	ck_assert_int_eq(db_int(&f, "PRAGMA user_version"),
			 STORE_SCHEMA_VERSION);
	fx_done(&f);
}
END_TEST

/* A revision that is not newer changes nothing: replays are harmless. */
START_TEST(test_stale_revision_is_a_noop)
{
	struct fixture f;
	struct store_stats ss;
	struct next_result r;

	fx_init(&f);
	fx_open(&f, 10);
	fx_put(&f, "e1", C4__EVENT_STATE__EVENT_UPDATED, 2, two_hooks, 1);
	fx_put(&f, "e1", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 1);
	fx_put(&f, "e1", C4__EVENT_STATE__EVENT_UPDATED, 2, two_hooks, 1);
	fx_next(&f, "a", &r);
	store_get_stats(f.st, &ss);
	ck_assert_uint_eq(ss.puts, 1);
	ck_assert_uint_eq(ss.stale, 2);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM event_history"), 1);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM outbox"), 1);
	ck_assert_int_eq(db_int(&f, "SELECT revision FROM events"), 2);
	fx_done(&f);
}
END_TEST

/* Rows come out in order; a failure keeps the row first; marks stick. */
START_TEST(test_outbox_order_attempts_marks)
{
	struct fixture f;
	struct next_result r;
	uint64_t first;

	fx_init(&f);
	fx_open(&f, 10);
	fx_put(&f, "x", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 2);
	fx_put(&f, "y", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 2);
	fx_put(&f, "x", C4__EVENT_STATE__EVENT_RESOLVED, 2, two_hooks, 2);
	fx_next(&f, "a", &r);
	ck_assert(r.found);
	ck_assert_str_eq(r.ce_id, "x/1");
	ck_assert_str_eq(r.payload, "{\"id\":\"x/1\"}");
	ck_assert_uint_eq(r.pending, 3);
	first = r.seq;
	ck_assert_int_eq(store_outbox_failed(f.st, first, 0), 0);
	fx_next(&f, "a", &r);
	ck_assert_uint_eq(r.seq, first);
	ck_assert_uint_eq(r.attempts, 1);
	ck_assert_int_eq(store_mark_delivered(f.st, first), 0);
	fx_next(&f, "a", &r);
	ck_assert_str_eq(r.ce_id, "y/1");
	ck_assert_uint_eq(r.pending, 2);
	ck_assert_int_eq(store_mark_delivered(f.st, r.seq), 0);
	fx_next(&f, "a", &r);
	ck_assert_str_eq(r.ce_id, "x/2");
	ck_assert_int_eq(store_mark_delivered(f.st, r.seq), 0);
	fx_next(&f, "a", &r);
	ck_assert(!r.found);
	ck_assert_uint_eq(r.pending, 0);
	/* Webhook b has its own queue, untouched. */
	fx_next(&f, "b", &r);
	ck_assert_str_eq(r.ce_id, "x/1");
	ck_assert_uint_eq(r.pending, 3);
	/* After a restart the marks hold. */
	store_close(f.st);
	fx_open(&f, 10);
	fx_next(&f, "a", &r);
	ck_assert(!r.found);
	fx_next(&f, "b", &r);
	ck_assert_str_eq(r.ce_id, "x/1");
	fx_done(&f);
}
END_TEST

/* Open events come back at start-up, resolved ones up to keep_resolved. */
START_TEST(test_restart_recovery)
{
	struct fixture f;

	fx_init(&f);
	fx_open(&f, 10);
	ck_assert_int_eq(f.nids, 0);
	fx_put(&f, "a", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 1);
	fx_put(&f, "b", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 1);
	fx_put(&f, "c", C4__EVENT_STATE__EVENT_OPEN, 1, two_hooks, 1);
	fx_put(&f, "b", C4__EVENT_STATE__EVENT_RESOLVED, 2, two_hooks, 1);
	fx_put(&f, "a", C4__EVENT_STATE__EVENT_UPDATED, 2, two_hooks, 1);
	store_close(f.st); /* commits what is queued */
	fx_open(&f, 10);
	ck_assert_int_eq(f.nids, 3);
	ck_assert_str_eq(f.ids[0], "c");
	ck_assert_str_eq(f.ids[1], "b");
	ck_assert_str_eq(f.ids[2], "a");
	store_close(f.st);
	fx_open(&f, 0);
	ck_assert_int_eq(f.nids, 2);
	ck_assert_str_eq(f.ids[0], "c");
	ck_assert_str_eq(f.ids[1], "a");
	fx_done(&f);
}
END_TEST

/* db_int() for a text column: copied into out, "" for NULL or no row. */
static void
db_text(const struct fixture *f, const char *sql, char *out, size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *s;

	out[0] = '\0';
	ck_assert_int_eq(
		sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL),
		SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, len, "%s",
			 (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
}

/* The verdict columns round-trip; a touch refreshes an open row only. */
START_TEST(test_verdict_columns_and_touch)
{
	struct fixture f;
	struct next_result r;
	C4__Event ev = C4__EVENT__INIT;
	char text[64];

	fx_init(&f);
	fx_open(&f, 10);
	ev.id = (char *)"h";
	ev.has_state = ev.has_kind = ev.has_revision = 1;
	ev.state = C4__EVENT_STATE__EVENT_OPEN;
	ev.kind = C4__EVENT_KIND__EVENT_HOST_SLOW;
	ev.revision = 1;
	ev.has_domain = ev.has_action_type = 1;
	ev.domain = C4__EVENT_DOMAIN__DOMAIN_HOST;
	ev.action_type = C4__ACTION__ACTION_ISOLATE_HOST;
	ev.target = (char *)"node-07";
	ev.has_last_interval = ev.has_last_seen_ns = 1;
	ev.last_interval = 5;
	ev.last_seen_ns = 5000;
	ck_assert_int_eq(store_put_event(f.st, &ev, 1, NULL, 0, "{}", 2), 0);
	ev.last_interval = 9;
	ev.last_seen_ns = 9000;
	ck_assert_int_eq(store_touch_event(f.st, &ev), 0);
	fx_next(&f, "a", &r);
	ck_assert_int_eq(db_int(&f, "SELECT domain FROM events"),
			 C4__EVENT_DOMAIN__DOMAIN_HOST);
	ck_assert_int_eq(db_int(&f, "SELECT action_type FROM events"),
			 C4__ACTION__ACTION_ISOLATE_HOST);
	db_text(&f, "SELECT target FROM events", text, sizeof(text));
	ck_assert_str_eq(text, "node-07");
	ck_assert_int_eq(db_int(&f, "SELECT last_interval FROM events"), 9);
	ck_assert_int_eq(db_int(&f, "SELECT last_seen_ns FROM events"), 9000);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM event_history"), 1);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM outbox"), 0);
	ck_assert_int_eq(db_int(&f, "SELECT revision FROM events"), 1);
	/* the stored event carries the touch: a restart sees it */
	store_close(f.st);
	fx_open(&f, 10);
	ck_assert_int_eq(f.nids, 1);
	ck_assert_uint_eq(f.last_iv[0], 9);

	/* a touch of an older revision or a resolved event changes nothing */
	ev.last_interval = 7;
	ev.revision = 2;
	ev.state = C4__EVENT_STATE__EVENT_RESOLVED;
	ck_assert_int_eq(store_put_event(f.st, &ev, 2, NULL, 0, "{}", 2), 0);
	ev.revision = 1;
	ev.last_interval = 20;
	ck_assert_int_eq(store_touch_event(f.st, &ev), 0);
	ev.revision = 2;
	ck_assert_int_eq(store_touch_event(f.st, &ev), 0);
	fx_next(&f, "a", &r);
	ck_assert_int_eq(db_int(&f, "SELECT last_interval FROM events"), 7);
	fx_done(&f);
}
END_TEST

/* A database of schema version 1 is migrated in place and still read. */
START_TEST(test_schema_1_migrated)
{
	static const char v1[] =
		"CREATE TABLE events ("
		" id TEXT PRIMARY KEY, kind INTEGER NOT NULL, state INTEGER "
		"NOT NULL, revision INTEGER NOT NULL, first_interval INTEGER,"
		" last_interval INTEGER, first_seen_ns INTEGER, last_seen_ns "
		"INTEGER, updated_ns INTEGER NOT NULL, event BLOB NOT NULL);"
		"CREATE TABLE event_history ("
		" id TEXT NOT NULL, revision INTEGER NOT NULL,"
		" state INTEGER NOT NULL, at_ns INTEGER NOT NULL,"
		" event BLOB NOT NULL, PRIMARY KEY (id, revision));"
		"CREATE TABLE outbox ("
		" seq INTEGER PRIMARY KEY AUTOINCREMENT, webhook TEXT NOT NULL,"
		" event_id TEXT NOT NULL, revision INTEGER NOT NULL,"
		" ce_id TEXT NOT NULL, payload TEXT NOT NULL,"
		" attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ns "
		"INTEGER, created_ns INTEGER NOT NULL, delivered_ns INTEGER,"
		" UNIQUE (webhook, ce_id));"
		"PRAGMA user_version = 1;";
	struct fixture f;
	C4__Event ev = C4__EVENT__INIT;
	uint8_t blob[256];
	size_t n;
	sqlite3 *db;
	sqlite3_stmt *s;

	fx_init(&f);
	ev.id = (char *)"old";
	ev.has_state = ev.has_kind = ev.has_revision = 1;
	ev.state = C4__EVENT_STATE__EVENT_OPEN;
	ev.kind = C4__EVENT_KIND__EVENT_NODE_LOST;
	ev.revision = 3;
	n = c4__event__pack(&ev, blob);
	ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_prepare_v2(db,
				   "INSERT INTO events (id, kind, state, "
				   "revision, updated_ns, event) VALUES "
				   "('old', 8, 1, 3, 1, ?1)",
				   -1, &s, NULL),
		SQLITE_OK);
	sqlite3_bind_blob(s, 1, blob, (int)n, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	sqlite3_close(db);

	fx_open(&f, 10);
	ck_assert_int_eq(f.nids, 1);
	ck_assert_str_eq(f.ids[0], "old");
	ck_assert_int_eq(db_int(&f, "PRAGMA user_version"), 2);
	ck_assert_int_eq(db_int(&f, "SELECT count(*) FROM events WHERE "
				    "domain IS NULL AND target IS NULL"),
			 1);
	fx_put(&f, "old", C4__EVENT_STATE__EVENT_RESOLVED, 4, two_hooks, 1);
	store_close(f.st);
	fx_open(&f, 10);
	ck_assert_int_eq(f.nids, 1);
	ck_assert_int_eq(db_int(&f, "SELECT revision FROM events"), 4);
	fx_done(&f);
}
END_TEST

START_TEST(test_corrupt_database_refused)
{
	struct fixture f;
	char err[512];
	FILE *fp;

	fx_init(&f);
	fp = fopen(f.path, "w");
	ck_assert_ptr_nonnull(fp);
	for (int i = 0; i < 400; i++)
		fputs("definitely not sqlite ", fp);
	fclose(fp);
	ck_assert_int_eq(store_open(&f.st, f.base, f.path, 10, NULL, NULL, err,
				    sizeof(err)),
			 -1);
	ck_assert_ptr_null(f.st);
	ck_assert_msg(strstr(err, "not a usable database") != NULL, "%s", err);
	ck_assert_ptr_nonnull(strstr(err, f.path));
	fx_done(&f);
}
END_TEST

START_TEST(test_foreign_schema_refused)
{
	struct fixture f;
	char err[512];
	sqlite3 *db;

	fx_init(&f);
	ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(store_open(&f.st, f.base, f.path, 10, NULL, NULL, err,
				    sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "schema version 99") != NULL, "%s", err);
	fx_done(&f);
}
END_TEST

/* A forgotten reader is never called back (its owner is gone). */
START_TEST(test_forget_drops_callbacks)
{
	struct fixture f;
	struct next_result r = {0}, barrier;

	fx_init(&f);
	fx_open(&f, 10);
	ck_assert_int_eq(store_outbox_next(f.st, "a", next_cb, &r), 0);
	store_forget(f.st, &r);
	fx_next(&f, "a", &barrier);
	ck_assert_int_eq(r.done, 0);
	fx_done(&f);
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");

	tcase_add_test(tc, test_transition_is_one_transaction);
	tcase_add_test(tc, test_stale_revision_is_a_noop);
	tcase_add_test(tc, test_outbox_order_attempts_marks);
	tcase_add_test(tc, test_restart_recovery);
	tcase_add_test(tc, test_verdict_columns_and_touch);
	tcase_add_test(tc, test_schema_1_migrated);
	tcase_add_test(tc, test_corrupt_database_refused);
	tcase_add_test(tc, test_foreign_schema_refused);
	tcase_add_test(tc, test_forget_drops_callbacks);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(store_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
