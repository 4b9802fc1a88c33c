/*
 * replay.c - feeds a recording back through the plugin's callbacks.
 *
 * A recording (C4_PROFILER_RECORD) is text, one callback per line, with
 * the plugin's own timestamp (ns) second; handles and contexts are the
 * values the recording process saw, mapped here to the new ones:
 *
 *   # comment
 *   I t ctx commhash nnodes nranks rank                 init
 *   S t ctx handle type parent rank seq func algo proto count bytes
 *     nchannels pxn channel peer nsteps chunk issend step ptimer
 *                                                       startEvent
 *   R t handle state transsize ptimer                   recordEventState
 *   E t handle                                          stopEvent
 *   F t ctx                                             finalize
 *
 * type and state are NCCL's numbers; func, algo and proto are already
 * our c4client enums; seq is NCCL's seqNumber; pxn is 1 for a ProxyOp
 * whose pid was not the recording process's.  "(nil)" is a NULL handle.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mix.h"
#include "prof.h"

#define REPLAY_LINE_MAX 1024
#define REPLAY_MAP_MIN	1024

struct replay_map {
	uint64_t *key;
	void **val;
	size_t cap, n;
};

static uint64_t replay_clock_ns;

static uint64_t
replay_clock(void)
{
	return replay_clock_ns;
}

static int replay_put(struct replay_map *m, uint64_t k, void *v);

static int
replay_grow(struct replay_map *m)
{
	struct replay_map n = {0};
	size_t i;

	n.cap = m->cap ? m->cap * 2 : REPLAY_MAP_MIN;
	n.key = calloc(n.cap, sizeof(*n.key));
	n.val = calloc(n.cap, sizeof(*n.val));
	if (n.key == NULL || n.val == NULL) {
		free(n.key);
		free(n.val);
		return -1;
	}
	for (i = 0; i < m->cap; i++)
		if (m->key[i] != 0)
			replay_put(&n, m->key[i], m->val[i]);
	free(m->key);
	free(m->val);
	*m = n;
	return 0;
}

/* Keys are non-zero recorded handles; a later start may reuse a value. */
static int
replay_put(struct replay_map *m, uint64_t k, void *v)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap && replay_grow(m) < 0)
		return -1;
	for (i = mix64(k) & (m->cap - 1); m->key[i] != 0 && m->key[i] != k;
	     i = (i + 1) & (m->cap - 1))
		;
	if (m->key[i] == 0)
		m->n++;
	m->key[i] = k;
	m->val[i] = v;
	return 0;
}

static void *
replay_get(const struct replay_map *m, uint64_t k)
{
	size_t i;

	if (k == 0 || m->cap == 0)
		return NULL;
	for (i = mix64(k) & (m->cap - 1); m->key[i] != 0;
	     i = (i + 1) & (m->cap - 1))
		if (m->key[i] == k)
			return m->val[i];
	return NULL;
}

/* A %p-printed pointer: "0x1a2b" or "(nil)". */
static uint64_t
replay_ptr(const char *s)
{
	if (strcmp(s, "(nil)") == 0)
		return 0;
	return strtoull(s, NULL, 16);
}

static void replay_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
replay_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

