/*
 * c4limits.h - limits both ends of a c4 conversation must agree on, each
 * defined once: the c4p-master plans probe tasks within them and the
 * c4a-agent refuses tasks beyond them.
 *
 * (Not "limits.h": lib/proto is on the include path of everything that
 * uses c4proto_dep, and a header of that name would hide the C library's
 * <limits.h> from all of it.)
 */
#ifndef C4_LIMITS_H
#define C4_LIMITS_H

/*
 * Probe sockets an agent has open at once, and so the most source ports
 * one probe task may name.  The master's round deadline counts one agent
 * timeout per this many ports of the busiest agent.
 */
#define C4_PROBE_SOCKS_MAX 512

/*
 * TTLs a probe climbs through on a two-tier fabric: source leaf, spine,
 * destination leaf, destination.  The master asks for it in every task;
 * the agent uses it for a task that names no max_ttl.
 */
#define C4_PROBE_TTL 4

/* Probes per (source port, TTL) a task may ask for. */
#define C4_PROBE_REPEATS_MAX 16

/* Longest wait for late answers (ms) a task may ask of an agent. */
#define C4_PROBE_TIMEOUT_MAX_MS 10000

#endif
