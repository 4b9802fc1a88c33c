/*
 * test_domain.c: the final pass over an interval's events (domain.c),
 * driven through persist_observe(), persist_finish(), domain_finish() and
 * persist_compact() interval by interval on a job of 8 hosts x 8 GPUs
 * (GPU g uses NIC g / 2, port g % 2): several devices of one host slow
 * are one host event, a storm is one job event, actions follow the
 * policy, events that break the contract are not published, and an
 * intermittent fault is one event for its life.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix_int.h"
#include "tmain.h"

#define NHOST 8
#define NGPU  8
#define COMM  0xd0d0u

/* Events of the run so far, per kind and state; the last of each. */
struct tally {
	unsigned n[MATRIX_EV_COUNT][3];
	struct matrix_event last[MATRIX_EV_COUNT][3];
	unsigned isolations;
};

static struct matrix *
engine(const struct matrix_params *p)
{
	struct matrix_rank_loc loc[NHOST * NGPU];
	struct matrix *m = matrix_new(p);
	uint32_t r;

	ck_assert_ptr_nonnull(m);
	memset(loc, 0, sizeof(loc));
	for (r = 0; r < NHOST * NGPU; r++) {
		loc[r].host = r / NGPU;
		loc[r].gpu = (uint16_t)(r % NGPU);
		loc[r].nic = (uint16_t)(r % NGPU / 2);
		loc[r].port = (uint8_t)(r % 2);
	}
	ck_assert_int_eq(matrix_comm_add(m, COMM, NHOST * NGPU, loc), 0);
	return m;
}

/*
 * Candidate of kind on (host, gpu): score z, slowdown r, flags PERSIST_.
 * A transmit or receive side names the GPU's NIC port.
 */
static void
cand(struct matrix *m, unsigned kind, uint32_t host, uint16_t gpu, double z,
     double r, unsigned flags)
{
	struct matrix_event e;
	struct matrix_suspect *s = &e.suspects[0];

	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)kind;
	e.comm = COMM;
	e.score = z;
	e.slowdown = r;
	e.ncells_total = 1;
	e.nsuspects = 1;
	e.isolate_host = host;
	if (flags & PERSIST_IMMEDIATE)
		e.confidence = 0.95; /* what the hang detector gives */
	s->role = kind == MATRIX_EV_COMM_SLOW_TX     ? MATRIX_ROLE_TX
		  : kind == MATRIX_EV_COMM_SLOW_LINK ? MATRIX_ROLE_LINK
						     : MATRIX_ROLE_RANK;
	s->transport = MATRIX_TR_NET;
	s->comm = COMM;
	s->rank = s->peer_rank = host * NGPU + gpu;
	s->host = s->peer_host = host;
	s->gpu = s->peer_gpu = gpu;
	s->nic = s->peer_nic = (uint16_t)(gpu / 2);
	s->port = s->peer_port = (uint8_t)(gpu % 2);
	if (kind == MATRIX_EV_COMM_SLOW_LINK)
		s->peer_host = (host + 1) % NHOST;
	ck_assert_int_eq(
		persist_observe(
			m, persist_key(kind, ((uint64_t)host << 16) | gpu, 0),
			&e, flags, NULL),
		0);
}

/* Ends interval iv as matrix_analyze() does; counts what came out. */
static void
step(struct matrix *m, uint64_t iv, struct tally *t)
{
	uint32_t i;

	m->iv = iv;
	ck_assert_int_eq(persist_finish(m), 0);
	ck_assert_int_eq(domain_finish(m), 0);
	ck_assert_int_eq(persist_compact(m), 0);
	for (i = 0; i < m->nout; i++) {
		const struct matrix_event *e = &m->out[i];

		ck_assert_uint_lt(e->kind, MATRIX_EV_COUNT);
		t->n[e->kind][e->state]++;
		t->last[e->kind][e->state] = *e;
		if (e->state != MATRIX_ST_RESOLVED &&
		    (e->action == MATRIX_ACT_ISOLATE_HOST ||
		     e->action == MATRIX_ACT_ISOLATE_NIC))
			t->isolations++;
	}
	m->nout = 0;
}

/* Opens of every kind in the run. */
static unsigned
opens(const struct tally *t)
{
	unsigned k, n = 0;

	for (k = 0; k < MATRIX_EV_COUNT; k++)
		n += t->n[k][MATRIX_ST_OPEN];
	return n;
}

