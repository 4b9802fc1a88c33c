/*
 * c4a-agent - the per-node agent: CCL processes of the node connect to its
 * unix socket; operators reach it over TCP.  Aggregation, forwarding to the
 * job masters and probing build on this session layer.
 */
#define LOG_SUBSYS "agent"

#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "c4_build.h"
#include "daemon.h"
#include "log.h"

struct c4a_socket_conf {
	char *path;
	int64_t mode;
	char *group;
};

struct c4a_conf {
	char *node_name;
	struct c4a_socket_conf socket;
	struct srv_conf server;
	struct cfg_list credentials;
	struct dmn_log_conf log;
};

static const struct cfg_field c4a_socket_fields[] = {
	{"path", CFG_STR, offsetof(struct c4a_socket_conf, path), 0, 0, 0,
	 "/run/c4/agent.sock", NULL, "unix socket for local CCL processes"},
	{"mode", CFG_INT, offsetof(struct c4a_socket_conf, mode), CFG_OCTAL, 0,
	 0777, "0660", NULL,
	 "permissions of the socket file, in octal; 0 keeps the umask's"},
	{"group", CFG_STR, offsetof(struct c4a_socket_conf, group), 0, 0, 0,
	 NULL, NULL, "group given the socket file (CCL users' group)"},
};

static void
c4a_socket_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4a_socket_conf *s = obj;

	if (s->group != NULL && getgrnam(s->group) == NULL)
		cfg_diag_add(d, at, "socket.group: no group '%s'", s->group);
	if (s->path[0] != '/')
		cfg_diag_add(d, at, "socket.path must be absolute");
	else if (strlen(s->path) >= 108)
		cfg_diag_add(d, at, "socket.path longer than 107 bytes");
}

static const struct cfg_schema c4a_socket_schema = {
	"socket", sizeof(struct c4a_socket_conf), c4a_socket_fields,
	CFG_NFIELDS(c4a_socket_fields), c4a_socket_validate};

static const struct cfg_field c4a_fields[] = {
	{"node_name", CFG_STR, offsetof(struct c4a_conf, node_name), 0, 0, 0,
	 NULL, NULL, "this node's name (default: the host name)"},
	{"socket", CFG_SECTION, offsetof(struct c4a_conf, socket), 0, 0, 0,
	 NULL, &c4a_socket_schema, "local CCL socket"},
	SRV_CONF_FIELD(offsetof(struct c4a_conf, server)),
	DMN_CREDS_FIELD(offsetof(struct c4a_conf, credentials)),
	DMN_LOG_FIELD(offsetof(struct c4a_conf, log)),
};

static void
c4a_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4a_conf *c = obj;

	auth_validate_list(&c->credentials, at, d);
}

static const struct cfg_schema c4a_schema = {
	"c4a-agent configuration", sizeof(struct c4a_conf), c4a_fields,
	CFG_NFIELDS(c4a_fields), c4a_validate};

static const char *
c4a_node_of(const void *conf)
{
	return ((const struct c4a_conf *)conf)->node_name;
}

/* The unix socket for CCL processes, beside the optional TCP listener. */
static int
c4a_listen(struct dmn *d, char *bound, size_t len)
{
	struct c4a_conf *c = d->conf;
	char addr[128];

	snprintf(addr, sizeof(addr), "unix:%s", c->socket.path);
	if (srv_listen(d->srv, addr, (unsigned)c->socket.mode, bound, len) < 0)
		return -1;
	/* CCL processes of other users reach the socket through its group. */
	if (c->socket.group != NULL) {
		struct group *g = getgrnam(c->socket.group);

		if (g == NULL ||
		    chown(c->socket.path, (uid_t)-1, g->gr_gid) < 0) {
			log_warn("socket %s: cannot give it to group %s",
				 c->socket.path, c->socket.group);
			return -1;
		}
	}
	return 0;
}

/* The socket and node name are set at start; say so if a reload differs. */
static void
c4a_reload(struct dmn *d, const void *oldconf)
{
	const struct c4a_conf *n = d->conf, *o = oldconf;

	if (strcmp(n->socket.path, o->socket.path) != 0 ||
	    n->socket.mode != o->socket.mode ||
	    (n->socket.group == NULL) != (o->socket.group == NULL) ||
	    (n->socket.group && strcmp(n->socket.group, o->socket.group)) ||
	    (n->node_name == NULL) != (o->node_name == NULL) ||
	    (n->node_name && strcmp(n->node_name, o->node_name)))
		log_warnx("reload: socket and node_name changes take a "
			  "restart");
}

int
main(int argc, char **argv)
{
	static const struct dmn_spec spec = {
		.name = "c4a-agent",
		.default_config = C4_SYSCONFDIR "/c4a-agent.yaml",
		.schema = &c4a_schema,
		.off_server = offsetof(struct c4a_conf, server),
		.off_creds = offsetof(struct c4a_conf, credentials),
		.off_log = offsetof(struct c4a_conf, log),
		.role = C4__ROLE__ROLE_AGENT,
		.listen = c4a_listen,
		.node_of = c4a_node_of,
		.reload = c4a_reload,
	};

	return dmn_main(argc, argv, &spec);
}
