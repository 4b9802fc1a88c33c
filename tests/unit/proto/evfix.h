/*
 * evfix.h - one event and its JSON object (docs/c4ctl.md) byte for byte,
 * shared by the tests of lib/proto/evjson.c and of c4d-master's webhook
 * CloudEvent, which carries the same object as its data.
 */
#ifndef C4_TEST_EVFIX_H
#define C4_TEST_EVFIX_H

#include "c4d.pb-c.h"

static const char evfix_json[] =
	"{\"id\":\"job-1/rx-3\",\"job\":\"job-1\",\"kind\":\"comm_slow_rx\","
	"\"state\":\"updated\",\"revision\":2,\"summary\":\"rank 3 "
	"\\\"slow\\\"\",\"action\":null,\"domain\":\"nic\","
	"\"action_type\":\"isolate_nic\",\"target\":\"node-3/mlx5_3\","
	"\"confidence\":0.5,\"slowdown\":2,"
	"\"score\":0,\"comm_hash\":\"00000000000000ff\",\"first_interval\":4,"
	"\"last_interval\":9,\"first_seen_ns\":0,\"last_seen_ns\":0,"
	"\"suspects\":[{\"role\":\"rx\",\"rank\":3,\"host\":\"node-3\","
	"\"transport\":\"net\"},"
	"{\"role\":\"link\",\"peer_host\":\"node-4\",\"peer_gpu\":5,"
	"\"peer_nic\":\"mlx5_4\",\"peer_nic_port\":1,"
	"\"transport\":\"nvlink\"}],"
	"\"cells\":[{\"src_rank\":1,\"dst_rank\":3,"
	"\"value\":4,\"baseline\":1,\"score\":9}],"
	"\"evidence\":{\"basis\":\"median\",\"z_open\":6.5,"
	"\"slowdown_open\":1.5,\"hot_intervals\":2,\"window\":3,"
	"\"member_gpus\":[0,5],\"members\":2,\"hosts_blamed\":0,"
	"\"accumulated\":false}}";

/*
 * Fills ev as the event evfix_json describes, with two suspects in sv and
 * one cell in cv (all initialised by the caller) and the evidence in a
 * static; ev borrows them.
 */
static void
evfix_fill(C4__Event *ev, C4__Suspect **sv, C4__EvidenceCell **cv)
{
	static uint32_t gpus[2] = {0, 5};
	static C4__Evidence evd = C4__EVIDENCE__INIT;

	ev->id = (char *)"job-1/rx-3";
	ev->job_id = (char *)"job-1";
	ev->has_kind = ev->has_state = ev->has_revision = 1;
	ev->kind = C4__EVENT_KIND__EVENT_COMM_SLOW_RX;
	ev->state = C4__EVENT_STATE__EVENT_UPDATED;
	ev->revision = 2;
	ev->summary = (char *)"rank 3 \"slow\"";
	ev->has_confidence = ev->has_slowdown = 1;
	ev->confidence = 0.5;
	ev->slowdown = 2;
	ev->has_comm_hash = 1;
	ev->comm_hash = 0xff;
	ev->first_interval = 4;
	ev->last_interval = 9;
	sv[0]->has_role = sv[0]->has_rank = 1;
	sv[0]->role = C4__SUSPECT_ROLE__SUSPECT_RX;
	sv[0]->rank = 3;
	sv[0]->host = (char *)"node-3";
	sv[1]->has_role = 1;
	sv[1]->role = C4__SUSPECT_ROLE__SUSPECT_LINK;
	ev->n_suspects = 2;
	ev->suspects = sv;
	cv[0]->src_rank = 1;
	cv[0]->dst_rank = 3;
	cv[0]->value = 4;
	cv[0]->baseline = 1;
	cv[0]->score = 9;
	ev->n_cells = 1;
	ev->cells = cv;
	ev->has_domain = ev->has_action_type = 1;
	ev->domain = C4__EVENT_DOMAIN__DOMAIN_NIC;
	ev->action_type = C4__ACTION__ACTION_ISOLATE_NIC;
	ev->target = (char *)"node-3/mlx5_3";
	sv[0]->has_transport = 1;
	sv[0]->transport = C4__TRANSPORT_CLASS__TRANSPORT_NET;
	sv[1]->peer_host = (char *)"node-4";
	sv[1]->has_peer_gpu = sv[1]->has_peer_nic_port = 1;
	sv[1]->peer_gpu = 5;
	sv[1]->peer_nic = (char *)"mlx5_4";
	sv[1]->peer_nic_port = 1;
	sv[1]->has_transport = 1;
	sv[1]->transport = C4__TRANSPORT_CLASS__TRANSPORT_NVLINK;
	evd.has_basis = evd.has_z_open = evd.has_slowdown_open = 1;
	evd.has_hot_intervals = evd.has_window = evd.has_members = 1;
	evd.basis = C4__EVIDENCE_BASIS__BASIS_MEDIAN;
	evd.z_open = 6.5;
	evd.slowdown_open = 1.5;
	evd.hot_intervals = 2;
	evd.window = 3;
	evd.n_member_gpus = 2;
	evd.member_gpus = gpus;
	evd.members = 2;
	ev->evidence = &evd;
}

#endif
