/*
 * bench-detect-quality: run the C4D engine over a fixed-seed suite of
 * labeled scenarios and score it against the ground truth.
 *
 * Suite: 9 episode types (slow connection, slow transmit NIC, slow receive
 * NIC, slow GPU, intermittent, communication hang, non-communication hang,
 * node loss, two faults at once) x slowdowns 1.1/1.2/1.5/3 x 3 layouts x 6
 * sizes (64..1,024 ranks) = 648 faulty episodes, plus 108 fault-free ones.
 * Each episode runs EPISODE_INTERVALS intervals; faults start between
 * FAULT_START_MIN and FAULT_START_MAX.
 *
 * Scoring. An opened event is true when it names an injected fault: the
 * fault is active since at or before the event's opening interval, the
 * event's kind is of the fault's family (communication slow, rank slow,
 * hang, node loss) and one of its suspects names the culprit (the device,
 * NIC port, path or host). Every other opened event is false. Recall
 * counts faults with at least one true event; top-1 localization counts
 * detected faults whose first true event has exactly the right kind and
 * names the culprit as its first suspect; latency is opening interval -
 * fault start + 1. Only 'metric NAME VALUE UNIT' lines go to stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matrix.h"
#include "scen.h"

#define EPISODE_INTERVALS 20
#define FAULT_START_MIN	  6
#define FAULT_START_MAX	  10
#define SUITE_SEED	  0xc4d2025ull
#define NREPS		  6
#define NFREE_PER_LAYOUT  36
#define MAX_LAT		  64

enum ep_type {
	T_CONN = 0,
	T_TX,
	T_RX,
	T_GPU,
	T_INTERMITTENT,
	T_COMM_HANG,
	T_NONCOMM_HANG,
	T_NODE_LOST,
	T_TWO,
	T_COUNT
};

static const char *const type_names[T_COUNT] = {
	"slow_conn", "slow_tx",	     "slow_rx",	  "slow_gpu",	"intermittent",
	"comm_hang", "noncomm_hang", "node_lost", "two_faults",
};

static const unsigned type_fault[T_COUNT] = {
	SCEN_F_SLOW_CONN,    SCEN_F_SLOW_TX,	  SCEN_F_SLOW_RX,
	SCEN_F_SLOW_GPU,     SCEN_F_INTERMITTENT, SCEN_F_COMM_HANG,
	SCEN_F_NONCOMM_HANG, SCEN_F_NODE_LOST,	  SCEN_F_NONE,
};

static const double slowdowns[] = {1.1, 1.2, 1.5, 3.0};
#define NSLOW 4
static const unsigned layouts[] = {SCEN_L_TP_DP, SCEN_L_TP_PP_DP,
				   SCEN_L_DP_FLAT};
#define NLAYOUT 3
static const uint32_t sizes[NREPS] = {64, 128, 256, 512, 1024, 192};

struct tally {
	unsigned faults, detected, top1, events, true_events;
	unsigned lat_hist[MAX_LAT + 1], nlat;
};

struct score {
	struct tally type[T_COUNT];
	struct tally slow[NSLOW];
	struct tally all;
	unsigned hang_faults, hang_in_time;
	unsigned hang_named_plus1; /* connection named where there is one */
	unsigned free_isolations;
	unsigned lat_hist[MAX_LAT + 1];
	unsigned nlat;
	unsigned free_events;
	double free_rank_intervals;
	unsigned duplicates;
	unsigned ambiguous; /* true events flagged ambiguous */
};

struct fstate {
	int detected;
	int top1;
	unsigned lat;
	unsigned hang_lat; /* first naming the connection, where there is one */
};

/* Does e name f, and for a stuck connection the connection itself? */
static int
names_hang(const struct matrix_event *e, uint64_t iv,
	   const struct scen_fault *f)
{
	unsigned i;

	if (!score_matches(e, iv, f))
		return 0;
	if (f->base != SCEN_F_COMM_HANG)
		return 1;
	for (i = 0; i < e->nsuspects; i++)
		if (e->suspects[i].role == MATRIX_ROLE_LINK &&
		    score_names(&e->suspects[i], f))
			return 1;
	return 0;
}

static int
is_isolation(const struct matrix_event *e)
{
	return e->action == MATRIX_ACT_ISOLATE_HOST ||
	       e->action == MATRIX_ACT_ISOLATE_NIC;
}

