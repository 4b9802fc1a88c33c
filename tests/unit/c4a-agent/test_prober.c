/*
 * test_prober.c - the agent's probe engine: error-queue messages (built
 * here as the kernel lays them out) decode into the probe they answer;
 * foreign, short and local errors are refused; and a real task toward
 * 127.0.0.1 on the loop is answered by port unreachable at TTL 1 from
 * every source port, with the counts, the rate limit's pacing and the
 * result's layout as the master expects them.
 */
#include <check.h>
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "clock.h"

struct fake_err {
	struct msghdr m;
	uint8_t ctl[CMSG_SPACE(sizeof(struct sock_extended_err) +
			       sizeof(struct sockaddr_in))];
};

/* An IP_RECVERR control message: ICMP type/code from offender. */
static void
fake(struct fake_err *f, uint8_t origin, uint8_t type, uint8_t code,
     const char *offender)
{
	struct cmsghdr *cm;
	struct sock_extended_err ee;
	struct sockaddr_in sa;

	memset(f, 0, sizeof(*f));
	f->m.msg_control = f->ctl;
	f->m.msg_controllen = sizeof(f->ctl);
	cm = CMSG_FIRSTHDR(&f->m);
	cm->cmsg_level = SOL_IP;
	cm->cmsg_type = IP_RECVERR;
	cm->cmsg_len = CMSG_LEN(sizeof(ee) + sizeof(sa));
	memset(&ee, 0, sizeof(ee));
	ee.ee_errno = EHOSTUNREACH;
	ee.ee_origin = origin;
	ee.ee_type = type;
	ee.ee_code = code;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, offender, &sa.sin_addr);
	memcpy(CMSG_DATA(cm), &ee, sizeof(ee));
	memcpy(CMSG_DATA(cm) + sizeof(ee), &sa, sizeof(sa));
}

START_TEST(test_parse_time_exceeded_and_reached)
{
	struct fake_err f;
	struct prober_reply r;
	uint8_t pl[PROBER_PAYLOAD_LEN];
	struct in_addr want;

	prober_payload(pl, 0x0123456789abcdefull, 49153, 2, 1);
	fake(&f, SO_EE_ORIGIN_ICMP, 11, 0, "100.64.0.5");
	ck_assert_int_eq(prober_parse(&f.m, pl, sizeof(pl), &r), 0);
	ck_assert_uint_eq(r.task, 0x0123456789abcdefull);
	ck_assert_uint_eq(r.sport, 49153);
	ck_assert_uint_eq(r.ttl, 2);
	ck_assert_uint_eq(r.rep, 1);
	ck_assert_uint_eq(r.kind, PROBER_TTL_EXCEEDED);
	inet_pton(AF_INET, "100.64.0.5", &want);
	ck_assert_uint_eq(r.offender, want.s_addr);

	fake(&f, SO_EE_ORIGIN_ICMP, 3, 3, "10.0.0.9");
	ck_assert_int_eq(prober_parse(&f.m, pl, sizeof(pl), &r), 0);
	ck_assert_uint_eq(r.kind, PROBER_REACHED);
	fake(&f, SO_EE_ORIGIN_ICMP, 3, 1, "10.0.0.9"); /* host unreachable */
	ck_assert_int_eq(prober_parse(&f.m, pl, sizeof(pl), &r), 0);
	ck_assert_uint_eq(r.kind, PROBER_OTHER);
}
END_TEST

START_TEST(test_parse_refuses_foreign)
{
	struct fake_err f;
	struct prober_reply r;
	uint8_t pl[PROBER_PAYLOAD_LEN];

	prober_payload(pl, 7, 50000, 1, 0);
	/* A local error (e.g. EMSGSIZE) is not an answer. */
	fake(&f, SO_EE_ORIGIN_LOCAL, 0, 0, "0.0.0.0");
	ck_assert_int_eq(prober_parse(&f.m, pl, sizeof(pl), &r), -1);
	/* A quote too short to name the probe (RFC 792's 8 bytes). */
	fake(&f, SO_EE_ORIGIN_ICMP, 11, 0, "100.64.0.1");
	ck_assert_int_eq(prober_parse(&f.m, pl, 8, &r), -1);
	/* Someone else's datagram. */
	pl[0] ^= 0xff;
	ck_assert_int_eq(prober_parse(&f.m, pl, sizeof(pl), &r), -1);
	pl[0] ^= 0xff;
	/* No control message at all. */
	f.m.msg_controllen = 0;
	ck_assert_int_eq(prober_parse(&f.m, pl, sizeof(pl), &r), -1);
}
END_TEST

