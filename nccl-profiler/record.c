/*
 * record.c - the recording of callbacks (record.h; format in replay.c).
 */
#include "record.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "core.h"

static void record_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void
record_line(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&prof_core.rec_lock);
	if (prof_core.rec != NULL) {
		va_start(ap, fmt);
		vfprintf(prof_core.rec, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&prof_core.rec_lock);
}

int
record_open(const char *path)
{
	prof_core.rec = fopen(path, "w");
	if (prof_core.rec == NULL)
		return -1;
	fprintf(prof_core.rec, "# c4-nccl-profiler record 1\n");
	return 0;
}

void
record_close(void)
{
	if (prof_core.rec != NULL)
		fclose(prof_core.rec);
	prof_core.rec = NULL;
}

void
record_flush(void)
{
	pthread_mutex_lock(&prof_core.rec_lock);
	if (prof_core.rec != NULL)
		fflush(prof_core.rec);
	pthread_mutex_unlock(&prof_core.rec_lock);
}

void
record_comment(const char *line)
{
	record_line("# %s", line);
}

void
record_init(uint64_t now, const void *ctx, uint64_t comm_hash, int nnodes,
	    int nranks, int rank)
{
	record_line("I %llu %p %llx %d %d %d\n", (unsigned long long)now, ctx,
		    (unsigned long long)comm_hash, nnodes, nranks, rank);
}

void
record_start(uint64_t now, const void *ctx, const void *h,
	     const struct prof_descr *d)
{
	record_line("S %llu %p %p %d %p %d %llu %d %d %d %llu %llu %u %d %d "
		    "%d %d %d %d %d %llu\n",
		    (unsigned long long)now, ctx, h, d->type, d->parent,
		    d->rank, (unsigned long long)d->seq, d->func, d->algo,
		    d->proto, (unsigned long long)d->count,
		    (unsigned long long)d->bytes, d->nchannels,
		    d->pid == prof_core.pid ? 0 : 1, d->channel, d->peer,
		    d->nsteps, d->chunk, d->is_send, d->step,
		    (unsigned long long)d->ptimer);
}

void
record_state(uint64_t now, const void *h, int state, uint64_t trans_size,
	     uint64_t ptimer)
{
	record_line("R %llu %p %d %llu %llu\n", (unsigned long long)now, h,
		    state, (unsigned long long)trans_size,
		    (unsigned long long)ptimer);
}

void
record_stop(uint64_t now, const void *h)
{
	record_line("E %llu %p\n", (unsigned long long)now, h);
}

void
record_finalize(uint64_t now, const void *ctx)
{
	record_line("F %llu %p\n", (unsigned long long)now, ctx);
}
