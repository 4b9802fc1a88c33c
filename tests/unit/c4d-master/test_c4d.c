/*
 * test_c4d.c - the master core without a network: publishing assigns
 * revisions and ignores duplicates, refuses invalid events, keeps open
 * events and the newest resolved ones, pages ADMIN_EVENTS answers with
 * since_ns / next_since_ns / more, and continues events after a restart.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master.h"

struct fixture {
	char dir[64];
	struct c4d_conf conf;
	struct event_base *base;
	struct c4d *m;
};

static void
fx_open(struct fixture *f)
{
	ck_assert_int_eq(c4d_open(&f->m, f->base, &f->conf, NULL, NULL, 0), 0);
}

static void
fx_init(struct fixture *f, int64_t keep_resolved)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/c4-unit-c4d-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	f->conf.job = (char *)"job-7";
	f->conf.state_dir = f->dir;
	f->conf.events.keep_resolved = keep_resolved;
	f->base = event_base_new();
	fx_open(f);
}

static void
fx_done(struct fixture *f)
{
	char cmd[128];

	c4d_close(f->m);
	event_base_free(f->base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int
publish(struct fixture *f, const char *id, int state, uint64_t rev)
{
	C4__Event ev = C4__EVENT__INIT;

	ev.id = (char *)id;
	ev.has_state = 1;
	ev.state = state;
	ev.has_kind = 1;
	ev.kind = C4__EVENT_KIND__EVENT_NONCOMM_SLOW;
	ev.has_revision = rev != 0;
	ev.revision = rev;
	return c4d_publish(f->m, &ev);
}

static uint64_t
events(struct fixture *f, uint64_t since, uint32_t limit, char *ids, size_t len,
       int *more)
{
	C4__AdminRequest q = C4__ADMIN_REQUEST__INIT;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;
	uint64_t next;

	q.since_ns = since;
	q.limit = limit;
	c4d_reply_events(f->m, &q, &r);
	ids[0] = '\0';
	for (size_t i = 0; i < r.n_events; i++) {
		size_t n = strlen(ids);

		snprintf(ids + n, len - n, "%s%s/%llu", i ? " " : "",
			 r.events[i]->id,
			 (unsigned long long)r.events[i]->revision);
	}
	*more = r.more;
	next = r.next_since_ns;
	c4d_reply_free(&r);
	return next;
}

START_TEST(test_revisions_and_duplicates)
{
	struct fixture f;
	struct c4d_stats *st;

	fx_init(&f, 10);
	ck_assert_int_eq(publish(&f, "a", C4__EVENT_STATE__EVENT_OPEN, 0), 0);
	ck_assert_int_eq(publish(&f, "a", C4__EVENT_STATE__EVENT_UPDATED, 0),
			 0);
	ck_assert_uint_eq(c4d_find(f.m, "a")->revision, 2);
	ck_assert_str_eq(c4d_find(f.m, "a")->job_id, "job-7");
	ck_assert_uint_ne(c4d_find(f.m, "a")->first_seen_ns, 0);
	/* An explicit revision that is not newer is a duplicate. */
	ck_assert_int_eq(publish(&f, "a", C4__EVENT_STATE__EVENT_RESOLVED, 2),
			 0);
	ck_assert_int_eq(c4d_find(f.m, "a")->state,
			 C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_int_eq(publish(&f, "a", C4__EVENT_STATE__EVENT_RESOLVED, 3),
			 0);
	/* Invalid events are refused. */
	ck_assert_int_eq(publish(&f, "", C4__EVENT_STATE__EVENT_OPEN, 0), -1);
	ck_assert_int_eq(publish(&f, "b", 0, 0), -1);
	ck_assert_int_eq(publish(&f, "b", 9, 0), -1);
	st = c4d_stats(f.m);
	ck_assert_uint_eq(st->published, 3);
	ck_assert_uint_eq(st->duplicate, 1);
	ck_assert_uint_eq(st->refused, 3);
	ck_assert_uint_eq(st->open, 0);
	ck_assert_uint_eq(st->resolved, 1);
	fx_done(&f);
}
END_TEST

