/*
 * evjson.c - the JSON form of an event: the "event object" of
 * docs/c4ctl.md, printed by c4ctl events -o json and carried as the data
 * of every webhook CloudEvent.  Pure functions, safe on any thread.
 */
#include <stdio.h>
#include <stdlib.h>

#include "evjson.h"

static const char *const evjson_kinds[] = {
	"unspecified",	       "comm_slow_conn", "comm_slow_tx", "comm_slow_rx",
	"comm_slow_ambiguous", "noncomm_slow",	 "comm_hang",	 "noncomm_hang",
	"node_lost",	       "host_slow",	 "job_stall",
};
static const char *const evjson_states[] = {"unspecified", "open", "updated",
					    "resolved"};
static const char *const evjson_roles[] = {"unspecified", "rank", "tx",
					   "rx",	  "link", "host"};
static const char *const evjson_domains[] = {
	"unspecified", "link", "nic_port", "nic", "gpu", "host", "job",
};
static const char *const evjson_actions[] = {
	"unspecified", "observe",    "isolate_host",
	"isolate_nic", "check_link", "check_job",
};
static const char *const evjson_bases[] = {
	"unspecified", "median",   "tail",	"kernel",
	"wait",	       "progress", "heartbeat",
};
static const char *const evjson_transports[] = {
	"unspecified", "nvlink", "pcie", "shm", "net",
};

#define EVJSON_NAME(tab, v)                                                    \
	((v) >= 0 && (size_t)(v) < sizeof(tab) / sizeof((tab)[0]) ? (tab)[(v)] \
								  : "unknown")

const char *
evjson_kind_name(int kind)
{
	return EVJSON_NAME(evjson_kinds, kind);
}

const char *
evjson_state_name(int state)
{
	return EVJSON_NAME(evjson_states, state);
}

const char *
evjson_role_name(int role)
{
	return EVJSON_NAME(evjson_roles, role);
}

const char *
evjson_domain_name(int domain)
{
	return EVJSON_NAME(evjson_domains, domain);
}

const char *
evjson_action_name(int action)
{
	return EVJSON_NAME(evjson_actions, action);
}

const char *
evjson_basis_name(int basis)
{
	return EVJSON_NAME(evjson_bases, basis);
}

const char *
evjson_transport_name(int transport)
{
	return EVJSON_NAME(evjson_transports, transport);
}

/* A name, or null for a field that is absent or unspecified (0). */
static void
evjson_enum(struct json *j, const char *key, int has, int v,
	    const char *(*name)(int))
{
	json_key(j, key);
	json_str(j, has && v != 0 ? name(v) : NULL);
}

static void
evjson_suspect(struct json *j, const C4__Suspect *s)
{
	json_obj_begin(j);
	json_key(j, "role");
	json_str(j, evjson_role_name(s->role));
	if (s->has_rank) {
		json_key(j, "rank");
		json_u64(j, s->rank);
	}
	if (s->host != NULL) {
		json_key(j, "host");
		json_str(j, s->host);
	}
	if (s->has_gpu) {
		json_key(j, "gpu");
		json_u64(j, s->gpu);
	}
	if (s->nic != NULL) {
		json_key(j, "nic");
		json_str(j, s->nic);
	}
	if (s->has_nic_port) {
		json_key(j, "nic_port");
		json_u64(j, s->nic_port);
	}
	if (s->has_peer_rank) {
		json_key(j, "peer_rank");
		json_u64(j, s->peer_rank);
	}
	if (s->peer_host != NULL) {
		json_key(j, "peer_host");
		json_str(j, s->peer_host);
	}
	if (s->has_peer_gpu) {
		json_key(j, "peer_gpu");
		json_u64(j, s->peer_gpu);
	}
	if (s->peer_nic != NULL) {
		json_key(j, "peer_nic");
		json_str(j, s->peer_nic);
	}
	if (s->has_peer_nic_port) {
		json_key(j, "peer_nic_port");
		json_u64(j, s->peer_nic_port);
	}
	if (s->has_transport && s->transport != 0) {
		json_key(j, "transport");
		json_str(j, evjson_transport_name(s->transport));
	}
	json_obj_end(j);
}

