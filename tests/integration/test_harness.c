/*
 * test_harness.c - the harness's account of a daemon that ends by itself.
 *
 * A daemon that exits before or after READY=1 is reaped by whichever
 * harness call sees it first; every order must give the same answers: the
 * daemon's own exit status, no "did not stop", no signal to a pid that is
 * no longer ours.  Each order is forced by the stand-in daemon
 * (c4-test-stub) and repeated, so a timing-dependent answer shows.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define ROUNDS	  20
#define OPS_TOKEN "harness-operator-token"
#define STUB	  "tests/integration/c4-test-stub"
#define WAIT_MS	  60000

/* Waits (within WAIT_MS) until th_alive() has seen d end; 0 or -1. */
static int
wait_ended(struct th_daemon *d)
{
	long deadline = th_now_ms() + WAIT_MS;

	while (th_alive(d)) {
		if (th_now_ms() >= deadline)
			return -1;
		usleep(5000);
	}
	return 0;
}

/*
 * The order of the CI failure: the exit is seen while waiting for READY=1,
 * then th_stop() must report it, not signal or wait for the old pid.
 */
START_TEST(test_harness_daemon_exits_before_ready)
{
	struct th_daemon d;

	for (int i = 0; i < ROUNDS; i++) {
		ck_assert_int_eq(th_start_program(&d, "stub", STUB, "exit 3\n"),
				 -1);
		ck_assert(!th_alive(&d));
		ck_assert_int_eq(th_stop(&d), 3);
		ck_assert_int_eq(th_stop(&d), 3);
		ck_assert_int_eq(th_kill(&d), 0);
	}
}
END_TEST

/* The real daemon, refusing a corrupt store, in the same order. */
START_TEST(test_harness_master_corrupt_db_rounds)
{
	char dir[] = "/tmp/c4-harness-XXXXXX", path[128], text[1024];
	struct th_daemon d;
	FILE *fp;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c4d-master.db", dir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	for (int i = 0; i < 512; i++)
		fputs("not a database. ", fp);
	fclose(fp);
	snprintf(text, sizeof(text),
		 "job: job-42\nstate_dir: %s\n"
		 "server:\n  listen: 127.0.0.1:0\n"
		 "credentials:\n  - name: ops\n    token: " OPS_TOKEN
		 "\n    roles: [ctl]\n",
		 dir);
	for (int i = 0; i < ROUNDS / 4; i++) {
		ck_assert_int_eq(th_start(&d, "c4d-master", text), -1);
		ck_assert(th_log_has(&d, "not a usable database"));
		ck_assert_int_gt(th_stop(&d), 0);
	}
}
END_TEST

/*
 * Exits after READY=1: seen by th_alive() before th_stop(), raced by
 * th_stop()'s SIGTERM (blocked by the stub), or seen before th_kill().
 */
START_TEST(test_harness_daemon_exits_after_ready)
{
	struct th_daemon d;

	for (int i = 0; i < ROUNDS; i++) {
		ck_assert_int_eq(
			th_start_program(&d, "stub", STUB, "ready 4\n"), 0);
		ck_assert_str_eq(d.tcp, "127.0.0.1:1");
		switch (i % 3) {
		case 0:
			ck_assert_int_eq(wait_ended(&d), 0);
			ck_assert_int_eq(th_stop(&d), 4);
			break;
		case 1:
			ck_assert_int_eq(th_stop(&d), 4);
			break;
		default:
			ck_assert_int_eq(wait_ended(&d), 0);
			ck_assert_int_eq(th_kill(&d), 0);
			ck_assert_int_eq(th_stop(&d), 4);
			break;
		}
		ck_assert(!th_alive(&d));
	}
}
END_TEST

/* th_reap() of a pid that is not (or no longer) a child answers at once. */
START_TEST(test_harness_reap_not_a_child)
{
	char *argv[] = {(char *)th_bin(STUB), NULL};
	char log[] = "/tmp/c4-harness-reap.log";
	pid_t pid = th_spawn(argv, log, NULL);

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(th_reap(pid, WAIT_MS), 2);
	ck_assert_int_eq(th_reap(pid, WAIT_MS), -1);
	unlink(log);
}
END_TEST

static Suite *
harness_suite(void)
{
	Suite *s = suite_create("harness");
	TCase *tc = tcase_create("exits");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_harness_daemon_exits_before_ready);
	tcase_add_test(tc, test_harness_master_corrupt_db_rounds);
	tcase_add_test(tc, test_harness_daemon_exits_after_ready);
	tcase_add_test(tc, test_harness_reap_not_a_child);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(harness_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
