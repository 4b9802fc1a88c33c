/*
 * c4p_client.h - "ports for these QPs": a blocking client of the
 * c4p-master for CCL processes, agents, tests and benchmarks.
 *
 * One session (lib/net/cli) to c4p-master (or, later, to the local
 * c4a-agent, which relays).  c4p_client_request() sends all requests of a
 * communicator as one PathRequestBatch and fills one port per QP; asking
 * again with the same request ids renews their leases and returns the
 * current ports (which may have moved after a link failure).  Ports moved
 * while the session is open arrive as PathReassign messages:
 * c4p_client_poll() collects them.
 */
#ifndef C4_C4P_CLIENT_H
#define C4_C4P_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define C4P_CLIENT_NAME_MAX 64
/*
 * A reply is awaited without sleeping for this long (cli.spin_us): the
 * master answers a lone request in tens of microseconds, and the wake-up
 * of a sleeping thread costs about as much again on a virtual machine.
 */
#define C4P_CLIENT_SPIN_US 200

struct c4p_client {
	struct cli cli;
	char job[256];
	uint32_t lease_ms; /* of the last answer */
	char err[512];
};

/* One request: qp_count QPs from one NIC to another (HOST/NIC or IP). */
struct c4p_client_req {
	const char *request_id;
	const char *src_nic;
	const char *dst_nic;
	int side; /* 0 any (the master picks), 1 left, 2 right */
	uint32_t qp_count;
};

/* The answer for one QP. */
struct c4p_client_port {
	uint16_t sport;
	uint8_t side; /* 1 left, 2 right */
	uint32_t qp_index;
	char spine[C4P_CLIENT_NAME_MAX]; /* "" for a same-leaf path */
};

/*
 * Connects as role (C4__ROLE__ROLE_CCL_CLIENT or _AGENT) for job.
 * 0, or -1 with c->err.
 */
int c4p_client_connect(struct c4p_client *c, const char *addr,
		       const char *token, const char *job, int role,
		       int timeout_ms);
/*
 * The same over TLS 1.3 when tls names a CA or a certificate and addr is
 * TCP (tls NULL: as c4p_client_connect); token may be NULL when the
 * c4p-master knows the client by its certificate.  The files are read
 * now; tls is not kept.
 */
int c4p_client_connect_tls(struct c4p_client *c, const char *addr,
			   const char *token, const char *job, int role,
			   int timeout_ms, const struct tls_files *tls);
/* Ends the session as cli_close() does; c may be connected again. */
void c4p_client_close(struct c4p_client *c);

/*
 * Asks for ports for n requests in one round trip.  ports gets the sum of
 * the qp_counts, request after request; errs[i] (may be NULL) gets 0 or
 * the error code of request i.  Returns the number of requests that
 * failed (their ports are zero; c->err holds the first error's text), or
 * -1 when the exchange itself failed.
 */
int c4p_client_request(struct c4p_client *c, const struct c4p_client_req *r,
		       size_t n, struct c4p_client_port *ports, int *errs);
/* Releases one request (all of the job with NULL); QPs freed or -1. */
long c4p_client_release(struct c4p_client *c, const char *request_id);

/*
 * Tells the master which ports QPs of request_id send from now (ports[i]
 * for QP ports[i].qp_index): the holder's confirmation of a PathReassign
 * (a QpLoadUpdate naming each QP; no answer is awaited). 0, or -1 with
 * c->err. Reads ports only.
 */
int c4p_client_confirm(struct c4p_client *c, const char *request_id,
		       const struct c4p_client_port *ports, size_t n);

/*
 * Waits up to timeout_ms for a PathReassign of request_id (any with
 * NULL); applies its ports to ports[] (indexed by qp_index, n of them),
 * confirms them to the master (c4p_client_confirm) and returns the number
 * changed; 0 on timeout, -1 on error.
 */
int c4p_client_poll(struct c4p_client *c, const char *request_id,
		    struct c4p_client_port *ports, size_t n, int timeout_ms);

#endif
