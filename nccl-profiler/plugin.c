/*
 * plugin.c - libc4-nccl-profiler.so: the symbols NCCL looks up
 * (ncclProfiler_v5 for 2.28, ncclProfiler_v4 for 2.27) and the
 * environment that configures the core (prof.c).
 *
 * The process-wide core is opened on the first communicator's init and
 * closed when the last one is finalized, before NCCL may dlclose us, so
 * that no thread of ours outlives the code.  Without a job id (below)
 * and without C4_PROFILER_RECORD the plugin stays inactive: it asks NCCL
 * for no events at all, and says so once on stderr.
 *
 * Environment:
 *   C4_AGENT_SOCKET          the agent's unix socket (/run/c4/agent.sock)
 *   C4_JOB_ID                the job; required to report.  When unset or
 *                            empty, the first set of the scheduler's
 *                            variables in plugin_job_vars is the job id.
 *   C4_TOKEN                 credential of role ccl-client, if the agent
 *                            wants one
 *   C4_INTERVAL_MS           reporting interval (1000)
 *   C4_PROFILER_DETAIL       0: no ProxyStep events at start (1)
 *   C4_PROFILER_DETAIL_FILE  ProxyStep events on while this file exists
 *   C4_PROFILER_RECORD       write every callback to this file; "%p" in
 *                            the name becomes the process id
 *   C4_PROFILER_STATS        1: print the plugin's counters (events,
 *                            drops, stale handles, ...) on stderr when
 *                            the last communicator is finalized; 2:
 *                            also one line per op kind and interval
 *                            (kernel and gap counts, means, the gap's
 *                            quantiles, the sampling shift)
 *   C4_PROFILER_POOL, C4_PROFILER_RING, C4_PROFILER_COLLS  pool sizes
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_abi.h"
#include "names.h"
#include "prof.h"

#define PLUGIN_NAME	      "c4"
#define PLUGIN_SOCKET_DEFAULT "/run/c4/agent.sock"
#define PLUGIN_PATH_MAX	      4096

#define PLUGIN_EXPORT __attribute__((visibility("default")))

/*
 * Fills the prof_descr *dp from the NCCL descriptor *ep of either ABI
 * version: v4 and v5 name the fields read here alike but are distinct
 * types, so this is a macro and not a function.  Reads ep only.
 */
#define PLUGIN_DESCR_FILL(dp, ep)                                              \
	do {                                                                   \
		switch ((ep)->type) {                                          \
		case NCCL_EV_COLL:                                             \
			(dp)->seq = (ep)->coll.seqNumber;                      \
			(dp)->func = names_func_code((ep)->coll.func);         \
			(dp)->algo = names_algo_code((ep)->coll.algo);         \
			(dp)->proto = names_proto_code((ep)->coll.proto);      \
			(dp)->count = (ep)->coll.count;                        \
			(dp)->bytes = (ep)->coll.count *                       \
				      names_dtype_size((ep)->coll.datatype);   \
			(dp)->nchannels = (ep)->coll.nChannels;                \
			break;                                                 \
		case NCCL_EV_PROXY_OP:                                         \
			(dp)->pid = (ep)->proxyOp.pid;                         \
			(dp)->channel = (ep)->proxyOp.channelId;               \
			(dp)->peer = (ep)->proxyOp.peer;                       \
			(dp)->nsteps = (ep)->proxyOp.nSteps;                   \
			(dp)->chunk = (ep)->proxyOp.chunkSize;                 \
			(dp)->is_send = (ep)->proxyOp.isSend;                  \
			break;                                                 \
		case NCCL_EV_PROXY_STEP:                                       \
			(dp)->step = (ep)->proxyStep.step;                     \
			break;                                                 \
		case NCCL_EV_KERNEL_CH:                                        \
			(dp)->channel = (ep)->kernelCh.channelId;              \
			(dp)->ptimer = (ep)->kernelCh.pTimer;                  \
			break;                                                 \
		}                                                              \
	} while (0)

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static int plugin_comms; /* communicators initialised and not finalized */
static int plugin_told;	 /* the reason for being inactive was printed */

/*
 * Where the job id comes from, in order: c4's own variable, then what
 * the common schedulers set in every task's environment (Slurm, PBS,
 * LSF, Flux), then the variable a Kubernetes pod spec sets from the
 * Job's label through the downward API (docs/nccl.md).
 */
