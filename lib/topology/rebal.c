/*
 * rebal.c: moving placed QPs: after a cable or port changes health, and
 * the dynamic rebalancing pass, with the change reports both return.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"

struct rebal_changes {
	struct alloc_change *v;
	size_t n, cap;
};

static int
rebal_change_push(const struct alloc *a, struct rebal_changes *c,
		  const struct alloc_qp *q, const struct path *old_path,
		  uint16_t old_sport, uint8_t old_side, uint8_t kind)
{
	struct alloc_change *ch;

	if (c->n == c->cap) {
		size_t ncap = c->cap == 0 ? 64 : c->cap * 2;
		struct alloc_change *nv = realloc(c->v, ncap * sizeof(*nv));

		if (nv == NULL)
			return -1;
		c->v = nv;
		c->cap = ncap;
	}
	ch = &c->v[c->n++];
	memset(ch, 0, sizeof(*ch));
	ch->qp_id = q->id;
	ch->job = a->rq[q->req].job;
	snprintf(ch->req_id, sizeof(ch->req_id), "%s", a->rq[q->req].id);
	ch->index = q->index;
	ch->old_sport = old_sport;
	ch->new_sport = q->sport;
	ch->kind = kind;
	ch->old_side = old_side;
	ch->new_side = q->side;
	ch->fallback = q->fallback;
	ch->old_path = *old_path;
	ch->new_path = q->path;
	return 0;
}

static const struct alloc *rebal_sort_ctx;

static int
rebal_cmp_id(const void *x, const void *y)
{
	uint64_t a = rebal_sort_ctx->qp[*(const uint32_t *)x].id;
	uint64_t b = rebal_sort_ctx->qp[*(const uint32_t *)y].id;

	return a < b ? -1 : a > b;
}

static bool
rebal_selected(const struct alloc *a, const struct alloc_qp *q,
	       enum rebal_sel sel)
{
	if (!q->live)
		return false;
	switch (sel) {
	case REBAL_SEL_UNHEALTHY:
		return !q->stranded && !path_healthy(a->t, &q->path);
	case REBAL_SEL_RECOVER:
		return q->stranded || q->fallback ||
		       !path_healthy(a->t, &q->path);
	case REBAL_SEL_STALE:
		return !q->stranded && !place_valid(a, q);
	}
	return false;
}

/* A QP's placement before a move, to put back or to report. */
struct rebal_was {
	struct path path;
	uint16_t sport;
	uint8_t side;
	bool stranded, fallback, valid;
};

/*
 * Places q (taken off the loads, unless stranded) again. A fallback QP
 * whose own side is still down keeps its old placement while that is
 * still valid: moving it between paths of the other side gains nothing.
 * Returns the kind of change, or -1 when there is none to report.
 */
static int
rebal_place(struct alloc *a, struct alloc_qp *q, const struct rebal_was *w)
{
	if (place_home(a, q, NULL, 0) == 0) {
		if (q->fallback && w->fallback && w->valid &&
		    !path_equal(&q->path, &w->path)) {
			place_load(a, q, -1);
			q->path = w->path;
			q->sport = w->sport;
			q->side = w->side;
			place_load(a, q, 1);
		}
		if (w->stranded) {
			q->stranded = false;
			a->stranded--;
		}
		a->fallback += (size_t)q->fallback - (size_t)w->fallback;
		if (!w->stranded && q->sport == w->sport &&
		    q->side == w->side && path_equal(&q->path, &w->path))
			return -1;
		return ALLOC_MOVED;
	}
	/* stranded: keeps its old port (and side) for now, without load */
	q->side = w->side;
	if (w->stranded)
		return -1; /* no news */
	q->stranded = true;
	a->stranded++;
	if (q->fallback) {
		q->fallback = false;
		a->fallback--;
	}
	return ALLOC_STRANDED;
}

/*
 * Moves every QP selected by sel: takes them all off the loads, then
 * places them again one by one in QP id order. Returns 0 or -ENOMEM.
 */
