/*
 * test_guard.c - per-source admission budget, failed-login delays and
 * rate-limited log lines.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "guard.h"
#include "tmain.h"

static const struct guard_limits lim = {
	.per_source = 4,
	.fail_free = 3,
	.delay_ms = 100,
	.delay_max_ms = 1000,
	.forget_ms = 60000,
	.log_interval_ms = 60000,
};

static uint64_t
key_of(const char *ip)
{
	struct sockaddr_in in;

	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons(1234);
	inet_pton(AF_INET, ip, &in.sin_addr);
	return guard_key((struct sockaddr *)&in, sizeof(in));
}

/* One source's strangers cannot use up another's budget. */
START_TEST(test_per_source_budget)
{
	struct guard *g = guard_new();
	uint64_t a = key_of("127.0.0.2"), b = key_of("127.0.0.1");

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(guard_open(g, a, &lim, 0), 0);
	ck_assert_int_eq(guard_open(g, a, &lim, 0), -1);
	ck_assert_int_eq(guard_open(g, b, &lim, 0), 0);
	guard_done(g, a);
	ck_assert_int_eq(guard_open(g, a, &lim, 0), 0);
	/* The port is not part of the source. */
	ck_assert_uint_eq(a, key_of("127.0.0.2"));
	guard_free(g);
}
END_TEST

/*
 * After fail_free failures a source's hellos are checked at most once per
 * delay (the delay doubling), and those that would wait past the longest
 * delay are refused unchecked: whatever a guesser does, at most
 * 1000 / delay_ms guesses per second are checked.
 */
START_TEST(test_failed_login_delay)
{
	struct guard *g = guard_new();
	uint64_t a = key_of("10.0.0.1"), other = key_of("10.0.0.2");
	int64_t now = 1000, checked = 0;

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(guard_turn(g, a, &lim, now), 0);
		ck_assert_int_eq(guard_failed(g, a, &lim, now),
				 i < 2 ? 0 : 100);
	}
	/* 1,000 hellos at once: a few get turns, the rest are refused. */
	for (int i = 0; i < 1000; i++) {
		int64_t w = guard_turn(g, a, &lim, now);

		ck_assert_int_ge(w, -1);
		ck_assert_int_le(w, lim.delay_max_ms);
		if (w >= 0)
			checked++;
	}
	ck_assert_int_le(checked, 1 + lim.delay_max_ms / lim.delay_ms);
	/* The delay doubles per failure, up to delay_max. */
	ck_assert_int_eq(guard_failed(g, a, &lim, now), 200);
	for (int i = 0; i < 10; i++)
		guard_failed(g, a, &lim, now);
	ck_assert_int_eq(guard_failed(g, a, &lim, now), 1000);
	/* Another source is not delayed. */
	ck_assert_int_eq(guard_turn(g, other, &lim, now), 0);
	/* A source quiet for forget_ms starts afresh. */
	ck_assert_int_eq(guard_turn(g, a, &lim, now + 61000 + 20000), 0);
	guard_free(g);
}
END_TEST

/* One line per source per interval, with the count of those left out. */
START_TEST(test_log_rate_limit)
{
	struct guard *g = guard_new();
	uint64_t a = key_of("10.0.0.1"), sup = 99;
	int lines = 0;

	for (int i = 0; i < 44000; i++)
		lines += guard_log(g, a, &lim, i, &sup);
	ck_assert_int_eq(lines, 1);
	ck_assert_int_eq(guard_log(g, a, &lim, 60000, &sup), 1);
	ck_assert_uint_eq(sup, 43999);
	ck_assert_int_eq(guard_log(g, key_of("10.0.0.3"), &lim, 60001, &sup),
			 1);
	ck_assert_uint_eq(sup, 0);
	guard_free(g);
}
END_TEST

TMAIN("guard", test_per_source_budget, test_failed_login_delay,
      test_log_rate_limit)
