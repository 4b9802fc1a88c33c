/*
 * c4d_pipe.c - the master's event path without its network server, for
 * tests: c4d-test-pipe CONFIG runs c4d_open() (store, webhooks, HTTP) on
 * its own loop and publishes events read from stdin, one per line:
 *
 *	publish ID STATE [KIND [SUMMARY...]]	(STATE: open|updated|resolved)
 *	quit
 *
 * It prints "ready HTTPADDR" once running and "ok" or "error" after each
 * command.  Every event carries the same verdict (pipe_verdict()).  This
 * is a test program: the daemon itself has no way for a client to inject
 * events.
 */
#define LOG_SUBSYS "pipe"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "log.h"
#include "master.h"

struct pipe_state {
	struct event_base *base;
	struct c4d *m;
	struct evbuffer *in;
};

static int
pipe_enum(const char *s, const char *(*name)(int), int max)
{
	for (int i = 0; i <= max; i++)
		if (strcmp(name(i), s) == 0)
			return i;
	return -1;
}

/*
 * What every published event says beyond its command line: a host domain
 * with isolate_host node-07, its evidence, and two suspects, the second a
 * link node-07/mlx5_7 -> node-08/mlx5_8 naming both ends.
 */
static void
pipe_verdict(C4__Event *ev, C4__Suspect **sv, C4__Evidence *evd)
{
	static uint32_t gpus[2] = {3, 7};

	ev->action = (char *)"isolate host node-07";
	ev->has_domain = ev->has_action_type = 1;
	ev->domain = C4__EVENT_DOMAIN__DOMAIN_HOST;
	ev->action_type = C4__ACTION__ACTION_ISOLATE_HOST;
	ev->target = (char *)"node-07";
	ev->has_confidence = 1;
	ev->confidence = 0.75;
	evd->has_basis = evd->has_z_open = evd->has_slowdown_open = 1;
	evd->has_hot_intervals = evd->has_window = evd->has_members = 1;
	evd->basis = C4__EVIDENCE_BASIS__BASIS_KERNEL;
	evd->z_open = 7.5;
	evd->slowdown_open = 1.5;
	evd->hot_intervals = 3;
	evd->window = 4;
	evd->n_member_gpus = 2;
	evd->member_gpus = gpus;
	evd->members = 2;
	ev->evidence = evd;
	sv[0]->has_role = 1;
	sv[0]->role = C4__SUSPECT_ROLE__SUSPECT_RX;
	sv[0]->has_rank = 1;
	sv[0]->rank = 7;
	sv[0]->host = (char *)"node-07";
	sv[1]->has_role = sv[1]->has_rank = sv[1]->has_peer_rank = 1;
	sv[1]->role = C4__SUSPECT_ROLE__SUSPECT_LINK;
	sv[1]->rank = 7;
	sv[1]->peer_rank = 8;
	sv[1]->host = (char *)"node-07";
	sv[1]->nic = (char *)"mlx5_7";
	sv[1]->peer_host = (char *)"node-08";
	sv[1]->peer_nic = (char *)"mlx5_8";
	sv[1]->has_peer_gpu = sv[1]->has_transport = 1;
	sv[1]->peer_gpu = 0;
	sv[1]->transport = C4__TRANSPORT_CLASS__TRANSPORT_NET;
	ev->n_suspects = 2;
	ev->suspects = sv;
}

static void
pipe_command(struct pipe_state *p, char *line)
{
	C4__Event ev = C4__EVENT__INIT;
	C4__Suspect s0 = C4__SUSPECT__INIT, s1 = C4__SUSPECT__INIT;
	C4__Suspect *sv[2] = {&s0, &s1};
	C4__Evidence evd = C4__EVIDENCE__INIT;
	char *save = NULL, *cmd, *id, *state, *kind, *summary;

	cmd = strtok_r(line, " ", &save);
	if (cmd == NULL)
		return;
	if (strcmp(cmd, "quit") == 0) {
		event_base_loopbreak(p->base);
		return;
	}
	id = strtok_r(NULL, " ", &save);
	state = strtok_r(NULL, " ", &save);
	kind = strtok_r(NULL, " ", &save);
	summary = strtok_r(NULL, "", &save);
	if (strcmp(cmd, "publish") != 0 || id == NULL || state == NULL) {
		printf("error\n");
		fflush(stdout);
		return;
	}
	ev.id = id;
	ev.has_state = 1;
	ev.state = pipe_enum(state, evjson_state_name, 3);
	ev.has_kind = 1;
	ev.kind = kind ? pipe_enum(kind, evjson_kind_name,
				   C4__EVENT_KIND__EVENT_JOB_STALL)
		       : 3;
	ev.summary = summary;
	pipe_verdict(&ev, sv, &evd);
	printf("%s\n", c4d_publish(p->m, &ev) == 0 ? "ok" : "error");
	fflush(stdout);
}

static void
pipe_stdin_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pipe_state *p = arg;
	char *line;
	int n;

	(void)what;
	n = evbuffer_read(p->in, fd, 4096);
	while ((line = evbuffer_readln(p->in, NULL, EVBUFFER_EOL_LF)) != NULL) {
		pipe_command(p, line);
		free(line);
	}
	if (n <= 0)
		event_base_loopbreak(p->base);
}

int
main(int argc, char **argv)
{
	struct pipe_state p = {0};
	struct c4d_conf conf;
	struct cfg_diag d;
	struct event *ev_in;
	char bound[256];
	int rc = 1;

	log_init("c4d-test-pipe", 1, LOG_LVL_DEBUG);
	if (argc != 2) {
		fprintf(stderr, "usage: c4d-test-pipe CONFIG\n");
		return 2;
	}
	if (cfg_load_file(argv[1], &c4d_schema, &conf, &d) < 0) {
		cfg_diag_print(&d, stderr);
		cfg_diag_free(&d);
		cfg_free(&c4d_schema, &conf);
		return 1;
	}
	cfg_diag_free(&d);
	p.base = event_base_new();
	p.in = evbuffer_new();
	if (c4d_open(&p.m, p.base, &conf, NULL, bound, sizeof(bound)) < 0)
		goto out;
	ev_in = event_new(p.base, 0, EV_READ | EV_PERSIST, pipe_stdin_cb, &p);
	event_add(ev_in, NULL);
	printf("ready %s\n", bound[0] ? bound : "-");
	fflush(stdout);
	event_base_dispatch(p.base);
	event_free(ev_in);
	c4d_close(p.m);
	rc = 0;
out:
	evbuffer_free(p.in);
	event_base_free(p.base);
	cfg_free(&c4d_schema, &conf);
	return rc;
}
