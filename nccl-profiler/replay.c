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
#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"
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

/* One replay's mappings and interval clock. */
struct replay {
	struct replay_map handles, ctxs;
	int **masks; /* NCCL's mask, one per communicator */
	size_t nmasks;
	uint64_t next, step_ns;
};

/* I t ctx commhash nnodes nranks rank.  0, or -1 on a bad record. */
static int
replay_init(struct replay *rp, const char *line)
{
	char a[64];
	unsigned long long t, hash;
	int nn, nr, rk, *mask, **nm;
	void *ctx;

	if (sscanf(line, "I %llu %63s %llx %d %d %d", &t, a, &hash, &nn, &nr,
		   &rk) != 6)
		return -1;
	mask = calloc(1, sizeof(*mask));
	nm = realloc(rp->masks, (rp->nmasks + 1) * sizeof(*rp->masks));
	if (mask == NULL || nm == NULL) {
		free(mask);
		return -1;
	}
	rp->masks = nm;
	rp->masks[rp->nmasks++] = mask;
	prof_init(&ctx, hash, mask, NULL, nn, nr, rk);
	return replay_put(&rp->ctxs, replay_ptr(a), ctx);
}

/* S t ctx handle type parent ... (see the top).  0, or -1. */
static int
replay_start(struct replay *rp, const char *line)
{
	char a[64], b[64], p[64];
	unsigned long long t, seq, count, bytes, ptimer;
	struct prof_descr d;
	void *h, *ctx;
	int pxn;

	memset(&d, 0, sizeof(d));
	if (sscanf(line,
		   "S %llu %63s %63s %d %63s %d %llu %d %d %d "
		   "%llu %llu %u %d %d %d %d %d %d %d %llu",
		   &t, a, b, &d.type, p, &d.rank, &seq, &d.func, &d.algo,
		   &d.proto, &count, &bytes, &d.nchannels, &pxn, &d.channel,
		   &d.peer, &d.nsteps, &d.chunk, &d.is_send, &d.step,
		   &ptimer) != 21)
		return -1;
	d.seq = seq;
	d.count = count;
	d.bytes = bytes;
	d.ptimer = ptimer;
	d.pid = pxn ? -1 : (int)getpid();
	d.parent = replay_get(&rp->handles, replay_ptr(p));
	ctx = replay_get(&rp->ctxs, replay_ptr(a));
	prof_start(ctx, &h, &d);
	if (replay_ptr(b) != 0 &&
	    replay_put(&rp->handles, replay_ptr(b), h) < 0)
		return -1;
	return 0;
}

/* Feeds one record line of kind op.  0, or -1 on a bad record. */
static int
replay_line(struct replay *rp, char op, const char *line)
{
	char a[64];
	unsigned long long t, trans, ptimer;
	int st;

	switch (op) {
	case 'I':
		return replay_init(rp, line);
	case 'S':
		return replay_start(rp, line);
	case 'R':
		if (sscanf(line, "R %llu %63s %d %llu %llu", &t, a, &st, &trans,
			   &ptimer) != 5)
			return -1;
		prof_state(replay_get(&rp->handles, replay_ptr(a)), st, trans,
			   ptimer);
		return 0;
	case 'E':
		if (sscanf(line, "E %llu %63s", &t, a) != 2)
			return -1;
		prof_stop(replay_get(&rp->handles, replay_ptr(a)));
		return 0;
	case 'F':
		if (sscanf(line, "F %llu %63s", &t, a) != 2)
			return -1;
		prof_finalize(replay_get(&rp->ctxs, replay_ptr(a)));
		return 0;
	default:
		return -1;
	}
}

/*
 * Moves the clock to t, reporting at every interval boundary on the way;
 * the first record's time starts the first interval.
 */
static void
replay_clock_to(struct replay *rp, uint64_t t)
{
	if (rp->next == 0) {
		rp->next = t + rp->step_ns;
		replay_clock_ns = t;
	}
	while (t >= rp->next) {
		replay_clock_ns = rp->next;
		prof_tick(1);
		rp->next += rp->step_ns;
	}
	replay_clock_ns = t;
}

/* Feeds every line of f.  The callbacks fed, or -1 with err filled. */
static int
replay_feed(struct replay *rp, FILE *f, char *err, size_t errlen)
{
	char line[REPLAY_LINE_MAX], op;
	unsigned long long t;
	int fed = 0, lineno = 0;

	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%c %llu", &op, &t) != 2) {
			errbuf_set(err, errlen, "line %d: no op and time",
				   lineno);
			return -1;
		}
		replay_clock_to(rp, t);
		if (replay_line(rp, op, line) < 0) {
			errbuf_set(err, errlen, "line %d: bad '%c' record",
				   lineno, op);
			return -1;
		}
		fed++;
	}
	return fed;
}

int
replay_run(FILE *f, const struct prof_config *cfg, prof_sink_fn sink, void *arg,
	   char *err, size_t errlen)
{
	struct replay rp;
	struct prof_config c = *cfg;
	int fed = -1;

	memset(&rp, 0, sizeof(rp));
	c.thread = 0;
	c.record_path = NULL;
	if (c.interval_ms < PROF_INTERVAL_MIN ||
	    c.interval_ms > PROF_INTERVAL_MAX)
		c.interval_ms = PROF_INTERVAL_DEFAULT;
	rp.step_ns = (uint64_t)c.interval_ms * 1000000ull;
	replay_clock_ns = 0;
	prof_set_clock(replay_clock);
	prof_set_sink(sink, arg);
	if (prof_open(&c) < 0) {
		errbuf_set(err, errlen, "cannot open the core");
	} else {
		fed = replay_feed(&rp, f, err, errlen);
		/* The last interval, then close (which reports once more). */
		replay_clock_ns = rp.next;
		prof_tick(1);
		prof_close();
	}
	prof_set_clock(NULL);
	prof_set_sink(NULL, NULL);
	while (rp.nmasks > 0)
		free(rp.masks[--rp.nmasks]);
	free(rp.masks);
	free(rp.handles.key);
	free(rp.handles.val);
	free(rp.ctxs.key);
	free(rp.ctxs.val);
	return fed;
}
