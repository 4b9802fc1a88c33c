/*
 * c4p-master - the cluster-wide C4P master: agents and CCL clients of every
 * job ask it for RDMA source ports; operators query and steer the fabric.
 *
 * main.c wires the parts together and nothing else: the configuration
 * (topology, state_dir, lease, hash_seed), the daemon's start and stop,
 * the callbacks of the server core and the store, and the counters of
 * `c4ctl status`.  See c4p.h for the other files and their layers.
 */
#define LOG_SUBSYS "c4p"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/thread.h>

#include "c4_build.h"
#include "admin.h"
#include "api.h"
#include "c4p.h"
#include "hold.h"
#include "jobs.h"
#include "metrics.h"
#include "linkest.h"
#include "probes.h"
#include "store.h"
#include "log.h"
#include "topo_yaml.h"

static const struct cfg_field c4p_probe_fields[] = {
	{"interval", CFG_DURATION, offsetof(struct c4p_probe_conf, interval), 0,
	 0, 86400000, "10s", NULL,
	 "time between probe rounds; 0: only when asked (c4ctl probe)"},
	{"ports", CFG_INT, offsetof(struct c4p_probe_conf, ports), 0, 1,
	 C4P_PROBE_PORTS_MAX, "32", NULL, "source ports probed per pair"},
	{"rate", CFG_INT, offsetof(struct c4p_probe_conf, rate), 0, 1, 1000000,
	 "2000", NULL, "probe packets per second asked of each agent"},
	{"repeats", CFG_INT, offsetof(struct c4p_probe_conf, repeats), 0, 1,
	 C4_PROBE_REPEATS_MAX, "2", NULL,
	 "probes per source port and TTL (loss)"},
	{"timeout", CFG_DURATION, offsetof(struct c4p_probe_conf, timeout), 0,
	 10, C4_PROBE_TIMEOUT_MAX_MS, "300ms", NULL,
	 "how long an agent waits for answers after its last probe"},
	{"window", CFG_INT, offsetof(struct c4p_probe_conf, window), 0, 1,
	 LINKEST_WINDOW_MAX, "3", NULL,
	 "probe rounds in the sliding window of the loss estimates"},
	{"confidence_z", CFG_DOUBLE,
	 offsetof(struct c4p_probe_conf, confidence_z), 0, 1, 6, "3", NULL,
	 "normal quantile of the loss bounds (3: 99.87 % one-sided)"},
	{"loss_degraded", CFG_DOUBLE,
	 offsetof(struct c4p_probe_conf, loss_degraded), 0, 0.0001, 1, "0.01",
	 NULL, "loss lower bound above which a cable is degraded"},
	{"loss_down", CFG_DOUBLE, offsetof(struct c4p_probe_conf, loss_down), 0,
	 0.0001, 1, "0.25", NULL,
	 "loss lower bound above which a cable is marked down"},
	{"loss_recover", CFG_DOUBLE,
	 offsetof(struct c4p_probe_conf, loss_recover), 0, 0.0001, 1, "0.005",
	 NULL, "loss upper bound below which a marked cable is up again"},
	{"min_probes", CFG_INT, offsetof(struct c4p_probe_conf, min_probes), 0,
	 1, 100000000, "50", NULL,
	 "probes reaching a cable direction in the window to judge it"},
	{"gbn_window", CFG_INT, offsetof(struct c4p_probe_conf, gbn_window), 0,
	 1, 1000000, "128", NULL,
	 "packets in flight of the go-back-N model of a degraded weight"},
	{"queue_delay_us", CFG_INT,
	 offsetof(struct c4p_probe_conf, queue_delay_us), 0, 1, 10000000,
	 "1000", NULL,
	 "queueing delay (us) above which a direction's loss is congestion"},
	{"hosts_per_leaf", CFG_INT,
	 offsetof(struct c4p_probe_conf, hosts_per_leaf), 0, 1, 64, "2", NULL,
	 "senders per leaf and side when not full_mesh"},
	{"full_mesh", CFG_BOOL, offsetof(struct c4p_probe_conf, full_mesh), 0,
	 0, 0, "false", NULL, "probe every NIC pair (small fabrics)"},
	{"device", CFG_STR, offsetof(struct c4p_probe_conf, device), 0, 0, 0,
	 NULL, NULL,
	 "probe interface of a NIC port: {host} {nic} {side} {s} replaced"},
};

