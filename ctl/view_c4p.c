/*
 * view_c4p_run.c - c4ctl's commands for the c4p-master: paths, links, link set,
 * alloc and fabric (tables, -o json, and an SVG of the fabric).  The JSON
 * schemas are in docs/c4ctl.md.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "json.h"
#include "msg.h"

#define CTL_SVG_W_MIN  480
#define CTL_SVG_STEP   90  /* px between switches on a row */
#define CTL_SVG_H      360 /* px */
#define CTL_SVG_SPINEY 60
#define CTL_SVG_LEAFY  300
#define CTL_NAMES_MAX  8192 /* leaves or spines drawn */

static const char *
view_c4p_side(C4__PortSide s)
{
	return s == C4__PORT_SIDE__SIDE_LEFT	? "left"
	       : s == C4__PORT_SIDE__SIDE_RIGHT ? "right"
						: "any";
}

static const char *
view_c4p_state(C4__LinkStatus s)
{
	return s == C4__LINK_STATUS__LINK_UP	     ? "up"
	       : s == C4__LINK_STATUS__LINK_DOWN     ? "down"
	       : s == C4__LINK_STATUS__LINK_DEGRADED ? "degraded"
						     : "unknown";
}

static int
view_c4p_paths(struct ctl *c, int argc, char **argv)
{
	C4__AdminRequest req = C4__ADMIN_REQUEST__INIT;
	const C4__AdminReply *r;
	C4__Envelope *env;
	struct json j;

	if (argc != 3) {
		fprintf(stderr, "c4ctl: usage: paths SRC DST (HOST/NIC or "
				"IP)\n");
		return 2;
	}
	req.op = C4__ADMIN_OP__ADMIN_PATHS;
	req.src = argv[1];
	req.dst = argv[2];
	env = ctl_admin_req(c, &req, "paths");
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "src");
		json_str(&j, argv[1]);
		json_key(&j, "dst");
		json_str(&j, argv[2]);
		json_key(&j, "paths");
		json_arr_begin(&j);
		for (size_t i = 0; i < r->n_paths; i++) {
			const C4__ProbePath *p = r->paths[i];

			json_obj_begin(&j);
			json_key(&j, "side");
			json_str(&j, view_c4p_side(p->side));
			json_key(&j, "sport");
			json_u64(&j, p->sport);
			json_key(&j, "src_leaf");
			json_str(&j, p->src_leaf);
			json_key(&j, "spine");
			json_str(&j, p->spine);
			json_key(&j, "dst_leaf");
			json_str(&j, p->dst_leaf);
			json_key(&j, "up_link");
			json_str(&j, p->up_link ? p->up_link : "");
			json_key(&j, "down_link");
			json_str(&j, p->down_link ? p->down_link : "");
			json_key(&j, "healthy");
			json_bool(&j, p->healthy);
			json_key(&j, "origin");
			json_str(&j, p->reached ? "probe" : "hash");
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%-6s %6s  %-16s %-16s %-16s %-7s %-6s %s\n", "SIDE",
		       "SPORT", "SRC_LEAF", "SPINE", "DST_LEAF", "HEALTHY",
		       "ORIGIN", "CABLES (UP DOWN)");
		for (size_t i = 0; i < r->n_paths; i++) {
			const C4__ProbePath *p = r->paths[i];

			printf("%-6s %6u  %-16s %-16s %-16s %-7s %-6s %s %s\n",
			       view_c4p_side(p->side), p->sport, p->src_leaf,
			       p->spine[0] ? p->spine : "-", p->dst_leaf,
			       p->healthy ? "yes" : "no",
			       p->reached ? "probe" : "hash",
			       p->up_link ? p->up_link : "-",
			       p->down_link ? p->down_link : "-");
		}
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

static void
view_c4p_link_json(struct json *j, const C4__LinkState *l)
{
	json_obj_begin(j);
	json_key(j, "link");
	json_str(j, l->link_id);
	json_key(j, "leaf");
	json_str(j, l->a);
	json_key(j, "spine");
	json_str(j, l->b);
	json_key(j, "state");
	json_str(j, view_c4p_state(l->status));
	json_key(j, "qps");
	json_u64(j, l->qps);
	json_key(j, "qps_up");
	json_u64(j, l->qps_up);
	json_key(j, "qps_down");
	json_u64(j, l->qps_down);
	json_key(j, "gbps");
	json_double(j, l->gbps);
	json_key(j, "load");
	json_double(j, l->load);
	json_key(j, "loss");
	json_double(j, l->loss_ppm / 1e6);
	json_key(j, "probe");
	json_str(j, l->reason ? l->reason : "");
	json_obj_end(j);
}

