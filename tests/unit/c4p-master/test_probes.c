/*
 * test_probes.c - probe rounds: a round plans tasks and sends those of a
 * host to its agent only; a result for a task of the round is taken (and
 * ends the round when it was the last), one for no such task is not; an
 * unresolvable path is rejected by probes_resolve().
 */
#include "tc4p.h"
#include "tmain.h"

START_TEST(test_round_and_results)
{
	struct tc4p *x = tc4p_new();
	struct c4p_sess agent, other;
	C4__ProbeResult r = C4__PROBE_RESULT__INIT;
	C4__ProbeTask *task;
	size_t pending;
	uint64_t round;

	tc4p_sess_init(&agent);
	tc4p_sess_init(&other);
	probes_agent(x->p.probes, &agent, "h0");
	ck_assert_uint_eq(agent.host, 0);
	probes_agent(x->p.probes, &other, "not-a-host");
	ck_assert_uint_eq(other.host, TOPO_NONE);
	ck_assert_int_eq(probes_round(x->p.probes, "test"), 0);
	round = probes_rounds(x->p.probes, &pending);
	ck_assert_uint_eq(round, 1);
	ck_assert_uint_gt(pending, 0);
	ck_assert_uint_eq(x->nsent, pending);
	ck_assert_uint_gt(x->p.st.probe_no_agent, 0); /* other hosts */
	task = c4__probe_task__unpack(NULL, x->sent[0].len, x->sent[0].buf);
	ck_assert_ptr_eq(x->sent[0].sess, &agent);
	ck_assert_uint_eq(task->max_ttl, C4_PROBE_TTL);
	ck_assert_uint_ge(task->n_sports, 4);
	/* from the wrong session, or for no task: not taken */
	r.has_task_id = 1;
	r.task_id = task->task_id;
	ck_assert_int_eq(probes_result(x->p.probes, &other, &r), -1);
	r.task_id = task->task_id + 100000;
	ck_assert_int_eq(probes_result(x->p.probes, &agent, &r), -1);
	/* every task answered (no paths): the round ends */
	for (size_t i = 0; i < x->nsent; i++) {
		C4__ProbeTask *t = c4__probe_task__unpack(NULL, x->sent[i].len,
							  x->sent[i].buf);

		r.task_id = t->task_id;
		ck_assert_int_eq(probes_result(x->p.probes, &agent, &r), 0);
		ck_assert_int_eq(probes_result(x->p.probes, &agent, &r), -1);
		c4__probe_task__free_unpacked(t, NULL);
	}
	probes_rounds(x->p.probes, &pending);
	ck_assert_uint_eq(pending, 0);
	c4__probe_task__free_unpacked(task, NULL);
	probes_agent_gone(x->p.probes, &agent);
	tc4p_free(x);
}
END_TEST

START_TEST(test_resolve_rejects)
{
	struct tc4p *x = tc4p_new();
	const struct topo *t = x->p.topo;
	C4__ProbePath pp = C4__PROBE_PATH__INIT;
	C4__ProbeHop h = C4__PROBE_HOP__INIT, *hops[1] = {&h};
	struct probe_result res;
	uint32_t sip = t->ports[tfab_port(t, 0, 0, TOPO_LEFT)].ip;
	uint32_t dip = t->ports[tfab_port(t, 2, 0, TOPO_LEFT)].ip;

	pp.sport = 49152;
	/* no hops at all */
	ck_assert_int_eq(probes_resolve(t, sip, dip, TOPO_LEFT, &pp, &res), -1);
	ck_assert_uint_eq(res.sport, 49152);
	ck_assert_uint_eq(res.up_link, TOPO_NONE);
	/* a first hop that is no leaf port of ours */
	h.has_ttl = h.has_sent = h.has_received = 1;
	h.ttl = 1;
	h.sent = h.received = 1;
	h.addr = "192.0.2.1";
	pp.hops = hops;
	pp.n_hops = 1;
	ck_assert_int_eq(probes_resolve(t, sip, dip, TOPO_LEFT, &pp, &res), -1);
	/* an unknown source */
	ck_assert_int_eq(probes_resolve(t, 1, dip, TOPO_LEFT, &pp, &res), -1);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-probes", test_round_and_results, test_resolve_rejects)
