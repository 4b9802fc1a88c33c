/*
 * test_events.c - the event lifecycle: a detector's event opens once under
 * a stable public id, is updated with rising revisions and resolves; an
 * event adopted after a restart continues under its old id when the
 * detector sees it again, and resolves when it does not in time.
 */
#include <check.h>
#include <stdlib.h>

#include "events.h"
#include "evjson.h"
#include "fixture.h"

#define JX_MAX 16

/* Every published event as its JSON object, and every touch. */
struct jx_seen {
	size_t n;
	char *json[JX_MAX];
	size_t ntouch;
	char touch_id[JX_MAX][64];
	uint64_t touch_iv[JX_MAX], touch_ns[JX_MAX];
};

static void
jx_record(void *arg, const C4__Event *ev)
{
	struct jx_seen *s = arg;

	ck_assert_uint_lt(s->n, JX_MAX);
	s->json[s->n] = evjson_string(ev, NULL);
	ck_assert_ptr_nonnull(s->json[s->n]);
	s->n++;
}

static void
jx_touch(void *arg, const char *id, uint64_t last_interval,
	 uint64_t last_seen_ns)
{
	struct jx_seen *s = arg;

	ck_assert_uint_lt(s->ntouch, JX_MAX);
	snprintf(s->touch_id[s->ntouch], sizeof(s->touch_id[0]), "%s", id);
	s->touch_iv[s->ntouch] = last_interval;
	s->touch_ns[s->ntouch] = last_seen_ns;
	s->ntouch++;
}

static void
jx_free(struct jx_seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->json[i]);
	memset(s, 0, sizeof(*s));
}

/* The last published JSON has every piece of want, in order or not. */
#define JX_HAS(s, piece)                                                       \
	ck_assert_msg(strstr((s)->json[(s)->n - 1], piece) != NULL,            \
		      "%s\nlacks %s", (s)->json[(s)->n - 1], piece)

struct events_fx {
	struct hosts hosts;
	struct ingest_stats st;
	struct fx_seen seen;
	struct jx_seen js;
	struct events evs;
};

/* Hosts node-0 (NIC mlx5_0) and node-1 (NIC mlx5_1), ids 0 and 1. */
static void
efx_hosts(struct events_fx *f)
{
	uint32_t id;
	uint16_t nic;

	memset(f, 0, sizeof(*f));
	ck_assert_ptr_nonnull(hosts_find(&f->hosts, "node-0", 1, &id));
	ck_assert_int_eq(hosts_nic(&f->hosts.v[id], "mlx5_0", &nic), 0);
	ck_assert_ptr_nonnull(hosts_find(&f->hosts, "node-1", 1, &id));
	ck_assert_int_eq(hosts_nic(&f->hosts.v[id], "mlx5_1", &nic), 0);
}

static void
efx_init(struct events_fx *f)
{
	efx_hosts(f);
	events_init(&f->evs, "job-7", &f->hosts, &f->st, fx_record, &f->seen);
}

/* The same, publishing JSON objects into f->js and touching there too. */
static void
efx_init_json(struct events_fx *f)
{
	efx_hosts(f);
	events_init(&f->evs, "job-7", &f->hosts, &f->st, jx_record, &f->js);
	f->evs.touch = jx_touch;
}

static void
efx_done(struct events_fx *f)
{
	jx_free(&f->js);
	events_free(&f->evs);
	hosts_free(&f->hosts);
}

/* A slow receive side on node-0 mlx5_0, as the engine reports it. */
static const struct matrix_event *
slow_rx(struct matrix_event *e, uint64_t cid, uint8_t state)
{
	memset(e, 0, sizeof(*e));
	e->id = cid;
	e->kind = MATRIX_EV_COMM_SLOW_RX;
	e->state = state;
	e->comm = 0xa1;
	e->nsuspects = 1;
	e->suspects[0].role = MATRIX_ROLE_RX;
	e->suspects[0].rank = 3;
	e->suspects[0].port = 1;
	e->slowdown = 2.5;
	return e;
}