static void
view_c4p_links_table(const C4__AdminReply *r)
{
	printf("%-24s %-12s %-12s %-8s %6s %6s %6s %8s %8s %7s\n", "LINK",
	       "LEAF", "SPINE", "STATE", "QPS", "UP", "DOWN", "GBPS", "LOAD",
	       "LOSS%");
	for (size_t i = 0; i < r->n_links; i++) {
		const C4__LinkState *l = r->links[i];

		printf("%-24s %-12s %-12s %-8s %6u %6u %6u %8.0f %8.2f %7.3f\n",
		       l->link_id, l->a, l->b, view_c4p_state(l->status),
		       l->qps, l->qps_up, l->qps_down, l->gbps, l->load,
		       l->loss_ppm / 1e4);
	}
}

static int
view_c4p_links(struct ctl *c, int argc, char **argv)
{
	C4__Envelope *env;
	struct json j;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "c4ctl: usage: links\n");
		return 2;
	}
	env = ctl_admin(c, C4__ADMIN_OP__ADMIN_LINKS, 0);
	if (env == NULL)
		return 1;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "links");
		json_arr_begin(&j);
		for (size_t i = 0; i < env->admin_reply->n_links; i++)
			view_c4p_link_json(&j, env->admin_reply->links[i]);
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
		view_c4p_links_table(env->admin_reply);
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

static int
view_c4p_link_set(struct ctl *c, int argc, char **argv)
{
	C4__AdminRequest req = C4__ADMIN_REQUEST__INIT;
	const C4__AdminReply *r;
	C4__Envelope *env;
	struct json j;

	if (argc != 4 || strcmp(argv[1], "set") != 0 ||
	    (strcmp(argv[2], "down") != 0 && strcmp(argv[2], "up") != 0)) {
		fprintf(stderr, "c4ctl: usage: link set down|up LINK\n");
		return 2;
	}
	req.op = C4__ADMIN_OP__ADMIN_LINK_SET;
	req.link_id = argv[3];
	req.has_link_status = 1;
	req.link_status = strcmp(argv[2], "up") == 0
				  ? C4__LINK_STATUS__LINK_UP
				  : C4__LINK_STATUS__LINK_DOWN;
	env = ctl_admin_req(c, &req, "link set");
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "link");
		json_str(&j, argv[3]);
		json_key(&j, "state");
		json_str(&j, argv[2]);
		json_key(&j, "moved");
		json_u64(&j, r->moved);
		json_key(&j, "stranded");
		json_u64(&j, r->stranded);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("link %s %s: %u QPs moved, %u stranded\n", argv[3],
		       argv[2], r->moved, r->stranded);
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

static void
view_c4p_assign_json(struct json *j, const C4__PathAssignment *pa)
{
	json_obj_begin(j);
	json_key(j, "index");
	json_u64(j, pa->qp_index);
	json_key(j, "sport");
	json_u64(j, pa->udp_sport);
	json_key(j, "side");
	json_str(j, view_c4p_side(pa->side));
	json_key(j, "src_leaf");
	json_str(j, pa->src_leaf);
	json_key(j, "spine");
	json_str(j, pa->spine);
	json_key(j, "dst_leaf");
	json_str(j, pa->dst_leaf);
	json_key(j, "path_id");
	json_u64(j, pa->path_id);
	json_key(j, "confirmed_sport");
	json_u64(j, pa->confirmed_sport);
	json_key(j, "pending");
	json_bool(j, pa->pending);
	json_key(j, "fallback");
	json_bool(j, pa->fallback);
	json_key(j, "home_side");
	json_str(j, view_c4p_side(pa->home_side));
	json_obj_end(j);
}

