/*
 * trace.c: the plugin's per-interval trace (C4_PROFILER_STATS=2) read
 * back and fed to the C4D engine (trace.h).
 */
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_TAG	"c4-nccl-profiler: pid "
#define TRACE_MAX_RANKS 65536
#define TRACE_MAX_IV	(1u << 24)
#define TRACE_MAX_VAL	9007199254740992.0 /* 2^53: exact in a double */

/*
 * Next "name value" pair of s: the value after name, a whole number in
 * [0, 2^53] as the plugin prints them.
 */
static int
trace_field(const char **s, const char *name, double *v)
{
	size_t n = strlen(name);
	char *end;

	while (**s == ' ')
		(*s)++;
	if (strncmp(*s, name, n) != 0 || (*s)[n] != ' ' || (*s)[n + 1] < '0' ||
	    (*s)[n + 1] > '9')
		return -1;
	*s += n + 1;
	errno = 0;
	*v = strtod(*s, &end);
	if (errno != 0 || !(*v <= TRACE_MAX_VAL) || *v != floor(*v) ||
	    (*end != ' ' && *end != '\n' && *end != '\0'))
		return -1;
	*s = end;
	return 0;
}

int
trace_parse_line(const char *line, struct trace_row *r, const char **why)
{
	static const char *const names[] = {
		"rank",	      "interval",	"func",	      "ops",
		"kernel_n",   "kernel_mean_ns", "gap_n",      "gap_mean_ns",
		"gap_p50_ns", "gap_p90_ns",	"gap_p99_ns", "gap_max_ns",
	};
	double v[sizeof(names) / sizeof(names[0])];
	const char *s = strstr(line, TRACE_TAG), *p;
	char *end;
	size_t i;

	*why = NULL;
	if (s == NULL)
		return 0;
	/* the plugin's other lines (its counters at exit) carry no comm */
	p = strstr(s, " comm ");
	if (p == NULL || strstr(s, " interval ") == NULL)
		return 0;
	memset(r, 0, sizeof(*r));
	s += strlen(TRACE_TAG);
	errno = 0;
	r->pid = strtoull(s, &end, 10);
	if (end == s || end != p || errno != 0 || *s < '0' || *s > '9') {
		*why = "pid";
		return -1;
	}
	p += strlen(" comm ");
	for (i = 0; i < 16; i++)
		if (!isxdigit((unsigned char)p[i]))
			break;
	if (i != 16 || p[16] != ' ') {
		*why = "comm (16 hex digits)";
		return -1;
	}
	r->comm = strtoull(p, NULL, 16);
	s = p + 16;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (trace_field(&s, names[i], &v[i]) < 0) {
			*why = names[i];
			return -1;
		}
	}
	if (v[0] >= TRACE_MAX_RANKS || v[1] >= TRACE_MAX_IV) {
		*why = v[0] >= TRACE_MAX_RANKS ? "rank" : "interval";
		return -1;
	}
	/* since the plugin gave it: what the master's sum of gaps is */
	while (*s == ' ')
		s++;
	if (strncmp(s, "gap_capped_mean_ns", 18) == 0) {
		if (trace_field(&s, "gap_capped_mean_ns", &r->gap_capped_ns) <
		    0) {
			*why = "gap_capped_mean_ns";
			return -1;
		}
		r->has_capped = 1;
	}
	if (v[8] > v[9] || v[9] > v[10]) {
		*why = "gap quantiles out of order";
		return -1;
	}
	r->rank = (uint32_t)v[0];
	r->interval = (uint32_t)v[1];
	r->func = (uint32_t)v[2];
	r->ops = (uint64_t)v[3];
	r->kernel_n = (uint64_t)v[4];
	r->kernel_mean_ns = (uint64_t)v[5];
	r->gap_n = (uint64_t)v[6];
	r->gap_mean_ns = (uint64_t)v[7];
	r->gap_p50_ns = v[8];
	r->gap_p90_ns = v[9];
	r->gap_p99_ns = v[10];
	r->gap_max_ns = (uint64_t)v[11];
	return 1;
}

