/*
 * fabric_probe: one traceroute-style UDP probe per TTL, as c4a-agent sends
 * them, for the fabric emulator's test (run inside a host namespace).
 *
 *   fabric_probe [-i IFNAME] [-m MARK] [-w MS] DST SPORT TTL...
 *
 * Sends a UDP datagram to DST port 4791 from source port SPORT with each
 * TTL, out of interface IFNAME (IP_UNICAST_IF: the socket stays unbound,
 * so an ICMP error that comes back on the other port of a bonded NIC is
 * still delivered) or with fwmark MARK, and prints per TTL
 * "ttl N from ADDR type T code C" from IP_RECVERR, or "ttl N timeout".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_DPORT 4791

/* Waits up to ms for an ICMP error on fd and prints it; 0 if one came. */
static int
probe_wait(int fd, int ttl, int ms)
{
	struct pollfd pfd = {fd, POLLERR, 0};
	char cbuf[512], data[64], from[INET_ADDRSTRLEN];
	struct iovec iov = {data, sizeof(data)};
	struct msghdr mh;
	struct cmsghdr *c;

	if (poll(&pfd, 1, ms) <= 0) {
		printf("ttl %d timeout\n", ttl);
		return -1;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	if (recvmsg(fd, &mh, MSG_ERRQUEUE) < 0) {
		printf("ttl %d error %s\n", ttl, strerror(errno));
		return -1;
	}
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		struct sock_extended_err *ee;
		struct sockaddr_in *off;

		if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR)
			continue;
		ee = (struct sock_extended_err *)(void *)CMSG_DATA(c);
		off = (struct sockaddr_in *)(void *)SO_EE_OFFENDER(ee);
		inet_ntop(AF_INET, &off->sin_addr, from, sizeof(from));
		printf("ttl %d from %s type %u code %u\n", ttl, from,
		       ee->ee_type, ee->ee_code);
		return 0;
	}
	printf("ttl %d noerr\n", ttl);
	return -1;
}

int
main(int argc, char **argv)
{
	const char *ifname = NULL;
	int mark = 0, ms = 1000, c, fd, one = 1, rc = 0;
	struct sockaddr_in src, dst;

	while ((c = getopt(argc, argv, "i:m:w:")) != -1) {
		if (c == 'i')
			ifname = optarg;
		else if (c == 'm')
			mark = atoi(optarg);
		else if (c == 'w')
			ms = atoi(optarg);
		else
			return 2;
	}
	if (argc - optind < 3) {
		fprintf(stderr, "usage: fabric_probe [-i IF] [-m MARK] [-w MS] "
				"DST SPORT TTL...\n");
		return 2;
	}
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons(PROBE_DPORT);
	if (inet_pton(AF_INET, argv[optind], &dst.sin_addr) != 1)
		return 2;
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_port = htons((uint16_t)atoi(argv[optind + 1]));
	for (int i = optind + 2; i < argc; i++) {
		int ttl = atoi(argv[i]);

		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
			       sizeof(one)) < 0 ||
		    bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) <
			    0 ||
		    setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) < 0) {
			perror("fabric_probe: socket");
			return 1;
		}
		if (ifname != NULL) {
			/* IP_UNICAST_IF takes the index in network order */
			uint32_t idx = htonl(if_nametoindex(ifname));

			if (idx == 0 ||
			    setsockopt(fd, IPPROTO_IP, IP_UNICAST_IF, &idx,
				       sizeof(idx)) < 0) {
				perror("fabric_probe: IP_UNICAST_IF");
				return 1;
			}
		}
		if (mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark,
					    sizeof(mark)) < 0) {
			perror("fabric_probe: SO_MARK");
			return 1;
		}
		if (sendto(fd, "c4probe", 7, 0, (struct sockaddr *)&dst,
			   sizeof(dst)) < 0) {
			printf("ttl %d send %s\n", ttl, strerror(errno));
			rc = 1;
		} else if (probe_wait(fd, ttl, ms) < 0) {
			rc = 1;
		}
		close(fd);
	}
	return rc;
}
