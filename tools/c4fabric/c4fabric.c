/*
 * c4fabric: a C4P fabric in network namespaces, from the topology YAML that
 * c4p-master reads (see docs/c4p.md, "Real fabric in namespaces").
 *
 *   c4fabric -t TOPO [-p PREFIX] [--scale MBIT_PER_GBPS] [--seed N] CMD
 *     up | down | status | whois ADDR
 *     link down|up LINK | link loss|burst|delay LINK ... [up|down]
 *     port down|up HOST/NIC/left|right | switch down|up LEAF|SPINE
 *     exec NODE -- CMD...
 *
 * Runs as root. "up" removes what an earlier run left, then builds the
 * fabric; on any failure or signal it removes everything it made and exits
 * non-zero. "down" removes every namespace whose name starts with PREFIX.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrplan.h"
#include "c4fabric.h"
#include "nic.h"
#include "topo_yaml.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
		"usage: c4fabric -t TOPOLOGY.yaml [-p PREFIX] [--scale M] "
		"[--seed N] [-v] COMMAND\n"
		"  up                     build the fabric (cleans up first)\n"
		"  down                   remove every PREFIX namespace\n"
		"  status                 namespaces and cables\n"
		"  whois ADDR             the cable end or port of an address\n"
		"  link down|up LINK      both ends of a cable (leaf0-spine0)\n"
		"  link loss LINK PCT [DIR]        random loss (0: none)\n"
		"  link burst LINK PCT LEN [DIR]   LEN packets in a row, PCT "
		"in all\n"
		"  link delay LINK MS [DIR]        netem delay (0: none)\n"
		"    DIR: up (leaf to spine), down (spine to leaf); both when "
		"absent\n"
		"  port down|up HOST/NIC/left|right\n"
		"  switch down|up LEAF|SPINE  every cable (and a leaf's "
		"ports)\n"
		"  exec NODE -- CMD...    run CMD in a host/leaf/spine "
		"namespace\n"
		"  --scale M: Mbit/s of emulated rate per Gbit/s of topology "
		"(default %g)\n"
		"  -p PREFIX: namespace name prefix (default %s)\n",
		FAB_SCALE_DEFAULT, FAB_PREFIX_DEFAULT);
}

/* Removes every namespace named PREFIX*; 0, or -1 if one would not go. */
static int
fab_down(const struct fab *f)
{
	struct fab_buf list = {0}, b = {0};
	size_t i;
	int rc;

	if (run_ns_list(f->prefix, &list) < 0) {
		fprintf(stderr, "c4fabric: list %s: %s\n", FAB_NETNS_DIR,
			strerror(errno));
		return -1;
	}
	for (i = 0; i < list.len; i += strlen(list.p + i) + 1)
		buf_printf(&b, "netns del %s\n", list.p + i);
	rc = run_ip(NULL, &b);
	buf_free(&b);
	buf_free(&list);
	return rc;
}

/* Sysctls of a switch or host namespace, set before its interfaces exist
 * so that the "default" values reach them too. */
