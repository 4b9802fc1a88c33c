/*
 * c4ctl - the operator's command-line tool for every c4 daemon.
 *
 * Output is a table for people by default and one JSON document per
 * command with -o json (schemas in docs/c4ctl.md).  Exit status: 0 on
 * success, 1 when the daemon answered with an error or could not be
 * reached, 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "c4_build.h"
#include "cfg.h"
#include "cli.h"
#include "ctl.h"
#include "evjson.h"
#include "json.h"
#include "msg.h"
#include "token.h"

#define CTL_DEFAULT_SERVER "127.0.0.1:7410"
#define CTL_TOKEN_FILE	   C4_SYSCONFDIR "/ctl.token"
#define CTL_TOKEN_KEEP	   1099 /* bytes of a token file's line sent */
/* Long options without a short letter. */
#define CTL_OPT_TLS_CA	 1001
#define CTL_OPT_TLS_CERT 1002
#define CTL_OPT_TLS_KEY	 1003
#define CTL_PING_MAX	 100000
#define CTL_FOLLOW_MS	 1000 /* events --follow: polling period */
#define CTL_SUSPECTS_MAX 200  /* characters of the SUSPECTS column */

static void
c4ctl_usage(FILE *fp)
{
	fprintf(fp,
		"usage: c4ctl [-s HOST:PORT] [-t TOKEN | -T FILE] [-o "
		"table|json]"
		" [-w MS] COMMAND\n"
		"commands:\n"
		"  ping [-c COUNT]   heartbeat round trips to the daemon\n"
		"  status            the daemon's identity, uptime and "
		"counters\n"
		"c4d-master:\n"
		"  events [--since DURATION|TIMESTAMP] [--follow]\n"
		"                    the job's events\n"
		"  jobs              the job's agents, ranks, "
		"events\n"
		"  ranks [--comm H]  where each rank runs\n"
		"  matrix [--comm H] [--svg FILE]\n"
		"                    the delay matrix as a "
		"heatmap\n"
		"c4p-master:\n"
		"  paths SRC DST     catalog paths between two NICs (HOST/NIC "
		"or IP)\n"
		"  links             leaf-spine links: state, QPs, load\n"
		"  link set down|up LINK   take a link down or up\n"
		"  probe             a probe round by the agents now\n"
		"  alloc [--job JOB] allocations (of one job)\n"
		"  fabric [--svg FILE]   utilisation: table, or an SVG "
		"picture\n"
		"options:\n"
		"  -s ADDR   daemon address (default $C4_SERVER or %s)\n"
		"  -t TOKEN  credential (default $C4_TOKEN, or the first line "
		"of %s)\n"
		"  -T FILE   read the credential from FILE\n"
		"  -o FMT    table (default) or json\n"
		"  -w MS     time to wait for each answer (default 5000)\n"
		"  --tls-ca FILE    CA that verifies the daemon: TLS 1.3 "
		"(default $C4_TLS_CA)\n"
		"  --tls-cert FILE  client certificate (default "
		"$C4_TLS_CERT)\n"
		"  --tls-key FILE   its private key (default $C4_TLS_KEY)\n"
		"  --version print the version\n",
		CTL_DEFAULT_SERVER, CTL_TOKEN_FILE);
}

static double
c4ctl_now_ms(void)
{
	return (double)clock_ns(CLOCK_MONOTONIC) / 1e6;
}

