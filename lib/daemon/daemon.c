/*
 * daemon.c - option parsing, configuration, signals and readiness for
 * every c4 daemon.
 */
#define LOG_SUBSYS "main"

#include "daemon.h"

#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_build.h"
#include "clock.h"
#if C4_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

static const char *const daemon_levels[] = {"error", "warning", "info", "debug",
					    NULL};

static const struct cfg_field daemon_log_fields[] = {
	{"level", CFG_ENUM, offsetof(struct daemon_log_conf, level), 0, 0, 0,
	 "info", daemon_levels, "error, warning, info or debug"},
};

const struct cfg_schema daemon_log_schema = {
	"log", sizeof(struct daemon_log_conf), daemon_log_fields,
	CFG_NFIELDS(daemon_log_fields), NULL};

static void
daemon_notify(const char *state)
{
#if C4_HAVE_SYSTEMD
	sd_notify(0, state);
#else
	(void)state;
#endif
}

static void
daemon_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	daemon_notify("WATCHDOG=1");
}

/*
 * When systemd asks for watchdog pings (WatchdogSec= sets $WATCHDOG_USEC
 * for this process), a persistent timer on the event loop that sends
 * WATCHDOG=1 every half period: a loop that stops turning stops the pings
 * and systemd restarts the daemon.  Returns the event (the caller frees
 * it), or NULL when no watchdog is asked for or it cannot be armed.
 */
static struct event *
daemon_watchdog(struct event_base *base)
{
#if C4_HAVE_SYSTEMD
	uint64_t usec = 0;
	struct timeval tv;
	struct event *ev;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return NULL;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000u);
	tv.tv_usec = (suseconds_t)(usec % 1000000u);
	ev = event_new(base, -1, EV_PERSIST, daemon_watchdog_cb, NULL);
	if (ev == NULL || event_add(ev, &tv) < 0) {
		log_warnx("cannot arm the watchdog timer");
		if (ev != NULL)
			event_free(ev);
		return NULL;
	}
	log_info("watchdog: ping every %llu ms",
		 (unsigned long long)usec / 1000);
	return ev;
#else
	(void)base;
	return NULL;
#endif
}

int
daemon_tick_arm(struct event *ev, uint32_t interval_ms, uint32_t offset_ms,
		int first)
{
	uint64_t now = clock_ns(CLOCK_REALTIME);
	uint64_t iv = (uint64_t)interval_ms * 1000000u;
	uint64_t off = (uint64_t)offset_ms * 1000000u;
	uint64_t at = first ? clock_tick_first(now, iv, off)
			    : clock_tick_next(now, iv, off);
	uint64_t wait = at > now ? (at - now) / 1000u : 0; /* us */
	struct timeval tv;

	tv.tv_sec = (time_t)(wait / 1000000u);
	tv.tv_usec = (suseconds_t)(wait % 1000000u);
	/*
	 * libevent adds a timeout to the time it cached when the loop woke,
	 * and a callback's own work since then would make the tick early.
	 */
	event_base_update_cache_time(event_get_base(ev));
	return event_add(ev, &tv);
}

static void
daemon_usage(const struct daemon_spec *spec, FILE *fp)
{
	fprintf(fp,
		"usage: %s [-dhnvV] [-f config]\n"
		"  -f FILE  configuration (default %s)\n"
		"  -n       check the configuration and exit\n"
		"  -v       with -n: print the canonical configuration; else "
		"debug logging\n"
		"  -d       log to stderr instead of the journal (the daemon\n"
		"           never forks; systemd runs it as Type=notify)\n"
		"  -V       print the version and exit\n",
		spec->name, spec->default_config);
}

static void *
daemon_load(const struct daemon_spec *spec, const char *path, int to_log)
{
	struct cfg_diag d;
	void *conf = calloc(1, spec->schema->size);

	if (conf == NULL)
		return NULL;
	if (cfg_load_file(path, spec->schema, conf, &d) < 0) {
		/* On reload the errors go to the log (the journal). */
		if (to_log) {
			for (size_t i = 0; i < d.n; i++)
				log_errx("%s", d.msgs[i]);
			if (d.dropped > 0)
				log_errx("%s: %zu more errors not shown", path,
					 d.dropped);
		} else
			cfg_diag_print(&d, stderr);
		cfg_diag_free(&d);
		cfg_free(spec->schema, conf);
		free(conf);
		return NULL;
	}
	cfg_diag_free(&d);
	return conf;
}

static struct srv_conf *
daemon_srv_conf(const struct daemon_spec *spec, void *conf)
{
	return (struct srv_conf *)(void *)((char *)conf + spec->off_server);
}