START_TEST(test_events_lifecycle)
{
	struct events_fx f;
	struct matrix_event e;
	struct fx_seen *s = &f.seen;

	efx_init(&f);
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_OPEN), 5000000000ull);
	ck_assert_uint_eq(s->n, 1);
	ck_assert_int_eq(s->state[0], C4__EVENT_STATE__EVENT_OPEN);
	ck_assert_int_eq(s->kind[0], C4__EVENT_KIND__EVENT_COMM_SLOW_RX);
	ck_assert_uint_eq(s->revision[0], 1);
	ck_assert_str_eq(s->host[0], "node-0");
	ck_assert_uint_eq(strlen(s->id[0]), 16 + 1 + 4);
	ck_assert_str_eq(s->id[0] + 16, "-5000");
	ck_assert_uint_eq(events_hot_comm(&f.evs), 0xa1);

	/* updated, and opened again while open: one event, new revisions */
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_UPDATED), 6000000000ull);
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_OPEN), 7000000000ull);
	events_apply(&f.evs, slow_rx(&e, 42, MATRIX_ST_RESOLVED),
		     8000000000ull);
	ck_assert_uint_eq(s->n, 4);
	for (size_t i = 1; i < 4; i++) {
		ck_assert_str_eq(s->id[i], s->id[0]);
		ck_assert_uint_eq(s->revision[i], i + 1);
	}
	ck_assert_int_eq(s->state[1], C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_int_eq(s->state[2], C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_int_eq(s->state[3], C4__EVENT_STATE__EVENT_RESOLVED);
	ck_assert_uint_eq(events_hot_comm(&f.evs), 0);
	ck_assert_uint_eq(f.evs.n, 0);

	/* an event never opened here is ignored */
	events_apply(&f.evs, slow_rx(&e, 43, MATRIX_ST_RESOLVED),
		     9000000000ull);
	ck_assert_uint_eq(s->n, 4);
	ck_assert_uint_eq(f.st.events_open, 1);
	ck_assert_uint_eq(f.st.events_updated, 2);
	ck_assert_uint_eq(f.st.events_resolved, 1);
	efx_done(&f);
}
END_TEST

START_TEST(test_events_adopt)
{
	struct events_fx f, first;
	struct matrix_event e;
	C4__Event ev = C4__EVENT__INIT;
	struct fx_seen *s = &f.seen;

	/* the id a previous run gave this anomaly */
	efx_init(&first);
	events_apply(&first.evs, slow_rx(&e, 42, MATRIX_ST_OPEN),
		     5000000000ull);
	efx_done(&first);

	efx_init(&f);
	ev.id = first.seen.id[0];
	ev.revision = 7;
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), 0);
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), -1);
	ev.id = (char *)"not-one-of-ours";
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), -1);
	ev.id = (char *)"00000000000000ab-1";
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), 0);
	ck_assert_uint_eq(s->n, 0);

	/* the engine sees the first again: it continues, no second open */
	events_apply(&f.evs, slow_rx(&e, 99, MATRIX_ST_OPEN), 9000000000ull);
	ck_assert_uint_eq(s->n, 1);
	ck_assert_int_eq(s->state[0], C4__EVENT_STATE__EVENT_UPDATED);
	ck_assert_str_eq(s->id[0], first.seen.id[0]);
	ck_assert_uint_eq(s->revision[0], 8);

	/* the other is not confirmed within the grace: resolved */
	events_expire(&f.evs, INGEST_ADOPT_GRACE, 3, 9000000000ull);
	ck_assert_uint_eq(s->n, 1);
	events_expire(&f.evs, INGEST_ADOPT_GRACE + 1, 4, 9000000000ull);
	ck_assert_uint_eq(s->n, 2);
	ck_assert_int_eq(s->state[1], C4__EVENT_STATE__EVENT_RESOLVED);
	ck_assert_str_eq(s->id[1], "00000000000000ab-1");
	ck_assert_uint_eq(f.evs.n, 1);
	efx_done(&f);
}
END_TEST

/* A connection node-0 GPU 0 -> node-1 GPU 1 over tr, as a link suspect. */
static void
link_suspect(struct matrix_suspect *s, uint8_t tr, uint32_t peer_host)
{
	memset(s, 0, sizeof(*s));
	s->role = MATRIX_ROLE_LINK;
	s->transport = tr;
	s->rank = 0;
	s->peer_rank = 1;
	s->host = 0;
	s->gpu = 2;
	s->nic = 0;
	s->port = 1;
	s->peer_host = peer_host;
	s->peer_gpu = 5;
	s->peer_port = 1;
}

static struct matrix_event *
base_event(struct matrix_event *e, uint64_t cid, uint8_t kind)
{
	memset(e, 0, sizeof(*e));
	e->id = cid;
	e->kind = kind;
	e->state = MATRIX_ST_OPEN;
	e->comm = 0xa1;
	e->slowdown = 2.5;
	e->confidence = 0.9;
	e->first_interval = e->last_interval = 7;
	e->evidence.basis = MATRIX_BASIS_MEDIAN;
	e->evidence.z_open = 8.0f;
	e->evidence.slowdown_open = 2.0f;
	e->evidence.hot_intervals = 2;
	e->evidence.window = 3;
	e->evidence.nmembers = 1;
	return e;
}

