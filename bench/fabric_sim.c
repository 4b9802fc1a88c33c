/*
 * bench-fabric-sim: the paper's C4P figures in the flow-level simulator.
 *
 * For each scenario, the same run measures the ECMP baseline (random UDP
 * source ports routed by the hash model, averaged over --seeds hash seeds),
 * C4P (ports from the allocator, routed by the same hash model: the
 * simulator never trusts the allocator's claimed path) and the ideal
 * (perfect spraying over each leaf's healthy uplinks, same-side ports).
 * Rates are max-min fair over NIC port tx/rx and cable directions; busbw is
 * the ring all-reduce bus bandwidth per job (see fsim.h), averaged over jobs.
 *
 * Scenarios (16 hosts x 8 NICs x 2x200G, 8 leaves in 4 pairs, spines with
 * one 800G cable to every leaf):
 *   s1      one job over all 16 hosts, 8 spines (1:1);
 *   s2_1to1 8 concurrent 2-host jobs whose hosts sit on different leaf
 *           pairs, 8 spines (1:1);
 *   s2_2to1 the same with 4 spines (2:1);
 *   s3      s2_1to1 with the leaf0-spine0 cable down: ECMP, C4P static
 *           (allocated before the failure, flows rehashed by the switches)
 *           and C4P reallocation (alloc_link_set moves the affected QPs).
 *
 * stdout: only "metric <name> <value> <unit>" lines; progress on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fsim.h"
#include "fab.h"

struct sim {
	struct topo *t;
	struct fab_conns conns;
	uint32_t njobs;
	uint32_t qpc; /* QPs per connection */
	size_t nflows;
	uint32_t *conn_of; /* flow -> connection */
	uint32_t *job_of;  /* connection -> job */
	struct fsim_flow *flows;
	struct path *paths;
	uint16_t *sports;
	double *cap;
	uint32_t nres;
	double *busbw; /* per job */
};

struct outcome {
	double busbw;	  /* mean over jobs */
	double min_busbw; /* worst job */
	double bal_global;
	double bal_leaf;
	double bal_floor; /* best max/mean any placement could reach */
	double util;	  /* max/mean Gbit/s per capacity, cable directions */
	unsigned mismatches; /* allocator path != hash-routed path */
	unsigned moved;
};

static uint64_t
rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint8_t
sim_side(const struct sim *s, size_t flow)
{
	return (uint8_t)(flow % s->qpc % 2);
}

static uint32_t
sim_port_ip(const struct topo *t, uint32_t nic, uint8_t side)
{
	return t->ports[t->nics[nic].port[side]].ip;
}

static int
sim_init(struct sim *s, struct topo *t, uint32_t njobs, uint32_t qpc)
{
	size_t i;

	s->t = t;
	s->njobs = njobs;
	s->qpc = qpc;
	s->nflows = s->conns.n * qpc;
	s->conn_of = calloc(s->nflows, sizeof(*s->conn_of));
	s->job_of = calloc(s->conns.n, sizeof(*s->job_of));
	s->flows = calloc(s->nflows, sizeof(*s->flows));
	s->paths = calloc(s->nflows, sizeof(*s->paths));
	s->sports = calloc(s->nflows, sizeof(*s->sports));
	s->nres = fsim_res_count(t);
	s->cap = calloc(s->nres, sizeof(*s->cap));
	s->busbw = calloc(njobs, sizeof(*s->busbw));
	if (s->conn_of == NULL || s->job_of == NULL || s->flows == NULL ||
	    s->paths == NULL || s->sports == NULL || s->cap == NULL ||
	    s->busbw == NULL)
		return -1;
	for (i = 0; i < s->nflows; i++)
		s->conn_of[i] = (uint32_t)(i / qpc);
	for (i = 0; i < s->conns.n; i++)
		s->job_of[i] = s->conns.v[i].job;
	return 0;
}

static void
sim_free(struct sim *s)
{
	free(s->conns.v);
	free(s->conn_of);
	free(s->job_of);
	free(s->flows);
	free(s->paths);
	free(s->sports);
	free(s->cap);
	free(s->busbw);
	topo_free(s->t);
	memset(s, 0, sizeof(*s));
}

/* Solves the flows (already set up) and fills busbw figures. */
static int
sim_solve(struct sim *s, struct outcome *o)
{
	char err[TOPO_ERR_MAX];
	double sum = 0, mn = -1;
	uint32_t j;

	fsim_res_caps(s->t, s->cap);
	if (fsim_solve(s->cap, s->nres, s->flows, s->nflows, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "fsim: %s\n", err);
		return -1;
	}
	if (fsim_busbw(s->flows, s->nflows, s->conn_of, (uint32_t)s->conns.n,
		       s->job_of, s->njobs, s->busbw) < 0)
		return -1;
	for (j = 0; j < s->njobs; j++) {
		sum += s->busbw[j];
		if (mn < 0 || s->busbw[j] < mn)
			mn = s->busbw[j];
	}
	o->busbw = sum / s->njobs;
	o->min_busbw = mn;
	o->util = fsim_link_util_balance(s->t, s->flows, s->nflows);
	return 0;
}

