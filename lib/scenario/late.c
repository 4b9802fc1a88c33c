/*
 * late.c: reports that arrive late. A late host's summaries of interval
 * iv are taken out of iv's input, the host is not heard from in iv, and
 * the summaries come with interval iv + 1's, as a master sees two reports
 * of one agent at once after a delay on the way.
 */
#include <stdlib.h>
#include <string.h>

#include "scen_int.h"

/* Grow *p to bytes (its content kept). 0 or -1. */
static int
late_grow(void **p, size_t bytes)
{
	void *np = realloc(*p, bytes);

	if (np == NULL)
		return -1;
	*p = np;
	return 0;
}

/* Room for one interval's summaries twice over, and the held sets. */
static int
late_alloc(struct scen *s)
{
	struct late *l = &s->late;
	size_t cb = s->nacc * sizeof(*s->out_coll);
	size_t wb = s->nacc * sizeof(*s->out_wait);
	size_t xb = s->nconns * sizeof(*s->out_conn);

	if (late_grow((void **)&s->out_coll, 2 * cb) < 0 ||
	    late_grow((void **)&s->out_wait, 2 * wb) < 0 ||
	    late_grow((void **)&s->out_conn, 2 * xb) < 0)
		return -1;
	l->now = calloc(s->nhosts, 1);
	l->coll.held = malloc(cb);
	l->coll.next = malloc(cb);
	l->wait.held = malloc(wb);
	l->wait.next = malloc(wb);
	l->conn.held = malloc(xb);
	l->conn.next = malloc(xb);
	return l->now && l->coll.held && l->coll.next && l->wait.held &&
			       l->wait.next && l->conn.held && l->conn.next
		       ? 0
		       : -1;
}

int
scen_late(struct scen *s, uint32_t host, uint32_t iv)
{
	struct late *l = &s->late;

	if (host >= s->nhosts || l->n >= SCEN_MAX_LATE)
		return -1;
	if (l->now == NULL && late_alloc(s) < 0) {
		late_free(s);
		return -1;
	}
	l->host[l->n] = host;
	l->iv[l->n++] = iv;
	return 0;
}

void
late_free(struct scen *s)
{
	struct late_buf *b[3] = {&s->late.coll, &s->late.conn, &s->late.wait};
	unsigned i;

	for (i = 0; i < 3; i++) {
		free(b[i]->held);
		free(b[i]->next);
		b[i]->held = b[i]->next = NULL;
		b[i]->nheld = 0;
	}
	free(s->late.now);
	s->late.now = NULL;
	s->late.n = 0;
}

/*
 * Out of the n entries of esz bytes at out (entry i on host host[i]), move
 * those of late hosts to b->next and close the gap; append what b held
 * from the interval before and hold b->next instead. Returns the new
 * count of out (its capacity is twice what one interval fills).
 */
static size_t
late_split(const struct late *l, struct late_buf *b, void *out, size_t esz,
	   const uint32_t *host, size_t n)
{
	char *o = out, *nx = b->next;
	size_t i, keep = 0, nnext = 0;
	void *t;

	for (i = 0; i < n; i++) {
		if (l->now[host[i]])
			memcpy(nx + esz * nnext++, o + esz * i, esz);
		else if (keep++ != i)
			memcpy(o + esz * (keep - 1), o + esz * i, esz);
	}
	memcpy(o + esz * keep, b->held, esz * b->nheld);
	keep += b->nheld;
	t = b->held;
	b->held = b->next;
	b->next = t;
	b->nheld = (uint32_t)nnext;
	return keep;
}

int
late_apply(struct scen *s, struct matrix_input *in)
{
	struct late *l = &s->late;
	size_t i, nh = 0;

	if (l->now == NULL)
		return -1;
	memset(l->now, 0, s->nhosts);
	for (i = 0; i < l->n; i++)
		if (l->iv[i] == in->interval)
			l->now[l->host[i]] = 1;
	in->ncoll = late_split(l, &l->coll, s->out_coll, sizeof(*s->out_coll),
			       s->coll_host, in->ncoll);
	in->nconn = late_split(l, &l->conn, s->out_conn, sizeof(*s->out_conn),
			       s->conn_host, in->nconn);
	in->nwait = late_split(l, &l->wait, s->out_wait, sizeof(*s->out_wait),
			       s->wait_host, in->nwait);
	for (i = 0; i < in->nhosts; i++)
		if (!l->now[s->out_hosts[i]])
			s->out_hosts[nh++] = s->out_hosts[i];
	in->nhosts = nh;
	in->coll = s->out_coll;
	in->conn = s->out_conn;
	in->wait = s->out_wait;
	return 0;
}
