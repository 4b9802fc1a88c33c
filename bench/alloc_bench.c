/*
 * bench-alloc: in-process speed of the C4P allocator.
 *
 * Fabric: 1024 hosts x 8 NICs x 2x200G (8,192 GPUs, one per NIC), 256
 * leaves in 128 pairs (8 hosts per pair), 64 spines, one 200G cable from
 * every leaf to every spine (1:1). The job is one ring per rail over all
 * hosts: 8,192 connections, --qps QPs each (default 8 = 65,536 QPs), one
 * allocation request per connection (a communicator's batch).
 *
 * Metrics: the whole job cold (catalog entries filled from the hash model
 * on first use) and warm; in-process QPs/s with batches of one connection
 * and with single-QP requests; single-request latency p50/p99; the time to
 * reassign after a cable goes down under the full job. The TCP figures
 * come with c4p-master.
 *
 * stdout: only "metric <name> <value> <unit>" lines; progress on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "fab.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct job {
	struct fab_conns conns;
	uint32_t qpc;
	struct alloc_qp_req *rq; /* conns.n * qpc */
	struct alloc_qp_res *rs;
};

static uint32_t
port_ip(const struct topo *t, uint32_t nic, uint8_t side)
{
	return t->ports[t->nics[nic].port[side]].ip;
}

static int
job_build(struct job *j, const struct topo *t, uint32_t qpc)
{
	uint32_t *hosts = malloc(t->nhosts * sizeof(*hosts)), i;
	size_t c, q;

	memset(j, 0, sizeof(*j));
	if (hosts == NULL)
		return -1;
	for (i = 0; i < t->nhosts; i++)
		hosts[i] = i;
	if (fab_ring(t, 1, hosts, t->nhosts, 8, &j->conns) < 0) {
		free(hosts);
		return -1;
	}
	free(hosts);
	j->qpc = qpc;
	j->rq = calloc(j->conns.n * qpc, sizeof(*j->rq));
	j->rs = calloc(j->conns.n * qpc, sizeof(*j->rs));
	if (j->rq == NULL || j->rs == NULL)
		return -1;
	for (c = 0; c < j->conns.n; c++) {
		for (q = 0; q < qpc; q++) {
			struct alloc_qp_req *r = &j->rq[c * qpc + q];
			uint8_t side = (uint8_t)(q % 2);

			r->sip = port_ip(t, j->conns.v[c].src_nic, side);
			r->dip = port_ip(t, j->conns.v[c].dst_nic, side);
			r->side = side;
		}
	}
	return 0;
}

static void
job_free(struct job *j)
{
	free(j->conns.v);
	free(j->rq);
	free(j->rs);
}