/*
 * Run one episode with nf faults already injected into s; score into sc.
 * type < 0: fault free. Returns 0 or -1.
 */
static int
episode(struct scen *s, struct matrix *m, const struct scen_fault *f,
	unsigned nf, int type, int slow_idx, uint32_t nranks, struct score *sc)
{
	struct fstate fs[SCEN_MAX_FAULTS];
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k;
	unsigned i, nevents = 0, ntrue = 0;
	uint32_t iv;

	memset(fs, 0, sizeof(fs));
	for (iv = 0; iv < EPISODE_INTERVALS; iv++) {
		if (scen_interval(s, iv, &in) < 0 ||
		    matrix_analyze(m, &in, &ev, &nev) < 0)
			return -1;
		for (k = 0; k < nev; k++) {
			int hit = 0;

			for (i = 0; i < nf && ev[k].state != MATRIX_ST_RESOLVED;
			     i++)
				if (fs[i].hang_lat == 0 &&
				    names_hang(&ev[k], iv, &f[i]))
					fs[i].hang_lat = iv - f[i].start + 1;
			if (ev[k].state != MATRIX_ST_OPEN)
				continue;
			nevents++;
			if (type < 0)
				sc->free_isolations +=
					(unsigned)is_isolation(&ev[k]);
			for (i = 0; i < nf; i++) {
				if (!score_matches(&ev[k], iv, &f[i]))
					continue;
				if (hit)
					continue;
				hit = 1;
				if (fs[i].detected) {
					sc->duplicates++;
					if (getenv("C4_BENCH_VERBOSE"))
						fprintf(stderr,
							"duplicate: %s x%.2f "
							"n=%u by %s iv=%u\n",
							scen_fault_name(
								f[i].kind),
							f[i].slowdown, nranks,
							matrix_kind_name(
								ev[k].kind),
							iv);
					continue;
				}
				fs[i].detected = 1;
				fs[i].top1 = score_top1(&ev[k], &f[i]);
				if (!fs[i].top1 && getenv("C4_BENCH_VERBOSE"))
					fprintf(stderr,
						"not top-1: %s base %s named "
						"by "
						"%s (suspect 0 host %u gpu "
						"%u)\n",
						scen_fault_name(f[i].kind),
						scen_fault_name(f[i].base),
						matrix_kind_name(ev[k].kind),
						ev[k].suspects[0].host,
						ev[k].suspects[0].gpu);
				fs[i].lat = iv - f[i].start + 1;
			}
			ntrue += (unsigned)hit;
			sc->ambiguous += (unsigned)(hit && ev[k].ambiguous);
			if (!hit && getenv("C4_BENCH_VERBOSE"))
				fprintf(stderr,
					"false event: %s %s n=%u type=%d "
					"iv=%u first=%u host %u gpu %u "
					"slow %.3f z %.1f cells %u tr %u\n",
					matrix_kind_name(ev[k].kind),
					ev[k].ambiguous ? "(ambiguous)" : "",
					nranks, type, iv,
					(unsigned)ev[k].first_interval,
					ev[k].suspects[0].host,
					ev[k].suspects[0].gpu, ev[k].slowdown,
					ev[k].score, ev[k].ncells_total,
					ev[k].suspects[0].transport);
		}
	}
	if (type < 0) {
		sc->free_events += nevents;
		sc->free_rank_intervals += (double)nranks * EPISODE_INTERVALS;
		sc->all.events += nevents;
		return 0;
	}
	sc->type[type].events += nevents;
	sc->type[type].true_events += ntrue;
	sc->all.events += nevents;
	sc->all.true_events += ntrue;
	for (i = 0; i < nf; i++) {
		int hang = f[i].base == SCEN_F_COMM_HANG ||
			   f[i].base == SCEN_F_NONCOMM_HANG ||
			   f[i].base == SCEN_F_NODE_LOST;

		sc->type[type].faults++;
		sc->all.faults++;
		if (!hang) {
			sc->slow[slow_idx].faults++;
			sc->slow[slow_idx].detected += (unsigned)fs[i].detected;
			sc->slow[slow_idx].top1 += (unsigned)fs[i].top1;
		} else {
			sc->hang_faults++;
			if (fs[i].detected &&
			    fs[i].lat <= MATRIX_DEF_HANG_TIMEOUT + 1)
				sc->hang_in_time++;
			if (fs[i].hang_lat > 0 &&
			    fs[i].hang_lat <= MATRIX_DEF_HANG_TIMEOUT + 1)
				sc->hang_named_plus1++;
		}
		if (!fs[i].detected) {
			if (getenv("C4_BENCH_VERBOSE"))
				fprintf(stderr,
					"missed: %s base %s x%.2f n=%u "
					"host %u gpu %u\n",
					scen_fault_name(f[i].kind),
					scen_fault_name(f[i].base),
					f[i].slowdown, nranks, f[i].host,
					f[i].gpu);
			continue;
		}
		sc->type[type].detected++;
		sc->type[type].top1 += (unsigned)fs[i].top1;
		sc->all.detected++;
		sc->all.top1 += (unsigned)fs[i].top1;
		sc->lat_hist[fs[i].lat > MAX_LAT ? MAX_LAT : fs[i].lat]++;
		sc->nlat++;
		sc->type[type]
			.lat_hist[fs[i].lat > MAX_LAT ? MAX_LAT : fs[i].lat]++;
		sc->type[type].nlat++;
	}
	return 0;
}

