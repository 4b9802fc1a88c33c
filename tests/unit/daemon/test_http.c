/*
 * test_http.c - the Prometheus helpers: HELP/TYPE lines, samples with and
 * without labels, label values escaped (and cut) safely, and histograms
 * with cumulative buckets.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "http.h"

START_TEST(test_label_escape)
{
	char buf[64];

	http_label_escape(buf, sizeof(buf), "job-42");
	ck_assert_str_eq(buf, "job-42");
	http_label_escape(buf, sizeof(buf), "a\"b\\c\nd");
	ck_assert_str_eq(buf, "a\\\"b\\\\c\\nd");
	/* Cut before an escape that does not fit, never inside it. */
	http_label_escape(buf, 4, "ab\"c");
	ck_assert_str_eq(buf, "ab");
	http_label_escape(buf, sizeof(buf), NULL);
	ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_exposition)
{
	struct evbuffer *b = evbuffer_new();
	size_t n;
	char *s;

	http_metric_head(b, "c4d_x_total", "things", 0);
	http_metric_value(b, "c4d_x_total", "job=\"j\"", 18446744073709551615u);
	http_metric_head(b, "c4d_y", "now", 1);
	http_metric_value(b, "c4d_y", "", 0);
	n = evbuffer_get_length(b);
	s = malloc(n + 1);
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	ck_assert_str_eq(s, "# HELP c4d_x_total things\n"
			    "# TYPE c4d_x_total counter\n"
			    "c4d_x_total{job=\"j\"} 18446744073709551615\n"
			    "# HELP c4d_y now\n"
			    "# TYPE c4d_y gauge\n"
			    "c4d_y 0\n");
	free(s);
	evbuffer_free(b);
}
END_TEST

/* Reads everything b holds as a string (malloc'd). */
static char *
drain(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	evbuffer_remove(b, s, n);
	s[n] = '\0';
	return s;
}

START_TEST(test_histogram)
{
	struct evbuffer *b = evbuffer_new();
	struct http_hist h = {0};
	char *s;

	http_hist_add(&h, 0.00002); /* in 25 us and every bucket above */
	http_hist_add(&h, 0.0003);  /* in 500 us and above */
	http_hist_add(&h, 1.0);	    /* only in +Inf */
	http_metric_hist(b, "c4p_x_seconds", "time", "d=\"p\"", &h);
	s = drain(b);
	ck_assert_ptr_nonnull(strstr(s, "# TYPE c4p_x_seconds histogram\n"));
	ck_assert_ptr_nonnull(
		strstr(s, "c4p_x_seconds_bucket{d=\"p\",le=\"1e-05\"} 0\n"));
	ck_assert_ptr_nonnull(
		strstr(s, "c4p_x_seconds_bucket{d=\"p\",le=\"2.5e-05\"} 1\n"));
	ck_assert_ptr_nonnull(
		strstr(s, "c4p_x_seconds_bucket{d=\"p\",le=\"0.0005\"} 2\n"));
	ck_assert_ptr_nonnull(
		strstr(s, "c4p_x_seconds_bucket{d=\"p\",le=\"0.1\"} 2\n"));
	ck_assert_ptr_nonnull(
		strstr(s, "c4p_x_seconds_bucket{d=\"p\",le=\"+Inf\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(s, "c4p_x_seconds_count{d=\"p\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(s, "c4p_x_seconds_sum{d=\"p\"} 1.00032"));
	free(s);
	evbuffer_free(b);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("http");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_label_escape);
	tcase_add_test(tc, test_exposition);
	tcase_add_test(tc, test_histogram);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