static int
fab_sysctls(const struct fab *f, enum fab_node kind, uint32_t id)
{
	static const char *const common[][2] = {
		{"net.ipv4.conf.all.rp_filter", "0"},
		{"net.ipv4.conf.default.rp_filter", "0"},
		{"net.ipv4.conf.all.ignore_routes_with_linkdown", "1"},
		{"net.ipv4.conf.default.ignore_routes_with_linkdown", "1"},
		{"net.ipv4.fib_multipath_hash_policy", "3"},
		{"net.ipv4.fib_multipath_hash_fields", "0x37"},
		{"net.ipv4.icmp_ratelimit", "0"},
		{"net.ipv4.icmp_msgs_per_sec", "1000000"},
		{"net.ipv4.icmp_msgs_burst", "1000000"},
	};
	static const char *const sw[][2] = {
		{"net.ipv4.ip_forward", "1"},
		{"net.ipv4.conf.all.forwarding", "1"},
		{"net.ipv4.icmp_errors_use_inbound_ifaddr", "1"},
	};
	char ns[FAB_NS_MAX], seed[16];
	size_t i;
	int back, rc = 0;

	plan_ns(f, kind, id, ns, sizeof(ns));
	if (run_ns_enter(ns, &back) < 0)
		return -1;
	for (i = 0; i < sizeof(common) / sizeof(common[0]) && rc == 0; i++)
		rc = run_sysctl(common[i][0], common[i][1]);
	if (kind != FAB_HOST) {
		for (i = 0; i < sizeof(sw) / sizeof(sw[0]) && rc == 0; i++)
			rc = run_sysctl(sw[i][0], sw[i][1]);
		snprintf(seed, sizeof(seed), "%u", plan_seed(f, kind, id));
		if (rc == 0)
			rc = run_sysctl("net.ipv4.fib_multipath_hash_seed",
					seed);
	}
	run_ns_leave(back);
	if (rc < 0)
		fprintf(stderr, "c4fabric: in namespace %s\n", ns);
	return rc;
}

/*
 * Steps of "up" for every node, in order: sysctls (before the interfaces
 * exist, so that "default" reaches them), interfaces and rates, routes
 * (nexthops need carrier, so every interface is up by then).
 */
enum fab_step { FAB_SYSCTLS, FAB_IFS, FAB_ROUTES };

/* One step for one node. */
static int
fab_node_step(const struct fab *f, enum fab_node kind, uint32_t id,
	      enum fab_step step, const bool *live)
{
	struct fab_buf b = {0}, tc = {0};
	char ns[FAB_NS_MAX];
	int rc;

	if (step == FAB_SYSCTLS)
		return fab_sysctls(f, kind, id);
	plan_ns(f, kind, id, ns, sizeof(ns));
	if (step == FAB_IFS) {
		if (kind == FAB_HOST)
			plan_host_ifs(f, id, &b);
		else
			plan_switch_ifs(f, kind, id, &b);
		plan_tc(f, kind, id, &tc);
	} else if (kind == FAB_HOST) {
		plan_host_routes(f, id, &b);
	} else {
		plan_routes(f, kind, id, live, TOPO_NONE, &b);
	}
	rc = run_ip(ns, &b);
	if (rc == 0)
		rc = run_tc(ns, &tc);
	buf_free(&b);
	buf_free(&tc);
	return rc;
}

/* One step for every node, until one fails or a signal came. */
static int
fab_each(const struct fab *f, enum fab_step step, const bool *live)
{
	static const enum fab_node kinds[] = {FAB_HOST, FAB_LEAF, FAB_SPINE};
	uint32_t n[] = {f->t->nhosts, f->t->nleaves, f->t->nspines};

	for (int k = 0; k < 3; k++) {
		for (uint32_t i = 0; i < n[k]; i++) {
			if (fab_stop)
				return -1;
			if (fab_node_step(f, kinds[k], i, step, live) < 0)
				return -1;
		}
	}
	return 0;
}

static int
fab_up(const struct fab *f)
{
	struct fab_buf b = {0};
	bool *live = NULL;
	int rc = -1;

	if (fab_down(f) < 0)
		return -1;
	live = malloc(((size_t)f->t->nlinks + 1) * sizeof(*live));
	if (live == NULL)
		goto out;
	for (uint32_t i = 0; i < f->t->nlinks; i++)
		live[i] = true;
	plan_netns_add(f, &b);
	if (run_ip(NULL, &b) < 0 || fab_stop)
		goto out;
	if (fab_each(f, FAB_SYSCTLS, live) < 0)
		goto out;
	b.len = 0;
	plan_veths(f, &b);
	if (run_ip(NULL, &b) < 0 || fab_stop)
		goto out;
	if (fab_each(f, FAB_IFS, live) < 0 || fab_each(f, FAB_ROUTES, live) < 0)
		goto out;
	rc = 0;
out:
	free(live);
	buf_free(&b);
	if (rc < 0) {
		if (fab_stop)
			fprintf(stderr, "c4fabric: interrupted\n");
		fprintf(stderr, "c4fabric: up failed; removing the fabric\n");
		fab_down(f);
	}
	return rc;
}