static int
faults_overlap(const struct scen_fault *a, const struct scen_fault *b)
{
	return a->host == b->host || a->host == b->peer_host ||
	       a->peer_host == b->host || a->peer_host == b->peer_host;
}

/*
 * Build the job of one episode with its faults. Two-fault episodes draw
 * two different slow kinds and redraw until their hosts are disjoint.
 */
static struct scen *
build(struct scen_params *sp, unsigned t, double slow, uint32_t start,
      struct scen_fault *f, unsigned *nf, uint64_t seed)
{
	struct scen *s;
	unsigned k1 = SCEN_F_SLOW_CONN + (unsigned)(seed % 4);
	unsigned k2 = SCEN_F_SLOW_CONN +
		      (unsigned)((seed % 4 + 1 + (seed / 4) % 3) % 4);

	for (;;) {
		s = scen_new(sp);
		if (s == NULL)
			return NULL;
		if (t != T_TWO) {
			*nf = 1;
			if (scen_add_fault(s, type_fault[t], slow, start,
					   &f[0]) < 0)
				goto fail;
			return s;
		}
		*nf = 2;
		if (scen_add_fault(s, k1, slow, start, &f[0]) < 0 ||
		    scen_add_fault(s, k2, slow, start, &f[1]) < 0)
			goto fail;
		if (!faults_overlap(&f[0], &f[1]))
			return s;
		scen_free(s);
		sp->seed++;
	}
fail:
	scen_free(s);
	return NULL;
}

static void
metric(const char *name, const char *sub, double v, const char *unit)
{
	if (sub != NULL)
		printf("metric %s_%s %.4f %s\n", name, sub, v, unit);
	else
		printf("metric %s %.4f %s\n", name, v, unit);
}

static double
ratio(unsigned a, unsigned b)
{
	return b ? (double)a / b : 1.0;
}

static unsigned
lat_quantile(const unsigned *hist, unsigned n, double q)
{
	unsigned need = (unsigned)ceil(q * n), acc = 0, i;

	for (i = 0; i <= MAX_LAT; i++) {
		acc += hist[i];
		if (acc >= need && need > 0)
			return i;
	}
	return 0;
}

/*
 * Latency of the steady faults (slow connection, NIC sides, GPU, two at
 * once): hangs and lost nodes wait for their timeout by design and an
 * intermittent fault for its flaps.
 */
static void
steady_latency(const struct score *sc)
{
	static const unsigned steady[] = {T_CONN, T_TX, T_RX, T_GPU, T_TWO};
	unsigned hist[MAX_LAT + 1], n = 0, i, j;

	memset(hist, 0, sizeof(hist));
	for (i = 0; i < sizeof(steady) / sizeof(steady[0]); i++) {
		const struct tally *x = &sc->type[steady[i]];

		for (j = 0; j <= MAX_LAT; j++)
			hist[j] += x->lat_hist[j];
		n += x->nlat;
	}
	metric("latency_median_steady", NULL, lat_quantile(hist, n, 0.5),
	       "intervals");
	metric("latency_p95_steady", NULL, lat_quantile(hist, n, 0.95),
	       "intervals");
}

