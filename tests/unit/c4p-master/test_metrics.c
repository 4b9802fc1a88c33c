/*
 * test_metrics.c - path request errors are counted in total and by code
 * (out-of-range codes only in total); without "http: listen:" nothing is
 * served and no address is reported.
 */
#include "metrics.h"
#include "tc4p.h"
#include "tmain.h"

START_TEST(test_errors_and_no_listener)
{
	struct tc4p *x = tc4p_new();
	char err[128];

	metrics_path_error(&x->p, C4__ERROR_CODE__ERR_AUTH);
	metrics_path_error(&x->p, C4__ERROR_CODE__ERR_AUTH);
	metrics_path_error(&x->p, C4__ERROR_CODE__ERR_INVALID);
	metrics_path_error(&x->p, (C4__ErrorCode)C4P_ERROR_CODES);
	ck_assert_uint_eq(x->p.st.path_errors, 4);
	ck_assert_uint_eq(x->p.errors_by_code[C4__ERROR_CODE__ERR_AUTH], 2);
	ck_assert_uint_eq(x->p.errors_by_code[C4__ERROR_CODE__ERR_INVALID], 1);
	ck_assert_int_eq(metrics_open(&x->p, err, sizeof(err)), 0);
	ck_assert_str_eq(x->p.http_bound, "");
	ck_assert_ptr_null(x->p.http);
	metrics_close(&x->p);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-metrics", test_errors_and_no_listener)
