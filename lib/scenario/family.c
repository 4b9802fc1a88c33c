/*
 * family.c: randomised episodes of one phenomenon each (scen.h, enum
 * scen_family) with their ground truth. What a family fixes is the
 * phenomenon; the rank count (64 to 256), the layout among those the
 * phenomenon occurs in, magnitudes and timing are drawn from the seed,
 * so a detector cannot be tuned to one shape of it.
 */
#include <string.h>

#include "scen_int.h"

#define FAM_START_MIN  6 /* faults start in [6, 10]: after warm-up */
#define FAM_START_SPAN 5
#define FAM_TRIES      16 /* draws before a family gives up */

static const char *const fam_names[SCEN_FAM_COUNT] = {
	"heavy_tail",	"drift",	"backpressure",	  "host_wide",
	"host_nics",	"flapping",	"gradual",	  "job_stall",
	"late_reports", "partial_hang", "fraction_delay",
};

const char *
scen_family_name(unsigned family)
{
	return family < SCEN_FAM_COUNT ? fam_names[family] : "unknown";
}

int
scen_family_parse(const char *name)
{
	int i;

	for (i = 0; i < SCEN_FAM_COUNT; i++)
		if (strcmp(name, fam_names[i]) == 0)
			return i;
	return -1;
}

static double
fam_unif(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rng_unif(r);
}

/*
 * The layouts each family is drawn from: host-local tensor parallelism
 * with data parallelism across hosts, pipelines, one flat communicator,
 * expert all-to-all.
 */
static unsigned
fam_layout(unsigned family, struct rng *r)
{
	static const uint8_t any[] = {SCEN_L_TP_DP, SCEN_L_TP_PP_DP,
				      SCEN_L_DP_FLAT, SCEN_L_TP_EP_DP};
	static const uint8_t tp[] = {SCEN_L_TP_DP, SCEN_L_TP_PP_DP,
				     SCEN_L_TP_EP_DP};
	static const uint8_t ring[] = {SCEN_L_TP_DP, SCEN_L_TP_PP_DP,
				       SCEN_L_DP_FLAT};

	switch (family) {
	case SCEN_FAM_DRIFT: /* half of them all-to-all */
		return rng_below(r, 2) ? SCEN_L_TP_EP_DP
				       : ring[rng_below(r, 3)];
	case SCEN_FAM_HOST_WIDE:
		return tp[rng_below(r, 3)];
	case SCEN_FAM_BACKPRESSURE:
	case SCEN_FAM_HOST_NICS:
	case SCEN_FAM_PARTIAL_HANG:
		return ring[rng_below(r, 3)];
	}
	return any[rng_below(r, 4)];
}

/* 64..256 ranks: any multiple of 8, or of 64 where the layout needs it. */
static uint32_t
fam_ranks(unsigned layout, struct rng *r)
{
	if (layout == SCEN_L_TP_PP_DP || layout == SCEN_L_TP_EP_DP)
		return 64 * (1 + rng_below(r, 4));
	return 64 + 8 * rng_below(r, 25);
}

/* A slow kind of one device: connection, transmit, receive or GPU. */
static unsigned
fam_slow_kind(struct rng *r)
{
	return SCEN_F_SLOW_CONN + rng_below(r, 4);
}

/* Noise of the families, set before the job is built. */
static void
fam_noise(unsigned family, struct rng *r, struct scen_truth *t,
	  struct scen_noise *nz)
{
	if (family == SCEN_FAM_HEAVY_TAIL) {
		nz->tail_prob = fam_unif(r, 0.01, 0.05);
		nz->tail_rate = fam_unif(r, 0.002, 0.02);
		nz->tail_p50_prob = fam_unif(r, 0.0005, 0.003);
		nz->tail_alpha = fam_unif(r, 1.1, 1.8);
		nz->tail_cap = 200.0;
		nz->gap_tail_prob = fam_unif(r, 0.0005, 0.003);
	} else if (family == SCEN_FAM_DRIFT) {
		nz->nic_drift_share = fam_unif(r, 0.25, 1.0);
		nz->nic_drift_min = 0.01;
		nz->nic_drift_max = 0.03;
		nz->nic_drift_span = t->intervals - rng_below(r, 10);
	} else if (family == SCEN_FAM_FRACTION_DELAY) {
		/* tight chunk times keep the median of a mixture put */
		nz->jitter_sigma = fam_unif(r, 0.05, 0.2);
	}
}

/* Flapping: on one interval in three, or at a random duty of 25-60 %. */
static uint32_t
fam_flap_mask(struct rng *r)
{
	uint32_t mask = 1, i;
	double duty;

	if (rng_below(r, 2))
		return 0x49249249u; /* bits 0, 3, 6, ... */
	duty = fam_unif(r, 0.25, 0.6);
	for (i = 1; i < 32; i++)
		if (rng_unif(r) < duty)
			mask |= 1u << i;
	return mask;
}

