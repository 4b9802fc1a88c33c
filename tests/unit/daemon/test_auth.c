/*
 * test_auth.c - credential configuration (token or token_file, roles, jobs),
 * list-wide checks, token matching and the role/job rules.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cfg.h"
#include "msg.h"

/* A configuration holding only credentials, as the daemons embed them. */
struct tconf {
	struct cfg_list credentials;
};

static void
tconf_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct tconf *c = obj;

	auth_validate_list(&c->credentials, at, d);
}

static const struct cfg_field tconf_fields[] = {
	{"credentials", CFG_LIST, offsetof(struct tconf, credentials),
	 CFG_REQUIRED, 0, 0, NULL, &auth_credential_schema, NULL},
};

static const struct cfg_schema tconf_schema = {
	"test", sizeof(struct tconf), tconf_fields, CFG_NFIELDS(tconf_fields),
	tconf_validate};

static int
load(const char *yaml, struct tconf *c, struct cfg_diag *d)
{
	return cfg_load_buffer("a.yaml", yaml, strlen(yaml), &tconf_schema, c,
			       d);
}

static const struct auth_credential *
cred(const struct tconf *c, size_t i)
{
	ck_assert_uint_lt(i, c->credentials.n);
	return (const struct auth_credential *)c->credentials.items + i;
}

/* Loads yaml expecting exactly the messages in want (NULL-terminated). */
static void
expect_errors(const char *yaml, const char *const *want)
{
	struct tconf c;
	struct cfg_diag d;
	size_t n = 0;

	ck_assert_int_eq(load(yaml, &c, &d), -1);
	while (want[n] != NULL) {
		ck_assert_uint_gt(d.n, n);
		ck_assert_str_eq(d.msgs[n], want[n]);
		n++;
	}
	ck_assert_uint_eq(d.n, n);
	ck_assert_uint_eq(d.dropped, 0);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}

static void
expect_error(const char *yaml, const char *want)
{
	const char *const v[] = {want, NULL};

	expect_errors(yaml, v);
}

/* Writes content to a fresh temporary file; returns its malloc'd path. */
static char *
temp_file(const char *content)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	ck_assert_int_gt(asprintf(&path, "%s/c4-auth-XXXXXX", dir), 0);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, strlen(content)),
			 (ssize_t)strlen(content));
	ck_assert_int_eq(close(fd), 0);
	return path;
}

START_TEST(test_inline_token)
{
	struct tconf c;
	struct cfg_diag d;
	const struct auth_credential *a;

	ck_assert_int_eq(load("credentials:\n"
			      "  - name: ops\n"
			      "    token: s3cret-token\n"
			      "    roles: [ctl, agent]\n"
			      "    jobs: [job-a]\n",
			      &c, &d),
			 0);
	ck_assert_uint_eq(d.n, 0);
	ck_assert_uint_eq(c.credentials.n, 1);
	a = cred(&c, 0);
	ck_assert_str_eq(a->name, "ops");
	ck_assert_str_eq(a->token, "s3cret-token");
	ck_assert_ptr_null(a->token_file);
	ck_assert_str_eq(a->secret, "s3cret-token");
	ck_assert_uint_eq(a->secret_len, 12);
	ck_assert_uint_eq(a->role_mask, (1u << C4__ROLE__ROLE_CTL) |
						(1u << C4__ROLE__ROLE_AGENT));
	ck_assert_uint_eq(a->roles.n, 2);
	ck_assert_uint_eq(a->jobs.n, 1);
	ck_assert_str_eq(a->jobs.v[0], "job-a");
	ck_assert_uint_eq(a->pos.line, 2);
	ck_assert_uint_eq(a->pos.col, 5);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

START_TEST(test_token_file)
{
	struct tconf c;
	struct cfg_diag d;
	char *path = temp_file("from-a-file-123\nsecond line ignored\n");
	char *yaml;
	const struct auth_credential *a;

	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - name: filed\n"
				  "    token_file: %s\n"
				  "    roles: [ccl-client]\n",
				  path),
			 0);
	ck_assert_int_eq(load(yaml, &c, &d), 0);
	a = cred(&c, 0);
	ck_assert_ptr_null(a->token);
	ck_assert_str_eq(a->token_file, path);
	ck_assert_str_eq(a->secret, "from-a-file-123");
	ck_assert_uint_eq(a->secret_len, 15);
	ck_assert_uint_eq(a->role_mask, 1u << C4__ROLE__ROLE_CCL_CLIENT);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(yaml);
	unlink(path);
	free(path);

	/* A CRLF line end is not part of the token. */
	path = temp_file("crlf-token-0001\r\n");
	ck_assert_int_gt(
		asprintf(&yaml,
			 "credentials:\n"
			 "  - {name: a, token_file: %s, roles: [ctl]}\n",
			 path),
		0);
	ck_assert_int_eq(load(yaml, &c, &d), 0);
	ck_assert_str_eq(cred(&c, 0)->secret, "crlf-token-0001");
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(yaml);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_token_file_problems)
{
	char *path = temp_file("");
	char *yaml, *want;

	/* Missing file. */
	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - name: gone\n"
				  "    token_file: %s.missing\n"
				  "    roles: [ctl]\n",
				  path),
			 0);
	ck_assert_int_gt(asprintf(&want,
				  "a.yaml:2:5: credential 'gone': token_file "
				  "%s.missing: No such file or directory",
				  path),
			 0);
	expect_error(yaml, want);
	free(yaml);
	free(want);

	/* Empty file. */
	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - name: empty\n"
				  "    token_file: %s\n"
				  "    roles: [ctl]\n",
				  path),
			 0);
	ck_assert_int_gt(asprintf(&want,
				  "a.yaml:2:5: credential 'empty': token_file "
				  "%s: file is empty",
				  path),
			 0);
	expect_error(yaml, want);
	free(yaml);
	free(want);
	unlink(path);
	free(path);

	/* A first line that is too short. */
	path = temp_file("short\nthe-long-second-line\n");
	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - name: s\n"
				  "    token_file: %s\n"
				  "    roles: [ctl]\n",
				  path),
			 0);
	expect_error(yaml,
		     "a.yaml:2:5: credential 's': token must be 8 to 1024 "
		     "bytes");
	free(yaml);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_token_and_token_file)
{
	expect_error("credentials:\n"
		     "  - name: both\n"
		     "    token: abcdefgh12\n"
		     "    token_file: /etc/hostname\n"
		     "    roles: [ctl]\n",
		     "a.yaml:2:5: credential 'both': give exactly one of "
		     "token and token_file");
	expect_error("credentials:\n"
		     "  - name: neither\n"
		     "    roles: [ctl]\n",
		     "a.yaml:2:5: credential 'neither': give token, "
		     "token_file or cert_subject");
}
END_TEST