static const char *const plugin_job_vars[] = {
	"C4_JOB_ID",   "SLURM_JOB_ID",	      "PBS_JOBID", "LSB_JOBID",
	"FLUX_JOB_ID", "KUBERNETES_JOB_NAME", NULL,
};

/* The job id from the environment, or NULL; *from names its variable. */
static const char *
plugin_job(const char **from)
{
	for (size_t i = 0; plugin_job_vars[i] != NULL; i++) {
		const char *v = getenv(plugin_job_vars[i]);

		if (v != NULL && *v != '\0') {
			*from = plugin_job_vars[i];
			return v;
		}
	}
	*from = NULL;
	return NULL;
}

/* Says once per process why the plugin does nothing. */
static void
plugin_tell_inactive(void)
{
	if (plugin_told)
		return;
	plugin_told = 1;
	fprintf(stderr,
		"c4-nccl-profiler: inactive: no job id (none of C4_JOB_ID, "
		"SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, FLUX_JOB_ID, "
		"KUBERNETES_JOB_NAME is set) and no C4_PROFILER_RECORD\n");
}

static uint32_t
plugin_env_u32(const char *name, uint32_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (s == NULL || *s == '\0')
		return dflt;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || v > UINT32_MAX)
		return dflt;
	return (uint32_t)v;
}

/* path with each "%p" replaced by the process id. */
static void
plugin_expand(char *out, size_t len, const char *path)
{
	size_t o = 0;

	for (; *path != '\0' && o + 1 < len; path++) {
		if (path[0] == '%' && path[1] == 'p') {
			int n = snprintf(out + o, len - o, "%ld",
					 (long)getpid());

			if (n < 0 || (size_t)n >= len - o)
				break;
			o += (size_t)n;
			path++;
		} else {
			out[o++] = *path;
		}
	}
	out[o] = '\0';
}

