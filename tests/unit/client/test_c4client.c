/*
 * test_c4client.c - the CCL client library's public calls with no agent
 * listening: options refused, the bounded queue dropping its oldest whole
 * summaries (and counting them) while nothing can be sent, a summary
 * above the limit or with missing arrays refused and counted, the checks
 * of registrations, and the next interval boundary.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "c4client.h"
#include "tmain.h"

#define NO_AGENT "/nonexistent/c4-agent.sock"

static struct c4client *
open_without_agent(void)
{
	struct c4client_opts o = {NO_AGENT, "job-1", "tok", "n1",
				  C4CLIENT_QUEUE_MIN};
	struct c4client *c = c4client_open(&o);

	ck_assert_ptr_nonnull(c);
	return c;
}

START_TEST(test_open_refused)
{
	char longjob[300];
	struct c4client_opts o = {NO_AGENT, "job-1", "tok", NULL, 0};

	memset(longjob, 'j', sizeof(longjob));
	longjob[sizeof(longjob) - 1] = '\0';
	ck_assert_ptr_null(c4client_open(NULL));
	o.job_id = "";
	ck_assert_ptr_null(c4client_open(&o));
	o.job_id = longjob;
	ck_assert_ptr_null(c4client_open(&o));
	o.job_id = "job-1";
	o.token = NULL;
	ck_assert_ptr_null(c4client_open(&o));
	o.token = "tok";
	o.queue_limit = C4CLIENT_QUEUE_MIN - 1;
	ck_assert_ptr_null(c4client_open(&o));
	o.queue_limit = 0;
	o.socket_path = NULL;
	ck_assert_ptr_null(c4client_open(&o));
}
END_TEST

START_TEST(test_queue_drops_oldest)
{
	struct c4client *c = open_without_agent();
	struct c4client_progress pg = {0xabc, 3, 10, 9, 1, 0, 0, NULL, 0};
	struct c4client_report r = {0, 1,    1000, 0,	 0,  0,
				    1, NULL, NULL, NULL, &pg};
	struct c4client_stats st;

	for (int i = 0; i < 200; i++) {
		r.interval_id = (uint64_t)i + 1;
		ck_assert_int_eq(c4client_report(c, &r), 0);
	}
	c4client_stats(c, &st);
	ck_assert_uint_eq(st.reports_queued, 200);
	ck_assert_uint_eq(st.reports_sent, 0);
	ck_assert_uint_gt(st.reports_dropped, 0);
	ck_assert_uint_eq(st.queue_reports + st.reports_dropped, 200);
	ck_assert_uint_eq(st.records_dropped, st.reports_dropped);
	ck_assert_uint_le(st.queue_bytes, C4CLIENT_QUEUE_MIN);
	ck_assert_int_eq(st.connected, 0);
	c4client_close(c);
}
END_TEST

START_TEST(test_report_refused)
{
	static uint32_t stuck[4000];
	struct c4client *c = open_without_agent();
	struct c4client_progress pg = {0xabc, 3, 10, 9, 1, 0, 4000, stuck, 0};
	struct c4client_report r = {7, 1,    1000, 0,	 0,  0,
				    1, NULL, NULL, NULL, &pg};
	struct c4client_stats st;

	for (uint32_t i = 0; i < 4000; i++)
		stuck[i] = i + 100000;
	/* Larger than the whole queue: refused, nothing else dropped. */
	ck_assert_int_eq(c4client_report(c, &r), -1);
	r.nprogress = 1;
	r.ncolls = 1; /* without its array */
	ck_assert_int_eq(c4client_report(c, &r), -1);
	ck_assert_int_eq(c4client_report(c, NULL), -1);
	c4client_stats(c, &st);
	ck_assert_uint_eq(st.reports_queued, 0);
	ck_assert_uint_eq(st.reports_dropped, 2);
	ck_assert_uint_eq(st.records_dropped, 3);
	ck_assert_uint_eq(st.queue_reports, 0);
	c4client_close(c);
}
END_TEST

START_TEST(test_register_checks)
{
	struct c4client *c = open_without_agent();
	struct c4client_rank rk[2] = {{0, NULL, 0, NULL, "mlx5_0", 1, 0},
				      {5, "h2", 1, "GPU-1", NULL, 0, 1}};
	struct c4client_comm m = {0x77, 4, "dp", 2, rk};
	char longname[300];

	memset(longname, 'n', sizeof(longname));
	longname[sizeof(longname) - 1] = '\0';
	/* Rank 5 of 4. */
	ck_assert_int_eq(c4client_register(c, &m), -1);
	m.nranks = 8;
	ck_assert_int_eq(c4client_register(c, &m), 0);
	/* Again with the same ranks: a union, still fine. */
	ck_assert_int_eq(c4client_register(c, &m), 0);
	m.nranks = 0;
	ck_assert_int_eq(c4client_register(c, &m), -1);
	m.nranks = 8;
	m.name = longname;
	ck_assert_int_eq(c4client_register(c, &m), -1);
	m.name = NULL;
	m.ranks = NULL;
	ck_assert_int_eq(c4client_register(c, &m), -1);
	ck_assert_int_eq(c4client_register(NULL, &m), -1);
	ck_assert_int_eq(c4client_deregister(c, 0x78), -1);
	ck_assert_int_eq(c4client_deregister(c, 0x77), 0);
	ck_assert_int_eq(c4client_deregister(c, 0x77), -1);
	c4client_close(c);
}
END_TEST

START_TEST(test_next_boundary)
{
	const uint64_t s = 1000000000ull;

	ck_assert_uint_eq(c4client_next_boundary(5 * s + s / 3, 1000, 1),
			  6 * s);
	ck_assert_uint_eq(c4client_next_boundary(5 * s + s / 3, 1000, 0),
			  6 * s);
	/* Nearest to 5.7 s is 6 s: the boundary after it is 7 s. */
	ck_assert_uint_eq(c4client_next_boundary(5 * s + 7 * s / 10, 1000, 0),
			  7 * s);
	ck_assert_uint_eq(c4client_next_boundary(5 * s + 7 * s / 10, 1000, 1),
			  6 * s);
	ck_assert_uint_eq(c4client_next_boundary(6 * s, 500, 1), 6 * s + s / 2);
}
END_TEST

TMAIN("client-c4client", test_open_refused, test_queue_drops_oldest,
      test_report_refused, test_register_checks, test_next_boundary)