/* Which cables of switch ns have carrier (both veth ends up). */
static int
fab_live(const struct fab *f, const char *ns, bool *live)
{
	static const char *const argv[] = {"ip", "-o", "link", "show", NULL};
	struct fab_buf out = {0};
	char *line, *save = NULL;

	if (run_cmd(ns, argv, NULL, &out, false) < 0)
		return -1;
	buf_printf(&out, "%c", '\0');
	for (line = strtok_r(out.p, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned l;
		char *flags = strchr(line, '<');

		if (sscanf(line, "%*u: c%u", &l) != 1 || l >= f->t->nlinks ||
		    flags == NULL)
			continue;
		live[l] = strstr(flags, ",UP") != NULL &&
			  strstr(flags, "LOWER_UP") != NULL;
	}
	buf_free(&out);
	return 0;
}

/* Sets both ends of cable l up or down; on up restores the routes. */
static int
fab_link_updown(const struct fab *f, uint32_t l, bool up)
{
	const struct topo_link *lk = &f->t->links[l];
	char ns[2][FAB_NS_MAX];
	enum fab_node kind[2] = {FAB_LEAF, FAB_SPINE};
	uint32_t id[2] = {lk->leaf, lk->spine};
	struct fab_buf b = {0};
	bool *live;
	int rc = 0;

	live = calloc((size_t)f->t->nlinks + 1, sizeof(*live));
	if (live == NULL)
		return -1;
	for (int e = 0; e < 2 && rc == 0; e++) {
		plan_ns(f, kind[e], id[e], ns[e], sizeof(ns[e]));
		b.len = 0;
		buf_printf(&b, "link set c%u %s\n", l, up ? "up" : "down");
		rc = run_ip(ns[e], &b);
	}
	/* the kernel drops a downed cable's nexthop from every group; an up
	 * cable has to be put back (and groups that emptied recreated) */
	for (int e = 0; e < 2 && rc == 0 && up; e++) {
		rc = fab_live(f, ns[e], live);
		if (rc < 0)
			break;
		b.len = 0;
		plan_routes(f, kind[e], id[e], live, l, &b);
		rc = run_ip(ns[e], &b);
	}
	free(live);
	buf_free(&b);
	return rc;
}

/* Both ends of NIC port p up or down (the leaf keeps its /32 route). */
static int
fab_port_updown(const struct fab *f, uint32_t p, bool up)
{
	const struct topo_port *pp = &f->t->ports[p];
	char ns[FAB_NS_MAX], ifn[FAB_IFNAME_MAX], ip[16];
	struct fab_buf b = {0};
	int rc;

	plan_ns(f, FAB_HOST, f->t->nics[pp->nic].host, ns, sizeof(ns));
	plan_host_if(f->t, p, ifn, sizeof(ifn));
	buf_printf(&b, "link set %s %s\n", ifn, up ? "up" : "down");
	rc = run_ip(ns, &b);
	if (rc < 0)
		goto out;
	b.len = 0;
	plan_ns(f, FAB_LEAF, pp->leaf, ns, sizeof(ns));
	buf_printf(&b, "link set p%u %s\n", p, up ? "up" : "down");
	if (up) {
		topo_ip_format(pp->ip, ip, sizeof(ip));
		buf_printf(&b, "route replace %s/32 dev p%u\n", ip, p);
	}
	rc = run_ip(ns, &b);
	if (rc == 0 && up) {
		/* an admin-down device loses its routes: restore the host's */
		b.len = 0;
		plan_ns(f, FAB_HOST, f->t->nics[pp->nic].host, ns, sizeof(ns));
		plan_host_routes(f, f->t->nics[pp->nic].host, &b);
		rc = run_ip(ns, &b);
	}
out:
	buf_free(&b);
	return rc;
}

/*
 * A whole switch fails or comes back: every cable of a leaf or spine, and
 * a leaf's NIC ports (the hosts see their link go down). 0 or -1.
 */
static int
fab_switch_updown(const struct fab *f, const char *name, bool up)
{
	uint32_t leaf = topo_leaf_by_name(f->t, name);
	uint32_t spine = topo_spine_by_name(f->t, name);
	uint32_t i;
	int rc = 0;

	if (leaf == TOPO_NONE && spine == TOPO_NONE) {
		fprintf(stderr, "c4fabric: no leaf or spine %s\n", name);
		return -1;
	}
	for (i = 0; i < f->t->nlinks && rc == 0 && !fab_stop; i++)
		if (f->t->links[i].leaf == leaf ||
		    f->t->links[i].spine == spine)
			rc = fab_link_updown(f, i, up);
	for (i = 0; i < f->t->nports && rc == 0 && !fab_stop; i++)
		if (f->t->ports[i].leaf == leaf)
			rc = fab_port_updown(f, i, up);
	return rc;
}

/* The optional direction argument at argv[i] (argc bounds it); -1 bad. */
static int
fab_dir(int argc, char **argv, int i, enum fault_dir *dir)
{
	*dir = FAULT_BOTH;
	if (i >= argc)
		return 0;
	if (strcmp(argv[i], "up") == 0)
		*dir = FAULT_UP;
	else if (strcmp(argv[i], "down") == 0)
		*dir = FAULT_DOWN;
	else if (strcmp(argv[i], "both") != 0)
		return -1;
	return i + 1 == argc ? 0 : -1;
}

/* link loss|burst|delay LINK ARGS... [DIR]: exit status of the command. */
static int
fab_impair(const struct fab *f, const char *op, uint32_t l, int argc,
	   char **argv, int i)
{
	bool burst = strcmp(op, "burst") == 0;
	unsigned len = 0;
	enum fault_dir dir;
	double v;
	char *end;

	if (i >= argc)
		return 2;
	v = strtod(argv[i], &end);
	if (*end != '\0' || !(v >= 0 && v <= (op[0] == 'd' ? 60000 : 100))) {
		fprintf(stderr, "c4fabric: bad %s %s\n", op, argv[i]);
		return 2;
	}
	if (burst) {
		if (i + 1 >= argc)
			return 2;
		len = (unsigned)strtoul(argv[i + 1], &end, 10);
		if (*end != '\0' || len == 0 || len > 10000) {
			fprintf(stderr, "c4fabric: bad burst length %s\n",
				argv[i + 1]);
			return 2;
		}
		i++;
	}
	if (fab_dir(argc, argv, i + 1, &dir) < 0) {
		fprintf(stderr, "c4fabric: direction is up, down or both\n");
		return 2;
	}
	if (op[0] != 'd')
		return fault_drop(f, l, dir, v, len) == 0 ? 0 : 1;
	if (fault_delay(f, l, dir, v) == 0)
		return 0;
	fprintf(stderr, "c4fabric: delay needs tc's netem qdisc (sch_netem), "
			"which this kernel refused\n");
	return 3;
}

/* Namespace of a node name (host, leaf or spine); -1 if unknown. */
static int
fab_node_ns(const struct fab *f, const char *name, char *ns, size_t len)
{
	uint32_t id;

	if ((id = topo_host_by_name(f->t, name)) != TOPO_NONE)
		plan_ns(f, FAB_HOST, id, ns, len);
	else if ((id = topo_leaf_by_name(f->t, name)) != TOPO_NONE)
		plan_ns(f, FAB_LEAF, id, ns, len);
	else if ((id = topo_spine_by_name(f->t, name)) != TOPO_NONE)
		plan_ns(f, FAB_SPINE, id, ns, len);
	else
		return -1;
	return 0;
}

/* Prints what owns addr: "cable NAME leaf|spine", "port H/N/SIDE", "nic
 * H/N", or "none"; how a traceroute hop reads. */
static int
fab_whois(const struct fab *f, const char *s)
{
	char name[3 * TOPO_NAME_MAX];
	uint32_t addr, id, nic;

	if (topo_ip_parse(s, &addr) < 0) {
		fprintf(stderr, "c4fabric: bad address %s\n", s);
		return -1;
	}
	switch (addrplan_if_lookup(f->t, addr, &id)) {
	case ADDRPLAN_IF_CABLE_LEAF:
	case ADDRPLAN_IF_CABLE_SPINE:
		addrplan_link_name(f->t, id, name, sizeof(name));
		printf("cable %s %s\n", name,
		       addrplan_if_lookup(f->t, addr, NULL) ==
				       ADDRPLAN_IF_CABLE_LEAF
			       ? "leaf"
			       : "spine");
		return 0;
	case ADDRPLAN_IF_LEAF_PORT:
		nic = f->t->ports[id].nic;
		printf("port %s/%s/%s\n",
		       f->t->hosts[f->t->nics[nic].host].name,
		       f->t->nics[nic].name,
		       f->t->ports[id].side == TOPO_LEFT ? "left" : "right");
		return 0;
	default:
		break;
	}
	nic = topo_nic_by_ip(f->t, addr);
	if (nic != TOPO_NONE)
		printf("nic %s/%s\n", f->t->hosts[f->t->nics[nic].host].name,
		       f->t->nics[nic].name);
	else
		printf("none\n");
	return 0;
}

static int
fab_status(const struct fab *f)
{
	struct fab_buf list = {0};
	char ns[FAB_NS_MAX], name[3 * TOPO_NAME_MAX];
	bool *live;
	size_t n = 0, i;
	uint32_t l, down = 0;

	if (run_ns_list(f->prefix, &list) < 0)
		return -1;
	for (i = 0; i < list.len; i += strlen(list.p + i) + 1)
		n++;
	printf("namespaces %zu of %u\n", n,
	       f->t->nhosts + f->t->nleaves + f->t->nspines);
	buf_free(&list);
	if (n == 0)
		return 0;
	live = calloc((size_t)f->t->nlinks + 1, sizeof(*live));
	if (live == NULL)
		return -1;
	for (l = 0; l < f->t->nleaves; l++) {
		plan_ns(f, FAB_LEAF, l, ns, sizeof(ns));
		if (fab_live(f, ns, live) < 0) {
			free(live);
			return -1;
		}
	}
	for (l = 0; l < f->t->nlinks; l++) {
		addrplan_link_name(f->t, l, name, sizeof(name));
		printf("cable %s c%u %s\n", name, l, live[l] ? "up" : "down");
		down += !live[l];
	}
	printf("cables %u, down %u\n", f->t->nlinks, down);
	free(live);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"topology", required_argument, NULL, 't'},
		{"prefix", required_argument, NULL, 'p'},
		{"scale", required_argument, NULL, 's'},
		{"seed", required_argument, NULL, 'S'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fab f = {NULL, FAB_PREFIX_DEFAULT, FAB_SCALE_DEFAULT,
			FAB_SEED_DEFAULT, false};
	const char *topo_path = NULL, *cmd;
	struct cfg_diag d;
	char *end;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "+t:p:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			topo_path = optarg;
			break;
		case 'p':
			f.prefix = optarg;
			break;
		case 's':
			f.scale = strtod(optarg, &end);
			if (*end != '\0' || !(f.scale > 0 && f.scale <= 1e6)) {
				fprintf(stderr, "c4fabric: bad --scale %s\n",
					optarg);
				return 2;
			}
			break;
		case 'S':
			f.seed = (uint32_t)strtoul(optarg, &end, 0);
			if (*end != '\0') {
				fprintf(stderr, "c4fabric: bad --seed %s\n",
					optarg);
				return 2;
			}
			break;
		case 'v':
			f.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (topo_path == NULL || optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (strlen(f.prefix) == 0 || strlen(f.prefix) > 32 ||
	    strchr(f.prefix, '/') != NULL) {
		fprintf(stderr, "c4fabric: prefix must have 1 to 32 "
				"characters and no '/'\n");
		return 2;
	}
	if (topo_yaml_load(topo_path, &f.t, &d) < 0) {
		cfg_diag_print(&d, stderr);
		cfg_diag_free(&d);
		return 2;
	}
	cfg_diag_free(&d);
	run_signals();
	cmd = argv[optind++];
	if (strcmp(cmd, "up") == 0) {
		rc = fab_up(&f) == 0 ? 0 : 1;
	} else if (strcmp(cmd, "down") == 0) {
		rc = fab_down(&f) == 0 ? 0 : 1;
	} else if (strcmp(cmd, "whois") == 0 && optind < argc) {
		rc = fab_whois(&f, argv[optind]) == 0 ? 0 : 1;
	} else if (strcmp(cmd, "status") == 0) {
		rc = fab_status(&f) == 0 ? 0 : 1;
	} else if (strcmp(cmd, "link") == 0 && optind + 1 < argc) {
		const char *op = argv[optind];
		uint32_t l = addrplan_link_lookup(f.t, argv[optind + 1]);

		if (l == TOPO_NONE) {
			fprintf(stderr, "c4fabric: no cable %s\n",
				argv[optind + 1]);
		} else if (strcmp(op, "down") == 0 || strcmp(op, "up") == 0) {
			rc = fab_link_updown(&f, l, op[0] == 'u') == 0 ? 0 : 1;
		} else if (strcmp(op, "loss") == 0 ||
			   strcmp(op, "burst") == 0 ||
			   strcmp(op, "delay") == 0) {
			rc = fab_impair(&f, op, l, argc, argv, optind + 2);
			if (rc == 2)
				usage(stderr);
		} else {
			usage(stderr);
			rc = 2;
		}
	} else if (strcmp(cmd, "port") == 0 && optind + 1 < argc) {
		uint32_t p = nic_port_lookup(f.t, argv[optind + 1]);

		if (p == TOPO_NONE)
			fprintf(stderr, "c4fabric: no port %s\n",
				argv[optind + 1]);
		else if (strcmp(argv[optind], "down") == 0 ||
			 strcmp(argv[optind], "up") == 0)
			rc = fab_port_updown(&f, p, argv[optind][0] == 'u') == 0
				     ? 0
				     : 1;
		else
			usage(stderr);
	} else if (strcmp(cmd, "switch") == 0 && optind + 1 < argc &&
		   (strcmp(argv[optind], "down") == 0 ||
		    strcmp(argv[optind], "up") == 0)) {
		rc = fab_switch_updown(&f, argv[optind + 1],
				       argv[optind][0] == 'u') == 0
			     ? 0
			     : 1;
	} else if (strcmp(cmd, "exec") == 0 && optind + 2 < argc &&
		   strcmp(argv[optind + 1], "--") == 0) {
		char ns[FAB_NS_MAX];
		int back;

		if (fab_node_ns(&f, argv[optind], ns, sizeof(ns)) < 0) {
			fprintf(stderr, "c4fabric: no node %s\n", argv[optind]);
		} else if (run_ns_enter(ns, &back) == 0) {
			topo_free(f.t);
			execvp(argv[optind + 2], argv + optind + 2);
			fprintf(stderr, "c4fabric: exec %s: %s\n",
				argv[optind + 2], strerror(errno));
			return 127;
		}
	} else {
		usage(stderr);
		rc = 2;
	}
	topo_free(f.t);
	return rc;
}
