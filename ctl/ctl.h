/*
 * ctl.h - what c4ctl's command files share: the options and session
 * (ctl.c), the C4D views (view_c4d.c) and the C4P commands (view_c4p.c).
 */
#ifndef C4_CTL_H
#define C4_CTL_H

#include <stdint.h>

#include "cli.h"
#include "msg.h"

struct ctl {
	const char *server;
	const char *token;
	int json;
	int timeout_ms;
	struct tls_files tls; /* --tls-ca, --tls-cert, --tls-key */
	struct cli cli;
};

/* Connects and authenticates; prints the reason and returns -1 on error. */
int ctl_connect(struct ctl *c);
/*
 * Sends one admin request (its op set by the caller) and returns the reply
 * (free with msg_free, then cli_close), or NULL after printing why, the
 * message starting with what.
 */
C4__Envelope *ctl_admin_req(struct ctl *c, C4__AdminRequest *req,
			    const char *what);
/* The same for a request of op alone (comm_hash if non-zero). */
C4__Envelope *ctl_admin(struct ctl *c, C4__AdminOp op, uint64_t comm);

/*
 * C4D views (ctl/view_c4d.c): view_c4d_jobs, view_c4d_ranks and view_c4d_matrix
 * parse their own options from argv and print to stdout (JSON with -o json).
 * Each returns the exit status: 0, 1 when the daemon could not be asked
 * or refused, 2 for bad usage.
 */
int view_c4d_jobs(struct ctl *c, int argc, char **argv);
int view_c4d_ranks(struct ctl *c, int argc, char **argv);
int view_c4d_matrix(struct ctl *c, int argc, char **argv);
/*
 * c4p-master commands: paths, links, link set, alloc, fabric.  argv[0] is
 * the command.  Returns the exit status (0, 1 daemon error, 2 usage).
 */
int view_c4p_run(struct ctl *c, const char *cmd, int argc, char **argv);

#endif