int
trace_read(struct trace *t, FILE *f, const char *name, FILE *err)
{
	char *line = NULL;
	size_t lineno = 0, len = 0;
	int ret = 0;

	while (getline(&line, &len, f) >= 0) {
		struct trace_row r;
		const char *why;
		int rc;

		lineno++;
		t->lines++;
		rc = trace_parse_line(line, &r, &why);
		if (rc < 0) {
			t->malformed++;
			if (err != NULL)
				fprintf(err, "%s:%zu: trace line: bad %s\n",
					name, lineno, why);
			continue;
		}
		if (rc == 0)
			continue;
		if (t->nrows == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 256;
			struct trace_row *n =
				realloc(t->rows, cap * sizeof(*n));

			if (n == NULL) {
				ret = -1;
				break;
			}
			t->rows = n;
			t->cap = cap;
		}
		t->rows[t->nrows++] = r;
	}
	free(line);
	return ret < 0 || ferror(f) ? -1 : 0;
}

/* Rows ordered by interval, then communicator, rank and function. */
static int
trace_cmp(const void *a, const void *b)
{
	const struct trace_row *x = a, *y = b;

	if (x->interval != y->interval)
		return x->interval < y->interval ? -1 : 1;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

struct trace_comm {
	uint64_t hash;
	uint32_t nranks;
	uint64_t *seq;		     /* ops so far, per rank: the markers */
	struct matrix_rank_loc *loc; /* per rank: the host of its pid */
};

/* Host index of pid: its place among the pids seen so far. */
static uint32_t
trace_host(uint64_t *pids, size_t *npids, uint64_t pid)
{
	size_t i;

	for (i = 0; i < *npids; i++)
		if (pids[i] == pid)
			return (uint32_t)i;
	pids[*npids] = pid;
	return (uint32_t)(*npids)++;
}

static struct trace_comm *
trace_comm_find(struct trace_comm *c, size_t n, uint64_t hash)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i].hash == hash)
			return &c[i];
	return NULL;
}

/* One trace row as the summary an agent would have passed on. */
static void
trace_coll(const struct trace_row *r, uint64_t seq, struct matrix_coll *c)
{
	double gsum = (double)r->gap_mean_ns * (double)r->gap_n / 1e3;

	memset(c, 0, sizeof(*c));
	c->comm = r->comm;
	c->rank = r->rank;
	c->nops = (uint32_t)(r->ops > UINT32_MAX ? UINT32_MAX : r->ops);
	c->seq_enter = c->seq_done = seq;
	c->kernel.count = r->kernel_n;
	c->kernel.sum = (double)r->kernel_mean_ns * (double)r->kernel_n / 1e3;
	c->kernel.p50 = c->kernel.p90 = c->kernel.p99 =
		(double)r->kernel_mean_ns / 1e3;
	c->gap.count = r->gap_n;
	c->gap.sum = gsum;
	c->gap.p50 = r->gap_p50_ns / 1e3;
	c->gap.p90 = r->gap_p90_ns / 1e3;
	c->gap.p99 = r->gap_p99_ns / 1e3;
	c->gap.max = (double)r->gap_max_ns / 1e3;
	/*
	 * The master caps each gap above p99 at p99 from MATRIX_WSUM_MIN gaps
	 * on.  The plugin prints that capped mean; older traces give only
	 * the largest gap, so that one alone is capped.
	 */
	if (r->gap_n >= MATRIX_WSUM_MIN && r->has_capped)
		c->gap.wsum =
			fmax(r->gap_capped_ns * (double)r->gap_n / 1e3, 1e-6);
	else if (r->gap_n >= MATRIX_WSUM_MIN &&
		 (double)r->gap_max_ns > r->gap_p99_ns)
		c->gap.wsum =
			gsum - ((double)r->gap_max_ns - r->gap_p99_ns) / 1e3;
}

