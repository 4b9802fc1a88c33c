/*
 * hello.c - building the session's Hello (hello.h).
 */
#include "hello.h"

#include <string.h>

#include "c4_build.h"

void
hello_init(C4__Hello *h, C4__Role role, const char *job_id,
	   const char *node_name, const char *credential, uint32_t pid)
{
	c4__hello__init(h);
	h->has_role = 1;
	h->role = role;
	h->software_version = (char *)C4_VERSION;
	h->job_id = (char *)job_id;
	h->node_name = (char *)node_name;
	if (credential != NULL) {
		h->has_credential = 1;
		h->credential.data = (uint8_t *)credential;
		h->credential.len = strlen(credential);
	}
	h->has_min_version = h->has_max_version = 1;
	h->min_version = h->max_version = C4_PROTO_VERSION;
	if (pid != 0) {
		h->has_pid = 1;
		h->pid = pid;
	}
}

uint32_t
hello_reply_max_frame(const C4__HelloReply *r)
{
	return r->has_max_frame && r->max_frame >= FRAME_MAX_MIN
		       ? r->max_frame
		       : FRAME_MAX_DEFAULT;
}
