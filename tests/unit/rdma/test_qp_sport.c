/*
 * test_qp_sport.c - the flow label <-> UDP source port mapping of RoCEv2,
 * against rdma-core's own ibv_flow_label_to_udp_sport() where built.
 */
#include <check.h>
#include <stdlib.h>

#include "qp_sport.h"

START_TEST(test_every_port_round_trips)
{
	for (uint32_t s = QP_SPORT_MIN; s <= QP_SPORT_MAX; s++) {
		uint32_t fl = 0xFFFFFFFFu;

		ck_assert_int_eq(qp_sport_flow_label((uint16_t)s, &fl), 0);
		ck_assert_uint_le(fl, QP_FLOW_LABEL_MAX);
		ck_assert_uint_eq(qp_sport_from_flow_label(fl), s);
	}
}
END_TEST

START_TEST(test_ports_below_range_refused)
{
	uint32_t fl = 7;

	ck_assert_int_eq(qp_sport_flow_label(0, &fl), -1);
	ck_assert_int_eq(qp_sport_flow_label(4791, &fl), -1);
	ck_assert_int_eq(qp_sport_flow_label(QP_SPORT_MIN - 1, &fl), -1);
	ck_assert_uint_eq(fl, 7);
}
END_TEST

/* Known values: the high six bits of the label fold into the low ones. */
START_TEST(test_known_values)
{
	ck_assert_uint_eq(qp_sport_from_flow_label(0), 0xC000);
	ck_assert_uint_eq(qp_sport_from_flow_label(0x3FFF), 0xFFFF);
	ck_assert_uint_eq(qp_sport_from_flow_label(0x4000), 0xC001);
	ck_assert_uint_eq(qp_sport_from_flow_label(0xFC000), 0xC03F);
	ck_assert_uint_eq(qp_sport_from_flow_label(0xFC03F), 0xC000);
	/* bits above the 20-bit label are ignored */
	ck_assert_uint_eq(qp_sport_from_flow_label(0x100123), 0xC123);
}
END_TEST

#if C4_HAVE_RDMA
/* Our arithmetic equals rdma-core's for every 20-bit flow label. */
START_TEST(test_matches_rdma_core)
{
	for (uint32_t fl = 0; fl <= QP_FLOW_LABEL_MAX; fl++)
		ck_assert_uint_eq(qp_sport_from_flow_label(fl),
				  ibv_flow_label_to_udp_sport(fl));
}
END_TEST

START_TEST(test_set_attr)
{
	struct ibv_qp_attr attr = {0};

	ck_assert_int_eq(qp_sport_set_attr(&attr, 51234), 0);
	ck_assert_uint_eq(attr.ah_attr.is_global, 1);
	ck_assert_uint_eq(
		ibv_flow_label_to_udp_sport(attr.ah_attr.grh.flow_label),
		51234);
	ck_assert_int_eq(qp_sport_set_attr(&attr, 1000), -1);
}
END_TEST
#endif

int
main(void)
{
	Suite *s = suite_create("qp_sport");
	TCase *tc = tcase_create("mapping");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_every_port_round_trips);
	tcase_add_test(tc, test_ports_below_range_refused);
	tcase_add_test(tc, test_known_values);
#if C4_HAVE_RDMA
	tcase_add_test(tc, test_matches_rdma_core);
	tcase_add_test(tc, test_set_attr);
#endif
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