START_TEST(test_token_length)
{
	char *yaml, long_tok[AUTH_TOKEN_MAX + 2];
	struct tconf c;
	struct cfg_diag d;

	expect_error("credentials:\n"
		     "  - {name: short, token: \"1234567\", roles: [ctl]}\n",
		     "a.yaml:2:5: credential 'short': token must be 8 to 1024 "
		     "bytes");
	expect_error("credentials:\n"
		     "  - {name: empty, token: \"\", roles: [ctl]}\n",
		     "a.yaml:2:5: credential 'empty': token must be 8 to 1024 "
		     "bytes");
	/* Exactly the minimum and exactly the maximum are accepted. */
	ck_assert_int_eq(load("credentials:\n"
			      "  - {name: min, token: \"12345678\", roles: "
			      "[ctl]}\n",
			      &c, &d),
			 0);
	ck_assert_uint_eq(cred(&c, 0)->secret_len, AUTH_TOKEN_MIN);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);

	memset(long_tok, 'x', AUTH_TOKEN_MAX);
	long_tok[AUTH_TOKEN_MAX] = '\0';
	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - {name: max, token: %s, roles: [ctl]}\n",
				  long_tok),
			 0);
	ck_assert_int_eq(load(yaml, &c, &d), 0);
	ck_assert_uint_eq(cred(&c, 0)->secret_len, AUTH_TOKEN_MAX);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
	free(yaml);

	long_tok[AUTH_TOKEN_MAX] = 'x';
	long_tok[AUTH_TOKEN_MAX + 1] = '\0';
	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - {name: big, token: %s, roles: [ctl]}\n",
				  long_tok),
			 0);
	expect_error(yaml, "a.yaml:2:5: credential 'big': token must be 8 to "
			   "1024 bytes");
	free(yaml);
}
END_TEST

START_TEST(test_roles)
{
	const char *const unknown[] = {
		"a.yaml:2:5: credential 'r': role 'admin' is not one of agent, "
		"ccl-client, ctl",
		"a.yaml:2:5: credential 'r': role 'master' is not one of "
		"agent, ccl-client, ctl",
		"a.yaml:2:5: credential 'r': role 'unspecified' is not one of "
		"agent, ccl-client, ctl",
		NULL};

	expect_errors("credentials:\n"
		      "  - name: r\n"
		      "    token: abcdefgh12\n"
		      "    roles: [admin, agent, master, unspecified]\n",
		      unknown);
	expect_error("credentials:\n"
		     "  - {name: none, token: abcdefgh12, roles: []}\n",
		     "a.yaml:2:5: credential 'none': roles must not be empty");
	expect_error("credentials:\n"
		     "  - {name: norole, token: abcdefgh12}\n",
		     "a.yaml:2:5: credential: missing required key 'roles'");
	expect_error("credentials:\n"
		     "  - {token: abcdefgh12, roles: [ctl]}\n",
		     "a.yaml:2:5: credential: missing required key 'name'");
	expect_error(
		"credentials:\n"
		"  - {name: x, token: abcdefgh12, roles: ctl}\n",
		"a.yaml:2:41: roles: expected a list of strings, got a scalar");
	expect_error("credentials:\n"
		     "  - {name: x, token: abcdefgh12, roles: [ctl], job: a}\n",
		     "a.yaml:2:48: unknown key 'job' in credential (known: "
		     "name, token, token_file, roles, jobs, cert_subject, "
		     "uids, gids)");
}
END_TEST