static void
report(const struct score *sc, unsigned nep, double secs)
{
	char sub[64];
	unsigned t, i;
	double p, r;

	for (t = 0; t < T_COUNT; t++) {
		const struct tally *x = &sc->type[t];

		p = ratio(x->true_events, x->events);
		r = ratio(x->detected, x->faults);
		metric("precision", type_names[t], p, "ratio");
		metric("recall", type_names[t], r, "ratio");
		metric("f1", type_names[t], p + r > 0 ? 2 * p * r / (p + r) : 0,
		       "ratio");
		metric("localization_top1", type_names[t],
		       ratio(x->top1, x->detected), "ratio");
		metric("latency_median", type_names[t],
		       lat_quantile(x->lat_hist, x->nlat, 0.5), "intervals");
	}
	p = ratio(sc->all.true_events, sc->all.events);
	r = ratio(sc->all.detected, sc->all.faults);
	metric("precision_overall", NULL, p, "ratio");
	metric("recall_overall", NULL, r, "ratio");
	metric("f1_overall", NULL, p + r > 0 ? 2 * p * r / (p + r) : 0,
	       "ratio");
	metric("localization_top1_overall", NULL,
	       ratio(sc->all.top1, sc->all.detected), "ratio");
	for (i = 0; i < NSLOW; i++) {
		snprintf(sub, sizeof(sub), "%.1fx", slowdowns[i]);
		metric("recall_slowdown", sub,
		       ratio(sc->slow[i].detected, sc->slow[i].faults),
		       "ratio");
	}
	metric("latency_median", NULL,
	       lat_quantile(sc->lat_hist, sc->nlat, 0.5), "intervals");
	steady_latency(sc);
	metric("latency_p95", NULL, lat_quantile(sc->lat_hist, sc->nlat, 0.95),
	       "intervals");
	metric("hang_named_within_timeout", NULL,
	       ratio(sc->hang_in_time, sc->hang_faults), "ratio");
	metric("false_events_fault_free", NULL, sc->free_events, "events");
	metric("false_events_per_10k_rank_intervals", NULL,
	       sc->free_rank_intervals > 0
		       ? 1e4 * sc->free_events / sc->free_rank_intervals
		       : 0,
	       "events");
	metric("duplicate_true_events", NULL, sc->duplicates, "events");
	metric("faults", NULL, sc->all.faults, "count");
	metric("episodes", NULL, nep, "count");
	metric("suite_wall_time", NULL, secs, "s");
}

/*
 * The ring-only layout, reported apart from the headline: every NIC has
 * one network link each way, so a slow transmit side, path or receive
 * side cannot be told apart and the engine says so (ambiguous events).
 */
static int
ring_only(uint64_t *seed)
{
	static const unsigned kinds[] = {T_CONN, T_TX, T_RX};
	static const uint32_t rsizes[] = {64, 256, 1024};
	static struct score rs;
	struct scen_params sp;
	struct scen_fault f[SCEN_MAX_FAULTS];
	unsigned t, z, rep, nf;

	for (t = 0; t < 3; t++)
		for (z = 0; z < 3; z++)
			for (rep = 0; rep < 2; rep++) {
				struct scen *s;
				struct matrix *m;

				scen_params_default(&sp);
				sp.nranks = rsizes[z];
				sp.layout = SCEN_L_DP_RING;
				sp.seed = ++*seed * 0x9e3779b97f4a7c15ull;
				s = build(&sp, kinds[t], 1.5, FAULT_START_MIN,
					  f, &nf, *seed);
				m = matrix_new(NULL);
				if (s == NULL || m == NULL ||
				    scen_register(s, m) < 0 ||
				    episode(s, m, f, nf, (int)kinds[t], 2,
					    sp.nranks, &rs) < 0)
					return -1;
				matrix_free(m);
				scen_free(s);
			}
	metric("ring_only_recall", NULL, ratio(rs.all.detected, rs.all.faults),
	       "ratio");
	metric("ring_only_precision", NULL,
	       ratio(rs.all.true_events, rs.all.events), "ratio");
	metric("ring_only_ambiguous_share", NULL,
	       ratio(rs.ambiguous, rs.all.true_events), "ratio");
	return 0;
}

/* ---- phenomenon families (scen.h, enum scen_family) ------------------ */

#define FAMILY_EPISODES 48 /* per family; --family-episodes N */
#define FAMILY_SEED	0xfa317ull

