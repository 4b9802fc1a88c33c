/*
 * stall.c: stalls of the whole job, which are no fault of one host.
 *
 * A checkpoint, an evaluation or a slow data loader stops most ranks of a
 * job at the same point: nobody is inside an op, nothing is pending, and
 * every communicator stands still.  That is one event for the job
 * (MATRIX_EV_JOB_STALL, action check_job), never a hang per rank or an
 * isolation.  So is a job of which too few hosts were heard from for
 * node_timeout + stall_timeout intervals in a row: an overloaded master
 * or agent network delays every host at once, so a host cannot be told
 * lost while the others are not heard either, and a silence of a few
 * intervals followed by bunched reports is no event at all.
 */
#include <string.h>

#include "matrix_int.h"

void
stall_params_default(struct matrix_params *p)
{
	p->stall_timeout = MATRIX_DEF_STALL_TIMEOUT;
	p->stall_frac = MATRIX_DEF_STALL_FRAC;
}

int
stall_params_ok(const struct matrix_params *p)
{
	return p->stall_timeout >= 1 && p->stall_frac > 0 && p->stall_frac <= 1;
}

/* The one job-stall candidate: basis, intervals, share of the job. */
static int
stall_observe(struct matrix *m, unsigned basis, uint32_t intervals,
	      double share, uint32_t devs, uint32_t hosts)
{
	struct matrix_event e;

	memset(&e, 0, sizeof(e));
	e.kind = MATRIX_EV_JOB_STALL;
	e.slowdown = 1.0;
	e.score = intervals;
	e.confidence = share < 0.99 ? share : 0.99;
	e.action = MATRIX_ACT_CHECK_JOB;
	e.evidence.nmembers = devs;
	e.evidence.hosts_blamed = hosts;
	hang_evidence(&e, MATRIX_DOM_JOB, basis, intervals);
	return persist_observe(m, persist_key(MATRIX_EV_JOB_STALL, 0, 0), &e,
			       PERSIST_IMMEDIATE, NULL);
}

/*
 * Share of the expected hosts that went unheard, for the silent-job
 * candidate (hang.c counts the silent intervals in m->silent).
 */
static int
stall_silent(struct matrix *m)
{
	uint32_t h, expect = 0, quiet = 0;

	for (h = 0; h < m->nhosts; h++) {
		if (m->hosts[h].members == 0)
			continue;
		expect++;
		quiet += !m->hosts[h].heard;
	}
	if (expect == 0)
		return 0;
	return stall_observe(m, MATRIX_BASIS_HEARTBEAT, m->silent,
			     (double)quiet / expect, 0, quiet);
}

int
stall_detect(struct matrix *m, int hang)
{
	uint32_t d, expect = 0, still = 0, hosts = 0, age = UINT32_MAX;
	uint64_t now = m->iv + 1;

	if (m->silent >= m->p.node_timeout + m->p.stall_timeout)
		return stall_silent(m);
	if (hang)
		return 0;
	for (d = 0; d < m->ndevs; d++) {
		const struct dev *x = &m->devs[d];
		struct host *h = &m->hosts[x->hidx];

		if (h->members == 0)
			continue;
		expect++;
		if (x->hd_iv != now || x->mv_iv == now)
			continue;
		still++;
		if (x->still_min < age)
			age = x->still_min;
		if (h->st_iv != now) {
			h->st_iv = now;
			hosts++;
		}
	}
	if (still == 0 || still < m->p.stall_frac * expect)
		return 0;
	return stall_observe(m, MATRIX_BASIS_PROGRESS, age,
			     (double)still / expect, still, hosts);
}
