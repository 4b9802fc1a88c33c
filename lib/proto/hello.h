/*
 * hello.h - the Hello that opens every session, and what a client takes
 * from the HelloReply.  One builder for every client (c4ctl and the
 * blocking client, the CCL library, the agent's upstream sessions), so
 * that they announce the same software and protocol versions.
 */
#ifndef C4_HELLO_H
#define C4_HELLO_H

#include <stdint.h>

#include "msg.h"

/*
 * Fills h as a hello from role: this build's software version, the
 * protocol version range this side speaks, and job_id, node_name and
 * credential (each may be NULL: left out), plus pid when it is not 0.
 * h is overwritten whole; it borrows the strings (none is copied), so
 * they must outlive its packing.  Changes nothing else.
 */
void hello_init(C4__Hello *h, C4__Role role, const char *job_id,
		const char *node_name, const char *credential, uint32_t pid);

/*
 * The largest frame body the server accepts, from its hello reply: its
 * max_frame when given and at least FRAME_MAX_MIN, else
 * FRAME_MAX_DEFAULT.  Reads r only.
 */
uint32_t hello_reply_max_frame(const C4__HelloReply *r);

#endif
