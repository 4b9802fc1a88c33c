/*
 * link.c - cable health changes and the QP moves they cause (see link.h).
 */
#define LOG_SUBSYS "c4p-link"

#include <stdlib.h>
#include <string.h>

#include "hold.h"
#include "jobs.h"
#include "link.h"
#include "log.h"
#include "store.h"

static const struct alloc_change *link_sort_ctx;

static int
link_cmp_change(const void *x, const void *y)
{
	const struct alloc_change *a = &link_sort_ctx[*(const size_t *)x];
	const struct alloc_change *b = &link_sort_ctx[*(const size_t *)y];
	int c = strcmp(a->req_id, b->req_id);

	if (c != 0)
		return c;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	/* one QP moved twice (placed, then rebalanced): the holder applies
	 * a message's entries in order, so the later change comes last */
	return a < b ? -1 : a > b;
}

/* Queues one PathReassign for the changes ix[0..n) of one request. */
static void
link_reassign_request(struct c4p *p, const struct alloc_change *ch,
		      const size_t *ix, size_t n, const char *reason,
		      uint64_t seq)
{
	const char *key = ch[ix[0]].req_id, *slash = strchr(key, '/');
	struct c4p_sess *sess = hold_get(p->holders, key);
	C4__PathReassign *m;
	struct reply *pe;
	size_t k = 0;

	if (sess == NULL || sess->conn == NULL) {
		p->st.reassign_orphaned++;
		return;
	}
	pe = reply_new(sess, C4__MSG_TYPE__MSG_PATH_REASSIGN, 0);
	if (pe == NULL)
		return;
	m = arena_alloc(&pe->arena, sizeof(*m));
	if (m == NULL)
		goto out;
	c4__path_reassign__init(m);
	m->job_id = (char *)jobs_name(p->jobs, ch[ix[0]].job);
	m->request_id = arena_strdup(&pe->arena, slash ? slash + 1 : key);
	m->reason = arena_strdup(&pe->arena, reason);
	m->paths = arena_calloc(&pe->arena, n, sizeof(*m->paths));
	if (m->paths == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct alloc_change *c = &ch[ix[i]];
		C4__PathAssignment *pa;

		if (c->kind != ALLOC_MOVED)
			continue;
		pa = arena_alloc(&pe->arena, sizeof(*pa));
		if (pa == NULL)
			goto out;
		reply_assignment(p->topo, pa, c->index, c->new_sport,
				 p->topo->ports[c->new_path.src_port].side,
				 &c->new_path);
		reply_fallback(pa, c->fallback,
			       c->fallback ? c->new_side ^ 1 : c->new_side);
		m->paths[k++] = pa;
	}
	m->n_paths = k;
	if (k > 0) {
		pe->body = m;
		p->st.reassign_sent++;
	}
out:
	reply_submit(&p->replies, pe, seq);
}

uint64_t
link_moves(struct c4p *p, const struct alloc_change *ch, size_t n,
	   const char *reason)
{
	uint64_t seq = 0;
	size_t *ix;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		seq = store_move(p->store, &ch[i]);
		if (ch[i].kind == ALLOC_MOVED)
			p->st.reassigned_qps++;
		else
			p->st.stranded_qps++;
	}
	ix = malloc(n * sizeof(*ix));
	if (ix == NULL) {
		log_warnx("out of memory: holders of %zu moved QPs not told",
			  n);
		return seq;
	}
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	link_sort_ctx = ch;
	qsort(ix, n, sizeof(*ix), link_cmp_change);
	link_sort_ctx = NULL;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1;
		     j < n && strcmp(ch[ix[j]].req_id, ch[ix[i]].req_id) == 0;
		     j++)
			;
		link_reassign_request(p, ch, ix + i, j - i, reason, seq);
	}
	free(ix);
	return seq;
}

/*
 * A cable back up: after the stranded QPs were placed again, moves QPs
 * whose worst cable gets strictly less loaded (rebalancing), appending
 * those changes to *ch.
 */
static void
link_rebalance(struct c4p *p, struct alloc_change **ch, size_t *nch)
{
	struct alloc_change *rb = NULL;
	size_t nrb = 0;

	if (alloc_rebalance(p->alloc, C4P_REBALANCE_MOVES, &rb, &nrb) == 0 &&
	    nrb > 0) {
		struct alloc_change *all =
			realloc(*ch, (*nch + nrb) * sizeof(*all));

		if (all != NULL) {
			memcpy(all + *nch, rb, nrb * sizeof(*rb));
			*ch = all;
			*nch += nrb;
		}
	}
	free(rb);
}

int64_t
link_set_state(struct c4p *p, uint32_t link, bool up, const char *reason,
	       uint32_t *moved, uint32_t *stranded)
{
	struct alloc_change *ch = NULL;
	size_t nch = 0;
	uint64_t seq;

	*moved = *stranded = 0;
	if (alloc_link_set(p->alloc, link, up, &ch, &nch) < 0)
		return -1;
	if (up)
		link_rebalance(p, &ch, &nch);
	p->st.link_changes++;
	seq = store_link(p->store, link, up);
	log_info("%s: %zu QPs affected", reason, nch);
	if (nch > 0) {
		uint64_t s = link_moves(p, ch, nch, reason);

		if (s > seq)
			seq = s;
	}
	for (size_t i = 0; i < nch; i++) {
		if (ch[i].kind == ALLOC_MOVED)
			(*moved)++;
		else
			(*stranded)++;
	}
	free(ch);
	return (int64_t)seq;
}

int64_t
link_set_weight(struct c4p *p, uint32_t link, const char *reason,
		uint32_t *moved)
{
	struct alloc_change *ch = NULL;
	size_t nch = 0;
	uint64_t seq = 0;

	*moved = 0;
	if (alloc_link_reweigh(p->alloc, link, C4P_REBALANCE_MOVES, &ch, &nch) <
	    0)
		return -1;
	p->st.link_changes++;
	log_info("%s: %zu QPs moved", reason, nch);
	if (nch > 0)
		seq = link_moves(p, ch, nch, reason);
	*moved = (uint32_t)nch;
	free(ch);
	return (int64_t)seq;
}
