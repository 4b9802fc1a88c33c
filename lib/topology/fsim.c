/*
 * fsim.c: max-min fair rates by progressive filling (see fsim.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsim.h"
#include "errbuf.h"

/* resource layout: [tx ports][rx ports][up cables][down cables][pools up]
 * [pools down] */
uint32_t
fsim_res_count(const struct topo *t)
{
	return 2 * t->nports + 2 * t->nlinks + 2 * t->nleaves;
}

void
fsim_res_caps(const struct topo *t, double *cap)
{
	uint32_t i, base;

	for (i = 0; i < t->nports; i++) {
		double c = t->ports[i].up ? t->ports[i].gbps : 0;

		cap[i] = c;
		cap[t->nports + i] = c;
	}
	base = 2 * t->nports;
	for (i = 0; i < t->nlinks; i++) {
		double c = t->links[i].up ? t->links[i].gbps : 0;

		cap[base + i] = c;
		cap[base + t->nlinks + i] = c;
	}
	base += 2 * t->nlinks;
	for (i = 0; i < t->nleaves; i++)
		cap[base + i] = cap[base + t->nleaves + i] = 0;
	for (i = 0; i < t->nlinks; i++) {
		if (!t->links[i].up)
			continue;
		cap[base + t->links[i].leaf] += t->links[i].gbps;
		cap[base + t->nleaves + t->links[i].leaf] += t->links[i].gbps;
	}
}

void
fsim_flow_path(const struct topo *t, const struct path *p, struct fsim_flow *f)
{
	uint32_t base = 2 * t->nports;

	memset(f, 0, sizeof(*f));
	f->res[f->nres++] = p->src_port;
	if (p->up != TOPO_NONE) {
		f->res[f->nres++] = base + p->up;
		f->res[f->nres++] = base + t->nlinks + p->down;
	}
	f->res[f->nres++] = t->nports + p->dst_port;
}

void
fsim_flow_pooled(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		 struct fsim_flow *f)
{
	uint32_t base = 2 * t->nports + 2 * t->nlinks;
	uint32_t sl = t->ports[src_port].leaf, dl = t->ports[dst_port].leaf;

	memset(f, 0, sizeof(*f));
	f->res[f->nres++] = src_port;
	if (sl != dl) {
		f->res[f->nres++] = base + sl;
		f->res[f->nres++] = base + t->nleaves + dl;
	}
	f->res[f->nres++] = t->nports + dst_port;
}

/*
 * Progressive filling with a common water level: every unfrozen flow has
 * rate == level, so one step costs O(resources) plus the flows it freezes.
 * A resource counts as full when its remainder drops below FSIM_EPS of its
 * capacity (rounding of repeated subtraction).
 */
#define FSIM_EPS 1e-9

