/*
 * emit.c: one interval's summaries: per-member accumulators over the
 * training steps and the statistics an agent would report.
 */
#include <math.h>
#include <string.h>

#include "scen_int.h"

static void
emit_acc_reset(struct sacc *a)
{
	uint64_t e = a->enter, d = a->done;
	uint8_t b = a->blocked;

	memset(a, 0, sizeof(*a));
	a->enter = e;
	a->done = d;
	a->blocked = b;
	a->kmin = a->gmin = INFINITY;
}

/* Account one collective of a member: kernel, gap, waits. */
static void
emit_acc_add(struct sacc *a, double kernel, double gap, double recv,
	     double peer)
{
	a->n++;
	a->ksum += kernel;
	a->kmin = fmin(a->kmin, kernel);
	a->kmax = fmax(a->kmax, kernel);
	a->klog += log(kernel);
	a->klog2 += log(kernel) * log(kernel);
	a->gsum += gap;
	a->gmin = fmin(a->gmin, gap);
	a->gmax = fmax(a->gmax, gap);
	a->glog += log(gap);
	a->glog2 += log(gap) * log(gap);
	a->recv += recv;
	a->peer += peer;
}

/*
 * The factor a whole-host compute fault puts on c's collectives: the
 * reductions run on the slow GPUs, so a communicator inside the host
 * (NVLink only) runs at their speed.
 */
static double
emit_kernel_slow(const struct scen *s, const struct scomm *c, uint32_t iv)
{
	uint32_t i;
	double f = 1.0;

	if (c->net)
		return 1.0;
	for (i = 0; i < s->nfaults; i++)
		if (s->faults[i].base == SCEN_F_SLOW_HOST &&
		    s->devs[c->dev[0]].host == s->faults[i].host)
			f *= fault_level(&s->faults[i], iv);
	return f;
}

/*
 * A rank's compute before one collective: its speed, faults, jitter, a
 * heavy-tailed stall now and then (when configured) and pause, the time
 * the job stood still before it.
 */
static double
emit_compute(struct scen *s, const struct scomm *c, uint32_t dev, uint32_t iv,
	     double pause)
{
	const struct scen_noise *nz = &s->p.noise;
	double t = c->compute_us * s->devs[dev].speed * fault_gpu(s, dev, iv) *
		   rng_lognorm(&s->rng, nz->compute_sigma);

	if (nz->gap_tail_prob > 0 && rng_unif(&s->rng) < nz->gap_tail_prob)
		t *= fault_pareto(&s->rng, 1.5, nz->tail_alpha, nz->tail_cap);
	return t + SCEN_LAUNCH_US + pause;
}

/*
 * One training step: every phase's compute, then its collectives. pause
 * is added to every rank's first compute (the job stood still).
 */
static void
emit_step(struct scen *s, uint32_t iv, double pause)
{
	uint32_t ph, ci, r;

	for (r = 0; r < s->ndevs; r++)
		s->devs[r].t = 0;
	for (ph = 0; ph < SCEN_MAX_PHASES; ph++) {
		for (ci = 0; ci < s->ncomms; ci++) {
			struct scomm *c = &s->comms[ci];
			double amax = 0, T, end;

			if (c->phase != ph)
				continue;
			for (r = 0; r < c->nranks; r++) {
				struct sdev *d = &s->devs[c->dev[r]];

				d->comp = emit_compute(s, c, c->dev[r], iv,
						       ph == 0 ? pause : 0);
				d->t += d->comp;
				if (d->t > amax)
					amax = d->t;
			}
			T = c->coll_us * c->slow * emit_kernel_slow(s, c, iv) *
			    rng_lognorm(&s->rng, 0.02);
			end = amax + T;
			for (r = 0; r < c->nranks; r++) {
				struct sdev *d = &s->devs[c->dev[r]];
				double waited = amax - d->t;
				double recv =
					waited +
					T * (0.2 + 0.1 * rng_unif(&s->rng));
				double peer = T * 0.05 * rng_unif(&s->rng);

				emit_acc_add(&s->acc[c->acc + r], end - d->t,
					     d->comp, recv, peer);
				d->t = end;
			}
		}
	}
}

