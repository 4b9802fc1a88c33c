/*
 * test_plugin.c - the built libnccl-profiler-c4.so as NCCL sees it:
 * dlopen, dlsym("ncclProfiler_v5") and "_v4", init/start/state/stop/
 * finalize of one communicator with no agent listening (harmless: no
 * error to NCCL, the thread stops at the last finalize), inactive
 * without C4_JOB_ID, and the recording it writes replays.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_abi.h"
#include "prof.h"

static void *
open_plugin(void)
{
	const char *path = getenv("C4_PLUGIN_SO");
	void *dl;

	ck_assert_ptr_nonnull(path);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
	return dl;
}

START_TEST(test_v5_without_agent)
{
	void *dl = open_plugin();
	struct nccl_profiler_v5 *p = dlsym(dl, "ncclProfiler_v5");
	struct nccl_v5_descr d;
	union nccl_abi_state_args a;
	char rec[] = "/tmp/c4-plugin-test-XXXXXX";
	void *ctx = NULL, *coll = NULL, *k = NULL;
	int mask = 0, fd = mkstemp(rec);
	FILE *f;
	char line[256];
	int lines = 0, counters = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(dlsym(dl, "ncclProfiler_v4"));
	ck_assert_ptr_null(dlsym(dl, "prof_start")); /* nothing else */
	ck_assert_str_eq(p->name, "c4");
	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("C4_JOB_ID", "job-test", 1);
	setenv("C4_AGENT_SOCKET", "/nonexistent/c4-agent.sock", 1);
	setenv("C4_PROFILER_RECORD", rec, 1);
	ck_assert_int_eq(p->init(&ctx, 0xabcull, &mask, "c", 1, 2, 0, NULL), 0);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(mask, PROF_MASK_BASE | PROF_MASK_DETAIL);
	memset(&d, 0, sizeof(d));
	d.type = NCCL_EV_COLL;
	d.coll.seqNumber = 0;
	d.coll.func = "AllReduce";
	d.coll.datatype = "ncclFloat32";
	d.coll.count = 1024;
	d.coll.algo = "Ring";
	d.coll.proto = "Simple";
	d.coll.nChannels = 1;
	ck_assert_int_eq(p->startEvent(ctx, &coll, &d), 0);
	ck_assert_ptr_nonnull(coll);
	ck_assert_int_eq(p->stopEvent(coll), 0);
	memset(&d, 0, sizeof(d));
	d.type = NCCL_EV_KERNEL_CH;
	d.parentObj = coll;
	d.kernelCh.pTimer = 100;
	ck_assert_int_eq(p->startEvent(ctx, &k, &d), 0);
	a.kernelCh.pTimer = 900;
	ck_assert_int_eq(p->recordEventState(k, NCCL_ST_KERNEL_CH_STOP, &a), 0);
	ck_assert_int_eq(p->stopEvent(k), 0);
	/* Kinds we do not ask for are harmless. */
	memset(&d, 0, sizeof(d));
	d.type = NCCL_EV_GROUP_API;
	ck_assert_int_eq(p->startEvent(ctx, &k, &d), 0);
	ck_assert_ptr_null(k);
	ck_assert_int_eq(p->finalize(ctx), 0);
	f = fopen(rec, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (line[0] != '#')
			lines++;
		else if (strstr(line, "c4-nccl-profiler: pid") != NULL)
			counters = strstr(line, "events 3 ignored 1 stale 0") !=
				   NULL;
	}
	fclose(f);
	/* I, S, E, S, R, E, S, F; the counters at close as a comment */
	ck_assert_int_eq(lines, 8);
	ck_assert_int_eq(counters, 1);
	unlink(rec);
	dlclose(dl);
}
END_TEST

START_TEST(test_inactive_without_job)
{
	void *dl = open_plugin();
	struct nccl_profiler_v4 *p = dlsym(dl, "ncclProfiler_v4");
	void *ctx = (void *)1;
	int mask = -1;

	unsetenv("C4_JOB_ID");
	unsetenv("C4_PROFILER_RECORD");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->init(&ctx, &mask, "c", 0xabcull, 1, 2, 0, NULL), 0);
	ck_assert_ptr_null(ctx);
	ck_assert_int_eq(mask, 0);
	ck_assert_int_eq(p->finalize(ctx), 0);
	dlclose(dl);
}
END_TEST

static Suite *
plugin_suite(void)
{
	Suite *s = suite_create("nccl-plugin");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_v5_without_agent);
	tcase_add_test(tc, test_inactive_without_job);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(plugin_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