/* Intervals 1..n with gpus (bit g) of host slow as kind, then clean. */
static void
host_run(struct matrix *m, struct tally *t, unsigned kind, uint32_t host,
	 unsigned gpus, uint64_t n, uint64_t clean)
{
	uint64_t iv;
	uint16_t g;

	for (iv = 1; iv <= n + clean; iv++) {
		for (g = 0; g < NGPU && iv <= n; g++)
			if (gpus & (1u << g))
				cand(m, kind, host, g, 12.0, 2.0, 0);
		step(m, iv, t);
	}
}

START_TEST(test_host_gpus_one_event)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	const struct matrix_event *e;

	memset(&t, 0, sizeof(t));
	host_run(m, &t, MATRIX_EV_NONCOMM_SLOW, 3, 0xff, 8, 6);
	ck_assert_uint_eq(opens(&t), 1);
	ck_assert_uint_eq(t.n[MATRIX_EV_HOST_SLOW][MATRIX_ST_OPEN], 1);
	e = &t.last[MATRIX_EV_HOST_SLOW][MATRIX_ST_OPEN];
	ck_assert_uint_eq(e->domain, MATRIX_DOM_HOST);
	ck_assert_uint_eq(e->suspects[0].role, MATRIX_ROLE_HOST);
	ck_assert_uint_eq(e->suspects[0].host, 3);
	ck_assert_uint_eq(e->nsuspects, MATRIX_MAX_SUSPECTS);
	ck_assert_uint_eq(e->suspects[1].host, 3);
	ck_assert_uint_eq(e->evidence.gpus, 0xff);
	ck_assert_uint_eq(e->evidence.nmembers, 8);
	ck_assert_uint_eq(e->isolate_host, 3);
	ck_assert_uint_eq(e->action, MATRIX_ACT_ISOLATE_HOST);
	ck_assert(e->evidence.z_open >= 12.0f);
	/* the members' RESOLVED are as unpublished as their OPEN */
	ck_assert_uint_eq(t.n[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_RESOLVED], 0);
	ck_assert_uint_eq(t.n[MATRIX_EV_HOST_SLOW][MATRIX_ST_RESOLVED], 1);
	ck_assert_uint_eq(t.last[MATRIX_EV_HOST_SLOW][MATRIX_ST_RESOLVED].id,
			  e->id);
	ck_assert_uint_eq(m->ngrp, 0);
	matrix_free(m);
}
END_TEST

START_TEST(test_host_nics_one_event)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	const struct matrix_event *e;

	memset(&t, 0, sizeof(t));
	host_run(m, &t, MATRIX_EV_COMM_SLOW_TX, 5, 0xff, 8, 6);
	ck_assert_uint_eq(opens(&t), 1);
	e = &t.last[MATRIX_EV_HOST_SLOW][MATRIX_ST_OPEN];
	ck_assert_uint_eq(e->domain, MATRIX_DOM_HOST);
	ck_assert_uint_eq(e->evidence.nmembers, 8);
	ck_assert_uint_eq(e->suspects[1].role, MATRIX_ROLE_TX);
	ck_assert_uint_eq(t.n[MATRIX_EV_HOST_SLOW][MATRIX_ST_RESOLVED], 1);
	matrix_free(m);

	/* Both ports of one NIC: the NIC, whose action isolates the NIC. */
	m = engine(NULL);
	memset(&t, 0, sizeof(t));
	host_run(m, &t, MATRIX_EV_COMM_SLOW_TX, 5, 0x0c, 8, 6);
	ck_assert_uint_eq(opens(&t), 1);
	e = &t.last[MATRIX_EV_HOST_SLOW][MATRIX_ST_OPEN];
	ck_assert_uint_eq(e->domain, MATRIX_DOM_NIC);
	ck_assert_uint_eq(e->suspects[0].nic, 1);
	ck_assert_uint_eq(e->evidence.gpus, 0x0c);
	ck_assert_uint_eq(e->action, MATRIX_ACT_ISOLATE_NIC);
	matrix_free(m);
}
END_TEST

START_TEST(test_two_hosts_two_events)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	uint64_t iv;

	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 8; iv++) {
		cand(m, MATRIX_EV_NONCOMM_SLOW, 1, 4, 12.0, 2.0, 0);
		cand(m, MATRIX_EV_NONCOMM_SLOW, 6, 2, 12.0, 2.0, 0);
		step(m, iv, &t);
	}
	ck_assert_uint_eq(opens(&t), 2);
	ck_assert_uint_eq(t.n[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_OPEN], 2);
	ck_assert_uint_eq(t.last[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_OPEN].domain,
			  MATRIX_DOM_GPU);
	ck_assert_uint_eq(
		t.last[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_OPEN].evidence.basis,
		MATRIX_BASIS_WAIT);
	matrix_free(m);
}
END_TEST

