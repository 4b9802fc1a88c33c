/*
 * clock.h - nanoseconds of a POSIX clock as one integer: CLOCK_MONOTONIC
 * for intervals and timeouts, CLOCK_REALTIME for times sent to peers.
 */
#ifndef C4_CLOCK_H
#define C4_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * Returns clock id's time in nanoseconds.  An invalid id is the caller's
 * error: clock_gettime()'s failure is not reported.  Thread-safe.
 */
static inline uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Interval ticks on the wall clock.  Every stage of the telemetry path
 * (the CCL's reporter, c4a-agent, c4d-master) ticks at k * interval +
 * its own offset of CLOCK_REALTIME, so that a report made at a boundary
 * is sent on by the agent and analysed by the master within the same
 * interval instead of waiting up to a whole interval at each stage.
 * Clocks of a cluster agree to well under the offsets (NTP or PTP); a
 * stage whose clock is off by more only hands its data on a tick later.
 */

/*
 * Returns now's distance past tick 0 of (interval, offset), with offset
 * taken modulo interval, or 0 before it.  interval must not be 0.
 */
static inline uint64_t
clock_tick_phase(uint64_t now, uint64_t interval, uint64_t offset)
{
	offset %= interval;
	return now >= offset ? now - offset : 0;
}

/*
 * clock_tick_next: returns the wall-clock time of the tick after the one
 * nearest to now, or now itself when interval is 0.  A timer that fires
 * a little early or late thus still moves on by one interval; one that
 * fires several intervals late skips the missed ticks instead of firing
 * them back to back.
 */
static inline uint64_t
clock_tick_next(uint64_t now, uint64_t interval, uint64_t offset)
{
	uint64_t k;

	if (interval == 0)
		return now;
	k = (clock_tick_phase(now, interval, offset) + interval / 2) / interval;
	return (k + 1) * interval + offset % interval;
}

/*
 * Offsets of the stages past each boundary, in parts of the interval:
 * reporters at the boundary, c4a-agent a twentieth later (50 ms of 1 s),
 * c4d-master a tenth later.
 */
#define CLOCK_TICK_AGENT_DIV  20u
#define CLOCK_TICK_MASTER_DIV 10u

/*
 * clock_tick_first: returns the first tick strictly after now (for
 * starting), or now itself when interval is 0.
 */
static inline uint64_t
clock_tick_first(uint64_t now, uint64_t interval, uint64_t offset)
{
	if (interval == 0)
		return now;
	return (clock_tick_phase(now, interval, offset) / interval + 1) *
		       interval +
	       offset % interval;
}

#endif
