/*
 * test_hosts.c - the job's hosts: lookup and ids, NICs and GPUs, the
 * queue of windows per host, which hosts count as heard, and a host whose
 * agent stops reporting becoming a lost node.
 */
#include <check.h>
#include <stdlib.h>

#include "fixture.h"
#include "fnv.h"
#include "hosts.h"
#include "ingest.h"

START_TEST(test_hosts_names)
{
	struct hosts hs;
	struct hosts_entry *a, *b;
	uint32_t ia, ib, id;
	uint16_t n0, n1, n2;

	memset(&hs, 0, sizeof(hs));
	ck_assert_ptr_null(hosts_find(&hs, "node-a", 0, &id));
	a = hosts_find(&hs, "node-a", 1, &ia);
	ck_assert_ptr_nonnull(a);
	b = hosts_find(&hs, "node-b", 1, &ib);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(ia, 0);
	ck_assert_uint_eq(ib, 1);
	ck_assert_ptr_nonnull(hosts_find(&hs, "node-a", 0, &id));
	ck_assert_uint_eq(id, 0);
	ck_assert_uint_eq(hs.n, 2);

	b = &hs.v[ib];
	ck_assert_int_eq(hosts_nic(b, "mlx5_0", &n0), 0);
	ck_assert_int_eq(hosts_nic(b, NULL, &n1), 0);
	ck_assert_int_eq(hosts_nic(b, "mlx5_0", &n2), 0);
	ck_assert_uint_eq(n0, n2);
	ck_assert_uint_ne(n0, n1);
	ck_assert_str_eq(hosts_name(&hs, ib), "node-b");
	ck_assert_str_eq(hosts_nic_name(&hs, ib, n0), "mlx5_0");
	ck_assert_str_eq(hosts_nic_name(&hs, ib, n1), "-");
	ck_assert_str_eq(hosts_name(&hs, 7), "?");
	ck_assert_str_eq(hosts_nic_name(&hs, ia, 0), "?");

	/* a GPU counts once; GPUs from 256 up are not kept */
	hosts_add_gpu(&hs.v[ia], 3);
	hosts_add_gpu(&hs.v[ia], 3);
	hosts_add_gpu(&hs.v[ib], 200);
	hosts_add_gpu(&hs.v[ib], 300);
	ck_assert_uint_eq(hosts_ranks_known(&hs), 2);
	ck_assert_uint_eq(fnv1a64(FNV1A64_INIT, "", 0), FNV1A64_INIT);
	hosts_free(&hs);
}
END_TEST

/* Windows here hold no records: their ncoll tells them apart. */
static int
take_interval(const struct hosts_window *w, void *arg)
{
	uint64_t *seen = arg;

	*seen = w->ncoll;
	return 0;
}

/* Queues a window marked iv on h; returns whether one was dropped. */
static int
queue(struct hosts_entry *h, uint64_t iv)
{
	int dropped;
	struct hosts_window *w = hosts_slot(h, &dropped);

	w->ncoll = iv;
	hosts_push(h);
	return dropped;
}

START_TEST(test_hosts_queue)
{
	struct hosts hs;
	struct hosts_entry *h;
	uint32_t *heard = NULL, id;
	size_t cheard = 0, nheard = 0;
	uint64_t seen = 0;

	memset(&hs, 0, sizeof(hs));
	ck_assert_ptr_nonnull(hosts_find(&hs, "node-a", 1, &id));
	h = hosts_find(&hs, "node-b", 1, &id);
	/* node-b sends faster than analysed: the oldest window goes */
	for (uint64_t iv = 1; iv <= INGEST_QUEUE_MAX; iv++)
		ck_assert_int_eq(queue(h, iv), 0);
	ck_assert_int_eq(queue(h, INGEST_QUEUE_MAX + 1), 1);

	ck_assert_int_eq(hosts_collect(&hs, take_interval, &seen, &heard,
				       &cheard, &nheard),
			 0);
	ck_assert_uint_eq(seen, 2);
	ck_assert_uint_eq(nheard, 1);
	ck_assert_uint_eq(heard[0], id);
	/* windows still queued: heard again without a new message */
	for (unsigned i = 0; i < INGEST_QUEUE_MAX - 1; i++)
		ck_assert_int_eq(hosts_collect(&hs, take_interval, &seen,
					       &heard, &cheard, &nheard),
				 0);
	ck_assert_uint_eq(seen, INGEST_QUEUE_MAX + 1);
	ck_assert_uint_eq(nheard, 1);
	/* the queue is empty and nothing came: nobody is heard */
	ck_assert_int_eq(hosts_collect(&hs, take_interval, &seen, &heard,
				       &cheard, &nheard),
			 0);
	ck_assert_uint_eq(nheard, 0);
	free(heard);
	hosts_free(&hs);
}
END_TEST

START_TEST(test_hosts_lost)
{
	struct ingest_params p = {.hang_intervals = 100, .node_intervals = 2};
	struct fx_seen seen = {0};
	struct ingest *g = ingest_new("job-7", &p, fx_record, &seen);
	struct msg_err err = {0};
	struct fx_comm c;
	C4__TelemetryBatch b;
	uint64_t iv;

	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(
		ingest_register(g, fx_comm(&c, 0xc0, 2, 0, 2), NULL, &err), 0);
	for (iv = 1; iv <= 3; iv++) {
		ck_assert_int_eq(ingest_telemetry(g, "node-0",
						  fx_heartbeat(&b, "", iv),
						  NULL, &err),
				 0);
		ck_assert_int_eq(
			ingest_telemetry(g, NULL,
					 fx_heartbeat(&b, "node-1", iv), NULL,
					 &err),
			0);
		ck_assert_int_eq(ingest_tick(g, iv * 1000000000ull), 0);
	}
	ck_assert_uint_eq(seen.n, 0);
	/* node-1's agent stops: two intervals later the node is lost */
	for (; iv <= 5; iv++) {
		ck_assert_int_eq(ingest_telemetry(g, "node-0",
						  fx_heartbeat(&b, "", iv),
						  NULL, &err),
				 0);
		ck_assert_int_eq(ingest_tick(g, iv * 1000000000ull), 0);
	}
	ck_assert_uint_ge(seen.n, 1);
	ck_assert_int_eq(seen.state[0], C4__EVENT_STATE__EVENT_OPEN);
	ck_assert_int_eq(seen.kind[0], C4__EVENT_KIND__EVENT_NODE_LOST);
	ck_assert_str_eq(seen.host[0], "node-1");
	ck_assert_uint_eq(ingest_get_stats(g)->hosts, 2);
	ck_assert_uint_eq(ingest_get_stats(g)->events_open, 1);
	ingest_free(g);
}
END_TEST

int
main(void)
{
	const TTest *const tests[] = {test_hosts_names, test_hosts_queue,
				      test_hosts_lost};

	return fx_main("hosts", tests, sizeof(tests) / sizeof(tests[0]));
}