int
trace_replay(const struct trace *t, const struct matrix_params *p,
	     void (*cb)(void *arg, uint64_t interval,
			const struct matrix_event *e),
	     void *arg)
{
	struct trace_row *rows = NULL;
	struct trace_comm *comms = NULL;
	struct matrix_coll *coll = NULL;
	struct matrix *m = NULL;
	uint64_t *pids = NULL;
	size_t ncomms = 0, npids = 0, i, j, k;
	int rc = -1;

	if (t->nrows == 0)
		return 0;
	rows = malloc(t->nrows * sizeof(*rows));
	comms = calloc(t->nrows, sizeof(*comms));
	coll = malloc(t->nrows * sizeof(*coll));
	pids = malloc(t->nrows * sizeof(*pids)); /* a pid per row at most */
	m = matrix_new(p);
	if (rows == NULL || comms == NULL || coll == NULL || pids == NULL ||
	    m == NULL)
		goto out;
	memcpy(rows, t->rows, t->nrows * sizeof(*rows));
	qsort(rows, t->nrows, sizeof(*rows), trace_cmp);
	for (i = 0; i < t->nrows; i++) {
		struct trace_comm *c =
			trace_comm_find(comms, ncomms, rows[i].comm);

		if (c == NULL) {
			c = &comms[ncomms++];
			c->hash = rows[i].comm;
		}
		if (rows[i].rank + 1 > c->nranks)
			c->nranks = rows[i].rank + 1;
	}
	for (i = 0; i < ncomms; i++) {
		uint32_t r;

		comms[i].seq = calloc(comms[i].nranks, sizeof(uint64_t));
		comms[i].loc = calloc(comms[i].nranks, sizeof(*comms[i].loc));
		if (comms[i].seq == NULL || comms[i].loc == NULL)
			goto out;
		for (r = 0; r < comms[i].nranks; r++)
			comms[i].loc[r].host = UINT32_MAX;
	}
	for (i = 0; i < t->nrows; i++) {
		struct trace_comm *c =
			trace_comm_find(comms, ncomms, rows[i].comm);

		if (c->loc[rows[i].rank].host == UINT32_MAX)
			c->loc[rows[i].rank].host =
				trace_host(pids, &npids, rows[i].pid);
	}
	for (i = 0; i < ncomms; i++) {
		uint32_t r;

		for (r = 0; r < comms[i].nranks; r++)
			if (comms[i].loc[r].host == UINT32_MAX)
				comms[i].loc[r].host = (uint32_t)npids++;
		if (matrix_comm_add(m, comms[i].hash, comms[i].nranks,
				    comms[i].loc) != 0)
			goto out;
	}
	for (i = 0; i < t->nrows; i = j) {
		struct matrix_input in;
		const struct matrix_event *ev;
		size_t nev, n = 0;

		for (j = i;
		     j < t->nrows && rows[j].interval == rows[i].interval;
		     j++) {
			struct trace_comm *c =
				trace_comm_find(comms, ncomms, rows[j].comm);

			c->seq[rows[j].rank] += rows[j].ops;
			trace_coll(&rows[j], c->seq[rows[j].rank], &coll[n++]);
		}
		memset(&in, 0, sizeof(in));
		in.interval = rows[i].interval;
		in.coll = coll;
		in.ncoll = n;
		if (matrix_analyze(m, &in, &ev, &nev) < 0)
			goto out;
		for (k = 0; k < nev && cb != NULL; k++)
			cb(arg, rows[i].interval, &ev[k]);
	}
	rc = 0;
out:
	for (i = 0; i < ncomms; i++) {
		free(comms[i].seq);
		free(comms[i].loc);
	}
	free(comms);
	free(pids);
	free(rows);
	free(coll);
	if (m != NULL)
		matrix_free(m);
	return rc;
}

void
trace_free(struct trace *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
