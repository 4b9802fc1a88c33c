/*
 * c4p-master - the cluster-wide C4P master: agents and CCL clients of every
 * job ask it for RDMA source ports; operators query and steer the fabric.
 * Path allocation (lib/topology) and its store build on this session layer.
 */
#define LOG_SUBSYS "c4p"

#include <stddef.h>
#include <stdlib.h>

#include "c4_build.h"
#include "daemon.h"
#include "log.h"

struct c4p_conf {
	struct srv_conf server;
	struct cfg_list credentials;
	struct dmn_log_conf log;
};

static const struct cfg_field c4p_fields[] = {
	SRV_CONF_FIELD(offsetof(struct c4p_conf, server)),
	DMN_CREDS_FIELD(offsetof(struct c4p_conf, credentials)),
	DMN_LOG_FIELD(offsetof(struct c4p_conf, log)),
};

static void
c4p_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4p_conf *c = obj;

	if (c->server.listen == NULL)
		cfg_diag_add(d, at, "server.listen is required");
	auth_validate_list(&c->credentials, at, d);
}

static const struct cfg_schema c4p_schema = {
	"c4p-master configuration", sizeof(struct c4p_conf), c4p_fields,
	CFG_NFIELDS(c4p_fields), c4p_validate};

int
main(int argc, char **argv)
{
	static const struct dmn_spec spec = {
		.name = "c4p-master",
		.default_config = C4_SYSCONFDIR "/c4p-master.yaml",
		.schema = &c4p_schema,
		.off_server = offsetof(struct c4p_conf, server),
		.off_creds = offsetof(struct c4p_conf, credentials),
		.off_log = offsetof(struct c4p_conf, log),
		.role = C4__ROLE__ROLE_MASTER,
	};

	return dmn_main(argc, argv, &spec);
}
