/*
 * daemon.h - the main() every c4 daemon shares.
 *
 * daemon_main() does, in this order: log to stderr; parse options; load and
 * validate the configuration (every error, file:line:col); with -n print
 * "configuration OK" (with -v also the canonical configuration) and exit;
 * create the event loop and the server; let the daemon set up its state;
 * bind the listeners; tell systemd READY=1; run the loop until SIGTERM or
 * SIGINT (SIGHUP reloads the configuration, keeping the old one if the new
 * one has errors); tear down and free everything.
 */
#ifndef C4_DAEMON_H
#define C4_DAEMON_H

#include <stddef.h>

#include <event2/event.h>

#include "auth.h"
#include "cfg.h"
#include "log.h"
#include "srv.h"

struct daemon_log_conf {
	int level; /* enum log_level */
};
extern const struct cfg_schema daemon_log_schema;
#define DAEMON_LOG_FIELD(off)                                                  \
	{                                                                      \
		"log", CFG_SECTION, (off), 0, 0, 0, NULL, &daemon_log_schema,  \
			"logging"                                              \
	}
#define DAEMON_CREDS_FIELD(off)                                                \
	{                                                                      \
		"credentials", CFG_LIST, (off), CFG_REQUIRED, 0, 0, NULL,      \
			&auth_credential_schema, "tokens accepted from peers"  \
	}

struct dmn;

struct daemon_spec {
	const char *name;	    /* "c4d-master" */
	const char *default_config; /* path used without -f */
	const struct cfg_schema *schema;
	size_t off_server; /* struct srv_conf in the config */
	size_t off_creds;  /* struct cfg_list of auth_credential */
	size_t off_log;	   /* struct daemon_log_conf */
	C4__Role role;	   /* role in hello replies */
	int arena_decode;  /* see struct srv_params */
	unsigned poll_us;  /* after a frame, poll this long (us): daemon.c */
	/* The job a c4d-master serves (from its config), or NULL. */
	const char *(*job_of)(const void *conf);
	/* The node name from the config, or NULL for the host name. */
	const char *(*node_of)(const void *conf);
	/* Creates the daemon's state after the server exists; 0 or -1. */
	int (*start)(struct dmn *d);
	/* Binds listeners beyond server.listen (agent: its unix socket). */
	int (*listen)(struct dmn *d, char *bound, size_t len);
	/* A reload was accepted: conf is the new one, old is still valid. */
	void (*reload)(struct dmn *d, const void *old);
	/* Frees the daemon's state; the loop has stopped. */
	void (*stop)(struct dmn *d);
	struct srv_ops ops; /* arg is the struct dmn */
};

struct dmn {
	const struct daemon_spec *spec;
	const char *conf_path;
	void *conf;
	struct event_base *base;
	struct srv *srv;
	void *state; /* the daemon's own */
	char node[256];
};

/*
 * Runs the daemon spec describes, as the header comment says, and returns
 * the process's exit status: 0 after a clean stop, -n, --help or
 * --version; 1 when the configuration or the start-up fails; 2 for a bad
 * command line.  spec and argv are read, never kept beyond the call.
 * Call it once, from main(), on the main thread: it installs signal
 * handlers and shuts libevent down globally before returning.
 */
int daemon_main(int argc, char **argv, const struct daemon_spec *spec);

/*
 * Arms the one-shot timer ev for the next interval tick on the wall clock,
 * offset_ms past each multiple of interval_ms (clock_tick_next in
 * clock.h); first: the first tick after now, for starting.  The callback
 * calls it again.  0, or -1 when libevent refuses.
 */
int daemon_tick_arm(struct event *ev, uint32_t interval_ms, uint32_t offset_ms,
		    int first);

#endif
