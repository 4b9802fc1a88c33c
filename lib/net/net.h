/*
 * net.h - addresses, listening and connecting sockets.
 *
 * An address is written "host:port", "[v6addr]:port" or "unix:/path".  The
 * host may be a name; it is resolved when the socket is made.
 */
#ifndef C4_NET_H
#define C4_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NET_HOST_MAX 256
#define NET_PATH_MAX 108 /* sun_path */

struct net_addr {
	int family; /* AF_UNSPEC for host:port (v4 or v6), or AF_UNIX */
	char host[NET_HOST_MAX];
	uint16_t port;
	char path[NET_PATH_MAX];
};

/* Returns 0, or -1 with a reason in err. */
int net_addr_parse(const char *s, struct net_addr *a, char *err, size_t len);
/* Writes the address in the syntax net_addr_parse() reads. */
void net_addr_format(const struct net_addr *a, char *buf, size_t len);
/* Formats a bound socket address (getsockname) as host:port or unix:path. */
void net_sockaddr_format(const struct sockaddr *sa, socklen_t salen, char *buf,
			 size_t len);

/*
 * Is a a unix socket, "localhost" or a loopback address literal
 * (127.0.0.0/8, ::1)?  Any other name counts as not loopback, unresolved.
 * Changes nothing.
 */
int net_addr_is_loopback(const struct net_addr *a);

/*
 * Creates a non-blocking listening socket (SO_REUSEADDR, CLOEXEC).  For unix
 * sockets a stale socket file is removed first and the file's mode set to
 * mode (0 leaves the umask's).  The address actually bound (a port of 0 gets
 * one from the kernel) is written to bound.  Returns the fd or -1 (errno set,
 * err filled).
 */
int net_listen(const struct net_addr *a, int backlog, unsigned mode,
	       char *bound, size_t boundlen, char *err, size_t errlen);

/*
 * Connects a blocking socket with a timeout in milliseconds (used by the
 * command-line tools and tests; daemons connect through libevent).  Returns
 * the fd or -1 with err filled.
 */
int net_connect(const struct net_addr *a, int timeout_ms, char *err,
		size_t errlen);

/*
 * Writes all n bytes at p to the blocking stream socket fd, retrying
 * short writes and EINTR, without raising SIGPIPE; the socket's send
 * timeout bounds each call.  Returns 0, or -1 with errno set (the bytes
 * already written stay written).  Reads p only.
 */
int net_send_all(int fd, const void *p, size_t n);

#endif