static void
c4p_probe_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4p_probe_conf *c = obj;

	/* Template fields give at most TOPO_NAME_MAX bytes each. */
	if (c->device != NULL && strlen(c->device) > MSG_IFNAME_MAX &&
	    strchr(c->device, '{') == NULL)
		cfg_diag_add(d, at, "probe.device: longer than %u bytes",
			     MSG_IFNAME_MAX);
	/* Hysteresis needs room between the three. */
	if (!(c->loss_recover < c->loss_degraded &&
	      c->loss_degraded < c->loss_down))
		cfg_diag_add(d, at,
			     "probe: loss_recover (%g) < loss_degraded (%g) < "
			     "loss_down (%g) must hold",
			     c->loss_recover, c->loss_degraded, c->loss_down);
}

static const struct cfg_schema c4p_probe_schema = {
	"probe", sizeof(struct c4p_probe_conf), c4p_probe_fields,
	CFG_NFIELDS(c4p_probe_fields), c4p_probe_validate};

static const struct cfg_field c4p_fields[] = {
	SRV_CONF_FIELD(offsetof(struct c4p_conf, server)),
	DAEMON_CREDS_FIELD(offsetof(struct c4p_conf, credentials)),
	DAEMON_LOG_FIELD(offsetof(struct c4p_conf, log)),
	{"topology", CFG_STR, offsetof(struct c4p_conf, topology), CFG_REQUIRED,
	 0, 0, NULL, NULL, "fabric YAML file (relative to this file's folder)"},
	{"state_dir", CFG_STR, offsetof(struct c4p_conf, state_dir),
	 CFG_REQUIRED, 0, 0, NULL, NULL, "folder of c4p-master.db (SQLite)"},
	{"lease", CFG_DURATION, offsetof(struct c4p_conf, lease), 0, 1000,
	 (double)ALLOC_MAX_LEASE_S * 1000, C4P_LEASE_DEFAULT, NULL,
	 "lease of a request unless renewed (whole seconds)"},
	{"hash_seed", CFG_INT, offsetof(struct c4p_conf, hash_seed), 0, -1,
	 9.0e18, "-1", NULL,
	 "seed of the switches' hash model; -1: probes only"},
	{"sync_full", CFG_BOOL, offsetof(struct c4p_conf, sync_full), 0, 0, 0,
	 "false", NULL, "fsync every commit (survives power loss)"},
	HTTP_CONF_FIELD(offsetof(struct c4p_conf, http)),
	{"probe", CFG_SECTION, offsetof(struct c4p_conf, probe), 0, 0, 0, NULL,
	 &c4p_probe_schema, "probing by agents and link health from it"},
};

/* config_path's folder joined with rel, unless rel is absolute. */
static void
c4p_rel_path(const char *config_path, const char *rel, char *buf, size_t len)
{
	char copy[4096];

	if (rel[0] == '/' || config_path == NULL) {
		snprintf(buf, len, "%s", rel);
		return;
	}
	snprintf(copy, sizeof(copy), "%s", config_path);
	snprintf(buf, len, "%s/%s", dirname(copy), rel);
}

/* Appends already formatted messages of one diag to another. */
static void
c4p_diag_merge(struct cfg_diag *to, const struct cfg_diag *from)
{
	for (size_t i = 0; i < from->n; i++) {
		if (to->n == to->cap) {
			size_t cap = to->cap ? to->cap * 2 : 8;
			char **v = realloc(to->msgs, cap * sizeof(*v));

			if (v == NULL) {
				to->dropped++;
				continue;
			}
			to->msgs = v;
			to->cap = cap;
		}
		to->msgs[to->n] = strdup(from->msgs[i]);
		if (to->msgs[to->n] == NULL)
			to->dropped++;
		else
			to->n++;
	}
	to->dropped += from->dropped;
}

static void
c4p_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4p_conf *c = obj;
	char path[4096];
	struct cfg_diag td;
	struct topo *t = NULL;

	if (c->server.listen == NULL)
		cfg_diag_add(d, at, "server.listen is required");
	auth_validate_list(&c->credentials, at, d);
	if (c->lease % 1000 != 0)
		cfg_diag_add(d, at, "lease must be whole seconds");
	http_conf_validate(&c->http, at, d);
	if (c->topology == NULL)
		return;
	/* The fabric is part of the configuration: -n reports its errors. */
	c4p_rel_path(d->file, c->topology, path, sizeof(path));
	if (topo_yaml_load(path, &t, &td) < 0)
		c4p_diag_merge(d, &td);
	cfg_diag_free(&td);
	topo_free(t);
}