static void
evjson_cell(struct json *j, const C4__EvidenceCell *c)
{
	json_obj_begin(j);
	json_key(j, "src_rank");
	json_u64(j, c->src_rank);
	json_key(j, "dst_rank");
	json_u64(j, c->dst_rank);
	json_key(j, "value");
	json_double(j, c->value);
	json_key(j, "baseline");
	json_double(j, c->baseline);
	json_key(j, "score");
	json_double(j, c->score);
	json_obj_end(j);
}

/* Every member always present, as at the top level; null when absent. */
static void
evjson_evidence(struct json *j, const C4__Evidence *e)
{
	json_key(j, "evidence");
	if (e == NULL) {
		json_str(j, NULL);
		return;
	}
	json_obj_begin(j);
	evjson_enum(j, "basis", e->has_basis, e->basis, evjson_basis_name);
	json_key(j, "z_open");
	json_double(j, e->z_open);
	json_key(j, "slowdown_open");
	json_double(j, e->slowdown_open);
	json_key(j, "hot_intervals");
	json_u64(j, e->hot_intervals);
	json_key(j, "window");
	json_u64(j, e->window);
	json_key(j, "member_gpus");
	json_arr_begin(j);
	for (size_t i = 0; i < e->n_member_gpus; i++)
		json_u64(j, e->member_gpus[i]);
	json_arr_end(j);
	json_key(j, "members");
	json_u64(j, e->members);
	json_key(j, "hosts_blamed");
	json_u64(j, e->hosts_blamed);
	json_key(j, "accumulated");
	json_bool(j, e->accumulated);
	json_obj_end(j);
}

/*
 * Every top-level member is always present (null for an absent string,
 * enum or evidence, 0 for an absent number) so consumers need no existence
 * checks; suspect members other than role appear only when the detector
 * set them.
 */
void
evjson_write(struct json *j, const C4__Event *ev)
{
	char hash[24];

	snprintf(hash, sizeof(hash), "%016llx",
		 (unsigned long long)ev->comm_hash);
	json_obj_begin(j);
	json_key(j, "id");
	json_str(j, ev->id);
	json_key(j, "job");
	json_str(j, ev->job_id);
	json_key(j, "kind");
	json_str(j, evjson_kind_name(ev->kind));
	json_key(j, "state");
	json_str(j, evjson_state_name(ev->state));
	json_key(j, "revision");
	json_u64(j, ev->revision);
	json_key(j, "summary");
	json_str(j, ev->summary);
	json_key(j, "action");
	json_str(j, ev->action);
	evjson_enum(j, "domain", ev->has_domain, ev->domain,
		    evjson_domain_name);
	evjson_enum(j, "action_type", ev->has_action_type, ev->action_type,
		    evjson_action_name);
	json_key(j, "target");
	json_str(j, ev->target);
	json_key(j, "confidence");
	json_double(j, ev->confidence);
	json_key(j, "slowdown");
	json_double(j, ev->slowdown);
	json_key(j, "score");
	json_double(j, ev->score);
	json_key(j, "comm_hash");
	json_str(j, ev->has_comm_hash ? hash : NULL);
	json_key(j, "first_interval");
	json_u64(j, ev->first_interval);
	json_key(j, "last_interval");
	json_u64(j, ev->last_interval);
	json_key(j, "first_seen_ns");
	json_u64(j, ev->first_seen_ns);
	json_key(j, "last_seen_ns");
	json_u64(j, ev->last_seen_ns);
	json_key(j, "suspects");
	json_arr_begin(j);
	for (size_t i = 0; i < ev->n_suspects; i++)
		evjson_suspect(j, ev->suspects[i]);
	json_arr_end(j);
	json_key(j, "cells");
	json_arr_begin(j);
	for (size_t i = 0; i < ev->n_cells; i++)
		evjson_cell(j, ev->cells[i]);
	json_arr_end(j);
	evjson_evidence(j, ev->evidence);
	json_obj_end(j);
}

char *
evjson_string(const C4__Event *ev, size_t *len)
{
	struct json j;
	char *buf = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&buf, &n);

	if (fp == NULL)
		return NULL;
	json_init(&j, fp);
	evjson_write(&j, ev);
	if (fclose(fp) != 0) {
		free(buf);
		return NULL;
	}
	if (len != NULL)
		*len = n;
	return buf;
}