static int
c4ctl_ping(struct ctl *c, int argc, char **argv)
{
	double t0, connect_ms, min = INFINITY, max = 0, sum = 0, *rtt;
	const C4__HelloReply *hr;
	struct json j;
	long count = 3;
	int ch, ok = 0;

	optind = 1;
	while ((ch = getopt(argc, argv, "c:")) != -1) {
		char *end;

		if (ch != 'c') {
			c4ctl_usage(stderr);
			return 2;
		}
		count = strtol(optarg, &end, 10);
		if (*end != '\0' || count < 1 || count > CTL_PING_MAX) {
			fprintf(stderr, "c4ctl: ping -c takes 1..%d\n",
				CTL_PING_MAX);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "c4ctl: ping: unexpected argument %s\n",
			argv[optind]);
		return 2;
	}
	t0 = c4ctl_now_ms();
	if (ctl_connect(c) < 0)
		return 1;
	connect_ms = c4ctl_now_ms() - t0;
	hr = c->cli.hello;
	rtt = calloc((size_t)count, sizeof(*rtt));
	if (rtt == NULL)
		return 1;
	if (!c->json)
		printf("PING %s %s at %s%s%s: session %llu, connected in %.3f "
		       "ms\n",
		       hr->daemon ? hr->daemon : "?",
		       hr->software_version ? hr->software_version : "?",
		       c->server, hr->job_id ? ", job " : "",
		       hr->job_id ? hr->job_id : "",
		       (unsigned long long)hr->session_id, connect_ms);
	for (long i = 0; i < count; i++) {
		C4__Heartbeat hb = C4__HEARTBEAT__INIT;
		C4__Envelope *env;
		double start = c4ctl_now_ms();

		hb.has_nonce = 1;
		hb.nonce = (uint64_t)i + 1;
		env = cli_call(&c->cli, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
		if (env == NULL) {
			fprintf(stderr, "c4ctl: heartbeat %ld: %s\n", i + 1,
				c->cli.err);
			continue;
		}
		rtt[ok] = c4ctl_now_ms() - start;
		if (env->type != C4__MSG_TYPE__MSG_HEARTBEAT ||
		    !env->heartbeat->echo ||
		    env->heartbeat->nonce != hb.nonce) {
			fprintf(stderr, "c4ctl: heartbeat %ld: wrong answer\n",
				i + 1);
			msg_free(env);
			continue;
		}
		msg_free(env);
		if (!c->json)
			printf("seq=%ld time=%.3f ms\n", i + 1, rtt[ok]);
		min = fmin(min, rtt[ok]);
		max = fmax(max, rtt[ok]);
		sum += rtt[ok];
		ok++;
	}
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "daemon");
		json_str(&j, hr->daemon);
		json_key(&j, "version");
		json_str(&j, hr->software_version);
		json_key(&j, "address");
		json_str(&j, c->server);
		json_key(&j, "job");
		json_str(&j, hr->job_id);
		json_key(&j, "session_id");
		json_u64(&j, hr->session_id);
		json_key(&j, "connect_ms");
		json_double(&j, connect_ms);
		json_key(&j, "sent");
		json_i64(&j, count);
		json_key(&j, "received");
		json_i64(&j, ok);
		json_key(&j, "rtt_ms");
		json_arr_begin(&j);
		for (int i = 0; i < ok; i++)
			json_double(&j, rtt[i]);
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%ld sent, %d received", count, ok);
		if (ok > 0)
			printf(", rtt min/avg/max = %.3f/%.3f/%.3f ms", min,
			       sum / ok, max);
		printf("\n");
	}
	free(rtt);
	cli_close(&c->cli);
	return ok == count ? 0 : 1;
}

static int
c4ctl_status(struct ctl *c)
{
	const C4__AdminReply *r;
	C4__Envelope *env;
	struct json j;

	env = ctl_admin(c, C4__ADMIN_OP__ADMIN_STATUS, 0);
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "daemon");
		json_str(&j, r->daemon);
		json_key(&j, "version");
		json_str(&j, r->software_version);
		json_key(&j, "node");
		json_str(&j, r->node_name);
		json_key(&j, "job");
		json_str(&j, c->cli.hello->job_id);
		json_key(&j, "uptime_ms");
		json_u64(&j, r->uptime_ms);
		json_key(&j, "counters");
		json_obj_begin(&j);
		for (size_t i = 0; i < r->n_counters; i++) {
			json_key(&j, r->counters[i]->name);
			json_u64(&j, r->counters[i]->value);
		}
		json_obj_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%s %s on %s%s%s, up %.1f s\n", r->daemon,
		       r->software_version, r->node_name ? r->node_name : "?",
		       c->cli.hello->job_id ? ", job " : "",
		       c->cli.hello->job_id ? c->cli.hello->job_id : "",
		       (double)r->uptime_ms / 1000.0);
		printf("%-24s %14s  %s\n", "COUNTER", "VALUE", "MEANING");
		for (size_t i = 0; i < r->n_counters; i++)
			printf("%-24s %14llu  %s\n", r->counters[i]->name,
			       (unsigned long long)r->counters[i]->value,
			       r->counters[i]->help ? r->counters[i]->help
						    : "");
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

/*
 * --since: a duration back from now ("10m"), nanoseconds since the epoch,
 * or an RFC 3339 UTC time ("2026-11-21T05:00:00Z").  0 or -1.
 */
static int
c4ctl_parse_since(const char *s, uint64_t *out)
{
	uint64_t t = clock_ns(CLOCK_REALTIME);
	struct tm tm;
	int64_t ms;
	char *end;

	if (cfg_parse_duration_ms(s, &ms) == 0) {
		uint64_t back = (uint64_t)ms * 1000000u;

		*out = back < t ? t - back : 0;
		return 0;
	}
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno == 0 && end != s && *end == '\0')
		return 0;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL || (strcmp(end, "Z") != 0 && strcmp(end, "") != 0))
		return -1;
	*out = (uint64_t)timegm(&tm) * 1000000000u;
	return 0;
}

/*
 * One suspect as "role host/nic rN" (network) or "role host gpuN rN"
 * (rank roles and intra-host transports), with "->" and the other end
 * when it names one.
 */