struct ftally {
	unsigned episodes, faults, detected, top1;
	unsigned events, true_events, false_events;
	unsigned quiet; /* no fault: episodes without a false event */
	unsigned host_eps, host_one;
	unsigned hang_faults, hang_plus1;
	unsigned isolations; /* events recommending isolation, no fault */
	double rank_intervals;
	unsigned lat_hist[MAX_LAT + 1], nlat;
};

/* What one family episode's events came to. */
struct fep {
	int detected, top1, first_host_one;
	unsigned lat, hang_lat, opened, ntrue, nfalse, isolations;
};

/*
 * Is e, opened in interval iv, right for truth t? A fault: it names it
 * (score_matches). No fault: only a job-level event, where the family
 * allows one, once the job event began.
 */
static int
family_true(const struct matrix_event *e, uint64_t iv,
	    const struct scen_truth *t)
{
	if (t->nfaults)
		return score_matches(e, iv, &t->fault);
	return t->job_event &&
	       (e->kind == MATRIX_EV_JOB_STALL ||
		e->domain == MATRIX_DOM_JOB) &&
	       iv >= t->event_start;
}

/* Score the events of interval iv of one family episode into *x. */
static void
family_events(const struct scen_truth *t, uint32_t iv,
	      const struct matrix_event *ev, size_t nev, struct fep *x)
{
	size_t k;

	for (k = 0; k < nev; k++) {
		const struct matrix_event *e = &ev[k];

		if (t->hang && x->hang_lat == 0 &&
		    e->state != MATRIX_ST_RESOLVED &&
		    names_hang(e, iv, &t->fault))
			x->hang_lat = iv - t->fault.start + 1;
		if (e->state != MATRIX_ST_OPEN)
			continue;
		x->opened++;
		if (t->nfaults == 0)
			x->isolations += (unsigned)is_isolation(e);
		if (!family_true(e, iv, t)) {
			x->nfalse++;
			if (getenv("C4_BENCH_VERBOSE"))
				fprintf(stderr,
					"family %s: false %s (%s, %s) iv=%u "
					"host %u gpu %u\n",
					scen_family_name(t->family),
					matrix_kind_name(e->kind),
					matrix_domain_name(e->domain),
					matrix_action_name(e->action), iv,
					e->nsuspects ? e->suspects[0].host : 0,
					e->nsuspects ? e->suspects[0].gpu : 0);
			continue;
		}
		x->ntrue++;
		if (x->detected)
			continue;
		x->detected = 1;
		if (t->nfaults) {
			x->top1 = score_top1(e, &t->fault);
			x->first_host_one = score_host_one(e, &t->fault);
			x->lat = iv - t->fault.start + 1;
		}
	}
}

/* Add one episode's outcome *x (truth *t) to the tally *f. */
static void
family_tally(const struct scen_truth *t, const struct fep *x, struct ftally *f)
{
	f->episodes++;
	f->events += x->opened;
	f->true_events += x->ntrue;
	f->false_events += x->nfalse;
	f->isolations += x->isolations;
	f->rank_intervals += (double)t->nranks * t->intervals;
	if (t->nfaults == 0) {
		f->quiet += x->nfalse == 0;
		return;
	}
	f->faults++;
	if (t->hang) {
		f->hang_faults++;
		f->hang_plus1 += x->hang_lat > 0 &&
				 x->hang_lat <= MATRIX_DEF_HANG_TIMEOUT + 1;
	}
	if (score_host_kind(&t->fault)) {
		f->host_eps++;
		f->host_one +=
			x->opened == 1 && x->detected && x->first_host_one;
	}
	if (!x->detected) {
		if (getenv("C4_BENCH_VERBOSE"))
			fprintf(stderr, "family %s: missed %s x%.2f n=%u\n",
				scen_family_name(t->family),
				scen_fault_name(t->fault.base),
				t->fault.slowdown, t->nranks);
		return;
	}
	f->detected++;
	f->top1 += (unsigned)x->top1;
	f->lat_hist[x->lat > MAX_LAT ? MAX_LAT : x->lat]++;
	f->nlat++;
}

