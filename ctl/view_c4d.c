/*
 * view_c4d.c - c4ctl's views of a job master: jobs, ranks, matrix.
 *
 * The matrix view draws the delay matrix of one communicator: row = the
 * sending rank, column = the receiving rank, colour = how much slower the
 * connection's transfer time per byte is than the median of connections of
 * its transport (log scale).  A hot column is a slow receiver, a hot row a
 * slow sender, a single hot cell a slow path.  Large communicators are
 * binned so the picture fits a terminal; --svg writes the full matrix.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "json.h"

#define VIEW_TERM_MAX	   96  /* cells across in the terminal */
#define VIEW_SVG_CELL	   36  /* largest cell in the SVG, pixels */
#define VIEW_SVG_CELL_MIN  4   /* smallest cell */
#define VIEW_SVG_SPAN	   640 /* the matrix's side, pixels, when cells allow */
#define VIEW_SVG_WIDTH_MIN 480
#define VIEW_SVG_MAX	   2048 /* ranks across in the SVG (binned above) */
#define VIEW_HOT_LIST	   10	/* hottest cells listed under the picture */

struct view_c4d_opts {
	uint64_t comm;
	const char *svg;
};

/* Parses [--comm HEX] [--svg FILE]; svg only where allowed.  0 or 2. */
static int
view_c4d_opts(int argc, char **argv, struct view_c4d_opts *o, int allow_svg)
{
	static const struct option longopts[] = {
		{"comm", required_argument, NULL, 'c'},
		{"svg", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0}};
	int ch;

	memset(o, 0, sizeof(*o));
	optind = 0;
	while ((ch = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		char *end;

		switch (ch) {
		case 'c':
			o->comm = strtoull(optarg, &end, 16);
			if (*end != '\0' || o->comm == 0) {
				fprintf(stderr, "c4ctl: --comm takes a "
						"communicator hash in hex\n");
				return 2;
			}
			break;
		case 's':
			if (!allow_svg)
				return 2;
			o->svg = optarg;
			break;
		default:
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "c4ctl: unexpected argument %s\n",
			argv[optind]);
		return 2;
	}
	return 0;
}

int
view_c4d_jobs(struct ctl *c, int argc, char **argv)
{
	struct view_c4d_opts o;
	C4__Envelope *env;
	const C4__AdminReply *r;
	struct json j;

	if (view_c4d_opts(argc, argv, &o, 0) != 0)
		return 2;
	env = ctl_admin(c, C4__ADMIN_OP__ADMIN_JOBS, 0);
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "jobs");
		json_arr_begin(&j);
		for (size_t i = 0; i < r->n_jobs; i++) {
			const C4__JobInfo *k = r->jobs[i];

			json_obj_begin(&j);
			json_key(&j, "job");
			json_str(&j, k->job_id);
			json_key(&j, "agents");
			json_u64(&j, k->agents);
			json_key(&j, "ranks");
			json_u64(&j, k->ranks);
			json_key(&j, "comms");
			json_u64(&j, k->comms);
			json_key(&j, "open_events");
			json_u64(&j, k->open_events);
			json_key(&j, "last_interval");
			json_u64(&j, k->last_interval);
			json_key(&j, "master");
			json_str(&j, k->master);
			json_key(&j, "connected");
			if (k->has_connected)
				json_bool(&j, k->connected);
			else
				json_str(&j, NULL);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%-24s %7s %7s %6s %6s %10s\n", "JOB", "AGENTS", "RANKS",
		       "COMMS", "OPEN", "INTERVAL");
		for (size_t i = 0; i < r->n_jobs; i++) {
			const C4__JobInfo *k = r->jobs[i];

			printf("%-24s %7u %7u %6u %6u %10" PRIu64 "\n",
			       k->job_id ? k->job_id : "?", k->agents, k->ranks,
			       k->comms, k->open_events, k->last_interval);
		}
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

int
view_c4d_ranks(struct ctl *c, int argc, char **argv)
{
	struct view_c4d_opts o;
	C4__Envelope *env;
	const C4__AdminReply *r;
	struct json j;

	if (view_c4d_opts(argc, argv, &o, 0) != 0)
		return 2;
	env = ctl_admin(c, C4__ADMIN_OP__ADMIN_RANKS, o.comm);
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "ranks");
		json_arr_begin(&j);
		for (size_t i = 0; i < r->n_ranks; i++) {
			const C4__RankInfo *k = r->ranks[i];

			json_obj_begin(&j);
			json_key(&j, "rank");
			json_u64(&j, k->rank);
			json_key(&j, "host");
			json_str(&j, k->host);
			json_key(&j, "gpu");
			json_u64(&j, k->gpu);
			json_key(&j, "nic");
			json_str(&j, k->nic);
			json_key(&j, "nic_port");
			json_u64(&j, k->nic_port);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%6s  %-24s %4s  %-12s %4s\n", "RANK", "HOST", "GPU",
		       "NIC", "PORT");
		for (size_t i = 0; i < r->n_ranks; i++) {
			const C4__RankInfo *k = r->ranks[i];

			printf("%6u  %-24s %4u  %-12s %4u\n", k->rank,
			       k->host ? k->host : "?", k->gpu,
			       k->nic ? k->nic : "?", k->nic_port);
		}
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

/* ---- the matrix ------------------------------------------------------------
 */

struct view_c4d_grid {
	uint32_t nranks; /* 1 + the largest rank seen */
	uint32_t side;	 /* bins across */
	uint32_t per;	 /* ranks per bin */
	double *score;	 /* side*side, NAN where no connection */
	uint8_t *hot;
};

/* Bins cells into a side x side grid keeping the worst score per bin. */
static int
view_c4d_grid_build(struct view_c4d_grid *g, const C4__AdminReply *r,
		    uint32_t max_side)
{
	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < r->n_cells; i++) {
		if (r->cells[i]->src_rank + 1 > g->nranks)
			g->nranks = r->cells[i]->src_rank + 1;
		if (r->cells[i]->dst_rank + 1 > g->nranks)
			g->nranks = r->cells[i]->dst_rank + 1;
	}
	if (g->nranks == 0)
		return 0;
	g->per = (g->nranks + max_side - 1) / max_side;
	g->side = (g->nranks + g->per - 1) / g->per;
	g->score = malloc((size_t)g->side * g->side * sizeof(double));
	g->hot = calloc((size_t)g->side * g->side, 1);
	if (g->score == NULL || g->hot == NULL)
		return -1;
	for (size_t i = 0; i < (size_t)g->side * g->side; i++)
		g->score[i] = NAN;
	for (size_t i = 0; i < r->n_cells; i++) {
		const C4__MatrixCell *k = r->cells[i];
		size_t at = (size_t)(k->src_rank / g->per) * g->side +
			    k->dst_rank / g->per;

		if (isnan(g->score[at]) || k->score > g->score[at])
			g->score[at] = k->score;
		g->hot[at] |= k->hot;
	}
	return 0;
}

