/*
 * evjson.h - the JSON form of an event (the "event object" of
 * docs/c4ctl.md), shared by c4d-master (webhook data) and c4ctl (-o json).
 */
#ifndef C4_EVJSON_H
#define C4_EVJSON_H

#include <stddef.h>

#include "c4d.pb-c.h"
#include "json.h"

/*
 * Lowercase names without the enum prefix, e.g. "comm_slow_rx", "open",
 * "nic_port", "isolate_host", "median", "nvlink": static strings,
 * "unspecified" for 0 and "unknown" for a value out of range.  These and
 * the writers below are pure and safe on any thread.
 */
const char *evjson_kind_name(int kind);
const char *evjson_state_name(int state);
const char *evjson_role_name(int role);
const char *evjson_domain_name(int domain);
const char *evjson_action_name(int action);
const char *evjson_basis_name(int basis);
const char *evjson_transport_name(int transport);
/* Writes ev as one JSON object into j (no newline). */
void evjson_write(struct json *j, const C4__Event *ev);
/* The same as a malloc'd NUL-terminated string; NULL on ENOMEM. */
char *evjson_string(const C4__Event *ev, size_t *len);

#endif