static void
c4ctl_suspect(const C4__Suspect *x, char *buf, size_t len)
{
	int n;

	if (x->nic == NULL || strcmp(x->nic, "-") == 0 ||
	    x->role == C4__SUSPECT_ROLE__SUSPECT_RANK)
		n = snprintf(buf, len, "%s %s gpu%u r%u",
			     evjson_role_name(x->role), x->host ? x->host : "?",
			     x->gpu, x->rank);
	else
		n = snprintf(buf, len, "%s %s/%s r%u",
			     evjson_role_name(x->role), x->host ? x->host : "?",
			     x->nic, x->rank);
	if (n < 0 || (size_t)n >= len || x->peer_host == NULL)
		return;
	if (x->peer_nic != NULL)
		snprintf(buf + n, len - (size_t)n, "->%s/%s r%u", x->peer_host,
			 x->peer_nic, x->peer_rank);
	else
		snprintf(buf + n, len - (size_t)n, "->%s gpu%u r%u",
			 x->peer_host, x->peer_gpu, x->peer_rank);
}

/* The typed action and its target ("isolate_host node-07"), else the text. */
static void
c4ctl_action(const C4__Event *ev, char *buf, size_t len)
{
	if (ev->has_action_type && ev->action_type != 0)
		snprintf(buf, len, "%s%s%s",
			 evjson_action_name(ev->action_type),
			 ev->target ? " " : "", ev->target ? ev->target : "");
	else
		snprintf(buf, len, "%s", ev->action ? ev->action : "-");
}

static void
c4ctl_event_row(const C4__Event *ev)
{
	char when[32], sus[CTL_SUSPECTS_MAX + 1] = "", act[600];
	time_t secs = (time_t)(ev->last_seen_ns / 1000000000u);
	struct tm tm;
	size_t n = 0;

	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (size_t i = 0; i < ev->n_suspects && n < CTL_SUSPECTS_MAX; i++) {
		char one[600];
		int k;

		c4ctl_suspect(ev->suspects[i], one, sizeof(one));
		k = snprintf(sus + n, sizeof(sus) - n, "%s%s", i ? ", " : "",
			     one);
		if (k > 0)
			n = n + (size_t)k < sizeof(sus) ? n + (size_t)k
							: sizeof(sus) - 1;
	}
	c4ctl_action(ev, act, sizeof(act));
	printf("%-20s  %-24s  %-8s  %-19s  %-8s  %-24s  %s\n", when,
	       ev->id ? ev->id : "", evjson_state_name(ev->state),
	       evjson_kind_name(ev->kind),
	       ev->has_domain && ev->domain ? evjson_domain_name(ev->domain)
					    : "-",
	       sus[0] ? sus : "-", act);
}

/*
 * events: one ADMIN_EVENTS request (repeated while the reply says more);
 * with --follow the same again every CTL_FOLLOW_MS from where the last
 * answer ended, until interrupted or the connection fails.
 */
