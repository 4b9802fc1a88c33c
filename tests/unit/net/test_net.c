/*
 * test_net.c - addresses and sockets: the three address forms parsed
 * and written back, each malformed form refused with a reason, bound
 * addresses formatted, a listener on 127.0.0.1 port 0 that a connection
 * reaches, and unix listeners (mode set, stale socket replaced, another
 * file never removed, connection refused where nobody listens).
 */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net.h"
#include "tmain.h"

START_TEST(test_parse_format)
{
	static const char *const good[] = {"127.0.0.1:7000", "[::1]:0",
					   "node-3.example:65535",
					   "unix:/run/c4/agent.sock"};
	struct net_addr a;
	char err[128], buf[160];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_int_eq(net_addr_parse(good[i], &a, err, sizeof(err)),
				 0);
		net_addr_format(&a, buf, sizeof(buf));
		ck_assert_str_eq(buf, good[i]);
	}
	ck_assert_int_eq(net_addr_parse("[fe80::1]:9", &a, err, sizeof(err)),
			 0);
	ck_assert_int_eq(a.family, AF_UNSPEC);
	ck_assert_str_eq(a.host, "fe80::1");
	ck_assert_uint_eq(a.port, 9);
	ck_assert_int_eq(net_addr_parse("unix:/x", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.family, AF_UNIX);
	ck_assert_str_eq(a.path, "/x");
}
END_TEST

START_TEST(test_parse_refused)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"unix:run/x", "absolute"},  {"localhost", "host:port"},
		{"::1:80", "[addr]:port"},   {"[::1]80", "[v6-address]"},
		{":80", "host must be"},     {"h:", "port must be"},
		{"h:65536", "port must be"}, {"h:-1", "port must be"},
		{"h:80x", "port must be"},
	};
	char longpath[NET_PATH_MAX + 8];
	struct net_addr a;
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_int_eq(
			net_addr_parse(bad[i].in, &a, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, bad[i].why) != NULL, "%s: %s",
			      bad[i].in, err);
	}
	memset(longpath, 'a', sizeof(longpath));
	memcpy(longpath, "unix:/", 6);
	longpath[sizeof(longpath) - 1] = '\0';
	ck_assert_int_eq(net_addr_parse(longpath, &a, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "longer than"));
}
END_TEST

START_TEST(test_sockaddr_format)
{
	struct sockaddr_in6 s6;
	struct sockaddr_in s4;
	struct sockaddr sa;
	char buf[80];

	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_port = htons(4711);
	s4.sin_addr.s_addr = htonl(0x0a000102);
	net_sockaddr_format((struct sockaddr *)&s4, sizeof(s4), buf,
			    sizeof(buf));
	ck_assert_str_eq(buf, "10.0.1.2:4711");
	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(80);
	s6.sin6_addr.s6_addr[15] = 1;
	net_sockaddr_format((struct sockaddr *)&s6, sizeof(s6), buf,
			    sizeof(buf));
	ck_assert_str_eq(buf, "[::1]:80");
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNSPEC;
	net_sockaddr_format(&sa, sizeof(sa), buf, sizeof(buf));
	ck_assert_str_eq(buf, "?");
}
END_TEST

START_TEST(test_loopback)
{
	struct net_addr a;
	char bound[80], err[128], got[6];
	int lfd, cfd, sfd;

	ck_assert_int_eq(net_addr_parse("127.0.0.1:0", &a, err, sizeof(err)),
			 0);
	lfd = net_listen(&a, 4, 0, bound, sizeof(bound), err, sizeof(err));
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(strncmp(bound, "127.0.0.1:", 10), 0);
	ck_assert_str_ne(bound, "127.0.0.1:0");
	ck_assert_int_eq(net_addr_parse(bound, &a, err, sizeof(err)), 0);
	cfd = net_connect(&a, 5000, err, sizeof(err));
	ck_assert_int_ge(cfd, 0);
	ck_assert_int_eq(net_send_all(cfd, "hello", 6), 0);
	sfd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(sfd, 0);
	ck_assert_int_eq(recv(sfd, got, sizeof(got), MSG_WAITALL), 6);
	ck_assert_str_eq(got, "hello");
	/* The peer gone, a send fails instead of raising SIGPIPE. */
	close(sfd);
	close(lfd);
	while (net_send_all(cfd, "x", 1) == 0)
		;
	close(cfd);
}
END_TEST

START_TEST(test_unix)
{
	char dir[] = "/tmp/c4-test-net-XXXXXX", path[96], addr[112];
	char bound[128], err[128];
	struct net_addr a;
	struct stat st;
	int lfd, lfd2, cfd;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	snprintf(addr, sizeof(addr), "unix:%s", path);
	ck_assert_int_eq(net_addr_parse(addr, &a, err, sizeof(err)), 0);
	/* Nobody listens yet. */
	ck_assert_int_eq(net_connect(&a, 1000, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "connect unix:", 13) == 0, "%s", err);
	lfd = net_listen(&a, 4, 0600, bound, sizeof(bound), err, sizeof(err));
	ck_assert_int_ge(lfd, 0);
	ck_assert_str_eq(bound, addr);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	cfd = net_connect(&a, 1000, err, sizeof(err));
	ck_assert_int_ge(cfd, 0);
	close(cfd);
	/* A stale socket (its listener gone) is replaced. */
	close(lfd);
	lfd2 = net_listen(&a, 4, 0, bound, sizeof(bound), err, sizeof(err));
	ck_assert_int_ge(lfd2, 0);
	close(lfd2);
	/* Any other file at the path is never removed. */
	unlink(path);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(
		net_listen(&a, 4, 0, bound, sizeof(bound), err, sizeof(err)),
		-1);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	unlink(path);
	rmdir(dir);
}
END_TEST

TMAIN("net", test_parse_format, test_parse_refused, test_sockaddr_format,
      test_loopback, test_unix)