/* Opens the core on the first communicator.  1 active, 0 inactive. */
static int
plugin_acquire(void)
{
	struct prof_config cfg;
	char rec[PLUGIN_PATH_MAX];
	const char *job_from, *job = plugin_job(&job_from), *rp, *ev;
	char err[128];
	int active = 0;

	pthread_mutex_lock(&plugin_lock);
	if (plugin_comms > 0) {
		plugin_comms++;
		active = 1;
		goto out;
	}
	rp = getenv("C4_PROFILER_RECORD");
	if (job == NULL && (rp == NULL || *rp == '\0')) {
		plugin_tell_inactive();
		goto out;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.socket_path = getenv("C4_AGENT_SOCKET");
	if (cfg.socket_path == NULL || *cfg.socket_path == '\0')
		cfg.socket_path = PLUGIN_SOCKET_DEFAULT;
	cfg.job_id = job;
	cfg.token = getenv("C4_TOKEN");
	cfg.interval_ms =
		plugin_env_u32("C4_INTERVAL_MS", PROF_INTERVAL_DEFAULT);
	cfg.ring_cap = plugin_env_u32("C4_PROFILER_RING", 0);
	cfg.pool_cap = plugin_env_u32("C4_PROFILER_POOL", 0);
	cfg.colls_cap = plugin_env_u32("C4_PROFILER_COLLS", 0);
	cfg.detail = plugin_env_u32("C4_PROFILER_DETAIL", 1) != 0;
	ev = getenv("C4_PROFILER_EVENTS");
	if (ev != NULL && *ev != '\0' &&
	    names_events_parse(ev, &cfg.base_mask, &cfg.detail, err,
			       sizeof(err)) < 0)
		fprintf(stderr,
			"c4-nccl-profiler: C4_PROFILER_EVENTS: %s; using the "
			"default events\n",
			err);
	cfg.detail_file = getenv("C4_PROFILER_DETAIL_FILE");
	cfg.kernel_sample = plugin_env_u32("C4_PROFILER_KERNEL_SAMPLE",
					   PROF_KSAMPLE_DEFAULT);
	cfg.stats = (int)plugin_env_u32("C4_PROFILER_STATS", 0);
	if (rp != NULL && *rp != '\0') {
		plugin_expand(rec, sizeof(rec), rp);
		cfg.record_path = rec;
	}
	cfg.thread = 1;
	if (prof_open(&cfg) < 0) {
		fprintf(stderr, "c4-nccl-profiler: cannot start; inactive\n");
		goto out;
	}
	if (job_from != NULL && strcmp(job_from, "C4_JOB_ID") != 0 &&
	    !plugin_told) {
		plugin_told = 1;
		fprintf(stderr, "c4-nccl-profiler: job id %s from %s\n", job,
			job_from);
	}
	plugin_comms = 1;
	active = 1;
out:
	pthread_mutex_unlock(&plugin_lock);
	return active;
}

static void
plugin_release(void)
{
	pthread_mutex_lock(&plugin_lock);
	if (plugin_comms > 0 && --plugin_comms == 0)
		prof_close();
	pthread_mutex_unlock(&plugin_lock);
}

static int
plugin_init(void **context, uint64_t hash, int *mask, const char *name,
	    int nnodes, int nranks, int rank)
{
	*context = NULL;
	if (!plugin_acquire()) {
		if (mask != NULL)
			*mask = 0;
		return NCCL_ABI_SUCCESS;
	}
	prof_init(context, hash, mask, name, nnodes, nranks, rank);
	if (*context == NULL)
		plugin_release();
	return NCCL_ABI_SUCCESS;
}

static nccl_result_t
plugin_finalize(void *context)
{
	if (context == NULL)
		return NCCL_ABI_SUCCESS;
	prof_finalize(context);
	plugin_release();
	return NCCL_ABI_SUCCESS;
}

static nccl_result_t
plugin_stop(void *handle)
{
	prof_stop(handle);
	return NCCL_ABI_SUCCESS;
}

static nccl_result_t
plugin_state(void *handle, int state, union nccl_abi_state_args *a)
{
	uint64_t trans = 0, ptimer = 0;

	if (a != NULL) {
		if (state == NCCL_ST_KERNEL_CH_STOP)
			ptimer = a->kernelCh.pTimer;
		else if (state >= NCCL_ST_STEP_SEND_GPU_WAIT &&
			 state <= NCCL_ST_STEP_RECV_GPU_WAIT)
			trans = a->proxyStep.transSize;
	}
	prof_state(handle, state, trans, ptimer);
	return NCCL_ABI_SUCCESS;
}

/* ---- v5 ------------------------------------------------------------- */

static nccl_result_t
plugin_v5_init(void **context, uint64_t commId, int *mask, const char *name,
	       int nNodes, int nranks, int rank, nccl_logger_t logfn)
{
	(void)logfn;
	return plugin_init(context, commId, mask, name, nNodes, nranks, rank);
}

static nccl_result_t
plugin_v5_start(void *context, void **handle, struct nccl_v5_descr *e)
{
	struct prof_descr d;

	memset(&d, 0, sizeof(d));
	d.type = e->type <= (uint64_t)INT32_MAX ? (int)e->type : 0;
	d.parent = e->parentObj;
	d.rank = e->rank;
	PLUGIN_DESCR_FILL(&d, e);
	if (e->type == NCCL_EV_COLL_API)
		d.graph = e->collApi.graphCaptured;
	prof_start(context, handle, &d);
	return NCCL_ABI_SUCCESS;
}

PLUGIN_EXPORT struct nccl_profiler_v5 ncclProfiler_v5 = {
	.name = PLUGIN_NAME,
	.init = plugin_v5_init,
	.startEvent = plugin_v5_start,
	.stopEvent = plugin_stop,
	.recordEventState = plugin_state,
	.finalize = plugin_finalize,
};

/* ---- v4 ------------------------------------------------------------- */

static nccl_result_t
plugin_v4_init(void **context, int *mask, const char *name, uint64_t hash,
	       int nNodes, int nranks, int rank, nccl_logger_t logfn)
{
	(void)logfn;
	return plugin_init(context, hash, mask, name, nNodes, nranks, rank);
}

static nccl_result_t
plugin_v4_start(void *context, void **handle, struct nccl_v4_descr *e)
{
	struct prof_descr d;

	memset(&d, 0, sizeof(d));
	d.type = e->type;
	d.parent = e->parentObj;
	d.rank = e->rank;
	PLUGIN_DESCR_FILL(&d, e);
	prof_start(context, handle, &d);
	return NCCL_ABI_SUCCESS;
}

PLUGIN_EXPORT struct nccl_profiler_v4 ncclProfiler_v4 = {
	.name = PLUGIN_NAME,
	.init = plugin_v4_init,
	.startEvent = plugin_v4_start,
	.stopEvent = plugin_stop,
	.recordEventState = plugin_state,
	.finalize = plugin_finalize,
};
