/*
 * score.c: judging events against injected faults, shared by the quality
 * benchmark, the unit tests and the simulator. An event names a fault when
 * it opened while the fault was active, its kind is of the fault's family
 * and one of its suspects is the culprit (device, NIC port, path, host).
 */
#include "scen.h"

/* The event kind that names a fault of kind base exactly, or -1. */
int
score_expected_kind(unsigned base)
{
	switch (base) {
	case SCEN_F_SLOW_CONN:
		return MATRIX_EV_COMM_SLOW_LINK;
	case SCEN_F_SLOW_TX:
		return MATRIX_EV_COMM_SLOW_TX;
	case SCEN_F_SLOW_RX:
		return MATRIX_EV_COMM_SLOW_RX;
	case SCEN_F_SLOW_GPU:
		return MATRIX_EV_NONCOMM_SLOW;
	case SCEN_F_COMM_HANG:
		return MATRIX_EV_COMM_HANG;
	case SCEN_F_NONCOMM_HANG:
		return MATRIX_EV_NONCOMM_HANG;
	case SCEN_F_NODE_LOST:
		return MATRIX_EV_NODE_LOST;
	case SCEN_F_SLOW_HOST:
	case SCEN_F_SLOW_HOST_NIC:
		return MATRIX_EV_HOST_SLOW;
	}
	return -1;
}

int
score_host_kind(const struct scen_fault *f)
{
	return f->base == SCEN_F_SLOW_HOST || f->base == SCEN_F_SLOW_HOST_NIC;
}

unsigned
score_domain(const struct scen_fault *f)
{
	switch (f->base) {
	case SCEN_F_SLOW_CONN:
	case SCEN_F_COMM_HANG:
		return MATRIX_DOM_LINK;
	case SCEN_F_SLOW_TX:
	case SCEN_F_SLOW_RX:
		return MATRIX_DOM_NIC_PORT;
	case SCEN_F_SLOW_GPU:
	case SCEN_F_NONCOMM_HANG:
		return MATRIX_DOM_GPU;
	}
	return MATRIX_DOM_HOST;
}

int
score_host_one(const struct matrix_event *e, const struct scen_fault *f)
{
	if (e->kind != MATRIX_EV_HOST_SLOW && e->domain != MATRIX_DOM_HOST)
		return 0;
	if (e->nsuspects > 0)
		return e->suspects[0].host == f->host;
	return e->isolate_host == f->host;
}

/*
 * Family of an event kind: comm slow 0, rank slow 1, hang 2, node 3,
 * host 4 (a job stall, 5 and beyond, names no fault).
 */
static int
score_family(int kind)
{
	switch (kind) {
	case MATRIX_EV_COMM_SLOW_LINK:
	case MATRIX_EV_COMM_SLOW_TX:
	case MATRIX_EV_COMM_SLOW_RX:
	case MATRIX_EV_COMM_SLOW_AMBIG:
		return 0;
	case MATRIX_EV_NONCOMM_SLOW:
		return 1;
	case MATRIX_EV_COMM_HANG:
	case MATRIX_EV_NONCOMM_HANG:
		return 2;
	case MATRIX_EV_NODE_LOST:
		return 3;
	case MATRIX_EV_HOST_SLOW:
		return 4;
	}
	return -1;
}

static int
score_dev_is(uint32_t host, uint16_t gpu, uint32_t h2, uint16_t g2)
{
	return host == h2 && gpu == g2;
}

/* Does suspect s name the culprit of fault f? */
int
score_names(const struct matrix_suspect *s, const struct scen_fault *f)
{
	switch (f->base) {
	case SCEN_F_NODE_LOST:
		return s->host == f->host;
	case SCEN_F_SLOW_HOST:
	case SCEN_F_SLOW_HOST_NIC: /* the host or any of its devices */
		return s->host == f->host ||
		       (s->role == MATRIX_ROLE_LINK && s->peer_host == f->host);
	case SCEN_F_SLOW_CONN:
	case SCEN_F_COMM_HANG:
		if (s->role == MATRIX_ROLE_LINK)
			return score_dev_is(s->host, s->gpu, f->host, f->gpu) &&
			       score_dev_is(s->peer_host, s->peer_gpu,
					    f->peer_host, f->peer_gpu);
		if (s->role == MATRIX_ROLE_TX)
			return score_dev_is(s->host, s->gpu, f->host, f->gpu);
		if (s->role == MATRIX_ROLE_RX)
			return score_dev_is(s->host, s->gpu, f->peer_host,
					    f->peer_gpu);
		return 0;
	case SCEN_F_SLOW_TX:
		if (s->role == MATRIX_ROLE_LINK)
			return score_dev_is(s->host, s->gpu, f->host, f->gpu);
		return s->role == MATRIX_ROLE_TX &&
		       score_dev_is(s->host, s->gpu, f->host, f->gpu);
	case SCEN_F_SLOW_RX:
		if (s->role == MATRIX_ROLE_LINK)
			return score_dev_is(s->peer_host, s->peer_gpu, f->host,
					    f->gpu);
		return s->role == MATRIX_ROLE_RX &&
		       score_dev_is(s->host, s->gpu, f->host, f->gpu);
	default: /* slow GPU, non-communication hang: the rank */
		return s->role == MATRIX_ROLE_RANK &&
		       score_dev_is(s->host, s->gpu, f->host, f->gpu);
	}
}

/*
 * Does event e, opened in interval iv, name injected fault f: active
 * since at or before iv, a kind of the fault's family (communication
 * slow, rank slow, hang, node loss) and a suspect naming the culprit?
 */
int
score_matches(const struct matrix_event *e, uint64_t iv,
	      const struct scen_fault *f)
{
	int want = score_expected_kind(f->base);
	int fam = score_family(e->kind);
	unsigned i;

	if (iv < f->start || want < 0)
		return 0;
	/* a whole host: a slow event of any scope naming it or its devices */
	if (score_host_kind(f) ? fam != 0 && fam != 1 && fam != 4
			       : fam != score_family(want))
		return 0;
	for (i = 0; i < e->nsuspects; i++)
		if (score_names(&e->suspects[i], f))
			return 1;
	return 0;
}

/* Exactly the right kind, and the culprit as the first suspect? */
int
score_top1(const struct matrix_event *e, const struct scen_fault *f)
{
	if (score_host_kind(f))
		return e->nsuspects > 0 && score_names(&e->suspects[0], f);
	return e->kind == score_expected_kind(f->base) && e->nsuspects > 0 &&
	       score_names(&e->suspects[0], f);
}