static const struct cfg_schema c4p_schema = {
	"c4p-master configuration", sizeof(struct c4p_conf), c4p_fields,
	CFG_NFIELDS(c4p_fields), c4p_validate};

/* ---- hooks
 * -------------------------------------------------------------------- */

static void
c4p_committed(uint64_t seq, void *arg)
{
	struct c4p *p = arg;

	reply_committed(&p->replies, seq);
}

/* How a reply goes out on the daemon: on the session's connection. */
static int
c4p_send(struct c4p_sess *sess, C4__MsgType type, const void *body,
	 uint64_t reply_to, void *arg)
{
	(void)arg;
	return srv_send(sess->conn, type, (void *)body, reply_to);
}

/* Operator requests to admin.c, the rest to api.c. */
static int
c4p_on_message(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	       void *arg)
{
	struct dmn *d = arg;
	struct c4p *p = d->state;
	struct api_from from = {srv_conn_get_data(c), srv_conn_job(c),
				srv_conn_role(c)};

	if (env->type == C4__MSG_TYPE__MSG_ADMIN_REQUEST)
		return admin_handle(p, from.sess, env, err);
	return api_handle(p, &from, env, err);
}

static void
c4p_expire_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	api_expire(arg);
}

static void
c4p_on_status(struct srv *s, C4__AdminReply *r, void *arg)
{
	struct dmn *d = arg;
	struct c4p *p = d->state;
	struct alloc_stats as;
	struct store_stats ss;
	size_t pending;

	(void)s;
	store_get_stats(p->store, &ss);
	p->st.store_commits = ss.commits;
	p->st.store_inline_commits = ss.inline_commits;
	p->st.store_ops = ss.ops;
#define C4P_STAT_COUNTER(n, h) srv_reply_counter(r, #n, p->st.n, h, 0);
	C4P_COUNTERS(C4P_STAT_COUNTER)
#undef C4P_STAT_COUNTER
	alloc_stats(p->alloc, &as);
	srv_reply_counter(r, "alloc_qps", as.qps, "QPs allocated now", 1);
	srv_reply_counter(r, "alloc_requests", as.requests,
			  "requests holding QPs now", 1);
	srv_reply_counter(r, "alloc_stranded", as.stranded,
			  "QPs without a healthy path now", 1);
	srv_reply_counter(r, "alloc_fallback", as.fallback,
			  "QPs on their other side (failover) now", 1);
	srv_reply_counter(r, "alloc_pending", as.pending,
			  "QPs whose port the holder has not confirmed", 1);
	srv_reply_counter(r, "alloc_max_link_load", as.max_link_load,
			  "largest QP weight on one cable direction", 1);
	srv_reply_counter(r, "jobs_known", jobs_count(p->jobs),
			  "jobs seen since created", 1);
	srv_reply_counter(r, "catalog_entries", catalog_count(p->cat),
			  "catalog entries (IP pair and side)", 1);
	srv_reply_counter(r, "probe_round", probes_rounds(p->probes, &pending),
			  "number of the current or last probe round", 1);
	srv_reply_counter(r, "probe_pending", pending,
			  "probe results the current round still awaits", 1);
}

static void
c4p_free(struct c4p *p)
{
	if (p == NULL)
		return;
	/* Pending messages whose sessions are gone: drop them. */
	reply_drop_all(&p->replies);
	if (p->expire_ev != NULL)
		event_free(p->expire_ev);
	metrics_close(p);
	probes_free(p->probes);
	store_close(p->store);
	jobs_free(p->jobs);
	hold_free(p->holders);
	alloc_free(p->alloc);
	catalog_free(p->cat);
	topo_free(p->topo);
	free(p);
}