START_TEST(test_duplicates_across_list)
{
	const char *const dup[] = {
		"a.yaml:4:5: credential name 'one' used twice",
		"a.yaml:5:5: credentials 'one' and 'three' have the same "
		"token",
		"a.yaml:6:5: credentials 'two' and 'four' have the same token",
		NULL};

	expect_errors("credentials:\n"
		      "  - {name: one, token: token-one-1, roles: [ctl]}\n"
		      "  - {name: two, token: token-two-2, roles: [ctl]}\n"
		      "  - {name: one, token: token-other, roles: [ctl]}\n"
		      "  - {name: three, token: token-one-1, roles: [ctl]}\n"
		      "  - {name: four, token: token-two-2, roles: [agent]}\n",
		      dup);
}
END_TEST

/* A token read from a file collides with the same token written inline. */
START_TEST(test_duplicate_token_via_file)
{
	char *path = temp_file("shared-secret-9\n");
	char *yaml;

	ck_assert_int_gt(asprintf(&yaml,
				  "credentials:\n"
				  "  - {name: inline, token: shared-secret-9, "
				  "roles: [ctl]}\n"
				  "  - {name: file, token_file: %s, roles: "
				  "[agent]}\n",
				  path),
			 0);
	expect_error(yaml, "a.yaml:3:5: credentials 'inline' and 'file' have "
			   "the same token");
	free(yaml);
	unlink(path);
	free(path);
}
END_TEST

static const char creds_yaml[] =
	"credentials:\n"
	"  - {name: ops, token: operator-token, roles: [ctl]}\n"
	"  - {name: agents-a, token: agent-token-a, roles: [agent], "
	"jobs: [job-a]}\n"
	"  - {name: agents-any, token: agent-token-any, roles: [agent, "
	"ccl-client], jobs: [\"*\"]}\n"
	"  - {name: ccl-open, token: ccl-token-open, roles: [ccl-client]}\n"
	"  - {name: multi, token: multi-token-1, roles: [ccl-client, ctl], "
	"jobs: [job-b, job-c]}\n";

static const struct auth_credential *
match(const struct tconf *c, const char *tok)
{
	return auth_match(&c->credentials, tok, strlen(tok));
}