static struct cfg_list *
daemon_creds(const struct daemon_spec *spec, void *conf)
{
	return (struct cfg_list *)(void *)((char *)conf + spec->off_creds);
}

static enum log_level
daemon_level(const struct daemon_spec *spec, void *conf, int verbose)
{
	const struct daemon_log_conf *lc =
		(const void *)((char *)conf + spec->off_log);

	return verbose ? LOG_LVL_DEBUG : (enum log_level)lc->level;
}

static void
daemon_stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct dmn *d = arg;

	(void)what;
	log_info("signal %d: shutting down", (int)sig);
	daemon_notify("STOPPING=1");
	event_base_loopexit(d->base, NULL);
}

/*
 * Runs the loop until event_base_loopexit or _loopbreak (or until nothing
 * is left to wait for): 0, or -1 when libevent fails.  With spec->poll_us,
 * after a turn in which a frame came in the loop keeps taking turns without
 * sleeping (each after a sched_yield, so that a thread that shares the core
 * runs) until no frame came for poll_us, and only then sleeps in epoll_wait:
 * the next request of a client that sends one after another (a communicator
 * asking for its connections) then finds the loop awake instead of paying the
 * wake-up of a sleeping thread, which on a virtual machine is an IPI through
 * the hypervisor (20 us and more on the development VM).
 */
static int
daemon_run(struct dmn *d)
{
	const struct srv_stats *st = srv_get_stats(d->srv);
	uint64_t poll_ns = (uint64_t)d->spec->poll_us * 1000u;
	uint64_t seen = st->frames_in, until = 0;

	if (poll_ns == 0)
		return event_base_dispatch(d->base) < 0 ? -1 : 0;
	for (;;) {
		int flags = EVLOOP_ONCE, r;

		/* Right after a frame no yield: its answer goes out next. */
		if (st->frames_in != seen) {
			seen = st->frames_in;
			until = clock_ns(CLOCK_MONOTONIC) + poll_ns;
			flags |= EVLOOP_NONBLOCK;
		} else if (until != 0 && clock_ns(CLOCK_MONOTONIC) < until) {
			flags |= EVLOOP_NONBLOCK;
			sched_yield();
		}
		r = event_base_loop(d->base, flags);
		if (r < 0)
			return -1;
		/* 1: nothing left to wait for, as event_base_dispatch */
		if (r == 1 || event_base_got_exit(d->base) ||
		    event_base_got_break(d->base))
			return 0;
	}
}

static int daemon_verbose;

static void
daemon_reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct dmn *d = arg;
	const struct daemon_spec *spec = d->spec;
	const char *oldjob, *newjob;
	void *conf, *old;

	(void)sig;
	(void)what;
	daemon_notify("RELOADING=1");
	log_info("reloading %s", d->conf_path);
	conf = daemon_load(spec, d->conf_path, 1);
	if (conf == NULL) {
		log_warnx("reload failed; keeping the running configuration");
		daemon_notify("READY=1");
		return;
	}
	oldjob = spec->job_of ? spec->job_of(d->conf) : NULL;
	newjob = spec->job_of ? spec->job_of(conf) : NULL;
	if (oldjob && newjob && strcmp(oldjob, newjob) != 0) {
		log_warnx("reload: the job cannot change (%s to %s) without a "
			  "restart; keeping the running configuration",
			  oldjob, newjob);
		cfg_free(spec->schema, conf);
		free(conf);
		daemon_notify("READY=1");
		return;
	}
	if (strcmp(daemon_srv_conf(spec, conf)->listen ?: "",
		   daemon_srv_conf(spec, d->conf)->listen ?: "") != 0)
		log_warnx("reload: server.listen changes take a restart");
	old = d->conf;
	d->conf = conf;
	srv_set_conf(d->srv, daemon_srv_conf(spec, conf),
		     daemon_creds(spec, conf));
	log_set_level(daemon_level(spec, conf, daemon_verbose));
	if (spec->reload != NULL)
		spec->reload(d, old);
	cfg_free(spec->schema, old);
	free(old);
	log_info("configuration reloaded");
	daemon_notify("READY=1");
}

/*
 * Reads the command line into d->conf_path, *check (-n) and *foreground
 * (-d), and daemon_verbose (-v).  Returns -1 when the daemon goes on, or the
 * exit status when it is done (-V, -h, a bad option).
 */