static int
view_c4p_alloc(struct ctl *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"job", required_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	C4__AdminRequest req = C4__ADMIN_REQUEST__INIT;
	const C4__AdminReply *r;
	C4__Envelope *env;
	struct json j;
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "j:", longopts, NULL)) != -1) {
		if (ch != 'j') {
			fprintf(stderr, "c4ctl: usage: alloc [--job JOB]\n");
			return 2;
		}
		req.job_id = optarg;
	}
	if (optind != argc) {
		fprintf(stderr, "c4ctl: usage: alloc [--job JOB]\n");
		return 2;
	}
	req.op = C4__ADMIN_OP__ADMIN_ALLOCS;
	env = ctl_admin_req(c, &req, "alloc");
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "allocations");
		json_arr_begin(&j);
		for (size_t i = 0; i < r->n_allocs; i++) {
			const C4__Allocation *a = r->allocs[i];

			json_obj_begin(&j);
			json_key(&j, "job");
			json_str(&j, a->job_id);
			json_key(&j, "request");
			json_str(&j, a->request_id);
			json_key(&j, "src_nic");
			json_str(&j, a->src_nic);
			json_key(&j, "dst_nic");
			json_str(&j, a->dst_nic);
			json_key(&j, "side");
			json_str(&j, view_c4p_side(a->side));
			json_key(&j, "lease_expires_ns");
			json_u64(&j, a->lease_expires_ns);
			json_key(&j, "qps");
			json_arr_begin(&j);
			for (size_t k = 0; k < a->n_paths; k++)
				view_c4p_assign_json(&j, a->paths[k]);
			json_arr_end(&j);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_key(&j, "more");
		json_bool(&j, r->more);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%-12s %-20s %-14s %-14s %-5s %3s %6s %6s %-16s %s\n",
		       "JOB", "REQUEST", "SRC", "DST", "SIDE", "QP", "SPORT",
		       "CONF", "STATE", "PATH");
		for (size_t i = 0; i < r->n_allocs; i++) {
			const C4__Allocation *a = r->allocs[i];

			for (size_t k = 0; k < a->n_paths; k++) {
				const C4__PathAssignment *pa = a->paths[k];
				char state[32];

				snprintf(state, sizeof(state), "%s%s%s",
					 pa->pending ? "pending" : "confirmed",
					 pa->fallback ? ",failover-" : "",
					 pa->fallback
						 ? view_c4p_side(pa->home_side)
						 : "");
				printf("%-12s %-20s %-14s %-14s %-5s %3u %6u "
				       "%6u %-16s %s>%s>%s\n",
				       a->job_id, a->request_id, a->src_nic,
				       a->dst_nic, view_c4p_side(pa->side),
				       pa->qp_index, pa->udp_sport,
				       pa->confirmed_sport, state, pa->src_leaf,
				       pa->spine[0] ? pa->spine : "-",
				       pa->dst_leaf);
			}
		}
		if (r->more)
			printf("(more allocations not shown)\n");
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

/* ---- fabric
 * ------------------------------------------------------------------- */

/* Index of name in v[0..*n), appended when new; -1 when full. */
static int
view_c4p_name_index(const char **v, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(v[i], name) == 0)
			return (int)i;
	if (*n >= CTL_NAMES_MAX)
		return -1;
	v[*n] = name;
	return (int)(*n)++;
}

/* Green (idle) through yellow to red (the busiest link). */
static void
view_c4p_load_colour(double f, char *buf, size_t len)
{
	int r, g;

	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	r = f < 0.5 ? (int)(510 * f) : 255;
	g = f < 0.5 ? 200 : (int)(200 * (1 - f) * 2);
	snprintf(buf, len, "#%02x%02x20", r, g);
}

static void
view_c4p_svg_text(FILE *fp, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", fp);
		else if (*s == '>')
			fputs("&gt;", fp);
		else if (*s == '&')
			fputs("&amp;", fp);
		else
			fputc(*s, fp);
	}
}

