/*
 * test_token.c - token_read(): the first line up to CR or LF, at most
 * keep bytes of it, and the reasons it gives for a file it cannot use.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmain.h"
#include "token.h"

/* A temporary file holding text; the caller unlinks and frees its path. */
static char *
temp_file(const char *text)
{
	char *path = strdup("/tmp/c4-token-XXXXXX");
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

START_TEST(test_token_read)
{
	char err[128], *path, *tok;

	path = temp_file("secret token\r\nsecond line\n");
	tok = token_read(path, 64, err, sizeof(err));
	ck_assert_str_eq(tok, "secret token");
	free(tok);
	/* a line longer than keep is cut at keep bytes */
	tok = token_read(path, 6, err, sizeof(err));
	ck_assert_str_eq(tok, "secret");
	free(tok);
	unlink(path);
	free(path);

	path = temp_file("no line end");
	tok = token_read(path, 64, err, sizeof(err));
	ck_assert_str_eq(tok, "no line end");
	free(tok);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_token_read_refused)
{
	char err[128], *path;

	path = temp_file("");
	ck_assert_ptr_null(token_read(path, 64, err, sizeof(err)));
	ck_assert_str_eq(err, "file is empty");
	unlink(path);
	ck_assert_ptr_null(token_read(path, 64, err, sizeof(err)));
	ck_assert_str_eq(err, "No such file or directory");
	free(path);
	ck_assert_ptr_null(token_read("/", 64, err, sizeof(err)));
	ck_assert_str_eq(err, "Is a directory");
	/* no buffer: nothing is written */
	ck_assert_ptr_null(token_read("/nonexistent/token", 64, NULL, 0));
}
END_TEST

TMAIN("token", test_token_read, test_token_read_refused)
