/*
 * test_json_depth.c - the JSON writer past JSON_DEPTH_MAX levels:
 * objects and arrays, empty ones among them, nested well beyond the
 * writer's per-level flags still get exactly the commas they need.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tmain.h"

enum { DEEP = JSON_DEPTH_MAX + 4 };

/*
 * Writes, at each of DEEP levels, an object {"a":[],"b":{},"c":<next>,
 * "d":1} (the innermost has no "c"), and the text that must come out.
 */
static void
deep_write(struct json *j, char **want, int level)
{
	char *inner = NULL;

	json_obj_begin(j);
	json_key(j, "a");
	json_arr_begin(j);
	json_arr_end(j);
	json_key(j, "b");
	json_obj_begin(j);
	json_obj_end(j);
	if (level + 1 < DEEP) {
		json_key(j, "c");
		deep_write(j, &inner, level + 1);
	}
	json_key(j, "d");
	json_u64(j, 1);
	json_obj_end(j);
	ck_assert_int_gt(asprintf(want, "{\"a\":[],\"b\":{}%s%s,\"d\":1}",
				  inner != NULL ? ",\"c\":" : "",
				  inner != NULL ? inner : ""),
			 0);
	free(inner);
}

START_TEST(test_json_deep_commas)
{
	char *buf = NULL, *inner, *want;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	struct json j;

	ck_assert_ptr_nonnull(fp);
	json_init(&j, fp);
	json_arr_begin(&j);
	deep_write(&j, &inner, 0);
	json_arr_begin(&j); /* a sibling after the deep one */
	json_arr_end(&j);
	json_u64(&j, 2);
	json_arr_end(&j);
	json_end(&j);
	ck_assert_int_eq(fclose(fp), 0);
	ck_assert_int_gt(asprintf(&want, "[%s,[],2]\n", inner), 0);
	ck_assert_str_eq(buf, want);
	free(inner);
	free(want);
	free(buf);
}
END_TEST

TMAIN("json-depth", test_json_deep_commas)