static void
view_c4d_grid_free(struct view_c4d_grid *g)
{
	free(g->score);
	free(g->hot);
}

/* Slowdown factor of a log-ratio score, clamped to the colour scale. */
static double
view_c4d_level(double score)
{
	double x = exp(score);

	return x < 1.0 ? 0.0 : (x > 3.0 ? 1.0 : (x - 1.0) / 2.0);
}

static void
view_c4d_term(const struct view_c4d_grid *g, int colour)
{
	static const char shade[] = " .:oO#";

	printf("      receiving rank -> (%u per column)\n", g->per);
	for (uint32_t y = 0; y < g->side; y++) {
		printf("%5u ", y * g->per);
		for (uint32_t x = 0; x < g->side; x++) {
			double s = g->score[(size_t)y * g->side + x];
			int hot = g->hot[(size_t)y * g->side + x];

			if (isnan(s)) {
				fputs(colour ? "\033[0m " : " ", stdout);
				continue;
			}
			if (colour) {
				/* 256-colour ramp green -> yellow -> red. */
				double l = view_c4d_level(s);
				int red = (int)(l * 5.0 + 0.5);
				int green = 5 - (int)(l * 3.0 + 0.5);

				printf("\033[48;5;%dm%c",
				       16 + 36 * red + 6 * green,
				       hot ? '#' : ' ');
			} else {
				int k = hot ? 5
					    : (int)(view_c4d_level(s) * 4.0 +
						    1.5);

				putchar(shade[k > 5 ? 5 : k]);
			}
		}
		printf("%s\n", colour ? "\033[0m" : "");
	}
	printf("      colour: 1x (green) .. 3x+ (red) slower than the median "
	       "of its transport; # = hot\n");
}

static int
view_c4d_cmp_cells(const void *a, const void *b)
{
	const C4__MatrixCell *x = *(C4__MatrixCell *const *)a;
	const C4__MatrixCell *y = *(C4__MatrixCell *const *)b;

	return (x->score < y->score) - (x->score > y->score);
}