/* A slow connection over tr to peer_host, to check: one link suspect. */
static struct matrix_event *
link_event(struct matrix_event *e, uint64_t cid, uint8_t tr, uint32_t peer_host)
{
	base_event(e, cid, MATRIX_EV_COMM_SLOW_LINK);
	e->domain = MATRIX_DOM_LINK;
	e->action = MATRIX_ACT_CHECK_LINK;
	e->nsuspects = 1;
	link_suspect(&e->suspects[0], tr, peer_host);
	return e;
}

START_TEST(test_events_link_net)
{
	struct events_fx f;
	struct matrix_event e;

	efx_init_json(&f);
	link_event(&e, 1, MATRIX_TR_NET, 1); /* mlx5_1: NIC 0 of node-1 */
	events_apply(&f.evs, &e, 5000000000ull);
	ck_assert_uint_eq(f.js.n, 1);
	JX_HAS(&f.js, "\"summary\":\"connection node-0 mlx5_0 port 1 -> "
		      "node-1 mlx5_1 port 1 is slow (2.50x)\"");
	JX_HAS(&f.js, "\"action\":\"check the path node-0 mlx5_0 port 1 -> "
		      "node-1 mlx5_1 port 1\"");
	JX_HAS(&f.js, "\"domain\":\"link\",\"action_type\":\"check_link\","
		      "\"target\":\"node-0/mlx5_0->node-1/mlx5_1\"");
	JX_HAS(&f.js, "{\"role\":\"link\",\"rank\":0,\"host\":\"node-0\","
		      "\"gpu\":2,\"nic\":\"mlx5_0\",\"nic_port\":1,"
		      "\"peer_rank\":1,\"peer_host\":\"node-1\",\"peer_gpu\":5,"
		      "\"peer_nic\":\"mlx5_1\",\"peer_nic_port\":1,"
		      "\"transport\":\"net\"}");
	JX_HAS(&f.js, "\"evidence\":{\"basis\":\"median\",\"z_open\":8,"
		      "\"slowdown_open\":2,\"hot_intervals\":2,\"window\":3,"
		      "\"member_gpus\":[],\"members\":1,\"hosts_blamed\":0,"
		      "\"accumulated\":false}");
	JX_HAS(&f.js, "\"confidence\":0.9");
	efx_done(&f);
}
END_TEST

/* Intra-host transports are named as such, with GPUs and no NIC. */
START_TEST(test_events_nvlink)
{
	struct events_fx f;
	struct matrix_event e;

	efx_init_json(&f);
	link_event(&e, 1, MATRIX_TR_NVLINK, 0);
	events_apply(&f.evs, &e, 5000000000ull);
	JX_HAS(&f.js, "\"summary\":\"NVLink connection node-0 GPU 2 -> GPU 5 "
		      "is slow (2.50x)\"");
	JX_HAS(&f.js, "\"action\":\"check the NVLink path node-0 GPU 2 -> "
		      "GPU 5\"");
	JX_HAS(&f.js, "\"target\":\"node-0/gpu2->node-0/gpu5\"");
	JX_HAS(&f.js, "{\"role\":\"link\",\"rank\":0,\"host\":\"node-0\","
		      "\"gpu\":2,\"peer_rank\":1,\"peer_host\":\"node-0\","
		      "\"peer_gpu\":5,\"transport\":\"nvlink\"}");

	/* a PCIe transmit side: its own end only, observe, no target */
	base_event(&e, 2, MATRIX_EV_COMM_SLOW_TX);
	e.domain = MATRIX_DOM_GPU;
	e.action = MATRIX_ACT_OBSERVE;
	e.evidence.basis = MATRIX_BASIS_TAIL;
	e.nsuspects = 1;
	link_suspect(&e.suspects[0], MATRIX_TR_PCIE, 0);
	e.suspects[0].role = MATRIX_ROLE_TX;
	e.suspects[0].peer_rank = 0;
	e.suspects[0].peer_gpu = 2;
	events_apply(&f.evs, &e, 6000000000ull);
	JX_HAS(&f.js, "\"summary\":\"PCIe transmit side of node-0 GPU 2 is "
		      "slow (2.50x): transfers from rank 0\"");
	JX_HAS(&f.js, "\"domain\":\"gpu\",\"action_type\":\"observe\","
		      "\"target\":null");
	JX_HAS(&f.js, "{\"role\":\"tx\",\"rank\":0,\"host\":\"node-0\","
		      "\"gpu\":2,\"peer_rank\":0,\"transport\":\"pcie\"}");
	JX_HAS(&f.js, "\"basis\":\"tail\"");
	efx_done(&f);
}
END_TEST