int
fsim_solve(const double *cap, uint32_t nres, struct fsim_flow *f, size_t n,
	   char *err, size_t errlen)
{
	uint32_t *cnt = NULL, *first = NULL, *adj = NULL;
	double *rem = NULL, level = 0;
	unsigned char *frozen = NULL;
	size_t i, live = 0, nadj = 0;
	uint32_t r, k;
	int rc = -1;

	for (i = 0; i < n; i++) {
		if (f[i].nres > FSIM_MAX_HOPS) {
			errbuf_set(err, errlen, "flow %zu: too many hops", i);
			return -1;
		}
		for (k = 0; k < f[i].nres; k++) {
			if (f[i].res[k] >= nres) {
				errbuf_set(err, errlen,
					   "flow %zu: bad resource", i);
				return -1;
			}
		}
		nadj += f[i].nres;
	}
	cnt = calloc((size_t)nres + 1, sizeof(*cnt));
	first = calloc((size_t)nres + 2, sizeof(*first));
	adj = malloc((nadj + 1) * sizeof(*adj));
	rem = malloc(((size_t)nres + 1) * sizeof(*rem));
	frozen = calloc(n + 1, 1);
	if (cnt == NULL || first == NULL || adj == NULL || rem == NULL ||
	    frozen == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	/* resource -> flows (CSR) */
	for (i = 0; i < n; i++)
		for (k = 0; k < f[i].nres; k++)
			first[f[i].res[k] + 1]++;
	for (r = 0; r < nres; r++)
		first[r + 1] += first[r];
	{
		uint32_t *fill = cnt; /* reuse as a cursor, zeroed below */

		for (i = 0; i < n; i++)
			for (k = 0; k < f[i].nres; k++) {
				r = f[i].res[k];
				adj[first[r] + fill[r]++] = (uint32_t)i;
			}
		memset(cnt, 0, (size_t)nres * sizeof(*cnt));
	}
	for (r = 0; r < nres; r++)
		rem[r] = cap[r];
	for (i = 0; i < n; i++) {
		bool dead = false;

		f[i].rate = 0;
		for (k = 0; k < f[i].nres; k++)
			dead |= !(cap[f[i].res[k]] > 0);
		if (dead) {
			frozen[i] = 1;
			continue;
		}
		for (k = 0; k < f[i].nres; k++)
			cnt[f[i].res[k]]++;
		live++;
	}
	while (live > 0) {
		uint32_t bottleneck = nres;
		double delta = 0;

		for (r = 0; r < nres; r++) {
			double d;

			if (cnt[r] == 0)
				continue;
			d = rem[r] / cnt[r];
			if (bottleneck == nres || d < delta) {
				delta = d;
				bottleneck = r;
			}
		}
		if (bottleneck == nres)
			break; /* cannot happen: live flows cross resources */
		if (delta < 0)
			delta = 0;
		level += delta;
		for (r = 0; r < nres; r++)
			if (cnt[r] > 0)
				rem[r] -= delta * cnt[r];
		/* the bottleneck is full by construction, whatever rounding
		 * left in rem: every step freezes at least its flows */
		rem[bottleneck] = 0;
		for (r = 0; r < nres; r++) {
			uint32_t j;

			if (cnt[r] == 0 || rem[r] > FSIM_EPS * cap[r])
				continue;
			for (j = first[r]; j < first[r + 1]; j++) {
				uint32_t fi = adj[j];

				if (frozen[fi])
					continue;
				frozen[fi] = 1;
				f[fi].rate = level;
				live--;
				for (k = 0; k < f[fi].nres; k++)
					cnt[f[fi].res[k]]--;
			}
		}
	}
	rc = 0;
out:
	free(cnt);
	free(first);
	free(adj);
	free(rem);
	free(frozen);
	return rc;
}

int
fsim_busbw(const struct fsim_flow *f, size_t n, const uint32_t *conn,
	   uint32_t nconn, const uint32_t *job, uint32_t njobs, double *busbw)
{
	double *rate;
	bool *seen;
	size_t i;
	uint32_t c;

	rate = calloc((size_t)nconn + 1, sizeof(*rate));
	seen = calloc((size_t)njobs + 1, sizeof(*seen));
	if (rate == NULL || seen == NULL) {
		free(rate);
		free(seen);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (conn[i] >= nconn) {
			free(rate);
			free(seen);
			return -1;
		}
		rate[conn[i]] += f[i].rate;
	}
	for (c = 0; c < njobs; c++)
		busbw[c] = 0;
	for (c = 0; c < nconn; c++) {
		uint32_t j = job[c];

		if (j >= njobs)
			continue;
		if (!seen[j] || rate[c] < busbw[j])
			busbw[j] = rate[c];
		seen[j] = true;
	}
	free(rate);
	free(seen);
	return 0;
}

/* max/mean of v[0..n) restricted to entries with use[i]; 0 when empty. */
static double
fsim_max_mean(const uint32_t *v, const bool *use, size_t n)
{
	uint64_t sum = 0, mx = 0, k = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!use[i])
			continue;
		sum += v[i];
		if (v[i] > mx)
			mx = v[i];
		k++;
	}
	if (k == 0 || sum == 0)
		return 0;
	return (double)mx * (double)k / (double)sum;
}

