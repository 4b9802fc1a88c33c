/*
 * sample.c - kernel-channel sampling (sample.h, C4_PROFILER_KERNEL_SAMPLE).
 *
 * With kernel-channel events on, NCCL adds a proxy operation per channel to
 * every collective, which costs a 1 MB all-reduce on NVLink 10-40 %.  NCCL 2.28
 * copies its mask for every collective call (ncclProfilerStartGroupApiEvent,
 * even inside a group) and then starts the call's CollApi event; so the plugin
 * sets the kernel-channel bit there for the call after, and the bit NCCL
 * just copied (the value before that change) travels as the CollApi
 * handle to the Coll, whose parent that is.  Exact for a process that
 * issues collectives from one thread at a time.
 *
 * Sampled calls come in pairs, so that the GPU's gap between two
 * collectives is still measured.  Which calls: a pair starts at the
 * process's collective call s when the low shift bits of a hash of s
 * are zero.
 * Ranks whose processes make the same collective calls in the same order
 * (the members of a data- or tensor-parallel group, whatever other
 * communicators they interleave) make the same choice, so a sampled
 * call's extra cost on the host (NCCL's proxy operations, some µs) makes
 * all of them late alike: chosen apart, each rank would be late on its
 * own sampled calls, and every rank would look like a late rank in what it
 * measures.  shift comes from the call rate, for about rate pairs a
 * second; it moves up when the rate is half a power of two above 2^shift
 * and down when it is one and a half below, so that ranks of nearly equal
 * rates keep the shift they share; a smaller shift's choices include a
 * larger one's.
 */
#include "sample.h"

#include <math.h>
#include <stdatomic.h>

#include "mix.h"
#include "nccl_abi.h"
#include "prof.h"

/*
 * The sampling state.  rate and interval_ms are set by sample_open alone;
 * adapted by sample_adapt alone (the aggregation thread); the rest is
 * atomic, updated by the thread that issues collectives.
 */
static struct {
	uint32_t rate;		  /* sampled pairs per second wanted; 0: all */
	uint32_t interval_ms;	  /* the report interval */
	_Atomic uint32_t shift;	  /* a pair starts at 1 call in 2^shift */
	uint64_t adapted;	  /* calls at the last sample_adapt */
	_Atomic uint64_t calls;	  /* calls ever (the fast estimate) */
	_Atomic uint64_t t0;	  /* prof_now() at the last 1024th */
	_Atomic uint64_t sampled; /* calls with kernel channels, ever */
	_Atomic int full;	  /* a graph capture: every call from now */
} sample;

void
sample_open(uint32_t rate, uint32_t interval_ms)
{
	sample.rate = rate;
	sample.interval_ms = interval_ms;
	atomic_store(&sample.shift, 0); /* every call until a rate is known */
	sample.adapted = 0;
	atomic_store(&sample.calls, 0);
	atomic_store(&sample.t0, 0);
	atomic_store(&sample.sampled, 0);
	atomic_store(&sample.full, 0);
}

int
sample_on(void)
{
	return sample.rate != 0;
}

uint32_t
sample_shift(void)
{
	return atomic_load(&sample.shift);
}

void
sample_counters(struct prof_counters *out)
{
	out->calls = atomic_load(&sample.calls);
	out->calls_sampled = atomic_load(&sample.sampled);
	out->graph_full = (uint64_t)atomic_load(&sample.full);
}

/* Does a pair start at the process's call s? */
static int
sample_pair_start(uint64_t s, uint32_t shift)
{
	uint64_t low = shift >= 63 ? ~0ull : (1ull << shift) - 1;

	return (mix64(s * 0x9e3779b97f4a7c15ull) & low) == 0;
}

/* Is the process's collective call s (from 1) sampled? */
static int
sample_chosen(uint64_t s)
{
	uint32_t shift =
		atomic_load_explicit(&sample.shift, memory_order_relaxed);

	if (atomic_load_explicit(&sample.full, memory_order_relaxed))
		return 1;
	return sample_pair_start(s, shift) ||
	       (s > 1 && sample_pair_start(s - 1, shift));
}

/*
 * The shift that gives about rate pairs a second at this call rate:
 * log2 of (calls a second / rate), rounded, changed only when that is half a
 * power of two above the shift or one and a half below it.
 */
static void
sample_set(double per_s)
{
	uint32_t k = atomic_load_explicit(&sample.shift, memory_order_relaxed);
	double want = log2(per_s / (double)sample.rate);

	if (!(want > k + 0.5) && !(want < k - 1.5))
		return;
	want = want < 0.5 ? 0.0 : floor(want + 0.5);
	atomic_store(&sample.shift, want > 40.0 ? 40u : (uint32_t)want);
}

/*
 * Once per interval, from the calls it saw.  An interval without calls
 * (a pause for a checkpoint) keeps the shift it had, so that the calls
 * after it are not all sampled; busy processes get a faster estimate
 * every 1024 calls (sample_call).
 */
void
sample_adapt(void)
{
	uint64_t calls = atomic_load(&sample.calls), n = calls - sample.adapted;

	sample.adapted = calls;
	if (sample.rate == 0 || n == 0)
		return;
	sample_set((double)n * 1000.0 / (double)sample.interval_ms);
}

int
sample_call(int *mask, int graph)
{
	int prev;
	uint64_t n, now, t0;

	/*
	 * A captured call's kernel channels come back at every replay, and
	 * only if the capture had them: replays are seen through nothing
	 * else.  Ranks choose apart, so one that captured a call sampled
	 * would count replays its peers never see.  From the first capture
	 * on, every call is sampled (the call being captured now was
	 * chosen at the call before it).
	 */
	if (graph && !atomic_load_explicit(&sample.full, memory_order_relaxed))
		atomic_store(&sample.full, 1);

	n = atomic_fetch_add_explicit(&sample.calls, 1, memory_order_relaxed);
	/* a window that spans a pause is left to sample_adapt */
	if (((n + 1) & 1023) == 0) {
		now = prof_now();
		t0 = atomic_exchange(&sample.t0, now);
		if (t0 != 0 && now > t0 &&
		    now - t0 <= (uint64_t)sample.interval_ms * 1000000ull)
			sample_set(1024.0 * 1e9 / (double)(now - t0));
	}
	/* this is call n + 1: choose for call n + 2 */
	prev = sample_chosen(n + 2)
		       ? __atomic_fetch_or(mask, NCCL_EV_KERNEL_CH,
					   __ATOMIC_RELAXED)
		       : __atomic_fetch_and(mask, ~NCCL_EV_KERNEL_CH,
					    __ATOMIC_RELAXED);
	if (prev & NCCL_EV_KERNEL_CH)
		atomic_fetch_add_explicit(&sample.sampled, 1,
					  memory_order_relaxed);
	return (prev & NCCL_EV_KERNEL_CH) != 0;
}
