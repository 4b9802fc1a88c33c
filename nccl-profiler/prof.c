/*
 * prof.c - the plugin core's entry points (prof.h): the process-wide
 * state, open and close, the clocks, the aggregation thread and its
 * tick, the counters; NCCL's callbacks pass through to producer.c.
 *
 * Consumer side: the aggregation thread (or prof_tick in tests) drains
 * every ring (consumer.c) and once per interval reports (report.c),
 * reaps finalized communicators and polls the detail switch.
 */
#include "prof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "consumer.h"
#include "core.h"
#include "clock.h"
#include "producer.h"
#include "record.h"
#include "report.h"
#include "sample.h"
#include "trace.h"

struct prof_core prof_core = {.lock = PTHREAD_MUTEX_INITIALIZER,
			      .rec_lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t
prof_mono(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t
prof_realtime(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t
prof_now(void)
{
	return prof_core.clock ? prof_core.clock() : prof_mono();
}

/*
 * The host time of a kernel channel's stop.  GPU timers time the kernel;
 * this only dates the record (completion, the 100 ms settle), so the
 * coarse clock does: NCCL's proxy thread calls three times per channel of
 * every collective, and full clock reads were most of the plugin's cost
 * there (bench/run prof-events).  The test clock when there is one.
 */
uint64_t
prof_now_coarse(void)
{
	return prof_core.clock ? prof_core.clock()
			       : clock_ns(CLOCK_MONOTONIC_COARSE);
}

void
prof_set_clock(uint64_t (*now)(void))
{
	prof_core.clock = now;
}

void
prof_set_sink(prof_sink_fn fn, void *arg)
{
	prof_core.sink = fn;
	prof_core.sink_arg = arg;
}

static void
prof_detail_poll(void)
{
	struct stat st;
	int want, on;
	uint32_t i;
	struct prof_comm *c;

	if (prof_core.detail_file != NULL) {
		want = stat(prof_core.detail_file, &st) == 0;
		atomic_store(&prof_core.detail, want);
	}
	/* Only the detail bit: kernel channels may be sampled meanwhile. */
	on = atomic_load(&prof_core.detail);
	for (i = 0; i < PROF_COMMS_MAX; i++) {
		c = atomic_load(&prof_core.comms[i]);
		if (c == NULL || c->mask == NULL || atomic_load(&c->finalized))
			continue;
		if (on && !(__atomic_load_n(c->mask, __ATOMIC_RELAXED) &
			    PROF_MASK_DETAIL))
			__atomic_fetch_or(c->mask, PROF_MASK_DETAIL,
					  __ATOMIC_RELAXED);
		else if (!on && (__atomic_load_n(c->mask, __ATOMIC_RELAXED) &
				 PROF_MASK_DETAIL))
			__atomic_fetch_and(c->mask, ~PROF_MASK_DETAIL,
					   __ATOMIC_RELAXED);
	}
	sample_adapt();
}

void
prof_set_detail(int on)
{
	atomic_store(&prof_core.detail, on != 0);
}

void
prof_tick(int report)
{
	uint64_t now = prof_now();

	consumer_drain();
	if (report) {
		report_send(now);
		consumer_reap();
		prof_core.interval_start = now;
		prof_core.interval_start_rt =
			prof_core.clock ? now : prof_realtime();
		prof_detail_poll();
		/* A recording survives a process that never finalizes. */
		if (prof_core.rec != NULL)
			record_flush();
	}
}

/*
 * Drains every PROF_DRAIN_MS and reports at each wall-clock multiple of
 * the interval (c4client_next_boundary), so that c4a-agent, which sends
 * a little after each boundary, carries the interval that just ended.
 */
static void *
prof_thread(void *arg)
{
	const uint64_t drain = PROF_DRAIN_MS * 1000000ull;
	const uint64_t iv = (uint64_t)prof_core.cfg.interval_ms * 1000000ull;
	uint64_t now = prof_realtime(), wait;
	uint64_t next =
		c4client_next_boundary(now, prof_core.cfg.interval_ms, 1);
	struct timespec ts;

	(void)arg;
	while (!atomic_load(&prof_core.stop)) {
		/* Drain every PROF_DRAIN_MS, and wake at the boundary. */
		wait = next > now && next - now < drain ? next - now : drain;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)wait;
		nanosleep(&ts, NULL);
		now = prof_realtime();
		/* The wall clock stepped back: aim at its next boundary. */
		if (next > now + iv)
			next = c4client_next_boundary(
				now, prof_core.cfg.interval_ms, 1);
		if (now >= next) {
			next = c4client_next_boundary(
				now, prof_core.cfg.interval_ms, 0);
			prof_tick(1);
		} else {
			prof_tick(0);
		}
	}
	return NULL;
}

void
prof_counters(struct prof_counters *out)
{
	uint32_t i;
	struct prof_comm *c;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < PROF_COMMS_MAX; i++) {
		c = atomic_load(&prof_core.comms[i]);
		if (c == NULL)
			continue;
		out->events += atomic_load(&c->events);
		out->ignored += atomic_load(&c->ignored);
		out->stale += atomic_load(&c->stale);
		out->pool_drops += pool_drops(&c->pool);
		out->orphans += c->cons.orphans;
		out->timed_lost += c->cons.timed_lost;
	}
	for (i = 0; i < PROF_RINGS_MAX; i++)
		if (prof_core.rings[i].ring.slots != NULL)
			out->ring_drops += ring_drops(&prof_core.rings[i].ring);
	out->no_ring = atomic_load(&prof_core.no_ring);
	out->events += prof_core.dead.events;
	out->ignored += prof_core.dead.ignored;
	out->stale += prof_core.dead.stale;
	out->pool_drops += prof_core.dead.pool_drops;
	out->orphans += prof_core.dead.orphans;
	out->timed_lost += prof_core.dead.timed_lost;
	out->reports = prof_core.reports;
	out->reports_failed = prof_core.reports_failed;
	sample_counters(out);
}

static char *
prof_strdup(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

static void
prof_free_all(void)
{
	uint32_t i;

	for (i = 0; i < PROF_COMMS_MAX; i++) {
		comm_free(atomic_load(&prof_core.comms[i]));
		atomic_store(&prof_core.comms[i], NULL);
	}
	for (i = 0; i < PROF_RINGS_MAX; i++) {
		ring_free(&prof_core.rings[i].ring);
		atomic_store(&prof_core.rings[i].state, TRING_FREE);
	}
	free(prof_core.socket_path);
	free(prof_core.job_id);
	free(prof_core.token);
	free(prof_core.detail_file);
	prof_core.socket_path = prof_core.job_id = prof_core.token =
		prof_core.detail_file = NULL;
	record_close();
}

int
prof_open(const struct prof_config *cfg)
{
	struct c4client_opts o;
	uint32_t i;

	pthread_mutex_lock(&prof_core.lock);
	if (prof_core.open) {
		pthread_mutex_unlock(&prof_core.lock);
		return -1;
	}
	prof_core.cfg = *cfg;
	if (prof_core.cfg.interval_ms < PROF_INTERVAL_MIN ||
	    prof_core.cfg.interval_ms > PROF_INTERVAL_MAX)
		prof_core.cfg.interval_ms = PROF_INTERVAL_DEFAULT;
	if (prof_core.cfg.ring_cap == 0)
		prof_core.cfg.ring_cap = PROF_RING_DEFAULT;
	if (prof_core.cfg.pool_cap == 0 ||
	    prof_core.cfg.pool_cap > POOL_CAP_MAX)
		prof_core.cfg.pool_cap = PROF_POOL_DEFAULT;
	if (prof_core.cfg.colls_cap == 0 ||
	    prof_core.cfg.colls_cap > (1u << 20))
		prof_core.cfg.colls_cap = PROF_COLLS_DEFAULT;
	prof_core.socket_path = prof_strdup(cfg->socket_path);
	prof_core.job_id = prof_strdup(cfg->job_id);
	prof_core.token = prof_strdup(cfg->token);
	prof_core.detail_file = prof_strdup(cfg->detail_file);
	prof_core.cfg.socket_path = prof_core.socket_path;
	prof_core.cfg.job_id = prof_core.job_id;
	prof_core.cfg.token = prof_core.token;
	prof_core.cfg.detail_file = prof_core.detail_file;
	prof_core.cfg.record_path = NULL;
	prof_core.pid = getpid();
	atomic_store(&prof_core.detail, cfg->detail != 0);
	prof_core.base_mask = cfg->base_mask == 0  ? PROF_MASK_BASE
			      : cfg->base_mask < 0 ? 0
						   : cfg->base_mask;
	sample_open((prof_core.base_mask & NCCL_EV_KERNEL_CH)
			    ? cfg->kernel_sample
			    : 0,
		    prof_core.cfg.interval_ms);
	prof_core.stats = cfg->stats;
	atomic_fetch_add(&prof_core.epoch, 1);
	atomic_store(&prof_core.no_ring, 0);
	prof_core.interval_id = prof_core.reports = prof_core.reports_failed =
		0;
	memset(&prof_core.dead, 0, sizeof(prof_core.dead));
	for (i = 0; i < PROF_RINGS_MAX; i++)
		if (ring_init(&prof_core.rings[i].ring, prof_core.cfg.ring_cap,
			      sizeof(struct prof_rec)) < 0)
			goto fail;
	if (cfg->record_path != NULL) {
		if (record_open(cfg->record_path) < 0)
			goto fail;
	}
	if (prof_core.socket_path != NULL && prof_core.job_id != NULL) {
		memset(&o, 0, sizeof(o));
		o.socket_path = prof_core.socket_path;
		o.job_id = prof_core.job_id;
		o.token = prof_core.token;
		prof_core.client = c4client_open(&o);
	}
	prof_core.interval_start = prof_now();
	prof_core.interval_start_rt =
		prof_core.clock ? prof_core.interval_start : prof_realtime();
	atomic_store(&prof_core.stop, 0);
	prof_core.have_thread = 0;
	if (cfg->thread) {
		if (pthread_create(&prof_core.thread, NULL, prof_thread,
				   NULL) != 0)
			goto fail;
		pthread_setname_np(prof_core.thread, "c4-nccl-prof");
		prof_core.have_thread = 1;
	}
	prof_core.open = 1;
	pthread_mutex_unlock(&prof_core.lock);
	return 0;
fail:
	if (prof_core.client != NULL)
		c4client_close(prof_core.client);
	prof_core.client = NULL;
	prof_free_all();
	pthread_mutex_unlock(&prof_core.lock);
	return -1;
}

void
prof_close(void)
{
	pthread_mutex_lock(&prof_core.lock);
	if (!prof_core.open) {
		pthread_mutex_unlock(&prof_core.lock);
		return;
	}
	prof_core.open = 0;
	pthread_mutex_unlock(&prof_core.lock);
	if (prof_core.have_thread) {
		atomic_store(&prof_core.stop, 1);
		pthread_join(prof_core.thread, NULL);
		prof_core.have_thread = 0;
	}
	prof_tick(1);
	if (prof_core.stats || prof_core.rec != NULL) {
		struct prof_counters k;
		char line[512];

		prof_counters(&k);
		trace_counters(line, sizeof(line), (long)prof_core.pid, &k);
		if (prof_core.stats)
			fputs(line, stderr);
		if (prof_core.rec != NULL)
			record_comment(line);
	}
	if (prof_core.client != NULL)
		c4client_close(prof_core.client);
	prof_core.client = NULL;
	pthread_mutex_lock(&prof_core.lock);
	prof_free_all();
	atomic_fetch_add(&prof_core.epoch, 1);
	pthread_mutex_unlock(&prof_core.lock);
}

int
prof_init(void **ctx, uint64_t comm_hash, int *mask, const char *name,
	  int nnodes, int nranks, int rank)
{
	return producer_init(ctx, comm_hash, mask, name, nnodes, nranks, rank);
}

int
prof_start(void *ctx, void **handle, const struct prof_descr *d)
{
	return producer_start(ctx, handle, d);
}

int
prof_state(void *handle, int state, uint64_t trans_size, uint64_t ptimer)
{
	return producer_state(handle, state, trans_size, ptimer);
}

int
prof_stop(void *handle)
{
	return producer_stop(handle);
}

int
prof_finalize(void *ctx)
{
	return producer_finalize(ctx);
}