void
fsim_link_balance(const struct topo *t, const struct path *p, size_t n,
		  double *global, double *per_leaf)
{
	uint32_t *cnt, *lv, l, i, dir;
	bool *use, *lu;
	size_t j;

	*global = *per_leaf = 0;
	cnt = calloc((size_t)t->nlinks * 2 + 1, sizeof(*cnt));
	use = calloc((size_t)t->nlinks * 2 + 1, sizeof(*use));
	lv = calloc((size_t)t->nlinks + 1, sizeof(*lv));
	lu = calloc((size_t)t->nlinks + 1, sizeof(*lu));
	if (cnt == NULL || use == NULL || lv == NULL || lu == NULL)
		goto out;
	for (j = 0; j < n; j++) {
		if (p[j].up == TOPO_NONE)
			continue;
		cnt[p[j].up]++;
		cnt[t->nlinks + p[j].down]++;
	}
	for (l = 0; l < t->nlinks; l++)
		use[l] = use[t->nlinks + l] = t->links[l].up;
	*global = fsim_max_mean(cnt, use, (size_t)t->nlinks * 2);
	for (i = 0; i < t->nleaves; i++) {
		const struct topo_leaf *lf = &t->leaves[i];

		for (dir = 0; dir < 2; dir++) {
			double b;

			for (l = 0; l < lf->link_count; l++) {
				uint32_t id = t->leaf_links[lf->link_first + l];

				lv[l] = cnt[dir * t->nlinks + id];
				lu[l] = t->links[id].up;
			}
			b = fsim_max_mean(lv, lu, lf->link_count);
			if (b > *per_leaf)
				*per_leaf = b;
		}
	}
out:
	free(cnt);
	free(use);
	free(lv);
	free(lu);
}

double
fsim_link_floor(const struct topo *t, const struct path *p, size_t n)
{
	uint32_t *out, *in, *hu, l, worst = 0;
	uint64_t total = 0, dirs = 0;
	size_t j;

	out = calloc((size_t)t->nleaves + 1, sizeof(*out));
	in = calloc((size_t)t->nleaves + 1, sizeof(*in));
	hu = calloc((size_t)t->nleaves + 1, sizeof(*hu));
	if (out == NULL || in == NULL || hu == NULL) {
		free(out);
		free(in);
		free(hu);
		return 0;
	}
	for (j = 0; j < n; j++) {
		if (p[j].up == TOPO_NONE)
			continue;
		out[t->ports[p[j].src_port].leaf]++;
		in[t->ports[p[j].dst_port].leaf]++;
		total += 2;
	}
	for (l = 0; l < t->nlinks; l++) {
		if (!t->links[l].up)
			continue;
		hu[t->links[l].leaf]++;
		dirs += 2;
	}
	for (l = 0; l < t->nleaves; l++) {
		uint32_t need;

		if (hu[l] == 0)
			continue;
		need = (out[l] + hu[l] - 1) / hu[l];
		if (need > worst)
			worst = need;
		need = (in[l] + hu[l] - 1) / hu[l];
		if (need > worst)
			worst = need;
	}
	free(out);
	free(in);
	free(hu);
	if (total == 0 || dirs == 0)
		return 0;
	return (double)worst * (double)dirs / (double)total;
}

double
fsim_link_util_balance(const struct topo *t, const struct fsim_flow *f,
		       size_t n)
{
	uint32_t base = 2 * t->nports, nl = t->nlinks;
	double *gb = calloc((size_t)nl * 2 + 1, sizeof(*gb));
	double sum = 0, mx = 0, r = 0;
	size_t j, k = 0;

	if (gb == NULL)
		return 0;
	for (j = 0; j < n; j++)
		for (uint8_t h = 0; h < f[j].nres; h++)
			if (f[j].res[h] >= base && f[j].res[h] < base + 2 * nl)
				gb[f[j].res[h] - base] += f[j].rate;
	for (uint32_t i = 0; i < 2 * nl; i++) {
		const struct topo_link *l = &t->links[i % nl];
		double u;

		if (!l->up || l->gbps <= 0)
			continue;
		u = gb[i] / l->gbps;
		sum += u;
		if (u > mx)
			mx = u;
		k++;
	}
	if (k > 0 && sum > 0)
		r = mx * (double)k / sum;
	free(gb);
	return r;
}
