/*
 * api.h - what agents and CCL clients ask the c4p-master (PathRequest,
 * PathRequestBatch, PathRelease, QpLoadUpdate, ProbeResult), the sessions
 * they ask on, and the lapse of leases.
 */
#ifndef C4P_API_H
#define C4P_API_H

#include "c4p.h"

/* Who sent a message: its session and what its hello established. */
struct api_from {
	struct c4p_sess *sess;
	const char *job; /* the session's job, or NULL */
	C4__Role role;
};

/*
 * srv callbacks (arg: the struct dmn whose state is the struct c4p): a
 * new session gets its struct c4p_sess (an agent's is registered for
 * probes); a closed one lets its holdings go and is freed once no
 * message names it.
 */
int api_on_hello(struct srv_conn *c, const C4__Hello *h, struct msg_err *err,
		 void *arg);
void api_on_close(struct srv_conn *c, void *arg);

/*
 * Handles one client message of env; answers are queued on p->replies
 * (sent once what they report has committed).  0, -1 with err (srv
 * answers with an Error), or -1 with err->code unset for a type it does
 * not serve.  Reads env only.
 */
int api_handle(struct c4p *p, const struct api_from *from,
	       const C4__Envelope *env, struct msg_err *err);

/* Releases every request whose lease has lapsed (the timer's work). */
void api_expire(struct c4p *p);
/*
 * Places again every QP whose port the catalog no longer maps to its
 * path (alloc_recheck) and tells the holders (PathReassign), counted in
 * recheck_moves. Cheap when the catalog did not change.
 */
void api_recheck(struct c4p *p);

#endif
