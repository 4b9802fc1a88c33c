/*
 * ctl.h - what c4ctl's command files share.
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
	struct cli cli;
};

/* Connects and authenticates; prints the reason and returns -1 on error. */
int ctl_connect(struct ctl *c);
/*
 * Sends one admin request of op (comm_hash if non-zero) and returns the
 * reply (free with msg_free, then cli_close), or NULL after printing why.
 */
C4__Envelope *ctl_admin(struct ctl *c, C4__AdminOp op, uint64_t comm);

/* C4D views (ctl/view_c4d.c); each returns the exit status. */
int ctl_jobs(struct ctl *c, int argc, char **argv);
int ctl_ranks(struct ctl *c, int argc, char **argv);
int ctl_matrix(struct ctl *c, int argc, char **argv);

#endif