START_TEST(test_late_member_folded)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	uint64_t iv;

	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 10; iv++) {
		cand(m, MATRIX_EV_NONCOMM_SLOW, 2, 0, 12.0, 2.0, 0);
		cand(m, MATRIX_EV_NONCOMM_SLOW, 2, 1, 12.0, 2.0, 0);
		if (iv >= 5)
			cand(m, MATRIX_EV_NONCOMM_SLOW, 2, 6, 12.0, 2.0, 0);
		step(m, iv, &t);
	}
	ck_assert_uint_eq(opens(&t), 1);
	ck_assert_uint_ge(t.n[MATRIX_EV_HOST_SLOW][MATRIX_ST_UPDATED], 1);
	ck_assert_uint_eq(t.last[MATRIX_EV_HOST_SLOW][MATRIX_ST_UPDATED]
				  .evidence.nmembers,
			  3);
	ck_assert_uint_eq(
		t.last[MATRIX_EV_HOST_SLOW][MATRIX_ST_UPDATED].evidence.gpus,
		0x43);
	matrix_free(m);
}
END_TEST

START_TEST(test_storm_one_job_event)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	const struct matrix_event *e;
	uint32_t h;
	uint64_t iv;

	/* Every host's rank 0 hung at once (an overloaded job). */
	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 4; iv++) {
		for (h = 0; h < NHOST; h++)
			cand(m, MATRIX_EV_NONCOMM_HANG, h, 0, 2.0, 1.0,
			     PERSIST_IMMEDIATE);
		step(m, iv, &t);
	}
	for (; iv <= 12; iv++)
		step(m, iv, &t);
	ck_assert_uint_eq(opens(&t), 1);
	ck_assert_uint_eq(t.isolations, 0);
	e = &t.last[MATRIX_EV_JOB_STALL][MATRIX_ST_OPEN];
	ck_assert_uint_eq(e->kind, MATRIX_EV_JOB_STALL);
	ck_assert_uint_eq(e->domain, MATRIX_DOM_JOB);
	ck_assert_uint_eq(e->action, MATRIX_ACT_CHECK_JOB);
	ck_assert_uint_eq(e->evidence.hosts_blamed, NHOST);
	ck_assert_uint_eq(e->evidence.nmembers, NHOST);
	ck_assert_uint_eq(t.n[MATRIX_EV_JOB_STALL][MATRIX_ST_RESOLVED], 1);
	ck_assert_uint_eq(t.n[MATRIX_EV_NONCOMM_HANG][MATRIX_ST_RESOLVED], 0);
	matrix_free(m);

	/* Two hosts of eight are no storm (storm_min_hosts 3). */
	m = engine(NULL);
	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 4; iv++) {
		for (h = 0; h < 2; h++)
			cand(m, MATRIX_EV_NONCOMM_HANG, h, 0, 2.0, 1.0,
			     PERSIST_IMMEDIATE);
		step(m, iv, &t);
	}
	ck_assert_uint_eq(opens(&t), 2);
	ck_assert_uint_eq(t.isolations, 2);
	matrix_free(m);
}
END_TEST

START_TEST(test_storm_retracts_published)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	uint32_t h;
	uint64_t iv;

	/* Two hosts blamed, then four more within the window: the first two
	 * are retracted (UPDATED with action observe). */
	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 4; iv++) {
		for (h = 0; h < (iv == 1 ? 2u : 6u); h++)
			cand(m, MATRIX_EV_NONCOMM_HANG, h, 0, 2.0, 1.0,
			     PERSIST_IMMEDIATE);
		step(m, iv, &t);
	}
	ck_assert_uint_eq(t.n[MATRIX_EV_NONCOMM_HANG][MATRIX_ST_OPEN], 2);
	ck_assert_uint_eq(t.n[MATRIX_EV_JOB_STALL][MATRIX_ST_OPEN], 1);
	ck_assert_uint_eq(t.n[MATRIX_EV_NONCOMM_HANG][MATRIX_ST_UPDATED], 2);
	ck_assert_uint_eq(
		t.last[MATRIX_EV_NONCOMM_HANG][MATRIX_ST_UPDATED].action,
		MATRIX_ACT_OBSERVE);
	ck_assert_uint_eq(t.last[MATRIX_EV_JOB_STALL][MATRIX_ST_OPEN]
				  .evidence.hosts_blamed,
			  6);
	matrix_free(m);
}
END_TEST

