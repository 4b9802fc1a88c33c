/*
 * sink.c - a real HTTP receiver for webhook tests (c4-test-sink DIR [PORT]).
 *
 * Listens on 127.0.0.1:PORT (default 0: any free port; a restarted sink
 * takes its old port again) and writes the port to DIR/port once bound.  For
 * each request it appends "<code>\t<authorization>\t<content-type>\t<body>"
 * to DIR/attempts; requests it accepts also go to DIR/received.  The test
 * steers it with files: while DIR/down exists it answers 503, while
 * DIR/slow exists it answers after SINK_SLOW_MS (blocking).  SIGTERM stops it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define SINK_SLOW_MS 300

static char sink_dir[512];

static int
sink_exists(const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", sink_dir, name);
	return access(path, F_OK) == 0;
}

static void
sink_append(const char *name, int code, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	const char *auth = evhttp_find_header(h, "Authorization");
	const char *ctype = evhttp_find_header(h, "Content-Type");
	size_t n = evbuffer_get_length(in);
	char path[600];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", sink_dir, name);
	fp = fopen(path, "a");
	if (fp == NULL)
		return;
	fprintf(fp, "%d\t%s\t%s\t%.*s\n", code, auth ? auth : "-",
		ctype ? ctype : "-", (int)n,
		(const char *)evbuffer_pullup(in, (ssize_t)n));
	fclose(fp);
}

static void
sink_answer(struct evhttp_request *req)
{
	int code = sink_exists("down") ? 503 : 200;

	sink_append("attempts", code, req);
	if (code == 200)
		sink_append("received", code, req);
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Unavailable", NULL);
}

/* The sink is a test program: while slow it simply sleeps before answering. */
static void
sink_request_cb(struct evhttp_request *req, void *arg)
{
	(void)arg;
	if (sink_exists("slow"))
		usleep(SINK_SLOW_MS * 1000);
	sink_answer(req);
}

static void
sink_term_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopbreak(arg);
}

int
main(int argc, char **argv)
{
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bs;
	struct event *term;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char path[600], tmp[600];
	FILE *fp;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: c4-test-sink DIR [PORT]\n");
		return 2;
	}
	snprintf(sink_dir, sizeof(sink_dir), "%s", argv[1]);
	base = event_base_new();
	http = evhttp_new(base);
	bs = evhttp_bind_socket_with_handle(
		http, "127.0.0.1", argc == 3 ? (uint16_t)atoi(argv[2]) : 0);
	if (bs == NULL)
		return 1;
	evhttp_set_gencb(http, sink_request_cb, base);
	if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sin,
			&len) < 0)
		return 1;
	snprintf(tmp, sizeof(tmp), "%s/port.tmp", sink_dir);
	snprintf(path, sizeof(path), "%s/port", sink_dir);
	fp = fopen(tmp, "w");
	if (fp == NULL)
		return 1;
	fprintf(fp, "%d\n", ntohs(sin.sin_port));
	fclose(fp);
	rename(tmp, path);
	term = evsignal_new(base, SIGTERM, sink_term_cb, base);
	event_add(term, NULL);
	event_base_dispatch(base);
	event_free(term);
	evhttp_free(http);
	event_base_free(base);
	return 0;
}