START_TEST(test_events_paging)
{
	struct fixture f;
	char ids[512];
	uint64_t next;
	int more;

	fx_init(&f, 10);
	publish(&f, "a", C4__EVENT_STATE__EVENT_OPEN, 0);
	publish(&f, "b", C4__EVENT_STATE__EVENT_OPEN, 0);
	publish(&f, "c", C4__EVENT_STATE__EVENT_OPEN, 0);
	publish(&f, "a", C4__EVENT_STATE__EVENT_UPDATED, 0);
	next = events(&f, 0, 0, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "b/1 c/1 a/2");
	ck_assert_int_eq(more, 0);
	/* Nothing new since the end of the last answer. */
	ck_assert_uint_eq(events(&f, next, 0, ids, sizeof(ids), &more), next);
	ck_assert_str_eq(ids, "");
	publish(&f, "b", C4__EVENT_STATE__EVENT_RESOLVED, 0);
	events(&f, next, 0, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "b/2");
	/* Pages of two. */
	next = events(&f, 0, 2, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "c/1 a/2");
	ck_assert_int_eq(more, 1);
	events(&f, next, 2, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "b/2");
	ck_assert_int_eq(more, 0);
	fx_done(&f);
}
END_TEST

/* Resolved events beyond keep_resolved are forgotten, oldest first. */
START_TEST(test_keep_resolved)
{
	struct fixture f;
	char ids[512];
	int more;

	fx_init(&f, 2);
	publish(&f, "open-1", C4__EVENT_STATE__EVENT_OPEN, 0);
	for (int i = 0; i < 4; i++) {
		char id[16];

		snprintf(id, sizeof(id), "r-%d", i);
		publish(&f, id, C4__EVENT_STATE__EVENT_OPEN, 0);
		publish(&f, id, C4__EVENT_STATE__EVENT_RESOLVED, 0);
	}
	events(&f, 0, 0, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "open-1/1 r-2/2 r-3/2");
	ck_assert_ptr_null(c4d_find(f.m, "r-0"));
	ck_assert_uint_eq(c4d_stats(f.m)->resolved, 2);
	fx_done(&f);
}
END_TEST

/* After a restart the events go on under their ids and revisions. */
START_TEST(test_restart_continues)
{
	struct fixture f;
	char ids[512];
	int more;

	fx_init(&f, 10);
	publish(&f, "a", C4__EVENT_STATE__EVENT_OPEN, 0);
	publish(&f, "a", C4__EVENT_STATE__EVENT_UPDATED, 0);
	publish(&f, "b", C4__EVENT_STATE__EVENT_OPEN, 0);
	publish(&f, "b", C4__EVENT_STATE__EVENT_RESOLVED, 0);
	c4d_close(f.m);
	fx_open(&f);
	events(&f, 0, 0, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "a/2 b/2");
	ck_assert_uint_eq(c4d_stats(f.m)->open, 1);
	ck_assert_int_eq(publish(&f, "a", C4__EVENT_STATE__EVENT_RESOLVED, 0),
			 0);
	ck_assert_uint_eq(c4d_find(f.m, "a")->revision, 3);
	fx_done(&f);
}
END_TEST

/*
 * A touch moves an open event's last sighting in the list and the store
 * without a revision: paging and webhooks see no transition.
 */
START_TEST(test_touch_last_seen)
{
	struct fixture f;
	const C4__Event *ev;
	char ids[512];
	int more;
	uint64_t next;

	fx_init(&f, 10);
	publish(&f, "a", C4__EVENT_STATE__EVENT_OPEN, 0);
	next = events(&f, 0, 0, ids, sizeof(ids), &more);
	ck_assert_int_eq(c4d_touch(f.m, "a", 4, 4000), 0);
	ck_assert_int_eq(c4d_touch(f.m, "a", 5, 5000), 0);
	ck_assert_int_eq(c4d_touch(f.m, "a", 5, 6000), 0); /* not newer */
	ev = c4d_find(f.m, "a");
	ck_assert_uint_eq(ev->revision, 1);
	ck_assert_uint_eq(ev->last_interval, 5);
	ck_assert_uint_ge(ev->last_seen_ns, 5000);
	ck_assert_uint_eq(c4d_stats(f.m)->published, 1);
	events(&f, next, 0, ids, sizeof(ids), &more);
	ck_assert_str_eq(ids, "");
	ck_assert_int_eq(c4d_touch(f.m, "nope", 9, 9000), 0);
	c4d_close(f.m);
	fx_open(&f);
	ck_assert_uint_eq(c4d_find(f.m, "a")->last_interval, 5);
	/* resolved: touches change nothing */
	publish(&f, "a", C4__EVENT_STATE__EVENT_RESOLVED, 0);
	ck_assert_int_eq(c4d_touch(f.m, "a", 9, 9000), 0);
	ck_assert_uint_eq(c4d_find(f.m, "a")->last_interval, 0);
	fx_done(&f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("c4d");
	TCase *tc = tcase_create("c4d");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_revisions_and_duplicates);
	tcase_add_test(tc, test_events_paging);
	tcase_add_test(tc, test_keep_resolved);
	tcase_add_test(tc, test_restart_continues);
	tcase_add_test(tc, test_touch_last_seen);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