/* Routes every flow's sport through the hash model (with health). */
static int
sim_route(struct sim *s, const struct ecmp_model *m)
{
	char err[TOPO_ERR_MAX];
	size_t c, q;

	for (c = 0; c < s->conns.n; c++) {
		const struct fab_conn *cn = &s->conns.v[c];
		struct ecmp_ctx hc[TOPO_SIDES];
		uint8_t side;

		for (side = 0; side < TOPO_SIDES; side++) {
			if (ecmp_ctx_init(&hc[side], s->t, m,
					  s->t->nics[cn->src_nic].port[side],
					  sim_port_ip(s->t, cn->dst_nic, side),
					  err, sizeof(err)) < 0) {
				fprintf(stderr, "route: %s\n", err);
				if (side == 1)
					ecmp_ctx_free(&hc[0]);
				return -1;
			}
		}
		for (q = 0; q < s->qpc; q++) {
			size_t f = c * s->qpc + q;

			if (ecmp_ctx_route(&hc[sim_side(s, f)], s->sports[f],
					   true, &s->paths[f]) < 0) {
				fprintf(stderr, "route: no healthy path\n");
				ecmp_ctx_free(&hc[0]);
				ecmp_ctx_free(&hc[1]);
				return -1;
			}
			fsim_flow_path(s->t, &s->paths[f], &s->flows[f]);
		}
		ecmp_ctx_free(&hc[0]);
		ecmp_ctx_free(&hc[1]);
	}
	return 0;
}

static void
sim_balance(struct sim *s, struct outcome *o)
{
	fsim_link_balance(s->t, s->paths, s->nflows, &o->bal_global,
			  &o->bal_leaf);
	o->bal_floor = fsim_link_floor(s->t, s->paths, s->nflows);
}

/* ECMP: uniformly random source ports from the RoCE range. */
static int
sim_ecmp(struct sim *s, uint64_t seed, struct outcome *o)
{
	struct ecmp_model m = {seed};
	uint64_t r = seed * 7919 + 17;
	size_t f;

	memset(o, 0, sizeof(*o));
	for (f = 0; f < s->nflows; f++)
		s->sports[f] =
			(uint16_t)(CATALOG_SPORT_BASE +
				   rng_next(&r) % (65536 - CATALOG_SPORT_BASE));
	if (sim_route(s, &m) < 0)
		return -1;
	sim_balance(s, o);
	return sim_solve(s, o);
}

enum c4p_mode { C4P_PLAIN, C4P_STATIC, C4P_REALLOC };

/*
 * C4P: one allocation request per connection (all its QPs), then the
 * ports are routed by the hash model. In STATIC and REALLOC modes, cable
 * fail_link goes down after allocation; REALLOC tells the allocator.
 */
static int
sim_c4p(struct sim *s, uint64_t seed, enum c4p_mode mode, uint32_t fail_link,
	struct outcome *o)
{
	struct ecmp_model m = {seed};
	struct catalog *cat = catalog_new(s->t, &m);
	struct alloc *a = cat == NULL ? NULL : alloc_new(s->t, cat);
	struct alloc_qp_req *rq = calloc(s->qpc, sizeof(*rq));
	struct alloc_qp_res *rs = calloc(s->qpc, sizeof(*rs));
	struct path *claimed = calloc(s->nflows, sizeof(*claimed));
	char err[TOPO_ERR_MAX], id[32];
	size_t c, q;
	int rc = -1;