/* Host, NIC and job domains: the target a controller acts on. */
START_TEST(test_events_domains)
{
	struct events_fx f;
	struct matrix_event e;

	efx_init_json(&f);
	base_event(&e, 1, MATRIX_EV_HOST_SLOW);
	e.domain = MATRIX_DOM_HOST;
	e.action = MATRIX_ACT_ISOLATE_HOST;
	e.isolate_host = 1;
	e.slowdown = 1.8;
	e.evidence.basis = MATRIX_BASIS_KERNEL;
	e.evidence.gpus = (1u << 0) | (1u << 3);
	e.evidence.nmembers = 2;
	e.nsuspects = 1;
	e.suspects[0].role = MATRIX_ROLE_HOST;
	e.suspects[0].host = e.suspects[0].peer_host = 1;
	events_apply(&f.evs, &e, 5000000000ull);
	JX_HAS(&f.js, "\"kind\":\"host_slow\"");
	JX_HAS(&f.js, "\"summary\":\"host node-1 is slow (1.80x): GPUs 0, 3 "
		      "are slow together, the host rather than one device\"");
	JX_HAS(&f.js, "\"action\":\"isolate host node-1\",\"domain\":\"host\","
		      "\"action_type\":\"isolate_host\",\"target\":\"node-1\"");
	JX_HAS(&f.js, "\"member_gpus\":[0,3],\"members\":2");

	base_event(&e, 2, MATRIX_EV_COMM_SLOW_RX);
	e.domain = MATRIX_DOM_NIC;
	e.action = MATRIX_ACT_ISOLATE_NIC;
	e.isolate_host = 1;
	e.nsuspects = 1;
	e.suspects[0].role = MATRIX_ROLE_RX;
	e.suspects[0].transport = MATRIX_TR_NET;
	e.suspects[0].host = e.suspects[0].peer_host = 1;
	e.suspects[0].port = e.suspects[0].peer_port = 1;
	events_apply(&f.evs, &e, 6000000000ull);
	JX_HAS(&f.js, "\"summary\":\"receive side of node-1 mlx5_1 port 1 is "
		      "slow (2.50x): transfers into rank 0\"");
	JX_HAS(&f.js, "\"action\":\"take NIC node-1/mlx5_1 out of service\","
		      "\"domain\":\"nic\",\"action_type\":\"isolate_nic\","
		      "\"target\":\"node-1/mlx5_1\"");

	base_event(&e, 3, MATRIX_EV_JOB_STALL);
	e.domain = MATRIX_DOM_JOB;
	e.action = MATRIX_ACT_CHECK_JOB;
	e.slowdown = 1.0;
	e.evidence.basis = MATRIX_BASIS_PROGRESS;
	e.evidence.hosts_blamed = 2;
	events_apply(&f.evs, &e, 7000000000ull);
	JX_HAS(&f.js, "\"kind\":\"job_stall\"");
	JX_HAS(&f.js, "\"summary\":\"the whole job is stalled or slow "
		      "(1.00x): 2 hosts would be blamed, no single culprit\"");
	JX_HAS(&f.js, "\"domain\":\"job\",\"action_type\":\"check_job\","
		      "\"target\":null");
	JX_HAS(&f.js, "\"basis\":\"progress\"");
	JX_HAS(&f.js, "\"hosts_blamed\":2,");
	efx_done(&f);
}
END_TEST

/*
 * An open event whose evidence goes on is touched once per newer
 * interval, never published; its UPDATED comes from the engine only.
 */