int
prof_replay(FILE *f, const struct prof_config *cfg, prof_sink_fn sink,
	    void *arg, char *err, size_t errlen)
{
	struct replay_map handles = {0}, ctxs = {0};
	struct prof_config c = *cfg;
	char line[REPLAY_LINE_MAX], a[64], b[64], p[64];
	unsigned long long t, hash, seq, count, bytes, trans, ptimer;
	uint64_t next, step_ns;
	int **masks = NULL;
	size_t nmasks = 0;
	int fed = 0, lineno = 0, n, ok = 1;
	struct prof_descr d;
	void *h, *ctx;

	c.thread = 0;
	c.record_path = NULL;
	if (c.interval_ms < PROF_INTERVAL_MIN ||
	    c.interval_ms > PROF_INTERVAL_MAX)
		c.interval_ms = PROF_INTERVAL_DEFAULT;
	step_ns = (uint64_t)c.interval_ms * 1000000ull;
	replay_clock_ns = 0;
	next = 0;
	prof_set_clock(replay_clock);
	prof_set_sink(sink, arg);
	if (prof_open(&c) < 0) {
		replay_err(err, errlen, "cannot open the core");
		ok = 0;
		goto out;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char op;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%c %llu", &op, &t) != 2) {
			replay_err(err, errlen, "line %d: no op and time",
				   lineno);
			ok = 0;
			break;
		}
		if (next == 0) {
			next = t + step_ns;
			replay_clock_ns = t;
		}
		while (t >= next) {
			replay_clock_ns = next;
			prof_tick(1);
			next += step_ns;
		}
		replay_clock_ns = t;
		memset(&d, 0, sizeof(d));
		switch (op) {
		case 'I': {
			int nn, nr, rk, *mask;
			int **nm;

			n = sscanf(line, "I %llu %63s %llx %d %d %d", &t, a,
				   &hash, &nn, &nr, &rk);
			if (n != 6)
				break;
			mask = calloc(1, sizeof(*mask));
			nm = realloc(masks, (nmasks + 1) * sizeof(*masks));
			if (mask == NULL || nm == NULL) {
				free(mask);
				n = 0;
				break;
			}
			masks = nm;
			masks[nmasks++] = mask;
			prof_init(&ctx, hash, mask, NULL, nn, nr, rk);
			if (replay_put(&ctxs, replay_ptr(a), ctx) < 0)
				n = 0;
			break;
		}
		case 'S': {
			int pxn;

			n = sscanf(line,
				   "S %llu %63s %63s %d %63s %d %llu %d %d %d "
				   "%llu %llu %u %d %d %d %d %d %d %d %llu",
				   &t, a, b, &d.type, p, &d.rank, &seq, &d.func,
				   &d.algo, &d.proto, &count, &bytes,
				   &d.nchannels, &pxn, &d.channel, &d.peer,
				   &d.nsteps, &d.chunk, &d.is_send, &d.step,
				   &ptimer);
			if (n != 21) {
				n = 0;
				break;
			}
			d.seq = seq;
			d.count = count;
			d.bytes = bytes;
			d.ptimer = ptimer;
			d.pid = pxn ? -1 : (int)getpid();
			d.parent = replay_get(&handles, replay_ptr(p));
			ctx = replay_get(&ctxs, replay_ptr(a));
			prof_start(ctx, &h, &d);
			if (replay_ptr(b) != 0 &&
			    replay_put(&handles, replay_ptr(b), h) < 0)
				n = 0;
			break;
		}
		case 'R': {
			int st;

			n = sscanf(line, "R %llu %63s %d %llu %llu", &t, b, &st,
				   &trans, &ptimer);
			if (n == 5)
				prof_state(replay_get(&handles, replay_ptr(b)),
					   st, trans, ptimer);
			break;
		}
		case 'E':
			n = sscanf(line, "E %llu %63s", &t, b);
			if (n == 2)
				prof_stop(replay_get(&handles, replay_ptr(b)));
			break;
		case 'F':
			n = sscanf(line, "F %llu %63s", &t, a);
			if (n == 2)
				prof_finalize(replay_get(&ctxs, replay_ptr(a)));
			break;
		default:
			n = 0;
		}
		if (n == 0 || (op == 'I' && n != 6) || (op == 'R' && n != 5) ||
		    ((op == 'E' || op == 'F') && n != 2)) {
			replay_err(err, errlen, "line %d: bad '%c' record",
				   lineno, op);
			ok = 0;
			break;
		}
		fed++;
	}
	/* The last interval, then close (which reports once more). */
	replay_clock_ns = next;
	prof_tick(1);
	prof_close();
out:
	prof_set_clock(NULL);
	prof_set_sink(NULL, NULL);
	while (nmasks > 0)
		free(masks[--nmasks]);
	free(masks);
	free(handles.key);
	free(handles.val);
	free(ctxs.key);
	free(ctxs.val);
	return ok ? fed : -1;
}