	memset(o, 0, sizeof(*o));
	if (a == NULL || rq == NULL || rs == NULL || claimed == NULL)
		goto out;
	for (c = 0; c < s->conns.n; c++) {
		const struct fab_conn *cn = &s->conns.v[c];

		for (q = 0; q < s->qpc; q++) {
			uint8_t side = sim_side(s, c * s->qpc + q);

			rq[q].sip = sim_port_ip(s->t, cn->src_nic, side);
			rq[q].dip = sim_port_ip(s->t, cn->dst_nic, side);
			rq[q].side = side;
			rq[q].weight = 0;
		}
		snprintf(id, sizeof(id), "c%zu", c);
		if (alloc_request(a, id, cn->job, 0, 3600, rq, s->qpc, rs, err,
				  sizeof(err)) < 0) {
			fprintf(stderr, "alloc: %s\n", err);
			goto out;
		}
		for (q = 0; q < s->qpc; q++) {
			s->sports[c * s->qpc + q] = rs[q].sport;
			claimed[c * s->qpc + q] = rs[q].path;
		}
	}
	if (mode == C4P_STATIC)
		topo_link_set_up(s->t, fail_link, false);
	if (mode == C4P_REALLOC) {
		struct alloc_change *ch;
		size_t nch;

		if (alloc_link_set(a, fail_link, false, &ch, &nch) < 0)
			goto out;
		o->moved = (unsigned)nch;
		free(ch);
		for (c = 0; c < s->conns.n; c++) {
			snprintf(id, sizeof(id), "c%zu", c);
			if (alloc_lookup(a, id, rs, s->qpc) < 0)
				goto out;
			for (q = 0; q < s->qpc; q++) {
				s->sports[c * s->qpc + q] = rs[q].sport;
				claimed[c * s->qpc + q] = rs[q].path;
			}
		}
	}
	if (sim_route(s, &m) < 0)
		goto out;
	for (c = 0; c < s->nflows; c++)
		o->mismatches += !path_equal(&claimed[c], &s->paths[c]);
	if (mode == C4P_STATIC)
		o->mismatches = 0; /* the switches rehashed: expected */
	sim_balance(s, o);
	rc = sim_solve(s, o);
out:
	if (mode != C4P_PLAIN)
		topo_link_set_up(s->t, fail_link, true);
	free(rq);
	free(rs);
	free(claimed);
	alloc_free(a);
	catalog_free(cat);
	return rc;
}

/* Ideal: same-side ports, each leaf's healthy uplinks as one pool. */
static int
sim_ideal(struct sim *s, struct outcome *o)
{
	size_t f;

	memset(o, 0, sizeof(*o));
	for (f = 0; f < s->nflows; f++) {
		const struct fab_conn *cn = &s->conns.v[s->conn_of[f]];
		uint8_t side = sim_side(s, f);

		fsim_flow_pooled(s->t, s->t->nics[cn->src_nic].port[side],
				 s->t->nics[cn->dst_nic].port[side],
				 &s->flows[f]);
	}
	o->bal_global = o->bal_leaf = 1.0;
	return sim_solve(s, o);
}

static void
metric(const char *scen, const char *name, double v, const char *unit)
{
	printf("metric %s_%s %.4f %s\n", scen, name, v, unit);
}

static void
acc(struct outcome *sum, const struct outcome *o)
{
	sum->busbw += o->busbw;
	sum->min_busbw += o->min_busbw;
	sum->bal_global += o->bal_global;
	sum->bal_leaf += o->bal_leaf;
	sum->bal_floor += o->bal_floor;
	sum->util += o->util;
	sum->mismatches += o->mismatches;
	sum->moved += o->moved;
}

static void
avg(struct outcome *o, unsigned n)
{
	o->busbw /= n;
	o->min_busbw /= n;
	o->bal_global /= n;
	o->bal_leaf /= n;
	o->bal_floor /= n;
	o->util /= n;
}

/*
 * Runs one scenario. fail_link == TOPO_NONE: ECMP, C4P, ideal. Otherwise
 * scenario 3: ECMP and ideal with the cable down, C4P static and realloc.
 */
