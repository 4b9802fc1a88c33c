/*
 * test_errbuf.c - errbuf_set(): formatting into a caller's buffer,
 * truncated with its NUL, errno kept, and no write when there is no
 * buffer.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "errbuf.h"
#include "tmain.h"

START_TEST(test_errbuf)
{
	char buf[8];

	errno = EINVAL;
	errbuf_set(buf, sizeof(buf), "%s %d", "port", 70000);
	ck_assert_str_eq(buf, "port 70");
	ck_assert_int_eq(errno, EINVAL);
	memset(buf, 'x', sizeof(buf));
	errbuf_set(buf, 0, "%s", "nothing");
	ck_assert_int_eq(buf[0], 'x');
	errbuf_set(NULL, 64, "%s", "nothing");
}
END_TEST

TMAIN("errbuf", test_errbuf)