START_TEST(test_events_last_seen)
{
	struct events_fx f;
	struct matrix_event e;

	efx_init_json(&f);
	base_event(&e, 9, MATRIX_EV_NONCOMM_SLOW);
	e.domain = MATRIX_DOM_GPU;
	e.nsuspects = 1;
	e.suspects[0].role = MATRIX_ROLE_RANK;
	events_apply(&f.evs, &e, 5000000000ull);
	ck_assert_uint_eq(f.js.n, 1);
	events_seen(&f.evs, &e, 6000000000ull); /* interval 7 again */
	ck_assert_uint_eq(f.js.ntouch, 0);
	for (uint64_t iv = 8; iv <= 10; iv++) {
		e.last_interval = iv;
		events_seen(&f.evs, &e, iv * 1000000000ull);
		events_seen(&f.evs, &e, iv * 1000000000ull + 1);
	}
	ck_assert_uint_eq(f.js.n, 1);
	ck_assert_uint_eq(f.js.ntouch, 3);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_str_eq(f.js.touch_id[i], f.evs.v[0].id);
		ck_assert_uint_eq(f.js.touch_iv[i], 8 + i);
		ck_assert_uint_eq(f.js.touch_ns[i], (8 + i) * 1000000000ull);
	}
	/* an update publishes and catches up: no touch for its interval */
	e.state = MATRIX_ST_UPDATED;
	e.last_interval = 11;
	events_apply(&f.evs, &e, 11000000000ull);
	events_seen(&f.evs, &e, 11000000001ull);
	ck_assert_uint_eq(f.js.n, 2);
	ck_assert_uint_eq(f.js.ntouch, 3);
	JX_HAS(&f.js, "\"last_interval\":11");
	/* unknown events are not touched */
	e.id = 10;
	e.last_interval = 12;
	events_seen(&f.evs, &e, 12000000000ull);
	ck_assert_uint_eq(f.js.ntouch, 3);
	efx_done(&f);
}
END_TEST

/* With the engine: a lost node stays lost, and last_seen follows. */
START_TEST(test_events_last_seen_engine)
{
	struct ingest_params p = {.hang_intervals = 100, .node_intervals = 2};
	struct jx_seen js = {0};
	struct ingest *g = ingest_new("job-7", &p, jx_record, &js);
	struct msg_err err = {0};
	struct fx_comm c;
	C4__TelemetryBatch b;
	uint64_t iv;

	ck_assert_ptr_nonnull(g);
	ingest_set_touch(g, jx_touch);
	ck_assert_int_eq(
		ingest_register(g, fx_comm(&c, 0xc0, 2, 0, 2), NULL, &err), 0);
	for (iv = 1; iv <= 12; iv++) {
		ck_assert_int_eq(ingest_telemetry(g, "node-0",
						  fx_heartbeat(&b, "", iv),
						  NULL, &err),
				 0);
		if (iv <= 3)
			ck_assert_int_eq(
				ingest_telemetry(g, NULL,
						 fx_heartbeat(&b, "node-1", iv),
						 NULL, &err),
				0);
		ck_assert_int_eq(ingest_tick(g, iv * 1000000000ull), 0);
	}
	ck_assert_uint_eq(js.n, 1);
	JX_HAS(&js, "\"kind\":\"node_lost\"");
	ck_assert_uint_ge(js.ntouch, 3);
	for (size_t i = 1; i < js.ntouch; i++) {
		ck_assert_uint_gt(js.touch_iv[i], js.touch_iv[i - 1]);
		ck_assert_uint_gt(js.touch_ns[i], js.touch_ns[i - 1]);
	}
	ck_assert_uint_eq(js.touch_iv[js.ntouch - 1], 12);
	ingest_free(g);
	jx_free(&js);
}
END_TEST

/* An adopted event resolved unconfirmed repeats its domain and target. */
START_TEST(test_events_adopt_verdict)
{
	struct events_fx f;
	C4__Event ev = C4__EVENT__INIT;

	efx_init_json(&f);
	ev.id = (char *)"00000000000000ab-1";
	ev.has_kind = 1;
	ev.kind = C4__EVENT_KIND__EVENT_HOST_SLOW;
	ev.has_domain = ev.has_action_type = 1;
	ev.domain = C4__EVENT_DOMAIN__DOMAIN_HOST;
	ev.action_type = C4__ACTION__ACTION_ISOLATE_HOST;
	ev.target = (char *)"node-1";
	ck_assert_int_eq(events_adopt(&f.evs, &ev, 0), 0);
	events_expire(&f.evs, INGEST_ADOPT_GRACE + 1, 4, 9000000000ull);
	ck_assert_uint_eq(f.js.n, 1);
	JX_HAS(&f.js, "\"kind\":\"host_slow\",\"state\":\"resolved\"");
	JX_HAS(&f.js, "\"domain\":\"host\",\"action_type\":\"isolate_host\","
		      "\"target\":\"node-1\"");
	ck_assert_uint_eq(f.evs.n, 0);
	efx_done(&f);
}
END_TEST

int
main(void)
{
	const TTest *const tests[] = {
		test_events_lifecycle,	      test_events_adopt,
		test_events_link_net,	      test_events_nvlink,
		test_events_domains,	      test_events_last_seen,
		test_events_last_seen_engine, test_events_adopt_verdict,
	};

	return fx_main("events", tests, sizeof(tests) / sizeof(tests[0]));
}