START_TEST(test_match)
{
	struct tconf c;
	struct cfg_diag d;
	const struct auth_credential *a;

	ck_assert_int_eq(load(creds_yaml, &c, &d), 0);
	ck_assert_uint_eq(c.credentials.n, 5);

	a = match(&c, "operator-token");
	ck_assert_ptr_eq(a, cred(&c, 0));
	ck_assert_ptr_eq(match(&c, "agent-token-a"), cred(&c, 1));
	ck_assert_ptr_eq(match(&c, "agent-token-any"), cred(&c, 2));
	ck_assert_ptr_eq(match(&c, "ccl-token-open"), cred(&c, 3));
	ck_assert_ptr_eq(match(&c, "multi-token-1"), cred(&c, 4));

	/* Near misses: prefix, longer, case, one byte off, empty. */
	ck_assert_ptr_null(match(&c, "operator-toke"));
	ck_assert_ptr_null(match(&c, "operator-tokenX"));
	ck_assert_ptr_null(match(&c, "operator-token "));
	ck_assert_ptr_null(match(&c, "Operator-token"));
	ck_assert_ptr_null(match(&c, "operator-tokem"));
	ck_assert_ptr_null(match(&c, "agent-token-"));
	ck_assert_ptr_null(match(&c, ""));
	ck_assert_ptr_null(auth_match(&c.credentials, NULL, 0));
	/* The length counts, so a trailing NUL does not match. */
	ck_assert_ptr_null(auth_match(&c.credentials, "operator-token", 15));
	/* Only len bytes are compared. */
	ck_assert_ptr_eq(auth_match(&c.credentials, "operator-token-xyz", 14),
			 cred(&c, 0));
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

START_TEST(test_match_empty_list)
{
	struct cfg_list none = {NULL, 0};

	ck_assert_ptr_null(auth_match(&none, "anything-at-all", 15));
}
END_TEST

START_TEST(test_allows)
{
	struct tconf c;
	struct cfg_diag d;
	const struct auth_credential *ops, *a, *any, *open, *multi;

	ck_assert_int_eq(load(creds_yaml, &c, &d), 0);
	ops = cred(&c, 0);
	a = cred(&c, 1);
	any = cred(&c, 2);
	open = cred(&c, 3);
	multi = cred(&c, 4);

	/* ctl ignores jobs entirely. */
	ck_assert_int_eq(auth_allows(ops, C4__ROLE__ROLE_CTL, NULL), 1);
	ck_assert_int_eq(auth_allows(ops, C4__ROLE__ROLE_CTL, "job-z"), 1);
	ck_assert_int_eq(auth_allows(multi, C4__ROLE__ROLE_CTL, "job-z"), 1);
	/* A role not granted is refused whatever the job. */
	ck_assert_int_eq(auth_allows(ops, C4__ROLE__ROLE_AGENT, "job-a"), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_CTL, NULL), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_CCL_CLIENT, "job-a"), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_MASTER, "job-a"), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_UNSPECIFIED, "job-a"),
			 0);
	ck_assert_int_eq(auth_allows(a, -1, "job-a"), 0);
	ck_assert_int_eq(auth_allows(a, 32, "job-a"), 0);
	ck_assert_int_eq(auth_allows(a, 1000, "job-a"), 0);
	/* Listed jobs only: an agent of job B is refused when only A is. */
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_AGENT, "job-a"), 1);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_AGENT, "job-b"), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_AGENT, "job-"), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_AGENT, "job-aa"), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_AGENT, ""), 0);
	ck_assert_int_eq(auth_allows(a, C4__ROLE__ROLE_AGENT, NULL), 0);
	/* "*" matches any job, even none. */
	ck_assert_int_eq(auth_allows(any, C4__ROLE__ROLE_AGENT, "job-q"), 1);
	ck_assert_int_eq(auth_allows(any, C4__ROLE__ROLE_CCL_CLIENT, "x"), 1);
	ck_assert_int_eq(auth_allows(any, C4__ROLE__ROLE_AGENT, NULL), 1);
	ck_assert_int_eq(auth_allows(any, C4__ROLE__ROLE_CTL, NULL), 0);
	/* No jobs listed: any job. */
	ck_assert_int_eq(auth_allows(open, C4__ROLE__ROLE_CCL_CLIENT, "j"), 1);
	ck_assert_int_eq(auth_allows(open, C4__ROLE__ROLE_CCL_CLIENT, NULL), 1);
	ck_assert_int_eq(auth_allows(open, C4__ROLE__ROLE_AGENT, "j"), 0);
	/* Several jobs. */
	ck_assert_int_eq(auth_allows(multi, C4__ROLE__ROLE_CCL_CLIENT, "job-b"),
			 1);
	ck_assert_int_eq(auth_allows(multi, C4__ROLE__ROLE_CCL_CLIENT, "job-c"),
			 1);
	ck_assert_int_eq(auth_allows(multi, C4__ROLE__ROLE_CCL_CLIENT, "job-a"),
			 0);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

/* The inline token is a secret: cfg_print never shows it. */
START_TEST(test_print_masks_token)
{
	struct tconf c;
	struct cfg_diag d;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	ck_assert_int_eq(load("credentials:\n"
			      "  - {name: ops, token: operator-token, roles: "
			      "[ctl], jobs: [\"*\"]}\n",
			      &c, &d),
			 0);
	fp = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(fp);
	cfg_print(fp, &tconf_schema, &c);
	fclose(fp);
	ck_assert_str_eq(buf, "credentials:\n"
			      "  - name: \"ops\"\n"
			      "    token: \"********\"\n"
			      "    roles: [\"ctl\"]\n"
			      "    jobs: [\"*\"]\n"
			      "    cert_subject: []\n"
			      "    uids: []\n"
			      "    gids: []\n");
	ck_assert_ptr_null(strstr(buf, "operator-token"));
	free(buf);
	cfg_diag_free(&d);
	cfg_free(&tconf_schema, &c);
}
END_TEST

static Suite *
auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("credentials");

	tcase_add_test(tc, test_inline_token);
	tcase_add_test(tc, test_token_file);
	tcase_add_test(tc, test_token_file_problems);
	tcase_add_test(tc, test_token_and_token_file);
	tcase_add_test(tc, test_token_length);
	tcase_add_test(tc, test_roles);
	tcase_add_test(tc, test_duplicates_across_list);
	tcase_add_test(tc, test_duplicate_token_via_file);
	tcase_add_test(tc, test_match);
	tcase_add_test(tc, test_match_empty_list);
	tcase_add_test(tc, test_allows);
	tcase_add_test(tc, test_print_masks_token);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(auth_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
