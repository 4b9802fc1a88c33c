/*
 * net.c - address parsing and socket set-up.
 */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int
net_addr_parse(const char *s, struct net_addr *a, char *err, size_t len)
{
	const char *colon, *host;
	size_t hostlen;
	char *end;
	long port;

	memset(a, 0, sizeof(*a));
	if (strncmp(s, "unix:", 5) == 0) {
		const char *path = s + 5;

		if (path[0] != '/') {
			snprintf(err, len, "unix socket path must be absolute");
			return -1;
		}
		if (strlen(path) >= NET_PATH_MAX) {
			snprintf(err, len, "unix socket path longer than %d",
				 NET_PATH_MAX - 1);
			return -1;
		}
		a->family = AF_UNIX;
		strcpy(a->path, path);
		return 0;
	}
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':') {
			snprintf(err, len, "expected [v6-address]:port");
			return -1;
		}
		host = s + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL) {
			snprintf(err, len, "expected host:port or unix:/path");
			return -1;
		}
		if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
			snprintf(err, len,
				 "IPv6 addresses must be written [addr]:port");
			return -1;
		}
		host = s;
		hostlen = (size_t)(colon - s);
	}
	if (hostlen == 0 || hostlen >= NET_HOST_MAX) {
		snprintf(err, len, "host must be 1 to %d characters",
			 NET_HOST_MAX - 1);
		return -1;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port < 0 ||
	    port > 65535) {
		snprintf(err, len, "port must be a number from 0 to 65535");
		return -1;
	}
	a->family = AF_UNSPEC;
	memcpy(a->host, host, hostlen);
	a->host[hostlen] = '\0';
	a->port = (uint16_t)port;
	return 0;
}

void
net_addr_format(const struct net_addr *a, char *buf, size_t len)
{
	if (a->family == AF_UNIX)
		snprintf(buf, len, "unix:%s", a->path);
	else if (strchr(a->host, ':') != NULL)
		snprintf(buf, len, "[%s]:%u", a->host, a->port);
	else
		snprintf(buf, len, "%s:%u", a->host, a->port);
}

void
net_sockaddr_format(const struct sockaddr *sa, socklen_t salen, char *buf,
		    size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *sun = (const struct sockaddr_un *)sa;

		snprintf(buf, len, "unix:%.*s", (int)sizeof(sun->sun_path),
			 sun->sun_path);
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
	(void)salen;
}

static int
net_resolve(const struct net_addr *a, int passive, struct addrinfo **res,
	    char *err, size_t errlen)
{
	struct addrinfo hints;
	char port[8];
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	snprintf(port, sizeof(port), "%u", a->port);
	rc = getaddrinfo(a->host, port, &hints, res);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", a->host, gai_strerror(rc));
		return -1;
	}
	return 0;
}

int
net_listen(const struct net_addr *a, int backlog, unsigned mode, char *bound,
	   size_t boundlen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	int fd = -1, one = 1;

	if (a->family == AF_UNIX) {
		struct sockaddr_un sun;
		struct stat st;

		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		strcpy(sun.sun_path, a->path);
		/* Only a stale socket is removed, never another file. */
		if (lstat(a->path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(a->path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
		if (fd < 0)
			goto fail;
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			goto fail;
		if (mode != 0 && chmod(a->path, mode) < 0)
			goto fail;
	} else {
		struct addrinfo *res, *ai;

		if (net_resolve(a, 1, &res, err, errlen) < 0)
			return -1;
		for (ai = res; ai != NULL; ai = ai->ai_next) {
			fd = socket(ai->ai_family,
				    ai->ai_socktype | SOCK_NONBLOCK |
					    SOCK_CLOEXEC,
				    ai->ai_protocol);
			if (fd < 0)
				continue;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(res);
		if (fd < 0)
			goto fail;
	}
	if (listen(fd, backlog) < 0)
		goto fail;
	if (getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0)
		net_sockaddr_format((struct sockaddr *)&ss, sslen, bound,
				    boundlen);
	else
		net_addr_format(a, bound, boundlen);
	return fd;
fail:
	snprintf(err, errlen, "%s", strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

static int
net_connect_one(int family, const struct sockaddr *sa, socklen_t salen,
		int timeout_ms)
{
	struct pollfd pfd;
	int fd, rc, soerr = 0;
	socklen_t elen = sizeof(soerr);

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	rc = connect(fd, sa, salen);
	if (rc < 0 && errno != EINPROGRESS)
		goto fail;
	if (rc < 0) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		rc = poll(&pfd, 1, timeout_ms);
		if (rc == 0)
			errno = ETIMEDOUT;
		if (rc <= 0)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen) < 0)
			goto fail;
		if (soerr != 0) {
			errno = soerr;
			goto fail;
		}
	}
	/* The tools use blocking I/O with poll() timeouts from here on. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		goto fail;
	return fd;
fail:
	rc = errno;
	close(fd);
	errno = rc;
	return -1;
}

int
net_send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int
net_connect(const struct net_addr *a, int timeout_ms, char *err, size_t errlen)
{
	int fd = -1, one = 1;

	if (a->family == AF_UNIX) {
		struct sockaddr_un sun;

		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		strcpy(sun.sun_path, a->path);
		fd = net_connect_one(AF_UNIX, (struct sockaddr *)&sun,
				     sizeof(sun), timeout_ms);
	} else {
		struct addrinfo *res, *ai;

		if (net_resolve(a, 0, &res, err, errlen) < 0)
			return -1;
		for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
			fd = net_connect_one(ai->ai_family, ai->ai_addr,
					     ai->ai_addrlen, timeout_ms);
		freeaddrinfo(res);
		if (fd >= 0)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
	}
	if (fd < 0) {
		char addr[NET_HOST_MAX + 16];

		net_addr_format(a, addr, sizeof(addr));
		snprintf(err, errlen, "connect %s: %s", addr, strerror(errno));
	}
	return fd;
}

int
net_addr_is_loopback(const struct net_addr *a)
{
	struct in_addr v4;
	struct in6_addr v6;

	if (a->family == AF_UNIX)
		return 1;
	if (strcmp(a->host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, a->host, &v4) == 1)
		return (ntohl(v4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, a->host, &v6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&v6);
	return 0;
}