/* One GPU event of n intervals at score z, slowdown r: its last action. */
static unsigned
policy(double z, double r, unsigned *nopen)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	unsigned a;
	uint64_t iv;

	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 6; iv++) {
		cand(m, MATRIX_EV_NONCOMM_SLOW, 4, 1, z, r, PERSIST_STRONG);
		step(m, iv, &t);
	}
	*nopen = opens(&t);
	a = t.n[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_UPDATED]
		    ? t.last[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_UPDATED].action
		    : t.last[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_OPEN].action;
	matrix_free(m);
	return a;
}

START_TEST(test_action_policy)
{
	struct matrix *m;
	struct tally t;
	unsigned n;
	uint64_t iv;

	/* Sure and 2x: isolate; sure but 1.2x: observe. */
	ck_assert_uint_eq(policy(20.0, 2.0, &n), MATRIX_ACT_ISOLATE_HOST);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(policy(20.0, 1.2, &n), MATRIX_ACT_OBSERVE);
	ck_assert_uint_eq(n, 1);
	/* Weak scores never reach isolate_conf within the run. */
	ck_assert_uint_eq(policy(4.5, 2.0, &n), MATRIX_ACT_OBSERVE);

	/* A link is checked, an ambiguous pattern observed. */
	m = engine(NULL);
	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 3; iv++) {
		cand(m, MATRIX_EV_COMM_SLOW_LINK, 1, 1, 20.0, 3.0, 0);
		step(m, iv, &t);
	}
	ck_assert_uint_eq(
		t.last[MATRIX_EV_COMM_SLOW_LINK][MATRIX_ST_OPEN].domain,
		MATRIX_DOM_LINK);
	ck_assert_uint_eq(
		t.last[MATRIX_EV_COMM_SLOW_LINK][MATRIX_ST_OPEN].action,
		MATRIX_ACT_CHECK_LINK);
	matrix_free(m);
}
END_TEST

START_TEST(test_contract_enforced)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	unsigned n;
	uint64_t iv;

	/* Strong by accumulation with a score under z_min: held back. */
	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 4; iv++) {
		cand(m, MATRIX_EV_NONCOMM_SLOW, 4, 1, 3.0, 2.0, PERSIST_STRONG);
		step(m, iv, &t);
	}
	ck_assert_uint_eq(opens(&t), 0);
	ck_assert_uint_eq(matrix_dropped(m), 1);
	/* Once its evidence meets the contract it is published. */
	cand(m, MATRIX_EV_NONCOMM_SLOW, 4, 1, 8.0, 2.0, PERSIST_STRONG);
	step(m, iv, &t);
	ck_assert_uint_eq(opens(&t), 1);
	ck_assert(t.last[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_OPEN].score >= 4.0);
	matrix_free(m);

	/* A slowdown under min_slowdown is never published. */
	policy(20.0, 1.02, &n);
	ck_assert_uint_eq(n, 0);
}
END_TEST

/* matrix_open_each() callback: keeps the last event it was given. */
static void
keep_open(const struct matrix_event *e, void *arg)
{
	struct matrix_event *dst = arg;

	*dst = *e;
	dst->ncells++; /* ncells doubles as a count of calls */
}

START_TEST(test_flapping_stays_one_event)
{
	struct matrix *m = engine(NULL);
	struct tally t;
	struct matrix_event e;
	uint64_t iv;

	/* Hot two intervals, then one interval in three. */
	memset(&t, 0, sizeof(t));
	for (iv = 1; iv <= 24; iv++) {
		if (iv <= 2 || iv % 3 == 0)
			cand(m, MATRIX_EV_NONCOMM_SLOW, 1, 1, 12.0, 2.0, 0);
		step(m, iv, &t);
		memset(&e, 0, sizeof(e));
		matrix_open_each(m, keep_open, &e);
		if (iv >= 2) {
			ck_assert_uint_eq(e.ncells, 1);
			ck_assert_uint_eq(e.last_interval,
					  iv <= 2 ? iv : iv - iv % 3);
		}
	}
	ck_assert_uint_eq(opens(&t), 1);
	ck_assert_uint_eq(t.n[MATRIX_EV_NONCOMM_SLOW][MATRIX_ST_RESOLVED], 0);
	matrix_free(m);
}
END_TEST

TMAIN("matrix-domain", test_host_gpus_one_event, test_host_nics_one_event,
      test_two_hosts_two_events, test_late_member_folded,
      test_storm_one_job_event, test_storm_retracts_published,
      test_action_policy, test_contract_enforced, test_flapping_stays_one_event)