static int
run_scenario(const char *name, struct sim *s, unsigned seeds,
	     uint32_t fail_link)
{
	struct outcome e = {0}, c = {0}, st = {0}, id, full, o;
	unsigned i;

	if (sim_ideal(s, &full) < 0)
		return -1;
	if (fail_link != TOPO_NONE)
		topo_link_set_up(s->t, fail_link, false);
	if (sim_ideal(s, &id) < 0)
		return -1;
	for (i = 0; i < seeds; i++) {
		if (sim_ecmp(s, i + 1, &o) < 0)
			return -1;
		acc(&e, &o);
	}
	if (fail_link != TOPO_NONE)
		topo_link_set_up(s->t, fail_link, true);
	for (i = 0; i < seeds; i++) {
		enum c4p_mode mode =
			fail_link == TOPO_NONE ? C4P_PLAIN : C4P_REALLOC;

		if (sim_c4p(s, i + 1, mode, fail_link, &o) < 0)
			return -1;
		acc(&c, &o);
		if (fail_link != TOPO_NONE) {
			if (sim_c4p(s, i + 1, C4P_STATIC, fail_link, &o) < 0)
				return -1;
			acc(&st, &o);
		}
	}
	avg(&e, seeds);
	avg(&c, seeds);
	avg(&st, seeds);
	fprintf(stderr, "%s: ecmp %.1f c4p %.1f ideal %.1f (mismatches %u)\n",
		name, e.busbw, c.busbw, id.busbw, c.mismatches);
	metric(name, "ecmp_busbw", e.busbw, "Gbps");
	metric(name, "ecmp_min_job_busbw", e.min_busbw, "Gbps");
	if (fail_link == TOPO_NONE) {
		metric(name, "c4p_busbw", c.busbw, "Gbps");
		metric(name, "c4p_min_job_busbw", c.min_busbw, "Gbps");
	} else {
		metric(name, "c4p_static_busbw", st.busbw, "Gbps");
		metric(name, "c4p_static_min_job_busbw", st.min_busbw, "Gbps");
		metric(name, "c4p_realloc_busbw", c.busbw, "Gbps");
		metric(name, "c4p_realloc_min_job_busbw", c.min_busbw, "Gbps");
	}
	metric(name, "ideal_busbw", id.busbw, "Gbps");
	metric(name, "ideal_min_job_busbw", id.min_busbw, "Gbps");
	metric(name, "c4p_over_ecmp", c.busbw / e.busbw, "ratio");
	metric(name, "c4p_over_ideal", c.busbw / id.busbw, "ratio");
	metric(name, "ecmp_over_ideal", e.busbw / id.busbw, "ratio");
	if (fail_link != TOPO_NONE) {
		metric(name, "c4p_realloc_over_static", c.busbw / st.busbw,
		       "ratio");
		metric(name, "static_over_ideal", st.busbw / id.busbw, "ratio");
		metric(name, "full_ideal_busbw", full.busbw, "Gbps");
		metric(name, "c4p_over_7_8_full_ideal",
		       c.busbw / (full.busbw * 7 / 8), "ratio");
		metric(name, "c4p_static_link_max_mean", st.bal_global,
		       "ratio");
		metric(name, "c4p_static_link_util_max_mean", st.util, "ratio");
		metric(name, "qps_moved", (double)c.moved / seeds, "count");
	}
	metric(name, "c4p_link_max_mean", c.bal_global, "ratio");
	metric(name, "link_max_mean_floor", c.bal_floor, "ratio");
	metric(name, "c4p_leaf_link_max_mean", c.bal_leaf, "ratio");
	metric(name, "ecmp_link_max_mean", e.bal_global, "ratio");
	metric(name, "c4p_link_util_max_mean", c.util, "ratio");
	metric(name, "ecmp_link_util_max_mean", e.util, "ratio");
	metric(name, "c4p_path_mismatches", c.mismatches, "count");
	return 0;
}

static int
build(struct sim *s, uint32_t spines, bool multi_job, uint32_t qpc)
{
	struct fab_cfg fc = {16, 8, 4, spines, 1, 200, 800, true};
	char err[TOPO_ERR_MAX];
	struct topo *t;
	uint32_t hosts[16], j, njobs = 1;

	memset(s, 0, sizeof(*s));
	t = fab_build(&fc, err, sizeof(err));
	if (t == NULL) {
		fprintf(stderr, "fabric: %s\n", err);
		return -1;
	}
	if (!multi_job) {
		for (j = 0; j < 16; j++)
			hosts[j] = j;
		if (fab_ring(t, 0, hosts, 16, 8, &s->conns) < 0)
			goto fail;
	} else {
		/* job j: hosts 2j and 2j+1, on leaf pairs (2j)%4, (2j+1)%4 */
		njobs = 8;
		for (j = 0; j < 8; j++) {
			hosts[0] = 2 * j;
			hosts[1] = 2 * j + 1;
			if (fab_ring(t, j, hosts, 2, 8, &s->conns) < 0)
				goto fail;
		}
	}
	if (sim_init(s, t, njobs, qpc) < 0)
		goto fail;
	return 0;
fail:
	s->t = t;
	sim_free(s);
	return -1;
}

int
main(int argc, char **argv)
{
	unsigned seeds = 256, qpc = 8;
	struct sim s;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
			seeds = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--qps") == 0 && i + 1 < argc)
			qpc = (unsigned)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: bench-fabric-sim [--seeds N] "
					"[--qps QPS_PER_CONNECTION]\n");
			return 2;
		}
	}
	if (seeds == 0 || qpc == 0 || qpc > 1024)
		return 2;
	fprintf(stderr, "fabric-sim: %u seeds, %u QPs per connection\n", seeds,
		qpc);
	if (build(&s, 8, false, qpc) < 0 ||
	    run_scenario("s1", &s, seeds, TOPO_NONE) < 0)
		return 1;
	sim_free(&s);
	if (build(&s, 8, true, qpc) < 0 ||
	    run_scenario("s2_1to1", &s, seeds, TOPO_NONE) < 0)
		return 1;
	sim_free(&s);
	if (build(&s, 4, true, qpc) < 0 ||
	    run_scenario("s2_2to1", &s, seeds, TOPO_NONE) < 0)
		return 1;
	sim_free(&s);
	if (build(&s, 8, true, qpc) < 0)
		return 1;
	{
		uint32_t first, cnt;

		topo_bundle_links(s.t, 0, 0, &first, &cnt);
		if (run_scenario("s3", &s, seeds, first) < 0)
			return 1;
	}
	sim_free(&s);
	return 0;
}
