/*
 * test_json.c - the streaming JSON writer: nesting, commas, escaping, null
 * strings and non-finite doubles, checked byte for byte.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct out {
	char *buf;
	size_t len;
	FILE *fp;
	struct json j;
};

static void
out_open(struct out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->fp = open_memstream(&o->buf, &o->len);
	ck_assert_ptr_nonnull(o->fp);
	json_init(&o->j, o->fp);
}

/* Ends the document and checks everything written, then frees it. */
static void
out_check(struct out *o, const char *want)
{
	json_end(&o->j);
	ck_assert_int_eq(fclose(o->fp), 0);
	ck_assert_str_eq(o->buf, want);
	ck_assert_uint_eq(o->len, strlen(want));
	free(o->buf);
}

START_TEST(test_empty_containers)
{
	struct out o;

	out_open(&o);
	json_obj_begin(&o.j);
	json_obj_end(&o.j);
	out_check(&o, "{}\n");

	out_open(&o);
	json_arr_begin(&o.j);
	json_arr_end(&o.j);
	out_check(&o, "[]\n");

	out_open(&o);
	json_obj_begin(&o.j);
	json_key(&o.j, "a");
	json_obj_begin(&o.j);
	json_obj_end(&o.j);
	json_key(&o.j, "b");
	json_arr_begin(&o.j);
	json_arr_end(&o.j);
	json_obj_end(&o.j);
	out_check(&o, "{\"a\":{},\"b\":[]}\n");
}
END_TEST

START_TEST(test_nesting_and_commas)
{
	struct out o;

	out_open(&o);
	json_obj_begin(&o.j);
	json_key(&o.j, "name");
	json_str(&o.j, "c4");
	json_key(&o.j, "n");
	json_u64(&o.j, 3);
	json_key(&o.j, "list");
	json_arr_begin(&o.j);
	json_i64(&o.j, 1);
	json_i64(&o.j, -2);
	json_obj_begin(&o.j);
	json_key(&o.j, "x");
	json_bool(&o.j, 1);
	json_key(&o.j, "y");
	json_bool(&o.j, 0);
	json_obj_end(&o.j);
	json_arr_begin(&o.j);
	json_arr_end(&o.j);
	json_str(&o.j, NULL);
	json_arr_end(&o.j);
	json_key(&o.j, "inner");
	json_obj_begin(&o.j);
	json_key(&o.j, "deep");
	json_arr_begin(&o.j);
	json_arr_begin(&o.j);
	json_u64(&o.j, 7);
	json_arr_end(&o.j);
	json_arr_begin(&o.j);
	json_u64(&o.j, 8);
	json_u64(&o.j, 9);
	json_arr_end(&o.j);
	json_arr_end(&o.j);
	json_obj_end(&o.j);
	json_key(&o.j, "last");
	json_double(&o.j, 0.5);
	json_obj_end(&o.j);
	out_check(&o, "{\"name\":\"c4\",\"n\":3,\"list\":[1,-2,{\"x\":true,"
		      "\"y\":false},[],null],\"inner\":{\"deep\":[[7],[8,9]]},"
		      "\"last\":0.5}\n");
}
END_TEST

START_TEST(test_top_level_array_of_scalars)
{
	struct out o;

	out_open(&o);
	json_arr_begin(&o.j);
	json_u64(&o.j, 0);
	json_str(&o.j, "");
	json_str(&o.j, NULL);
	json_bool(&o.j, 42); /* any non-zero is true */
	json_double(&o.j, -0.25);
	json_arr_end(&o.j);
	out_check(&o, "[0,\"\",null,true,-0.25]\n");
}
END_TEST

START_TEST(test_integer_limits)
{
	struct out o;

	out_open(&o);
	json_arr_begin(&o.j);
	json_u64(&o.j, UINT64_MAX);
	json_i64(&o.j, INT64_MIN);
	json_i64(&o.j, INT64_MAX);
	json_i64(&o.j, 0);
	json_arr_end(&o.j);
	out_check(&o, "[18446744073709551615,-9223372036854775808,"
		      "9223372036854775807,0]\n");
}
END_TEST

