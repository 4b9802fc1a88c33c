/*
 * test_cli_close.c - cli_close() on a client that was only zeroed: it
 * owns no descriptor, so fd 0 (here a socket standing in for stdin) is
 * neither written to nor closed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "tmain.h"

START_TEST(test_cli_close_zeroed)
{
	int sv[2], saved = dup(0);
	struct cli c;
	char b;

	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(dup2(sv[0], 0), 0);
	memset(&c, 0, sizeof(c));
	cli_close(&c);
	ck_assert_int_eq(c.fd, -1);
	ck_assert_ptr_null(c.hello);
	cli_close(&c); /* twice */
	/* fd 0 is still open, and no goodbye was sent on it */
	ck_assert_int_ge(fcntl(0, F_GETFD), 0);
	ck_assert_int_eq(recv(sv[1], &b, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(dup2(saved, 0), 0);
	close(saved);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

TMAIN("cli-close", test_cli_close_zeroed)
