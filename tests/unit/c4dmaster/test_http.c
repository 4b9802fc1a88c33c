/*
 * test_http.c - the Prometheus helpers: HELP/TYPE lines, samples with and
 * without labels, and label values escaped (and cut) safely.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "master.h"

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

int
main(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("http");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_label_escape);
	tcase_add_test(tc, test_exposition);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