/* Stats from n samples' sum, min, max and log moments (lognormal quantiles). */
static void
emit_stats(struct matrix_stats *st, uint32_t n, double sum, double mn,
	   double mx, double lsum, double l2)
{
	double mu, var;

	memset(st, 0, sizeof(*st));
	if (n == 0)
		return;
	mu = lsum / n;
	var = l2 / n - mu * mu;
	if (var < 0)
		var = 0;
	st->count = n;
	st->sum = sum;
	st->min = mn;
	st->max = mx;
	st->p50 = exp(mu);
	st->p90 = fmin(mx, exp(mu + 1.2816 * sqrt(var)));
	st->p99 = fmin(mx, exp(mu + 2.3263 * sqrt(var)));
}

/*
 * Heavy tails (when configured): in some connection-intervals a share of
 * the n chunks of median time base take Pareto multiples of it; *k, *extra
 * and *smax accumulate their count, extra time and largest time.
 */
static void
emit_tail(struct scen *s, uint64_t n, double base, uint32_t *k, double *extra,
	  double *smax)
{
	const struct scen_noise *nz = &s->p.noise;
	uint32_t i, j;

	if (nz->tail_prob <= 0 || rng_unif(&s->rng) >= nz->tail_prob)
		return;
	j = rng_poisson(&s->rng, (double)n * nz->tail_rate) + 1;
	for (i = 0; i < j; i++) {
		double m = fault_pareto(&s->rng, 2.0, nz->tail_alpha,
					nz->tail_cap);

		*extra += base * (m - 1.0);
		*smax = fmax(*smax, base * m);
	}
	*k += j;
}

/* Per-chunk transfer statistics of n chunks with median time base. */
static void
emit_xfer(struct scen *s, struct matrix_stats *st, uint64_t n, double base)
{
	const struct scen_noise *nz = &s->p.noise;
	double sg = nz->jitter_sigma, rn = sqrt((double)n);
	uint32_t k, i;
	double extra = 0, smax = 0;

	st->count = n;
	st->p50 = base * exp(sg * 1.2533 / rn * rng_norm(&s->rng));
	st->p90 = base * exp(sg * (1.2816 + 1.71 / rn * rng_norm(&s->rng)));
	st->p99 = base * exp(sg * (2.3263 + 3.7 / rn * rng_norm(&s->rng)));
	st->min = base * exp(-sg * (2.0 + 0.5 * rng_unif(&s->rng)) -
			     sg * sqrt(2.0 * log((double)n)));
	st->max = base * exp(sg * sqrt(2.0 * log((double)n)) +
			     0.3 * sg * rng_norm(&s->rng));
	k = rng_poisson(&s->rng, (double)n * nz->spike_prob);
	for (i = 0; i < k; i++) {
		double m = 3.0 + (nz->spike_max - 3.0) * rng_unif(&s->rng);

		extra += base * (m - 1.0);
		if (base * m > smax)
			smax = base * m;
	}
	emit_tail(s, n, base, &k, &extra, &smax);
	if (smax > st->max)
		st->max = smax;
	if (k > n / 100 && smax > st->p99)
		st->p99 = smax;
	st->sum = (double)n * base * exp(0.5 * sg * sg) + extra;
}

