/*
 * admin.h - operator requests to the c4p-master (c4ctl, role ctl): paths,
 * links, fabric, link set, probe, allocs.
 */
#ifndef C4P_ADMIN_H
#define C4P_ADMIN_H

#include "c4p.h"

/*
 * Handles the AdminRequest of env from sess; the AdminReply is queued on
 * p->replies (a link set's after its change has committed).  0; -1 with
 * err on a bad request; -1 with err->code unset for an op it does not
 * serve (srv answers "not served").  Reads env only.
 */
int admin_handle(struct c4p *p, struct c4p_sess *sess, const C4__Envelope *env,
		 struct msg_err *err);

#endif
