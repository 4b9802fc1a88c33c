/*
 * test_log.c - logging in the foreground, with stderr caught in a
 * temporary file: a message is written when its level is enabled and
 * only then (log_init's level, then log_set_level's), as one line
 * "HH:MM:SS.mmm level ident[subsystem]: text"; with_errno appends the
 * error's text; a long message is cut at 2047 bytes; errno is the
 * caller's again after every call, written or not.
 */
#define LOG_SUBSYS "tlog-sub"

#include <check.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tmain.h"

/* stderr, caught: the file it goes to and the descriptor it had. */
struct caught {
	FILE *f;
	int saved;
};

static void
catch_start(struct caught *c)
{
	fflush(stderr);
	c->f = tmpfile();
	ck_assert_ptr_nonnull(c->f);
	c->saved = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_ge(dup2(fileno(c->f), STDERR_FILENO), 0);
}

/* Puts stderr back; returns what was written to it (caller frees). */
static char *
catch_end(struct caught *c)
{
	long n;
	char *text;

	fflush(stderr);
	ck_assert_int_ge(dup2(c->saved, STDERR_FILENO), 0);
	close(c->saved);
	n = ftell(c->f);
	ck_assert_int_ge(n, 0);
	text = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	rewind(c->f);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, c->f), (size_t)n);
	fclose(c->f);
	return text;
}

/* One message at each level, tagged with the level's name. */
static char *
each_level(void)
{
	struct caught c;

	catch_start(&c);
	log_errx("e %d", 1);
	log_warnx("w %d", 2);
	log_info("i %d", 3);
	log_debug("d %d", 4);
	return catch_end(&c);
}

/* The number of lines of text. */
static size_t
lines(const char *text)
{
	size_t n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

START_TEST(test_level_filter)
{
	char *out;

	log_init("tlog", 1, LOG_LVL_WARNING);
	out = each_level();
	ck_assert_uint_eq(lines(out), 2);
	ck_assert_ptr_nonnull(strstr(out, " error tlog[tlog-sub]: e 1\n"));
	ck_assert_ptr_nonnull(strstr(out, " warning tlog[tlog-sub]: w 2\n"));
	ck_assert_ptr_null(strstr(out, "i 3"));
	ck_assert_ptr_null(strstr(out, "d 4"));
	free(out);

	log_set_level(LOG_LVL_DEBUG);
	out = each_level();
	ck_assert_uint_eq(lines(out), 4);
	ck_assert_ptr_nonnull(strstr(out, " info tlog[tlog-sub]: i 3\n"));
	ck_assert_ptr_nonnull(strstr(out, " debug tlog[tlog-sub]: d 4\n"));
	/* In the order written. */
	ck_assert(strstr(out, "e 1") < strstr(out, "w 2"));
	ck_assert(strstr(out, "w 2") < strstr(out, "i 3"));
	ck_assert(strstr(out, "i 3") < strstr(out, "d 4"));
	free(out);

	log_set_level(LOG_LVL_ERROR);
	out = each_level();
	ck_assert_uint_eq(lines(out), 1);
	ck_assert_ptr_nonnull(strstr(out, " error tlog[tlog-sub]: e 1\n"));
	free(out);
}
END_TEST

START_TEST(test_line_format)
{
	struct caught c;
	regex_t re;
	char *out;

	log_init("c4-test", 1, LOG_LVL_INFO);
	catch_start(&c);
	log_emit(LOG_LVL_INFO, "net", 0, "%s has %u ports", "leaf0", 48u);
	out = catch_end(&c);
	ck_assert_int_eq(regcomp(&re,
				 "^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{3} "
				 "info c4-test\\[net\\]: leaf0 has 48 ports\n$",
				 REG_EXTENDED),
			 0);
	ck_assert_msg(regexec(&re, out, 0, NULL, 0) == 0, "line: '%s'", out);
	regfree(&re);
	free(out);
}
END_TEST

START_TEST(test_errno_text_and_kept)
{
	struct caught c;
	char want[256];
	char *out;

	log_init("tlog", 1, LOG_LVL_WARNING);
	snprintf(want, sizeof(want), " warning tlog[tlog-sub]: open /x: %s\n",
		 strerror(ENOENT));
	catch_start(&c);
	errno = ENOENT;
	log_warn("open %s", "/x");
	ck_assert_int_eq(errno, ENOENT);
	/* Filtered out: errno is left alone too. */
	errno = EACCES;
	log_debug("not written");
	ck_assert_int_eq(errno, EACCES);
	errno = EINVAL;
	log_warnx("no errno here");
	ck_assert_int_eq(errno, EINVAL);
	out = catch_end(&c);
	ck_assert_uint_eq(lines(out), 2);
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_ptr_nonnull(strstr(out, ": no errno here\n"));
	ck_assert_ptr_null(strstr(out, "not written"));
	free(out);
}
END_TEST

START_TEST(test_long_message_cut)
{
	static char big[5000];
	struct caught c;
	const char *text;
	char *out, *nl;

	memset(big, 'x', sizeof(big) - 1);
	log_init("tlog", 1, LOG_LVL_INFO);
	catch_start(&c);
	log_info("%s", big);
	out = catch_end(&c);
	ck_assert_uint_eq(lines(out), 1);
	text = strstr(out, "]: ");
	ck_assert_ptr_nonnull(text);
	text += 3;
	nl = strchr(text, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_eq((size_t)(nl - text), 2047);
	ck_assert_uint_eq(strspn(text, "x"), 2047);
	free(out);
}
END_TEST

/* Not in the foreground and no journal: stderr, with the caller's fields. */
START_TEST(test_no_journal_stderr_fields)
{
	struct caught c;
	char *out;

	unsetenv("JOURNAL_STREAM");
	setenv("C4_LOG_TARGET", "stderr", 1);
	log_init("tlog", 0, LOG_LVL_INFO);
	ck_assert_int_eq(log_to_journal(), 0);
	catch_start(&c);
	log_info("listening on %s", "127.0.0.1:7410");
	log_event(LOG_LVL_WARNING, "job-42", "slow-conn", "10.0.0.7:41000",
		  "event %d", 7);
	log_event(LOG_LVL_INFO, NULL, NULL, "p:1", "peer only");
	out = catch_end(&c);
	ck_assert_uint_eq(lines(out), 3);
	ck_assert_ptr_nonnull(strstr(
		out, " info tlog[tlog-sub]: listening on 127.0.0.1:7410\n"));
	ck_assert_ptr_nonnull(strstr(out, " warning tlog[tlog-sub]: event 7 "
					  "job=job-42 event=slow-conn "
					  "peer=10.0.0.7:41000\n"));
	ck_assert_ptr_nonnull(strstr(out, ": peer only peer=p:1\n"));
	free(out);
	unsetenv("C4_LOG_TARGET");
}
END_TEST

TMAIN("log", test_level_filter, test_line_format, test_errno_text_and_kept,
      test_long_message_cut, test_no_journal_stderr_fields)