/* Standard normal distribution function. */
static double
emit_phi(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

/* The q quantile of the mixture of emit_mix (bisection in log time). */
static double
emit_mix_q(double q, double sg, double share, double ld)
{
	double lo = -8 * sg, hi = ld + 8 * sg, mid = 0;
	int i;

	for (i = 0; i < 60; i++) {
		mid = 0.5 * (lo + hi);
		if ((1 - share) * emit_phi(mid / sg) +
			    share * emit_phi((mid - ld) / sg) <
		    q)
			lo = mid;
		else
			hi = mid;
	}
	return exp(mid);
}

void
emit_mix(struct scen *s, struct matrix_stats *st, uint64_t n, double base,
	 double share, double d)
{
	double sg = s->p.noise.jitter_sigma, ld = log(d), m;

	emit_xfer(s, st, n, base);
	/* sampling noise of the quantiles as for one lognormal */
	m = st->p50 / base;
	st->p50 = base * m * emit_mix_q(0.50, sg, share, ld);
	st->p90 = base * m * emit_mix_q(0.90, sg, share, ld);
	st->p99 = base * m * emit_mix_q(0.99, sg, share, ld);
	st->max = fmax(st->max * d, st->p99);
	st->sum += (double)n * share * (d - 1.0) * base * exp(0.5 * sg * sg);
}

/*
 * Draw interval iv's per-NIC noise and every connection's time factor
 * (static heterogeneity, per-interval noise, the job-wide drift on network
 * links, bursts and active faults), and set each communicator's slowest
 * factor.
 */
void
emit_factors(struct scen *s, uint32_t iv, double drift)
{
	const struct scen_noise *nz = &s->p.noise;
	uint32_t i, ci;

	for (i = 0; i < s->ndevs; i++)
		s->nic_noise[i] = rng_lognorm(&s->rng, nz->host_sigma);
	if (s->nic_drift != NULL)
		for (i = 0; i < s->ndevs; i++)
			s->nic_noise[i] *=
				1.0 +
				s->nic_drift[i] *
					fmin(1.0,
					     (double)iv / nz->nic_drift_span);
	for (ci = 0; ci < s->ncomms; ci++)
		s->comms[ci].slow = 1.0;
	for (i = 0; i < s->nconns; i++) {
		struct sconn *x = &s->conns[i];
		double fault = fault_conn(s, x, iv), burst = 1.0;
		struct scomm *c = &s->comms[x->comm];

		if (rng_unif(&s->rng) < nz->burst_prob)
			burst = 1.2 + 0.8 * rng_unif(&s->rng);
		s->conn_factor[i] =
			x->hetero * rng_lognorm(&s->rng, nz->link_sigma) *
			s->nic_noise[x->sdev] *
			(x->tr == MATRIX_TR_NET ? drift : 1.0) * burst * fault;
		/* heavy tails: now and then most chunks of an interval slow */
		s->conn_p50[i] = 1.0;
		if (nz->tail_p50_prob > 0 &&
		    rng_unif(&s->rng) < nz->tail_p50_prob)
			s->conn_p50[i] = fault_pareto(&s->rng, 1.3,
						      nz->tail_alpha, 10.0);
		/* delayed chunks slow the collective by their mean */
		s->conn_dfac[i] = fault_conn_mix(s, x, iv, &s->conn_dshare[i]);
		fault *= s->conn_p50[i] *
			 (1.0 + s->conn_dshare[i] * (s->conn_dfac[i] - 1.0));
		if (fault * burst > c->slow)
			c->slow = fault * burst;
	}
}

/*
 * Reset the accumulators and, unless the job is hung, run the interval's
 * training steps and advance every member's operation counters (a share
 * of members is caught inside the next operation at the cut).
 */
void
emit_steps(struct scen *s, uint32_t iv, uint32_t nsteps, int skew)
{
	uint32_t i, r, ci, st;
	double pause = 0;

	for (i = 0; i < s->nacc; i++)
		emit_acc_reset(&s->acc[i]);
	if (nsteps == 0)
		return;
	if (s->stall_len > 0 && iv == s->stall_start + s->stall_len)
		pause = s->stall_gap_us;
	for (st = 0; st < nsteps; st++)
		emit_step(s, iv, st == 0 ? pause : 0);
	for (ci = 0; ci < s->ncomms; ci++) {
		struct scomm *c = &s->comms[ci];

		c->done += nsteps;
		for (r = 0; r < c->nranks; r++) {
			struct sacc *a = &s->acc[c->acc + r];

			a->done = c->done;
			a->enter = c->done +
				   (rng_unif(&s->rng) < SCEN_SNAPSHOT_SKEW &&
				    skew);
		}
	}
}

/*
 * Fill s->out_coll with one collective summary per member on a live host
 * and s->out_wait with the wait summaries of members of network
 * communicators that ran; *nc and *nw get their counts.
 */
void
emit_colls(struct scen *s, uint32_t iv, uint32_t *nc, uint32_t *nw)
{
	uint32_t ci, r;

	*nc = *nw = 0;
	for (ci = 0; ci < s->ncomms; ci++) {
		const struct scomm *c = &s->comms[ci];

		for (r = 0; r < c->nranks; r++) {
			const struct sdev *d = &s->devs[c->dev[r]];
			const struct sacc *a = &s->acc[c->acc + r];
			struct matrix_coll *o;
			struct matrix_wait *w;

			if (s->lost[d->host])
				continue;
			s->coll_host[*nc] = d->host;
			o = &s->out_coll[(*nc)++];
			memset(o, 0, sizeof(*o));
			o->comm = c->hash;
			o->rank = r;
			o->algo = MATRIX_ALGO_RING;
			o->nops = a->n;
			o->bytes = (uint64_t)a->n * (64u << 20);
			emit_stats(&o->kernel, a->n, a->ksum, a->kmin, a->kmax,
				   a->klog, a->klog2);
			emit_stats(&o->gap, a->n, a->gsum, a->gmin, a->gmax,
				   a->glog, a->glog2);
			o->seq_done = a->done;
			o->seq_enter = a->enter;
			o->seq_done_first = a->n ? a->done - a->n + 1 : 0;
			o->seq_enter_first = a->n ? a->done - a->n + 1 : 0;
			o->t_first_ns =
				(int64_t)(s->host_off_ns[d->host] +
					  (double)iv * SCEN_INTERVAL_NS *
						  (1.0 +
						   s->host_drift[d->host]));
			if (!c->net || a->n == 0)
				continue;
			s->wait_host[*nw] = d->host;
			w = &s->out_wait[(*nw)++];
			w->comm = c->hash;
			w->rank = r;
			w->nsteps = a->n;
			w->recv_wait_us = a->recv;
			w->send_peer_wait_us = a->peer;
			w->send_gpu_wait_us = 0;
		}
	}
}

/*
 * Fill s->out_conn with one summary per connection whose source host is
 * live: transfer statistics when the job runs, else the chunks pending on
 * a stuck connection. Returns their count.
 */
uint32_t
emit_conns(struct scen *s, int hung, uint32_t nsteps)
{
	uint32_t i, r, nx = 0;
	double base;

	for (i = 0; i < s->nconns; i++) {
		const struct sconn *x = &s->conns[i];
		const struct scomm *c = &s->comms[x->comm];
		struct matrix_conn *o;
		double per_b = x->tr == MATRIX_TR_NET ? SCEN_NET_US_PER_B
						      : SCEN_NVLINK_US_PER_B;

		if (s->lost[s->devs[x->sdev].host])
			continue;
		s->conn_host[nx] = s->devs[x->sdev].host;
		o = &s->out_conn[nx++];
		memset(o, 0, sizeof(*o));
		o->comm = c->hash;
		o->src = x->src;
		o->dst = x->dst;
		o->channels = x->channels;
		o->transport = x->tr;
		o->algo = x->algo;
		if (hung) {
			for (r = 0; r < s->nfaults; r++)
				if (s->faults[r].base == SCEN_F_COMM_HANG &&
				    s->faults[r].comm == c->hash &&
				    s->faults[r].src == x->src &&
				    s->faults[r].dst == x->dst)
					o->pending = x->chunks_step;
			continue;
		}
		o->chunks = (uint64_t)x->chunks_step * nsteps;
		if (o->chunks == 0)
			continue;
		o->bytes = o->chunks * x->chunk;
		base = x->chunk * per_b * s->conn_factor[i] * s->conn_p50[i];
		if (s->conn_dshare[i] > 0)
			emit_mix(s, &o->xfer, o->chunks, base,
				 s->conn_dshare[i], s->conn_dfac[i]);
		else
			emit_xfer(s, &o->xfer, o->chunks, base);
	}
	return nx;
}