struct got {
	int results;
	C4__ProbeResult *r; /* a copy */
	struct event_base *base;
};

static void
on_result(const C4__ProbeResult *r, void *arg)
{
	struct got *g = arg;
	size_t n = c4__probe_result__get_packed_size(r);
	uint8_t *b = malloc(n);

	c4__probe_result__pack(r, b);
	g->r = c4__probe_result__unpack(NULL, n, b);
	free(b);
	g->results++;
	event_base_loopbreak(g->base);
}

START_TEST(test_loopback_task)
{
	struct event_base *base = event_base_new();
	struct got g = {0, NULL, base};
	struct prober *pr = prober_new(base, 200, NULL, on_result, &g);
	C4__ProbeTask t = C4__PROBE_TASK__INIT;
	uint32_t sports[3] = {50101, 50102, 50103};
	struct timeval limit = {10, 0};
	char err[256];
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	const struct prober_stats *st;

	ck_assert_ptr_nonnull(pr);
	t.has_task_id = 1;
	t.task_id = 42;
	t.src_ip = (char *)"127.0.0.1";
	t.dst_ip = (char *)"127.0.0.1";
	t.sports = sports;
	t.n_sports = 3;
	t.has_max_ttl = t.has_repeats = t.has_timeout_ms = 1;
	t.max_ttl = 2;
	t.repeats = 2;
	t.timeout_ms = 300;
	t.has_dst_port = 1;
	t.dst_port = 9; /* nothing listens: port unreachable */
	ck_assert_int_eq(prober_task(pr, &t, err, sizeof(err)), 0);
	event_base_loopexit(base, &limit);
	event_base_dispatch(base);
	ck_assert_int_eq(g.results, 1);
	ck_assert_uint_eq(g.r->task_id, 42);
	ck_assert_uint_eq(g.r->n_paths, 3);
	for (size_t i = 0; i < 3; i++) {
		const C4__ProbePath *p = g.r->paths[i];

		ck_assert_uint_eq(p->sport, sports[i]);
		ck_assert(p->reached);
		/* The destination answers at TTL 1; nothing lies beyond. */
		ck_assert_uint_eq(p->n_hops, 1);
		ck_assert_str_eq(p->hops[0]->addr, "127.0.0.1");
		ck_assert_uint_eq(p->hops[0]->sent, 2);
		ck_assert_uint_eq(p->hops[0]->received, 2);
	}
	st = prober_get_stats(pr);
	ck_assert_uint_eq(st->sent, 12); /* 3 ports x 2 TTLs x 2 repeats */
	ck_assert_uint_eq(st->tasks_done, 1);
	ck_assert_uint_ge(st->replies, 6);
	/* 200 packets/s: 12 packets take at least ~50 ms after the burst. */
	ck_assert_uint_ge(clock_ns(CLOCK_MONOTONIC) - t0, 20000000u);
	/* Malformed tasks are refused and counted. */
	t.repeats = C4_PROBE_REPEATS_MAX + 1;
	ck_assert_int_eq(prober_task(pr, &t, err, sizeof(err)), -1);
	ck_assert_uint_eq(prober_get_stats(pr)->tasks_refused, 1);
	c4__probe_result__free_unpacked(g.r, NULL);
	prober_free(pr);
	event_base_free(base);
}
END_TEST

static Suite *
prober_suite(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_time_exceeded_and_reached);
	tcase_add_test(tc, test_parse_refuses_foreign);
	tcase_add_test(tc, test_loopback_task);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(prober_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