/* Allocates the whole job, one request per connection; seconds or -1. */
static double
job_alloc(struct alloc *a, struct job *j, const char *tag)
{
	char id[ALLOC_REQID_MAX], err[TOPO_ERR_MAX];
	double t0 = now_s();
	size_t c;

	for (c = 0; c < j->conns.n; c++) {
		snprintf(id, sizeof(id), "%s/%zu", tag, c);
		if (alloc_request(a, id, 1, 0, 3600, &j->rq[c * j->qpc], j->qpc,
				  &j->rs[c * j->qpc], err, sizeof(err)) < 0) {
			fprintf(stderr, "alloc: %s\n", err);
			return -1;
		}
	}
	return now_s() - t0;
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static void
metric(const char *name, double v, const char *unit)
{
	printf("metric %s %.6g %s\n", name, v, unit);
}

int
main(int argc, char **argv)
{
	struct fab_cfg fc = {1024, 8, 128, 64, 1, 200, 200, true};
	struct ecmp_model m = {1};
	char err[TOPO_ERR_MAX], id[ALLOC_REQID_MAX];
	struct catalog *cat = NULL;
	struct alloc *a = NULL;
	struct topo *t;
	struct job j;
	double cold, warm, t0, best_batch = 0, best_single = 0, *lat = NULL;
	uint32_t qpc = 8, rounds = 3, r, nlat;
	size_t nqp, i;
	int rc = 1;

	for (i = 1; i < (size_t)argc; i++) {
		if (strcmp(argv[i], "--qps") == 0 && i + 1 < (size_t)argc)
			qpc = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--rounds") == 0 &&
			 i + 1 < (size_t)argc)
			rounds = (uint32_t)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: bench-alloc [--qps N] "
					"[--rounds N]\n");
			return 2;
		}
	}
	if (qpc == 0 || qpc > 64 || rounds == 0)
		return 2;
	t = fab_build(&fc, err, sizeof(err));
	if (t == NULL) {
		fprintf(stderr, "fabric: %s\n", err);
		return 1;
	}
	if (job_build(&j, t, qpc) < 0)
		goto out;
	nqp = j.conns.n * qpc;
	cat = catalog_new(t, &m);
	a = cat == NULL ? NULL : alloc_new(t, cat);
	if (a == NULL)
		goto out;
	fprintf(stderr, "alloc: %u hosts, %zu connections, %zu QPs\n",
		t->nhosts, j.conns.n, nqp);

	/* the whole job, cold catalog then warm */
	cold = job_alloc(a, &j, "cold");
	if (cold < 0)
		goto out;
	alloc_release_job(a, 1);
	warm = job_alloc(a, &j, "warm");
	if (warm < 0)
		goto out;
	metric("alloc_job_8192gpu_cold_s", cold, "s");
	metric("alloc_job_8192gpu_warm_s", warm, "s");
	metric("alloc_job_8192gpu_qps", (double)nqp, "count");
	metric("alloc_catalog_entries", (double)catalog_count(cat), "count");

	/* a cable down under the full job */
	{
		struct alloc_change *ch;
		size_t nch;
		uint32_t first, cnt;

		topo_bundle_links(t, 0, 0, &first, &cnt);
		t0 = now_s();
		if (alloc_link_set(a, first, false, &ch, &nch) < 0)
			goto out;
		metric("alloc_link_down_reassign_ms", (now_s() - t0) * 1e3,
		       "ms");
		metric("alloc_link_down_qps_moved", (double)nch, "count");
		free(ch);
		if (alloc_link_set(a, first, true, &ch, &nch) < 0)
			goto out;
		free(ch);
	}
	alloc_release_job(a, 1);

	/* throughput: batches of one connection, warm catalog */
	for (r = 0; r < rounds; r++) {
		double dt = job_alloc(a, &j, "b");

		if (dt < 0)
			goto out;
		if (nqp / dt > best_batch)
			best_batch = nqp / dt;
		alloc_release_job(a, 1);
	}
	metric("alloc_inproc_batch_qps_per_s", best_batch, "QP/s");

	/* single-QP requests: throughput and latency */
	nlat = (uint32_t)nqp;
	lat = malloc(nlat * sizeof(*lat));
	if (lat == NULL)
		goto out;
	for (r = 0; r < rounds; r++) {
		double start = now_s(), dt;

		for (i = 0; i < nqp; i++) {
			double q0 = now_s();

			snprintf(id, sizeof(id), "s/%zu", i);
			if (alloc_request(a, id, 1, 0, 3600, &j.rq[i], 1,
					  &j.rs[i], err, sizeof(err)) < 0) {
				fprintf(stderr, "alloc: %s\n", err);
				goto out;
			}
			lat[i] = now_s() - q0;
		}
		dt = now_s() - start;
		if (nqp / dt > best_single)
			best_single = nqp / dt;
		alloc_release_job(a, 1);
	}
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	metric("alloc_inproc_single_qps_per_s", best_single, "QP/s");
	metric("alloc_inproc_single_p50_us", lat[nlat / 2] * 1e6, "us");
	metric("alloc_inproc_single_p99_us", lat[(size_t)nlat * 99 / 100] * 1e6,
	       "us");
	rc = 0;
out:
	free(lat);
	alloc_free(a);
	catalog_free(cat);
	job_free(&j);
	topo_free(t);
	return rc;
}