static int
daemon_args(int argc, char **argv, const struct daemon_spec *spec,
	    struct dmn *d, int *check, int *foreground)
{
	static const struct option longopts[] = {
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "df:hnvV", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'd':
			*foreground = 1;
			break;
		case 'f':
			d->conf_path = optarg;
			break;
		case 'n':
			*check = 1;
			break;
		case 'v':
			daemon_verbose = 1;
			break;
		case 'V':
			printf("%s %s\n", spec->name, C4_VERSION);
			return 0;
		case 'h':
			daemon_usage(spec, stdout);
			return 0;
		default:
			daemon_usage(spec, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		daemon_usage(spec, stderr);
		return 2;
	}
	return -1;
}

int
daemon_main(int argc, char **argv, const struct daemon_spec *spec)
{
	struct event *sigs[4] = {NULL, NULL, NULL, NULL};
	struct srv_params p;
	struct dmn d;
	char bound[1024] = "", more[512] = "";
	int check = 0, foreground = 0, rc = 1;

	memset(&d, 0, sizeof(d));
	d.spec = spec;
	d.conf_path = spec->default_config;
	log_init(spec->name, 1, LOG_LVL_INFO);
	rc = daemon_args(argc, argv, spec, &d, &check, &foreground);
	if (rc >= 0)
		return rc;
	rc = 1;
	d.conf = daemon_load(spec, d.conf_path, 0);
	if (d.conf == NULL)
		return 1;
	if (check) {
		if (daemon_verbose)
			cfg_print(stdout, spec->schema, d.conf);
		printf("configuration OK\n");
		rc = 0;
		goto out_conf;
	}
	/*
	 * Under systemd (Type=notify) stderr goes to the journal anyway; -d
	 * keeps plain stderr lines, otherwise structured journal entries.
	 */
	log_init(spec->name, foreground,
		 daemon_level(spec, d.conf, daemon_verbose));
	signal(SIGPIPE, SIG_IGN);
	if (gethostname(d.node, sizeof(d.node) - 1) < 0)
		strcpy(d.node, "unknown");
	if (spec->node_of != NULL && spec->node_of(d.conf) != NULL)
		snprintf(d.node, sizeof(d.node), "%s", spec->node_of(d.conf));
	d.base = event_base_new();
	if (d.base == NULL) {
		log_errx("cannot create the event loop");
		goto out;
	}
	memset(&p, 0, sizeof(p));
	p.daemon = spec->name;
	p.node = d.node;
	p.role = spec->role;
	p.arena_decode = spec->arena_decode;
	p.job_id = spec->job_of ? spec->job_of(d.conf) : NULL;
	p.conf = daemon_srv_conf(spec, d.conf);
	p.creds = daemon_creds(spec, d.conf);
	d.srv = srv_new(d.base, &p, &spec->ops, &d);
	if (d.srv == NULL)
		goto out;
	if (spec->start != NULL && spec->start(&d) < 0)
		goto out;
	if (p.conf->listen != NULL &&
	    srv_listen(d.srv, p.conf->listen, 0, bound, sizeof(bound)) < 0)
		goto out;
	if (spec->listen != NULL && spec->listen(&d, more, sizeof(more)) < 0)
		goto out;
	if (more[0] != '\0') {
		size_t n = strlen(bound);

		snprintf(bound + n, sizeof(bound) - n, "%s%s", n ? " " : "",
			 more);
	}
	sigs[0] = evsignal_new(d.base, SIGTERM, daemon_stop_cb, &d);
	sigs[1] = evsignal_new(d.base, SIGINT, daemon_stop_cb, &d);
	sigs[2] = evsignal_new(d.base, SIGHUP, daemon_reload_cb, &d);
	for (int i = 0; i < 3; i++)
		if (sigs[i] == NULL || evsignal_add(sigs[i], NULL) < 0)
			goto out;
	sigs[3] = daemon_watchdog(d.base); /* NULL: none asked for */
	log_info("%s %s ready on %s", spec->name, C4_VERSION, bound);
	{
		char ready[1200];

		snprintf(ready, sizeof(ready),
			 "READY=1\nSTATUS=serving on %s\nC4_LISTEN=%s", bound,
			 bound);
		daemon_notify(ready);
	}
	if (daemon_run(&d) < 0)
		log_errx("event loop failed");
	else
		rc = 0;
	log_info("stopped");
out:
	/* Sessions close (on_close runs) before the daemon's state goes. */
	for (int i = 0; i < 4; i++)
		if (sigs[i] != NULL)
			event_free(sigs[i]);
	srv_free(d.srv);
	if (spec->stop != NULL)
		spec->stop(&d);
	if (d.base != NULL)
		event_base_free(d.base);
out_conf:
	cfg_free(spec->schema, d.conf);
	free(d.conf);
	libevent_global_shutdown();
	return rc;
}
