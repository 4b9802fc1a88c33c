/*
 * fault.c: impairments of a cable beyond up/down: random or burst loss
 * (nftables netdev ingress chains, one table per cable end) and delay (a
 * netem qdisc under the cable end's tbf), each in one direction or both.
 */
#include <stdio.h>
#include <string.h>

#include "c4fabric.h"

/*
 * The end of cable l whose ingress sees direction dir (UP: leaf->spine
 * arrives at the spine end; DOWN: at the leaf end), as e = 0 leaf, 1
 * spine: true when end e takes part.
 */
static bool
fault_ingress(enum fault_dir dir, int e)
{
	return dir == FAULT_BOTH || (dir == FAULT_UP ? e == 1 : e == 0);
}

static void
fault_ns(const struct fab *f, uint32_t l, int e, char *ns, size_t len)
{
	const struct topo_link *lk = &f->t->links[l];

	plan_ns(f, e == 0 ? FAB_LEAF : FAB_SPINE, e == 0 ? lk->leaf : lk->spine,
		ns, len);
}

int
fault_drop(const struct fab *f, uint32_t l, enum fault_dir dir, double pct,
	   unsigned burst)
{
	static const char *const argv[] = {"nft", "-f", "-", NULL};
	struct fab_buf b = {0};
	char ns[FAB_NS_MAX];
	int rc = 0;

	for (int e = 0; e < 2 && rc == 0; e++) {
		char match[96] = "";
		unsigned ppm = (unsigned)(pct * 10000.0 + 0.5);

		fault_ns(f, l, e, ns, sizeof(ns));
		b.len = 0;
		/* "add" then "delete" makes the delete safe when absent; an
		 * end outside dir loses what it had */
		buf_printf(&b, "table netdev c4f_loss_c%u {}\n", l);
		buf_printf(&b, "delete table netdev c4f_loss_c%u\n", l);
		if (pct > 0 && fault_ingress(dir, e)) {
			if (burst > 0 && ppm < 1000000) {
				/* burst consecutive packets of every period */
				unsigned period =
					(unsigned)(burst * 100.0 / pct + 0.5);

				snprintf(match, sizeof(match),
					 "numgen inc mod %u < %u ",
					 period > burst ? period : burst + 1,
					 burst);
			} else if (ppm < 1000000) {
				/* numgen's values stop below its modulus */
				snprintf(match, sizeof(match),
					 "numgen random mod 1000000 < %u ",
					 ppm);
			}
			buf_printf(
				&b,
				"table netdev c4f_loss_c%u {\n"
				"  chain in {\n"
				"    type filter hook ingress device \"c%u\" "
				"priority 0;\n"
				"    %sdrop\n"
				"  }\n"
				"}\n",
				l, l, match);
		}
		rc = run_cmd(ns, argv, &b, NULL, false);
	}
	buf_free(&b);
	return rc;
}

int
fault_delay(const struct fab *f, uint32_t l, enum fault_dir dir, double ms)
{
	static const char *const del[] = {"tc", "qdisc",  "del", "dev",
					  NULL, "parent", "1:1", NULL};
	struct fab_buf b = {0};
	char ns[FAB_NS_MAX], ifn[FAB_IFNAME_MAX];
	int rc = 0;

	snprintf(ifn, sizeof(ifn), "c%u", l);
	for (int e = 0; e < 2 && rc == 0; e++) {
		const char *argv[8];

		/* delay is an egress matter: the sending end of dir */
		fault_ns(f, l, e, ns, sizeof(ns));
		memcpy(argv, del, sizeof(argv));
		argv[4] = ifn;
		/* no netem there is fine: nothing to remove */
		(void)run_cmd(ns, argv, NULL, NULL, true);
		if (ms <= 0 || !fault_ingress(dir, 1 - e))
			continue;
		b.len = 0;
		buf_printf(&b,
			   "qdisc replace dev %s parent 1:1 handle 10: netem "
			   "delay %.3fms\n",
			   ifn, ms);
		rc = run_tc(ns, &b);
	}
	buf_free(&b);
	return rc;
}
