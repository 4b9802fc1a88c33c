/*
 * ctl.c - the session every c4ctl command opens: connecting with the
 * options of struct ctl, and the admin request and reply.
 */
#include <stdio.h>
#include <unistd.h>

#include "ctl.h"

int
ctl_connect(struct ctl *c)
{
	struct cli_hello h = {C4__ROLE__ROLE_CTL, c->token, NULL, NULL,
			      &c->tls};
	char host[256];

	if (gethostname(host, sizeof(host) - 1) == 0)
		h.node_name = host;
	if (cli_connect(&c->cli, c->server, &h, c->timeout_ms) < 0) {
		fprintf(stderr, "c4ctl: %s: %s\n", c->server, c->cli.err);
		return -1;
	}
	return 0;
}

C4__Envelope *
ctl_admin_req(struct ctl *c, C4__AdminRequest *req, const char *what)
{
	C4__Envelope *env;

	if (ctl_connect(c) < 0)
		return NULL;
	req->has_op = 1;
	env = cli_call(&c->cli, C4__MSG_TYPE__MSG_ADMIN_REQUEST, req);
	if (env == NULL || env->type != C4__MSG_TYPE__MSG_ADMIN_REPLY) {
		fprintf(stderr, "c4ctl: %s: %s\n", what,
			env ? "unexpected answer" : c->cli.err);
		msg_free(env);
		cli_close(&c->cli);
		return NULL;
	}
	return env;
}

C4__Envelope *
ctl_admin(struct ctl *c, C4__AdminOp op, uint64_t comm)
{
	C4__AdminRequest req = C4__ADMIN_REQUEST__INIT;
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
		&c4__admin_op__descriptor, op);

	req.op = op;
	if (comm != 0) {
		req.has_comm_hash = 1;
		req.comm_hash = comm;
	}
	return ctl_admin_req(c, &req, v ? v->name : "admin");
}