int
rebal_move(struct alloc *a, enum rebal_sel sel, struct alloc_change **changes,
	   size_t *nchanges)
{
	struct rebal_changes ch = {0};
	struct rebal_was *was = NULL;
	uint32_t *sel_v = NULL, n = 0, i;
	bool push_failed = false;
	int rc = -ENOMEM;

	*changes = NULL;
	*nchanges = 0;
	for (i = 0; i < a->nqp; i++)
		n += rebal_selected(a, &a->qp[i], sel);
	if (n == 0)
		return 0;
	sel_v = malloc((size_t)n * sizeof(*sel_v));
	was = malloc((size_t)n * sizeof(*was));
	if (sel_v == NULL || was == NULL)
		goto out;
	n = 0;
	for (i = 0; i < a->nqp; i++)
		if (rebal_selected(a, &a->qp[i], sel))
			sel_v[n++] = i;
	rebal_sort_ctx = a;
	qsort(sel_v, n, sizeof(*sel_v), rebal_cmp_id);
	rebal_sort_ctx = NULL;
	for (i = 0; i < n; i++) {
		const struct alloc_qp *q = &a->qp[sel_v[i]];

		was[i] = (struct rebal_was){
			q->path,     q->sport,
			q->side,     q->stranded,
			q->fallback, !q->stranded && place_valid(a, q)};
		if (!q->stranded)
			place_load(a, q, -1);
	}
	for (i = 0; i < n; i++) {
		struct alloc_qp *q = &a->qp[sel_v[i]];
		int kind = rebal_place(a, q, &was[i]);

		if (kind < 0)
			continue;
		/* keep placing the rest even when the report runs out of
		 * memory: the loads must stay consistent */
		if (rebal_change_push(a, &ch, q, &was[i].path, was[i].sport,
				      was[i].side, (uint8_t)kind) < 0)
			push_failed = true;
	}
	if (!push_failed) {
		*changes = ch.v;
		*nchanges = ch.n;
		ch.v = NULL;
		rc = 0;
	}
out:
	free(ch.v);
	free(sel_v);
	free(was);
	return rc;
}

int
rebal_run(struct alloc *a, size_t max_moves, struct alloc_change **changes,
	  size_t *nchanges)
{
	struct rebal_changes ch = {0};
	uint32_t *sel_v = NULL, *pos = NULL, n = 0, i, pass;
	size_t moves = 0;
	int rc = -ENOMEM;

	*changes = NULL;
	*nchanges = 0;
	sel_v = malloc(((size_t)a->nqp + 1) * sizeof(*sel_v));
	pos = malloc(((size_t)a->nqp + 1) * sizeof(*pos));
	if (sel_v == NULL || pos == NULL)
		goto out;
	for (i = 0; i < a->nqp; i++) {
		pos[i] = TOPO_NONE;
		if (a->qp[i].live && !a->qp[i].stranded &&
		    a->qp[i].path.up != TOPO_NONE)
			sel_v[n++] = i;
	}
	rebal_sort_ctx = a;
	qsort(sel_v, n, sizeof(*sel_v), rebal_cmp_id);
	rebal_sort_ctx = NULL;
	for (pass = 0; pass < ALLOC_REBALANCE_PASSES; pass++) {
		size_t before = moves;

		for (i = 0; i < n && moves < max_moves; i++) {
			struct alloc_qp *q = &a->qp[sel_v[i]];
			struct path old = q->path;
			uint16_t old_sport = q->sport;
			uint64_t w = place_weight(&q->rq);
			double cur;

			place_load(a, q, -1);
			cur = place_worst(a, &old, w);
			if (place_qp(a, q, NULL, 0) < 0) {
				q->path =
					old; /* cannot happen: old is healthy */
				q->sport = old_sport;
				place_load(a, q, 1);
				continue;
			}
			if (path_equal(&q->path, &old)) {
				/* the port stays the holder's: a new one for
				 * the same path would be a silent change */
				q->sport = old_sport;
				continue;
			}
			/* move only on a strict gain, else put it back */
			place_load(a, q, -1);
			if (!(place_worst(a, &q->path, w) < cur)) {
				q->path = old;
				q->sport = old_sport;
				place_load(a, q, 1);
				continue;
			}
			place_load(a, q, 1);
			moves++;
			if (pos[sel_v[i]] != TOPO_NONE) {
				struct alloc_change *c = &ch.v[pos[sel_v[i]]];

				c->new_sport = q->sport;
				c->new_path = q->path;
				continue;
			}
			pos[sel_v[i]] = (uint32_t)ch.n;
			if (rebal_change_push(a, &ch, q, &old, old_sport,
					      q->side, ALLOC_MOVED) < 0)
				goto out;
		}
		if (moves == before)
			break;
	}
	*changes = ch.v;
	*nchanges = ch.n;
	ch.v = NULL;
	rc = 0;
out:
	free(ch.v);
	free(sel_v);
	free(pos);
	return rc;
}
