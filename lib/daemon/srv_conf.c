/*
 * srv_conf.c - the "server:" section of every daemon's configuration.
 */
#include "srv.h"
#include "srv_tls.h"

#include <stddef.h>

static const struct cfg_field srv_conf_fields[] = {
	{"listen", CFG_ADDR, offsetof(struct srv_conf, listen), 0, 0, 0, NULL,
	 NULL, "address for sessions: host:port or unix:/path"},
	{"max_frame", CFG_SIZE, offsetof(struct srv_conf, max_frame), 0,
	 FRAME_MAX_MIN, FRAME_MAX_LIMIT, "4MiB", NULL,
	 "largest frame accepted; larger ones close the session"},
	{"hello_timeout", CFG_DURATION,
	 offsetof(struct srv_conf, hello_timeout), 0, 100, 600000, "5s", NULL,
	 "time a new connection has to send its hello"},
	{"idle_timeout", CFG_DURATION, offsetof(struct srv_conf, idle_timeout),
	 0, 1000, 86400000, "60s", NULL,
	 "a session silent this long is closed"},
	{"heartbeat", CFG_DURATION, offsetof(struct srv_conf, heartbeat), 0,
	 100, 3600000, "5s", NULL, "heartbeat period asked of peers"},
	{"max_connections", CFG_INT, offsetof(struct srv_conf, max_connections),
	 0, 1, 1000000, "4096", NULL,
	 "authenticated sessions at once; more hellos are refused"},
	{"max_unauthenticated", CFG_INT, offsetof(struct srv_conf, max_unauth),
	 0, 1, 1000000, "256", NULL,
	 "connections awaiting their hello; a new one closes the oldest"},
	{"max_unauthenticated_per_source", CFG_INT,
	 offsetof(struct srv_conf, max_unauth_per_source), 0, 1, 1000000, "16",
	 NULL, "connections awaiting hello from one address; more are refused"},
	{"frame_timeout", CFG_DURATION,
	 offsetof(struct srv_conf, frame_timeout), 0, 100, 3600000, "10s", NULL,
	 "time to complete a frame once its first byte came"},
	{"output_low", CFG_SIZE, offsetof(struct srv_conf, output_low), 0, 4096,
	 1073741824, "1MiB", NULL,
	 "queued output above which a session's input pauses"},
	{"max_output", CFG_SIZE, offsetof(struct srv_conf, max_output), 0,
	 65536, 4294967296.0, "64MiB", NULL,
	 "output queued for one session; beyond it the session is closed"},
	{"max_output_total", CFG_SIZE,
	 offsetof(struct srv_conf, max_output_total), 0, 65536, 1099511627776.0,
	 "128MiB", NULL,
	 "output queued for all sessions; beyond it the sender is closed"},
	{"auth_fail_free", CFG_INT, offsetof(struct srv_conf, auth_fail_free),
	 0, 0, 1000, "3", NULL, "failed hellos per address before delays"},
	{"auth_fail_delay", CFG_DURATION,
	 offsetof(struct srv_conf, auth_fail_delay), 0, 10, 60000, "200ms",
	 NULL, "first delay after failed hellos; doubles per failure"},
	{"auth_fail_delay_max", CFG_DURATION,
	 offsetof(struct srv_conf, auth_fail_delay_max), 0, 10, 600000, "10s",
	 NULL, "longest delay; hellos waiting longer are refused"},
	{"auth_fail_forget", CFG_DURATION,
	 offsetof(struct srv_conf, auth_fail_forget), 0, 1000, 86400000, "10m",
	 NULL, "an address with no failure this long starts afresh"},
	{"log_interval", CFG_DURATION, offsetof(struct srv_conf, log_interval),
	 0, 0, 86400000, "60s", NULL,
	 "at most one warning per address per interval (0: all)"},
	SRV_TLS_FIELD(offsetof(struct srv_conf, tls)),
	{"insecure", CFG_BOOL, offsetof(struct srv_conf, insecure), 0, 0, 0,
	 "false", NULL, "allow plaintext TCP on a non-loopback listen address"},
};

static void
srv_conf_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct srv_conf *c = obj;

	if (c->idle_timeout < 2 * c->heartbeat)
		cfg_diag_add(d, at,
			     "server: idle_timeout must be at least twice the "
			     "heartbeat");
	if (c->max_output < c->output_low + c->max_frame + FRAME_HDR_LEN)
		cfg_diag_add(d, at,
			     "server: max_output must be at least output_low "
			     "plus max_frame");
	if (c->max_output_total < c->max_output)
		cfg_diag_add(d, at,
			     "server: max_output_total must be at least "
			     "max_output");
	if (c->auth_fail_delay_max < c->auth_fail_delay)
		cfg_diag_add(d, at,
			     "server: auth_fail_delay_max must be at least "
			     "auth_fail_delay");
	if ((c->tls.cert != NULL || c->tls.ca != NULL) &&
	    !tls_enabled(&c->tls, 1))
		cfg_diag_add(d, at, "server: tls needs cert and key");
	srv_tls_check_plain(c->listen, tls_enabled(&c->tls, 1), c->insecure,
			    "server: listen", at, d);
}

const struct cfg_schema srv_conf_schema = {
	"server", sizeof(struct srv_conf), srv_conf_fields,
	CFG_NFIELDS(srv_conf_fields), srv_conf_validate};
