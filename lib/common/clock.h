/*
 * clock.h - nanoseconds of a POSIX clock as one integer: CLOCK_MONOTONIC
 * for intervals and timeouts, CLOCK_REALTIME for times sent to peers.
 */
#ifndef C4_CLOCK_H
#define C4_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
