/*
 * sample.h - kernel-channel sampling: which collective calls get NCCL's
 * kernel-channel events (and so GPU timers), about a given number of
 * pairs of calls a second, the same calls on every rank.  The state is
 * process-wide and private to sample.c.
 */
#ifndef C4_SAMPLE_H
#define C4_SAMPLE_H

#include <stdint.h>

struct prof_counters;

/*
 * Starts over: rate sampled pairs of calls a second (0: no sampling,
 * every call keeps the kernel-channel bit it has), adapted once per
 * interval of interval_ms; every call is sampled until a call rate is
 * known.  Under prof_core.lock in prof_open, before any event.
 */
void sample_open(uint32_t rate, uint32_t interval_ms);

/* Whether sampling is on (a rate was given).  Any thread. */
int sample_on(void);

/*
 * One collective call's CollApi event, on the thread that issues it:
 * counts the call, chooses whether the next call is sampled by setting
 * or clearing NCCL_EV_KERNEL_CH in NCCL's mask (the caller's, changed
 * atomically, no other bit), and returns 1 when the bit NCCL copied for
 * this call was set (the call has kernel-channel events), else 0.  graph
 * set: the call is being captured into a CUDA graph, and every call from
 * now on is sampled.  Never blocks or allocates.
 */
int sample_call(int *mask, int graph);

/*
 * Moves the shift to the call rate of the interval that ends; an
 * interval without calls keeps it.  On the aggregation thread, once per
 * report; changes nothing but the shift.
 */
void sample_adapt(void);

/* The shift now: a pair starts at 1 call in 2^shift.  Any thread. */
uint32_t sample_shift(void);

/*
 * Fills out's calls, calls_sampled and graph_full since sample_open;
 * leaves its other fields as they are.  Any thread.
 */
void sample_counters(struct prof_counters *out);

#endif