/* Run episode seed of family fam through a fresh engine into *f. */
static int
family_episode(unsigned fam, uint64_t seed, struct ftally *f)
{
	struct scen_truth t;
	struct matrix_input in;
	const struct matrix_event *ev;
	struct fep x;
	struct scen *s = scen_family_new(fam, seed, 0, &t);
	struct matrix *m = matrix_new(NULL);
	size_t nev;
	uint32_t iv;
	int rc = -1;

	memset(&x, 0, sizeof(x));
	if (s == NULL || m == NULL || scen_register(s, m) < 0)
		goto out;
	for (iv = 0; iv < t.intervals; iv++) {
		if (scen_interval(s, iv, &in) < 0 ||
		    matrix_analyze(m, &in, &ev, &nev) < 0)
			goto out;
		family_events(&t, iv, ev, nev, &x);
	}
	family_tally(&t, &x, f);
	rc = 0;
out:
	matrix_free(m);
	scen_free(s);
	return rc;
}

static void
tally_add(struct ftally *a, const struct ftally *b)
{
	unsigned i;

	a->episodes += b->episodes;
	a->faults += b->faults;
	a->detected += b->detected;
	a->top1 += b->top1;
	a->events += b->events;
	a->true_events += b->true_events;
	a->false_events += b->false_events;
	a->quiet += b->quiet;
	a->host_eps += b->host_eps;
	a->host_one += b->host_one;
	a->hang_faults += b->hang_faults;
	a->hang_plus1 += b->hang_plus1;
	a->isolations += b->isolations;
	a->rank_intervals += b->rank_intervals;
	for (i = 0; i <= MAX_LAT; i++)
		a->lat_hist[i] += b->lat_hist[i];
	a->nlat += b->nlat;
}

/* Per family, then over every family; sc: the classic suite, or NULL. */
static void
family_report(const struct ftally *fam, const struct score *sc)
{
	struct ftally all, free_all;
	const char *n;
	unsigned i;

	memset(&all, 0, sizeof(all));
	memset(&free_all, 0, sizeof(free_all));
	for (i = 0; i < SCEN_FAM_COUNT; i++) {
		const struct ftally *f = &fam[i];

		n = scen_family_name(i);
		tally_add(f->faults ? &all : &free_all, f);
		metric("precision", n, ratio(f->true_events, f->events),
		       "ratio");
		/* no fault: the share of episodes left quiet */
		metric("recall", n,
		       f->faults ? ratio(f->detected, f->faults)
				 : ratio(f->quiet, f->episodes),
		       "ratio");
		metric("false_events_per_10k", n,
		       1e4 * f->false_events / f->rank_intervals, "events");
		if (f->faults == 0) /* no domain to name */
			continue;
		metric("localization_top1", n, ratio(f->top1, f->detected),
		       "ratio");
		metric("events_per_fault", n,
		       f->detected ? (double)f->true_events / f->detected : 0,
		       "events");
		metric("latency_median", n,
		       lat_quantile(f->lat_hist, f->nlat, 0.5), "intervals");
		metric("latency_p95", n,
		       lat_quantile(f->lat_hist, f->nlat, 0.95), "intervals");
	}
	metric("precision_families", NULL,
	       ratio(all.true_events + free_all.true_events,
		     all.events + free_all.events),
	       "ratio");
	metric("recall_families", NULL, ratio(all.detected, all.faults),
	       "ratio");
	metric("localization_top1_families", NULL,
	       ratio(all.top1, all.detected), "ratio");
	metric("false_events_per_10k_fault_free_families", NULL,
	       1e4 * free_all.false_events / free_all.rank_intervals, "events");
	metric("events_per_fault_families", NULL,
	       all.detected ? (double)all.true_events / all.detected : 0,
	       "events");
	metric("latency_median_families", NULL,
	       lat_quantile(all.lat_hist, all.nlat, 0.5), "intervals");
	metric("latency_p95_families", NULL,
	       lat_quantile(all.lat_hist, all.nlat, 0.95), "intervals");
	metric("host_fault_one_event", NULL, ratio(all.host_one, all.host_eps),
	       "ratio");
	metric("hang_named_within_timeout_plus_1", NULL,
	       ratio(all.hang_plus1 + (sc ? sc->hang_named_plus1 : 0),
		     all.hang_faults + (sc ? sc->hang_faults : 0)),
	       "ratio");
	metric("isolations_fault_free", NULL,
	       free_all.isolations + (sc ? sc->free_isolations : 0), "events");
	metric("family_episodes", NULL, all.episodes + free_all.episodes,
	       "count");
	if (sc == NULL)
		return;
	metric("precision_all", NULL,
	       ratio(sc->all.true_events + all.true_events +
			     free_all.true_events,
		     sc->all.events + all.events + free_all.events),
	       "ratio");
	metric("recall_all", NULL,
	       ratio(sc->all.detected + all.detected,
		     sc->all.faults + all.faults),
	       "ratio");
}