static int
view_c4p_svg(const C4__AdminReply *r, const char **leaves, size_t nl,
	     const char **spines, size_t ns, const char *path)
{
	size_t width = (nl > ns ? nl : ns) * CTL_SVG_STEP + 60;
	double max = 0;
	FILE *fp;

	if (width < CTL_SVG_W_MIN)
		width = CTL_SVG_W_MIN;
	for (size_t i = 0; i < r->n_links; i++)
		if (r->links[i]->load > max)
			max = r->links[i]->load;
	fp = fopen(path, "w");
	if (fp == NULL) {
		perror(path);
		return -1;
	}
	fprintf(fp,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%zu\" "
		"height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"10\" y=\"16\">c4p fabric: link colour = load "
		"(green idle, red = busiest, %.2f per 100G); dashed grey = "
		"down</text>\n",
		width, CTL_SVG_H, max);
	for (size_t i = 0; i < r->n_links; i++) {
		const C4__LinkState *l = r->links[i];
		size_t a = 0, b = 0;
		double xl, xs;
		char col[16];
		int down = l->status == C4__LINK_STATUS__LINK_DOWN;

		while (a < nl && strcmp(leaves[a], l->a) != 0)
			a++;
		while (b < ns && strcmp(spines[b], l->b) != 0)
			b++;
		xl = 30.0 + (double)(width - 60) * (a + 0.5) / (double)nl;
		xs = 30.0 + (double)(width - 60) * (b + 0.5) / (double)ns;
		view_c4p_load_colour(max > 0 ? l->load / max : 0, col,
				     sizeof(col));
		fprintf(fp,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
			"stroke=\"%s\" stroke-width=\"%s\"%s><title>",
			xl, CTL_SVG_LEAFY - 12, xs, CTL_SVG_SPINEY + 12,
			down ? "#999999" : col, down ? "1.5" : "2.5",
			down ? " stroke-dasharray=\"6,4\"" : "");
		view_c4p_svg_text(fp, l->link_id);
		fprintf(fp,
			": %s, %u QPs up, %u down, load %.2f</title></line>\n",
			view_c4p_state(l->status), l->qps_up, l->qps_down,
			l->load);
		if (down)
			fprintf(fp,
				"<text x=\"%.1f\" y=\"%.1f\" fill=\"#cc0000\" "
				"font-size=\"16\" text-anchor=\"middle\">"
				"&#x2716;</text>\n",
				(xl + xs) / 2,
				(CTL_SVG_LEAFY + CTL_SVG_SPINEY) / 2.0 + 5);
	}
	for (size_t i = 0; i < ns; i++) {
		double x = 30.0 + (double)(width - 60) * (i + 0.5) / (double)ns;

		fprintf(fp,
			"<rect x=\"%.1f\" y=\"%d\" width=\"70\" height=\"24\" "
			"rx=\"4\" fill=\"#dde6f5\" stroke=\"#335\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
			x - 35, CTL_SVG_SPINEY - 12, x, CTL_SVG_SPINEY + 4);
		view_c4p_svg_text(fp, spines[i]);
		fprintf(fp, "</text>\n");
	}
	for (size_t i = 0; i < nl; i++) {
		double x = 30.0 + (double)(width - 60) * (i + 0.5) / (double)nl;

		fprintf(fp,
			"<rect x=\"%.1f\" y=\"%d\" width=\"70\" height=\"24\" "
			"rx=\"4\" fill=\"#e8f2e0\" stroke=\"#353\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
			x - 35, CTL_SVG_LEAFY - 12, x, CTL_SVG_LEAFY + 4);
		view_c4p_svg_text(fp, leaves[i]);
		fprintf(fp, "</text>\n");
	}
	fprintf(fp, "</svg>\n");
	if (fclose(fp) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

static int
view_c4p_fabric(struct ctl *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"svg", required_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
	C4__AdminRequest req = C4__ADMIN_REQUEST__INIT;
	const char **leaves = NULL, **spines = NULL, *svg = NULL;
	const C4__AdminReply *r;
	size_t nl = 0, ns = 0;
	C4__Envelope *env;
	struct json j;
	int ch, rc = 1;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "s:", longopts, NULL)) != -1) {
		if (ch != 's') {
			fprintf(stderr, "c4ctl: usage: fabric [--svg FILE]\n");
			return 2;
		}
		svg = optarg;
	}
	if (optind != argc) {
		fprintf(stderr, "c4ctl: usage: fabric [--svg FILE]\n");
		return 2;
	}
	req.op = C4__ADMIN_OP__ADMIN_FABRIC;
	env = ctl_admin_req(c, &req, "fabric");
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	leaves = calloc(CTL_NAMES_MAX, sizeof(*leaves));
	spines = calloc(CTL_NAMES_MAX, sizeof(*spines));
	if (leaves == NULL || spines == NULL)
		goto out;
	for (size_t i = 0; i < r->n_links; i++) {
		view_c4p_name_index(leaves, &nl, r->links[i]->a);
		view_c4p_name_index(spines, &ns, r->links[i]->b);
	}
	if (svg != NULL && view_c4p_svg(r, leaves, nl, spines, ns, svg) < 0)
		goto out;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "leaves");
		json_arr_begin(&j);
		for (size_t i = 0; i < nl; i++)
			json_str(&j, leaves[i]);
		json_arr_end(&j);
		json_key(&j, "spines");
		json_arr_begin(&j);
		for (size_t i = 0; i < ns; i++)
			json_str(&j, spines[i]);
		json_arr_end(&j);
		json_key(&j, "links");
		json_arr_begin(&j);
		for (size_t i = 0; i < r->n_links; i++)
			view_c4p_link_json(&j, r->links[i]);
		json_arr_end(&j);
		json_key(&j, "svg");
		json_str(&j, svg);
		json_obj_end(&j);
		json_end(&j);
	} else {
		/* leaves x spines: the busier direction's QPs, X when down */
		printf("%-12s", "LEAF\\SPINE");
		for (size_t s = 0; s < ns; s++)
			printf(" %8.8s", spines[s]);
		printf("\n");
		for (size_t l = 0; l < nl; l++) {
			printf("%-12.12s", leaves[l]);
			for (size_t s = 0; s < ns; s++) {
				char cell[32] = "";

				for (size_t i = 0; i < r->n_links; i++) {
					const C4__LinkState *k = r->links[i];
					size_t n = strlen(cell);

					if (strcmp(k->a, leaves[l]) != 0 ||
					    strcmp(k->b, spines[s]) != 0 ||
					    n >= sizeof(cell) - 12)
						continue;
					if (k->status ==
					    C4__LINK_STATUS__LINK_DOWN)
						snprintf(cell + n,
							 sizeof(cell) - n,
							 "%sX", n ? "," : "");
					else
						snprintf(cell + n,
							 sizeof(cell) - n,
							 "%s%u", n ? "," : "",
							 k->qps_up > k->qps_down
								 ? k->qps_up
								 : k->qps_down);
				}
				printf(" %8s", cell[0] ? cell : ".");
			}
			printf("\n");
		}
		printf("cells: QPs on the busier direction of each link "
		       "(X: down)%s%s\n",
		       svg ? "; picture in " : "", svg ? svg : "");
	}
	rc = 0;