static int
view_c4d_svg(const char *path, const struct view_c4d_grid *g, uint64_t comm)
{
	const int m = 56; /* margin for labels */
	int cell = g->side ? VIEW_SVG_SPAN / (int)g->side : VIEW_SVG_CELL;
	int span, w, h;
	FILE *fp = fopen(path, "w");
	uint32_t step;

	if (fp == NULL) {
		perror(path);
		return -1;
	}
	cell = cell < VIEW_SVG_CELL_MIN ? VIEW_SVG_CELL_MIN
	       : cell > VIEW_SVG_CELL	? VIEW_SVG_CELL
					: cell;
	span = (int)g->side * cell;
	w = m + span + 24 > VIEW_SVG_WIDTH_MIN ? m + span + 24
					       : VIEW_SVG_WIDTH_MIN;
	h = m + span + 56;
	step = (uint32_t)(14 / cell + 1);
	fprintf(fp,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" font-family=\"monospace\" font-size=\"10\">\n",
		w, h);
	fprintf(fp,
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(fp,
		"<text x=\"8\" y=\"14\" font-size=\"12\">delay matrix of "
		"communicator %016" PRIx64 "</text>\n"
		"<text x=\"8\" y=\"28\">row = sending rank, column = "
		"receiving rank, %u rank(s) per cell</text>\n",
		comm, g->per);
	for (uint32_t i = 0; i < g->side; i += step) {
		fprintf(fp,
			"<text x=\"%d\" y=\"%d\" "
			"text-anchor=\"end\">%u</text>\n",
			m - 4, m + (int)i * cell + cell / 2 + 4, i * g->per);
		fprintf(fp,
			"<text x=\"%d\" y=\"%d\" "
			"text-anchor=\"middle\">%u</text>\n",
			m + (int)i * cell + cell / 2, m - 6, i * g->per);
	}
	for (uint32_t y = 0; y < g->side; y++) {
		for (uint32_t x = 0; x < g->side; x++) {
			double s = g->score[(size_t)y * g->side + x];
			int hot = g->hot[(size_t)y * g->side + x];
			double l;

			if (isnan(s))
				continue;
			l = view_c4d_level(s);
			fprintf(fp,
				"<rect x=\"%d\" y=\"%d\" width=\"%d\" "
				"height=\"%d\" fill=\"rgb(%d,%d,60)\"%s>"
				"<title>%u -> %u: %.2fx</title></rect>\n",
				m + (int)x * cell, m + (int)y * cell, cell - 1,
				cell - 1, (int)(60 + 195 * l),
				(int)(200 - 150 * l),
				hot ? " stroke=\"black\" stroke-width=\"2\""
				    : "",
				y * g->per, x * g->per, exp(s));
		}
	}
	fprintf(fp,
		"<text x=\"8\" y=\"%d\">green: the median of its transport; "
		"red: 3x slower or more; outlined: hot</text>\n</svg>\n",
		m + span + 24);
	if (fclose(fp) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int
view_c4d_matrix(struct ctl *c, int argc, char **argv)
{
	struct view_c4d_opts o;
	C4__Envelope *env;
	const C4__AdminReply *r;
	C4__MatrixCell **sorted;
	struct view_c4d_grid g;
	uint64_t comm;
	struct json j;
	int rc = 0;

	if (view_c4d_opts(argc, argv, &o, 1) != 0)
		return 2;
	env = ctl_admin(c, C4__ADMIN_OP__ADMIN_MATRIX, o.comm);
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	comm = r->n_cells ? r->cells[0]->comm_hash : o.comm;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "comm");
		{
			char hex[17];

			snprintf(hex, sizeof(hex), "%016" PRIx64, comm);
			json_str(&j, hex);
		}
		json_key(&j, "cells");
		json_arr_begin(&j);
		for (size_t i = 0; i < r->n_cells; i++) {
			const C4__MatrixCell *k = r->cells[i];

			json_obj_begin(&j);
			json_key(&j, "src");
			json_u64(&j, k->src_rank);
			json_key(&j, "dst");
			json_u64(&j, k->dst_rank);
			json_key(&j, "ns_per_byte");
			json_double(&j, k->value);
			json_key(&j, "baseline_ns_per_byte");
			json_double(&j, k->baseline);
			json_key(&j, "slowdown");
			json_double(&j, exp(k->score));
			json_key(&j, "transport");
			json_str(
				&j,
				k->transport == C4__TRANSPORT_CLASS__TRANSPORT_NET
					? "net"
					: "local");
			json_key(&j, "hot");
			json_bool(&j, k->hot);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	}
	if (view_c4d_grid_build(&g, r, VIEW_TERM_MAX) < 0) {
		rc = 1;
		goto out;
	}
	if (!c->json) {
		printf("communicator %016" PRIx64
		       ": %zu connections, %u ranks\n",
		       comm, r->n_cells, g.nranks);
		if (g.nranks > 0)
			view_c4d_term(&g, isatty(STDOUT_FILENO) &&
						  getenv("NO_COLOR") == NULL);
		sorted = calloc(r->n_cells ? r->n_cells : 1, sizeof(*sorted));
		if (sorted != NULL) {
			memcpy(sorted, r->cells, r->n_cells * sizeof(*sorted));
			qsort(sorted, r->n_cells, sizeof(*sorted),
			      view_c4d_cmp_cells);
			for (size_t i = 0; i < r->n_cells && i < VIEW_HOT_LIST;
			     i++) {
				if (!sorted[i]->hot)
					break;
				if (i == 0)
					printf("hot connections:\n");
				printf("  %u -> %u  %.2fx the median\n",
				       sorted[i]->src_rank, sorted[i]->dst_rank,
				       exp(sorted[i]->score));
			}
			free(sorted);
		}
	}
	view_c4d_grid_free(&g);
	if (o.svg != NULL) {
		if (view_c4d_grid_build(&g, r, VIEW_SVG_MAX) < 0 ||
		    view_c4d_svg(o.svg, &g, comm) < 0)
			rc = 1;
		else if (!c->json)
			printf("wrote %s\n", o.svg);
		view_c4d_grid_free(&g);
	}
out:
	msg_free(env);
	cli_close(&c->cli);
	return rc;
}
