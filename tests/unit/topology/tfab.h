/*
 * tfab.h: small fabrics for the lib/topology unit tests.
 *
 * tfab_new(spines, mult, bonded): 4 leaves in 2 pairs (leaf0/leaf1,
 * leaf2/leaf3), every leaf cabled to every spine with mult 400G cables;
 * hosts h0, h1 on pair 0 and h2, h3 on pair 1, two 200G NICs each, NIC n
 * of host h with IP 10.0.h.(2n) (and 10.0.h.(2n+1) on the right port when
 * not bonded). Left ports on leaf0/leaf2, right ports on leaf1/leaf3.
 */
#ifndef C4_TEST_TFAB_H
#define C4_TEST_TFAB_H

#include <check.h>
#include <stdio.h>

#include "topo.h"

static inline uint32_t
tfab_ip(uint32_t host, uint32_t nic, uint32_t side, bool bonded)
{
	return (10u << 24) | host << 8 | (nic * 2 + (bonded ? 0 : side));
}

static inline struct topo *
tfab_new(uint32_t spines, uint32_t mult, bool bonded)
{
	struct topo *t = topo_new();
	char err[TOPO_ERR_MAX], name[TOPO_NAME_MAX];
	uint32_t i, j;

	ck_assert_ptr_nonnull(t);
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "leaf%u", i);
		ck_assert_uint_eq(
			topo_add_leaf(t, name, 0, 0, err, sizeof(err)), i);
	}
	for (i = 0; i < spines; i++) {
		snprintf(name, sizeof(name), "spine%u", i);
		ck_assert_uint_ne(
			topo_add_spine(t, name, 0, 0, err, sizeof(err)),
			TOPO_NONE);
	}
	for (i = 0; i < 4; i++)
		for (j = 0; j < spines; j++)
			ck_assert_uint_ne(topo_add_links(t, i, j, mult, 400,
							 err, sizeof(err)),
					  TOPO_NONE);
	for (i = 0; i < 4; i++) {
		uint32_t pair = i / 2, h;

		snprintf(name, sizeof(name), "h%u", i);
		h = topo_add_host(t, name, err, sizeof(err));
		ck_assert_uint_eq(h, i);
		for (j = 0; j < 2; j++) {
			snprintf(name, sizeof(name), "nic%u", j);
			ck_assert_uint_ne(topo_add_nic(t, h, name, 2 * pair,
						       tfab_ip(i, j, 0, bonded),
						       2 * pair + 1,
						       tfab_ip(i, j, 1, bonded),
						       200, err, sizeof(err)),
					  TOPO_NONE);
		}
	}
	if (topo_finalize(t, err, sizeof(err)) < 0)
		ck_abort_msg("finalize: %s", err);
	return t;
}

/* Port id of NIC nic of host h on side s. */
static inline uint32_t
tfab_port(const struct topo *t, uint32_t h, uint32_t nic, uint32_t s)
{
	return t->nics[t->hosts[h].first_nic + nic].port[s];
}

#endif /* C4_TEST_TFAB_H */
