/*
 * test_srv_new.c - srv_new() when a copy of its strings cannot be made:
 * it returns NULL (freeing what it had) instead of a server with a NULL
 * name.  strdup() is replaced here so that a chosen call fails.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "srv.h"
#include "tmain.h"

static int strdup_calls;   /* strdup() calls made so far */
static int strdup_fail_at; /* the call that fails (1 = first); 0: none */

/* The program's strdup(): libc's, but for the call strdup_fail_at. */
char *
strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (++strdup_calls == strdup_fail_at)
		return NULL;
	p = malloc(n);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

START_TEST(test_srv_new_out_of_memory)
{
	struct event_base *base = event_base_new();
	struct srv_params p = {0};
	struct srv_ops ops = {0};
	struct srv *s;
	int calls;

	ck_assert_ptr_nonnull(base);
	p.daemon = "c4d-master";
	p.node = "node-1";
	p.role = C4__ROLE__ROLE_MASTER;
	p.job_id = "job-42";
	/* each of the three copies (daemon, node, job) failing in turn */
	for (int i = 1; i <= 3; i++) {
		strdup_calls = 0;
		strdup_fail_at = i;
		s = srv_new(base, &p, &ops, NULL);
		calls = strdup_calls; /* Check's asserts may copy strings */
		strdup_fail_at = 0;
		ck_assert_ptr_null(s);
		ck_assert_int_eq(calls, 3);
	}
	s = srv_new(base, &p, &ops, NULL);
	ck_assert_ptr_nonnull(s);
	srv_free(s);
	/* no job: two copies, the second failing */
	p.job_id = NULL;
	strdup_calls = 0;
	strdup_fail_at = 2;
	s = srv_new(base, &p, &ops, NULL);
	strdup_fail_at = 0;
	ck_assert_ptr_null(s);
	event_base_free(base);
}
END_TEST

TMAIN("srv-new", test_srv_new_out_of_memory)