/* Every family, eps episodes each; report with the classic suite sc. */
static int
families(unsigned eps, const struct score *sc)
{
	static struct ftally fam[SCEN_FAM_COUNT];
	unsigned i, e;

	for (i = 0; i < SCEN_FAM_COUNT; i++) {
		for (e = 0; e < eps; e++)
			if (family_episode(i, FAMILY_SEED + 1000003ull * i + e,
					   &fam[i]) < 0) {
				fprintf(stderr, "family %s: setup failed\n",
					scen_family_name(i));
				return -1;
			}
		fprintf(stderr, "detect-quality: family %s done\n",
			scen_family_name(i));
	}
	family_report(fam, sc);
	return 0;
}

int
main(int argc, char **argv)
{
	static struct score sc;
	struct scen_params sp;
	struct scen_fault f[SCEN_MAX_FAULTS];
	struct timespec t0, t1;
	unsigned t, si, li, rep, nep = 0, nf;
	uint64_t seed = SUITE_SEED;
	unsigned feps = FAMILY_EPISODES;
	int classic = 1, a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--families-only") == 0)
			classic = 0;
		else if (strcmp(argv[a], "--family-episodes") == 0 &&
			 a + 1 < argc)
			feps = (unsigned)strtoul(argv[++a], NULL, 10);
		else {
			fprintf(stderr, "usage: bench-detect-quality "
					"[--families-only] "
					"[--family-episodes N]\n");
			return 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!classic) {
		if (families(feps, NULL) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		metric("suite_wall_time", NULL,
		       (double)(t1.tv_sec - t0.tv_sec) +
			       1e-9 * (t1.tv_nsec - t0.tv_nsec),
		       "s");
		return 0;
	}
	for (t = 0; t < T_COUNT; t++) {
		for (si = 0; si < NSLOW; si++) {
			for (li = 0; li < NLAYOUT; li++) {
				for (rep = 0; rep < NREPS; rep++) {
					struct scen *s;
					struct matrix *m;
					uint32_t start;

					scen_params_default(&sp);
					sp.nranks = sizes[rep];
					sp.layout = (uint8_t)layouts[li];
					sp.seed =
						++seed * 0x9e3779b97f4a7c15ull;
					start = FAULT_START_MIN +
						(unsigned)(seed %
							   (FAULT_START_MAX -
							    FAULT_START_MIN +
							    1));
					s = build(&sp, t, slowdowns[si], start,
						  f, &nf, seed);
					m = matrix_new(NULL);
					if (s == NULL || m == NULL ||
					    scen_register(s, m) < 0) {
						fprintf(stderr,
							"setup failed\n");
						return 1;
					}
					if (episode(s, m, f, nf, (int)t,
						    (int)si, sp.nranks,
						    &sc) < 0)
						return 1;
					matrix_free(m);
					scen_free(s);
					nep++;
				}
			}
			fprintf(stderr, "detect-quality: %s x%.1f done\n",
				type_names[t], slowdowns[si]);
		}
	}
	for (li = 0; li < NLAYOUT; li++) {
		for (rep = 0; rep < NFREE_PER_LAYOUT; rep++) {
			struct scen *s;
			struct matrix *m;

			scen_params_default(&sp);
			sp.nranks = sizes[rep % NREPS];
			sp.layout = (uint8_t)layouts[li];
			sp.seed = ++seed * 0x9e3779b97f4a7c15ull;
			s = scen_new(&sp);
			m = matrix_new(NULL);
			if (s == NULL || m == NULL || scen_register(s, m) < 0 ||
			    episode(s, m, NULL, 0, -1, 0, sp.nranks, &sc) < 0)
				return 1;
			matrix_free(m);
			scen_free(s);
			nep++;
		}
	}
	if (ring_only(&seed) < 0 || families(feps, &sc) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	report(&sc, nep,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       1e-9 * (t1.tv_nsec - t0.tv_nsec));
	return 0;
}