out:
	free(leaves);
	free(spines);
	msg_free(env);
	cli_close(&c->cli);
	return rc;
}

/* A probe round now: the agents' results refresh the catalog. */
static int
view_c4p_probe(struct ctl *c, int argc, char **argv)
{
	const C4__AdminReply *r;
	C4__Envelope *env;
	struct json j;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "c4ctl: usage: probe\n");
		return 2;
	}
	env = ctl_admin(c, C4__ADMIN_OP__ADMIN_PROBE, 0);
	if (env == NULL)
		return 1;
	r = env->admin_reply;
	if (c->json) {
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "round");
		json_u64(&j, r->probe_round);
		json_key(&j, "tasks");
		json_u64(&j, r->probe_tasks);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("probe round %llu: %u tasks sent to agents\n",
		       (unsigned long long)r->probe_round, r->probe_tasks);
	}
	msg_free(env);
	cli_close(&c->cli);
	return 0;
}

int
view_c4p_run(struct ctl *c, const char *cmd, int argc, char **argv)
{
	if (strcmp(cmd, "probe") == 0)
		return view_c4p_probe(c, argc, argv);
	if (strcmp(cmd, "paths") == 0)
		return view_c4p_paths(c, argc, argv);
	if (strcmp(cmd, "links") == 0)
		return view_c4p_links(c, argc, argv);
	if (strcmp(cmd, "link") == 0)
		return view_c4p_link_set(c, argc, argv);
	if (strcmp(cmd, "alloc") == 0)
		return view_c4p_alloc(c, argc, argv);
	return view_c4p_fabric(c, argc, argv);
}
