/*
 * ctl.h - what c4ctl's command files share: the options and session
 * (c4ctl.c) and the C4P commands (ctl_c4p.c).
 */
#ifndef C4_CTL_H
#define C4_CTL_H

#include "cli.h"

struct ctl {
	const char *server;
	const char *token;
	int json;
	int timeout_ms;
	struct cli cli;
};

/* Opens the session as role ctl; 0, or -1 after printing why. */
int ctl_connect(struct ctl *c);
/*
 * c4p-master commands: paths, links, link set, alloc, fabric.  argv[0] is
 * the command.  Returns the exit status (0, 1 daemon error, 2 usage).
 */
int ctl_c4p(struct ctl *c, const char *cmd, int argc, char **argv);

#endif