static int
c4p_start(struct dmn *d)
{
	struct c4p *p = calloc(1, sizeof(*p));
	const struct c4p_conf *conf = d->conf;
	struct timeval tv = {C4P_EXPIRE_PERIOD_MS / 1000,
			     (C4P_EXPIRE_PERIOD_MS % 1000) * 1000};
	char path[4096], err[512];
	struct cfg_diag td;
	struct store_restore restore;

	if (p == NULL)
		return -1;
	p->dmn = d;
	p->conf = conf;
	d->state = p;
	c4p_rel_path(d->conf_path, conf->topology, path, sizeof(path));
	if (topo_yaml_load(path, &p->topo, &td) < 0) {
		for (size_t i = 0; i < td.n; i++)
			log_errx("%s", td.msgs[i]);
		cfg_diag_free(&td);
		goto fail;
	}
	cfg_diag_free(&td);
	p->model.seed = (uint64_t)conf->hash_seed;
	p->cat = catalog_new(p->topo, conf->hash_seed >= 0 ? &p->model : NULL);
	p->alloc = p->cat ? alloc_new(p->topo, p->cat) : NULL;
	p->holders = hold_new();
	if (p->alloc == NULL || p->holders == NULL) {
		log_errx("out of memory");
		goto fail;
	}
	p->replies.send = c4p_send;
	p->store = store_open(conf->state_dir, conf->sync_full, d->base,
			      c4p_committed, p, err, sizeof(err));
	if (p->store == NULL) {
		log_errx("state: %s", err);
		goto fail;
	}
	p->jobs = jobs_new(p->store, C4P_JOBS_MAX);
	if (p->jobs == NULL) {
		log_errx("out of memory");
		goto fail;
	}
	restore =
		(struct store_restore){jobs_restore, p->jobs, p->cat, p->alloc};
	if (store_load(p->store, &restore, err, sizeof(err)) < 0) {
		log_errx("state: %s/%s: %s", conf->state_dir, STORE_DB_NAME,
			 err);
		goto fail;
	}
	p->probes = probes_new(p);
	if (p->probes == NULL)
		goto fail;
	p->expire_ev = event_new(d->base, -1, EV_PERSIST, c4p_expire_cb, p);
	if (p->expire_ev == NULL || event_add(p->expire_ev, &tv) < 0)
		goto fail;
	if (metrics_open(p, err, sizeof(err)) < 0) {
		log_errx("http: %s", err);
		goto fail;
	}
	log_info("fabric %s: %u leaves, %u spines, %u links, %u hosts, %u "
		 "NICs; %s",
		 path, p->topo->nleaves, p->topo->nspines, p->topo->nlinks,
		 p->topo->nhosts, p->topo->nnics,
		 conf->hash_seed >= 0 ? "hash model on" : "probes only");
	return 0;
fail:
	c4p_free(p);
	d->state = NULL;
	return -1;
}

/*
 * A reload applies lease, log level and credentials; the fabric, the
 * state folder and the hash model are the allocator's ground and change
 * only with a restart.
 */
static void
c4p_reload(struct dmn *d, const void *old)
{
	struct c4p *p = d->state;
	const struct c4p_conf *o = old, *n = d->conf;

	if (p == NULL)
		return;
	p->conf = n;
	if (strcmp(o->topology, n->topology) != 0 ||
	    strcmp(o->state_dir, n->state_dir) != 0 ||
	    o->hash_seed != n->hash_seed || o->sync_full != n->sync_full ||
	    strcmp(o->http.listen ?: "", n->http.listen ?: "") != 0)
		log_warnx("reload: topology, state_dir, hash_seed, sync_full "
			  "and http changes take a restart; still using %s",
			  o->topology);
	if (o->probe.interval != n->probe.interval)
		log_warnx("reload: probe.interval changes take a restart");
}

/* Reports the HTTP address next to server.listen (C4_LISTEN=). */
static int
c4p_listen(struct dmn *d, char *bound, size_t len)
{
	struct c4p *p = d->state;

	if (p->http_bound[0] != '\0')
		snprintf(bound, len, "http://%s", p->http_bound);
	return 0;
}

static void
c4p_stop(struct dmn *d)
{
	c4p_free(d->state);
	d->state = NULL;
}

int
main(int argc, char **argv)
{
	static const struct daemon_spec spec = {
		.name = "c4p-master",
		.default_config = C4_SYSCONFDIR "/c4p-master.yaml",
		.schema = &c4p_schema,
		.off_server = offsetof(struct c4p_conf, server),
		.off_creds = offsetof(struct c4p_conf, credentials),
		.off_log = offsetof(struct c4p_conf, log),
		.role = C4__ROLE__ROLE_MASTER,
		.poll_us = C4P_POLL_US,
		.start = c4p_start,
		.listen = c4p_listen,
		.reload = c4p_reload,
		.stop = c4p_stop,
		.ops =
			{
				.on_hello = api_on_hello,
				.on_message = c4p_on_message,
				.on_close = api_on_close,
				.on_status = c4p_on_status,
			},
	};

	/* The store's thread wakes the loop: libevent must be thread-aware. */
	if (evthread_use_pthreads() < 0) {
		fprintf(stderr, "c4p-master: libevent without threads\n");
		return 1;
	}
	return daemon_main(argc, argv, &spec);
}