static int
c4ctl_events(struct ctl *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{"since", required_argument, NULL, 's'},
		{"follow", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0}};
	uint64_t since = 0;
	int ch, follow = 0, header = !c->json;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "s:f", opts, NULL)) != -1) {
		if (ch == 's') {
			if (c4ctl_parse_since(optarg, &since) < 0) {
				fprintf(stderr,
					"c4ctl: events --since takes a "
					"duration (10m), nanoseconds or "
					"YYYY-MM-DDTHH:MM:SSZ\n");
				return 2;
			}
		} else if (ch == 'f') {
			follow = 1;
		} else {
			c4ctl_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "c4ctl: events: unexpected argument %s\n",
			argv[optind]);
		return 2;
	}
	if (ctl_connect(c) < 0)
		return 1;
	for (;;) {
		C4__AdminRequest req = C4__ADMIN_REQUEST__INIT;
		const C4__AdminReply *r;
		C4__Envelope *env;
		int more;

		req.has_op = 1;
		req.op = C4__ADMIN_OP__ADMIN_EVENTS;
		req.has_since_ns = 1;
		req.since_ns = since;
		env = cli_call(&c->cli, C4__MSG_TYPE__MSG_ADMIN_REQUEST, &req);
		if (env == NULL || env->type != C4__MSG_TYPE__MSG_ADMIN_REPLY) {
			if (env != NULL && env->type == C4__MSG_TYPE__MSG_ERROR)
				fprintf(stderr, "c4ctl: events: %s\n",
					env->error->text ? env->error->text
							 : "error");
			else
				fprintf(stderr, "c4ctl: events: %s\n",
					env ? "unexpected answer" : c->cli.err);
			msg_free(env);
			cli_close(&c->cli);
			return 1;
		}
		r = env->admin_reply;
		if (header) {
			printf("%-20s  %-24s  %-8s  %-19s  %-8s  %-24s  %s\n",
			       "TIME", "ID", "STATE", "KIND", "DOMAIN",
			       "SUSPECTS", "ACTION");
			header = 0;
		}
		for (size_t i = 0; i < r->n_events; i++) {
			if (c->json) {
				struct json j;

				json_init(&j, stdout);
				evjson_write(&j, r->events[i]);
				json_end(&j);
			} else {
				c4ctl_event_row(r->events[i]);
			}
		}
		fflush(stdout);
		if (r->has_next_since_ns && r->next_since_ns > since)
			since = r->next_since_ns;
		more = r->more;
		msg_free(env);
		if (more)
			continue;
		if (!follow)
			break;
		usleep(CTL_FOLLOW_MS * 1000);
	}
	cli_close(&c->cli);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{"tls-ca", required_argument, NULL, CTL_OPT_TLS_CA},
		{"tls-cert", required_argument, NULL, CTL_OPT_TLS_CERT},
		{"tls-key", required_argument, NULL, CTL_OPT_TLS_KEY},
		{NULL, 0, NULL, 0}};
	struct ctl c;
	char *owned = NULL, err[256];
	const char *cmd;
	int ch, rc;

	memset(&c, 0, sizeof(c));
	c.server =
		getenv("C4_SERVER") ? getenv("C4_SERVER") : CTL_DEFAULT_SERVER;
	c.timeout_ms = 5000;
	c.tls.ca = getenv("C4_TLS_CA");
	c.tls.cert = getenv("C4_TLS_CERT");
	c.tls.key = getenv("C4_TLS_KEY");
	while ((ch = getopt_long(argc, argv, "+s:t:T:o:w:hV", longopts,
				 NULL)) != -1) {
		switch (ch) {
		case 's':
			c.server = optarg;
			break;
		case 't':
			c.token = optarg;
			break;
		case 'T':
			free(owned);
			owned = token_read(optarg, CTL_TOKEN_KEEP, err,
					   sizeof(err));
			if (owned == NULL) {
				fprintf(stderr, "c4ctl: %s: %s\n", optarg, err);
				return 2;
			}
			c.token = owned;
			break;
		case 'o':
			if (strcmp(optarg, "json") == 0)
				c.json = 1;
			else if (strcmp(optarg, "table") != 0) {
				fprintf(stderr, "c4ctl: -o takes table or "
						"json\n");
				return 2;
			}
			break;
		case 'w': {
			char *end;
			long ms = strtol(optarg, &end, 10);

			c.timeout_ms = *end == '\0' && ms > 0 && ms <= 3600000
					       ? (int)ms
					       : 0;
		}
			if (c.timeout_ms <= 0) {
				fprintf(stderr, "c4ctl: -w takes milliseconds "
						"above 0\n");
				return 2;
			}
			break;
		case CTL_OPT_TLS_CA:
			c.tls.ca = optarg;
			break;
		case CTL_OPT_TLS_CERT:
			c.tls.cert = optarg;
			break;
		case CTL_OPT_TLS_KEY:
			c.tls.key = optarg;
			break;
		case 'V':
			printf("c4ctl %s (protocol %u)\n", C4_VERSION,
			       C4_PROTO_VERSION);
			return 0;
		case 'h':
			c4ctl_usage(stdout);
			return 0;
		default:
			c4ctl_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		c4ctl_usage(stderr);
		return 2;
	}
	if (c.token == NULL)
		c.token = getenv("C4_TOKEN");
	if (c.token == NULL)
		c.token = owned =
			token_read(CTL_TOKEN_FILE, CTL_TOKEN_KEEP, NULL, 0);
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (strcmp(cmd, "ping") == 0) {
		rc = c4ctl_ping(&c, argc, argv);
	} else if (strcmp(cmd, "jobs") == 0) {
		rc = view_c4d_jobs(&c, argc, argv);
	} else if (strcmp(cmd, "ranks") == 0) {
		rc = view_c4d_ranks(&c, argc, argv);
	} else if (strcmp(cmd, "matrix") == 0) {
		rc = view_c4d_matrix(&c, argc, argv);
	} else if (strcmp(cmd, "events") == 0) {
		rc = c4ctl_events(&c, argc, argv);
	} else if (strcmp(cmd, "status") == 0 && argc == 1) {
		rc = c4ctl_status(&c);
	} else if (strcmp(cmd, "paths") == 0 || strcmp(cmd, "links") == 0 ||
		   strcmp(cmd, "link") == 0 || strcmp(cmd, "alloc") == 0 ||
		   strcmp(cmd, "fabric") == 0 || strcmp(cmd, "probe") == 0) {
		rc = view_c4p_run(&c, cmd, argc, argv);
	} else {
		fprintf(stderr, "c4ctl: unknown command or arguments: %s\n",
			cmd);
		c4ctl_usage(stderr);
		rc = 2;
	}
	free(owned);
	return rc;
}
