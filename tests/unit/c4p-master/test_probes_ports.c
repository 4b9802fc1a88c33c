/*
 * test_probes_ports.c - a probe task never carries more source ports than
 * an agent takes (C4_PROBE_SOCKS_MAX): the master's bound is the agent's,
 * and a floor above it (probe.ports) is cut down to it.
 */
#include "tc4p.h"
#include "tmain.h"

START_TEST(test_probe_ports_agent_limit)
{
	struct tc4p *x = tc4p_new();
	struct c4p_sess agent;
	size_t pending;

	ck_assert_uint_le(C4P_PROBE_PORTS_MAX, C4_PROBE_SOCKS_MAX);
	tc4p_sess_init(&agent);
	probes_agent(x->p.probes, &agent, "h0");
	/* above the agent's limit, as probe.ports up to 1,024 once allowed */
	x->conf.probe.ports = 2 * C4_PROBE_SOCKS_MAX;
	ck_assert_int_eq(probes_round(x->p.probes, "test"), 0);
	probes_rounds(x->p.probes, &pending);
	ck_assert_uint_gt(pending, 0);
	ck_assert_uint_eq(x->nsent, pending);
	for (size_t i = 0; i < x->nsent; i++) {
		C4__ProbeTask *t = c4__probe_task__unpack(NULL, x->sent[i].len,
							  x->sent[i].buf);

		ck_assert_ptr_nonnull(t);
		ck_assert_uint_eq(t->n_sports, C4_PROBE_SOCKS_MAX);
		c4__probe_task__free_unpacked(t, NULL);
	}
	probes_agent_gone(x->p.probes, &agent);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-master-probes-ports", test_probe_ports_agent_limit)