/* The fault of a faulty family, drawn into *sp; 0, or -1 if none. */
static int
fam_fault(unsigned family, struct rng *r, struct scen_fault_spec *sp)
{
	static const double host_slow[] = {1.5, 3.0};
	static const double slow[] = {1.5, 2.0, 3.0};

	sp->slowdown = slow[rng_below(r, 3)];
	switch (family) {
	case SCEN_FAM_BACKPRESSURE:
		sp->kind = SCEN_F_SLOW_CONN;
		sp->want_ring = 1;
		sp->spread = fam_unif(r, 0.2, 0.6);
		return 0;
	case SCEN_FAM_HOST_WIDE:
		sp->kind = SCEN_F_SLOW_HOST;
		sp->slowdown = host_slow[rng_below(r, 2)];
		return 0;
	case SCEN_FAM_HOST_NICS:
		sp->kind = SCEN_F_SLOW_HOST_NIC;
		sp->slowdown = fam_unif(r, 1.2, 3.0);
		return 0;
	case SCEN_FAM_FLAPPING:
		sp->kind = fam_slow_kind(r);
		sp->on_mask = fam_flap_mask(r);
		return 0;
	case SCEN_FAM_GRADUAL:
		sp->kind = fam_slow_kind(r);
		sp->ramp = 4 + rng_below(r, 9);
		return 0;
	case SCEN_FAM_PARTIAL_HANG:
		sp->kind = SCEN_F_COMM_HANG;
		sp->partial = fam_unif(r, 0.1, 1.0);
		sp->moved_on = (uint8_t)rng_below(r, 2);
		return 0;
	case SCEN_FAM_FRACTION_DELAY:
		sp->kind = SCEN_F_SLOW_CONN;
		sp->share = fam_unif(r, 0.3, 0.5);
		sp->slowdown = fam_unif(r, 3.0, 8.0);
		return 0;
	}
	return -1;
}

/* Episode lengths: slow phenomena need room to unfold. */
static uint32_t
fam_intervals(unsigned family)
{
	switch (family) {
	case SCEN_FAM_DRIFT:
		return 40;
	case SCEN_FAM_FLAPPING:
	case SCEN_FAM_GRADUAL:
		return 30;
	}
	return 24;
}

/* Late reports: 1-3 hosts, each late 1-3 times, never twice in a row. */
static int
fam_late(struct scen *s, struct rng *r, struct scen_truth *t)
{
	uint32_t nh = 1 + rng_below(r, 3), i, k, n, h, iv, prev;

	for (i = 0; i < nh; i++) {
		h = rng_below(r, scen_nhosts(s));
		n = 1 + rng_below(r, 3);
		prev = 0;
		for (k = 0; k < n; k++) {
			iv = FAM_START_MIN + rng_below(r, t->intervals - 8);
			if (iv == prev + 1 || iv == prev)
				continue;
			if (scen_late(s, h, iv) < 0)
				return -1;
			prev = iv;
			t->nlate++;
		}
	}
	return 0;
}

/* The truth's domain and hang flag for an injected fault. */
static void
fam_truth_fault(struct scen_truth *t)
{
	t->nfaults = 1;
	t->domain = (uint8_t)score_domain(&t->fault);
	t->hang = t->fault.base == SCEN_F_COMM_HANG;
}

/*
 * One draw of the episode into *t from r; NULL when it does not fit (a
 * partial hang needs a connection between two ranks above 0) or without
 * memory.
 */
static struct scen *
fam_draw(unsigned family, struct rng *r, uint32_t nranks, struct scen_truth *t)
{
	struct scen_params sp;
	struct scen_fault_spec fs;
	struct scen *s;

	memset(t, 0, sizeof(*t));
	memset(&fs, 0, sizeof(fs));
	t->family = (uint8_t)family;
	t->domain = MATRIX_DOM_COUNT;
	t->intervals = fam_intervals(family);
	scen_params_default(&sp);
	sp.layout = (uint8_t)fam_layout(family, r);
	sp.nranks = nranks ? nranks : fam_ranks(sp.layout, r);
	sp.seed = rng_next(r);
	fam_noise(family, r, t, &sp.noise);
	t->layout = sp.layout;
	t->nranks = sp.nranks;
	s = scen_new(&sp);
	if (s == NULL)
		return NULL;
	fs.start = FAM_START_MIN + rng_below(r, FAM_START_SPAN);
	if (family == SCEN_FAM_JOB_STALL) {
		t->job_event = 1;
		t->event_start = fs.start;
		t->event_len = 2 + rng_below(r, 4);
		if (scen_stall(s, t->event_start, t->event_len) < 0)
			goto fail;
	} else if (family == SCEN_FAM_LATE_REPORTS) {
		if (fam_late(s, r, t) < 0)
			goto fail;
	} else if (fam_fault(family, r, &fs) == 0) {
		if (scen_add_fault_spec(s, &fs, &t->fault) < 0)
			goto fail;
		fam_truth_fault(t);
	}
	return s;
fail:
	scen_free(s);
	return NULL;
}

struct scen *
scen_family_new(unsigned family, uint64_t seed, uint32_t nranks,
		struct scen_truth *t)
{
	struct scen *s = NULL;
	struct rng r;
	unsigned tries;

	if (family >= SCEN_FAM_COUNT)
		return NULL;
	rng_seed(&r, seed * 0x9e3779b97f4a7c15ull + family + 1);
	/* a draw that does not fit the phenomenon is drawn again */
	for (tries = 0; s == NULL && tries < FAM_TRIES; tries++)
		s = fam_draw(family, &r, nranks, t);
	return s;
}
