/*
 * test_events.c - the event lifecycle: a detector's event opens once under
 * a stable public id, is updated with rising revisions and resolves; an
 * event adopted after a restart continues under its old id when the
 * detector sees it again, and resolves when it does not in time.
 */
#include <check.h>
#include <stdlib.h>

#include "events.h"
#include "fixture.h"

struct events_fx {
	struct hosts hosts;
	struct ingest_stats st;
	struct fx_seen seen;
	struct events evs;
};

static void
efx_init(struct events_fx *f)
{
	uint32_t id;
	uint16_t nic;

	memset(f, 0, sizeof(*f));
	ck_assert_ptr_nonnull(hosts_find(&f->hosts, "node-0", 1, &id));
	ck_assert_int_eq(hosts_nic(&f->hosts.v[id], "mlx5_0", &nic), 0);
	events_init(&f->evs, "job-7", &f->hosts, &f->st, fx_record, &f->seen);
}

static void
efx_done(struct events_fx *f)
{
	events_free(&f->evs);
	hosts_free(&f->hosts);
}

/* A slow receive side on node-0 mlx5_0, as the engine reports it. */
static const struct matrix_event *
slow_rx(struct matrix_event *e, uint64_t cid, uint8_t state)
{
	memset(e, 0, sizeof(*e));
	e->id = cid;
	e->kind = MATRIX_EV_COMM_SLOW_RX;
	e->state = state;
	e->comm = 0xa1;
	e->nsuspects = 1;
	e->suspects[0].role = MATRIX_ROLE_RX;
	e->suspects[0].rank = 3;
	e->suspects[0].port = 1;
	e->slowdown = 2.5;
	return e;
}

START_TEST(test_events_lifecycle)
{
	struct events_fx f;
	struct matrix_event e;
	struct fx_seen *s = &f.seen;

	efx_init(&f);
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_OPEN), 5000000000ull);
	ck_assert_uint_eq(s->n, 1);
	ck_assert_int_eq(s->state[0], C4__EVENT_STATE__EVENT_OPEN);
	ck_assert_int_eq(s->kind[0], C4__EVENT_KIND__EVENT_COMM_SLOW_RX);
	ck_assert_uint_eq(s->revision[0], 1);
	ck_assert_str_eq(s->host[0], "node-0");
	ck_assert_uint_eq(strlen(s->id[0]), 16 + 1 + 4);
	ck_assert_str_eq(s->id[0] + 16, "-5000");
	ck_assert_uint_eq(events_hot_comm(&f.evs), 0xa1);

	/* updated, and opened again while open: one event, new revisions */
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_UPDATED), 6000000000ull);
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_OPEN), 7000000000ull);
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_RESOLVED),
		     8000000000ull);
	ck_assert_uint_eq(s->n, 4);
	for (size_t i = 1; i < 4; i++) {
		ck_assert_str_eq(s->id[i], s->id[0]);
		ck_assert_uint_eq(s->revision[i], i + 1);
	}
	ck_assert_int_eq(s->state[1], C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_int_eq(s->state[2], C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_int_eq(s->state[3], C4__EVENT_STATE__EVENT_RESOLVED);
	ck_assert_uint_eq(events_hot_comm(&f.evs), 0);
	ck_assert_uint_eq(f.evs.n, 0);

	/* an event never opened here is ignored */
	events_apply(&f.evs, slow_rx(&e, 43, MATRIX_ST_RESOLVED),
		     9000000000ull);
	ck_assert_uint_eq(s->n, 4);
	ck_assert_uint_eq(f.st.events_open, 1);
	ck_assert_uint_eq(f.st.events_updated, 2);
	ck_assert_uint_eq(f.st.events_resolved, 1);
	efx_done(&f);
}
END_TEST

START_TEST(test_events_adopt)
{
	struct events_fx f, first;
	struct matrix_event e;
	C4__Event ev = C4__EVENT__INIT;
	struct fx_seen *s = &f.seen;

	/* the id a previous run gave this anomaly */
	efx_init(&first);
	events_apply(&first.evs, slow_rx(&e, 42, MATRIX_ST_OPEN),
		     5000000000ull);
	efx_done(&first);

	efx_init(&f);
	ev.id = first.seen.id[0];
	ev.revision = 7;
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), 0);
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), -1);
	ev.id = (char *)"not-one-of-ours";
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), -1);
	ev.id = (char *)"00000000000000ab-1";
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), 0);
	ck_assert_uint_eq(s->n, 0);

	/* the engine sees the first again: it continues, no second open */
	events_apply(&f.evs, slow_rx(&e, 99, MATRIX_ST_OPEN), 9000000000ull);
	ck_assert_uint_eq(s->n, 1);
	ck_assert_int_eq(s->state[0], C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_str_eq(s->id[0], first.seen.id[0]);
	ck_assert_uint_eq(s->revision[0], 8);

	/* the other is not confirmed within the grace: resolved */
	events_expire(&f.evs, INGEST_ADOPT_GRACE, 3, 9000000000ull);
	ck_assert_uint_eq(s->n, 1);
	events_expire(&f.evs, INGEST_ADOPT_GRACE + 1, 4, 9000000000ull);
	ck_assert_uint_eq(s->n, 2);
	ck_assert_int_eq(s->state[1], C4__EVENT_STATE__EVENT_RESOLVED);
	ck_assert_str_eq(s->id[1], "00000000000000ab-1");
	ck_assert_uint_eq(f.evs.n, 1);
	efx_done(&f);
}
END_TEST

int
main(void)
{
	const TTest *const tests[] = {test_events_lifecycle, test_events_adopt};

	return fx_main("events", tests, sizeof(tests) / sizeof(tests[0]));
}