START_TEST(test_string_escaping)
{
	struct out o;

	out_open(&o);
	json_arr_begin(&o.j);
	json_str(&o.j, "say \"hi\"");
	json_str(&o.j, "back\\slash");
	json_str(&o.j, "nl\ncr\rtab\t");
	json_str(&o.j, "\x01\x08\x0c\x1f");
	json_str(&o.j, "del\x7f/utf8 \xc3\xa9");
	json_arr_end(&o.j);
	out_check(&o, "[\"say \\\"hi\\\"\",\"back\\\\slash\","
		      "\"nl\\ncr\\rtab\\t\",\"\\u0001\\u0008\\u000c\\u001f\","
		      "\"del\x7f/utf8 \xc3\xa9\"]\n");
}
END_TEST

START_TEST(test_keys_are_escaped)
{
	struct out o;

	out_open(&o);
	json_obj_begin(&o.j);
	json_key(&o.j, "a\"b");
	json_u64(&o.j, 1);
	json_key(&o.j, "c\\d\n");
	json_str(&o.j, NULL);
	json_key(&o.j, "");
	json_bool(&o.j, 0);
	json_obj_end(&o.j);
	out_check(&o, "{\"a\\\"b\":1,\"c\\\\d\\n\":null,\"\":false}\n");
}
END_TEST

START_TEST(test_doubles)
{
	struct out o;

	out_open(&o);
	json_arr_begin(&o.j);
	json_double(&o.j, 1.0);
	json_double(&o.j, 0.1);
	json_double(&o.j, -1e300);
	json_double(&o.j, NAN);
	json_double(&o.j, INFINITY);
	json_double(&o.j, -INFINITY);
	json_double(&o.j, 2.5);
	json_double(&o.j, 0.1 + 0.2);
	json_double(&o.j, 5e-324);
	json_arr_end(&o.j);
	/*
	 * The fewest digits that read back as the same double (0.1, not
	 * 0.10000000000000001; 0.1 + 0.2 needs all 17); non-finite values
	 * become null.
	 */
	out_check(&o, "[1,0.1,-1e+300,null,null,null,2.5,0.30000000000000004,"
		      "4.94065645841247e-324]\n");

	out_open(&o);
	json_obj_begin(&o.j);
	json_key(&o.j, "nan");
	json_double(&o.j, NAN);
	json_key(&o.j, "x");
	json_double(&o.j, 3.0);
	json_obj_end(&o.j);
	out_check(&o, "{\"nan\":null,\"x\":3}\n");
}
END_TEST

/* Nesting beyond JSON_DEPTH_MAX still gives balanced, comma-correct text. */
START_TEST(test_deep_nesting)
{
	enum { LEVELS = JSON_DEPTH_MAX + 8 };
	struct out o;
	char *want, *p;

	want = malloc(LEVELS * 8 + 16);
	ck_assert_ptr_nonnull(want);
	p = want;
	out_open(&o);
	for (int i = 0; i < LEVELS; i++) {
		json_arr_begin(&o.j);
		json_u64(&o.j, 1);
		p += sprintf(p, "[1,");
	}
	json_arr_begin(&o.j);
	json_arr_end(&o.j);
	p += sprintf(p, "[]");
	for (int i = 0; i < LEVELS; i++) {
		json_u64(&o.j, 2);
		json_arr_end(&o.j);
		p += sprintf(p, ",2]");
	}
	sprintf(p, "\n");
	out_check(&o, want);
	free(want);
}
END_TEST

static Suite *
json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("writer");

	tcase_add_test(tc, test_empty_containers);
	tcase_add_test(tc, test_nesting_and_commas);
	tcase_add_test(tc, test_top_level_array_of_scalars);
	tcase_add_test(tc, test_integer_limits);
	tcase_add_test(tc, test_string_escaping);
	tcase_add_test(tc, test_keys_are_escaped);
	tcase_add_test(tc, test_doubles);
	tcase_add_test(tc, test_deep_nesting);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(json_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
