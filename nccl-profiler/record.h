/*
 * record.h - the recording (C4_PROFILER_RECORD): one text line per
 * callback, in the format replay.c reads back, to prof_core.rec.
 *
 * Threads.  The line writers run on NCCL's threads and take
 * prof_core.rec_lock: recording is a diagnostic mode, not for production
 * runs.  Callers test prof_core.rec != NULL first so that a process that does
 * not record pays nothing; a writer called while no recording is open
 * writes nothing.  None of them changes the core's other state.
 */
#ifndef C4_RECORD_H
#define C4_RECORD_H

#include <stdint.h>

struct prof_descr;

/*
 * Creates (truncates) the recording at path and writes its header line.
 * 0, or -1 with errno from fopen.  Under prof_core.lock in prof_open, before
 * any event; the core owns the file until record_close.
 */
int record_open(const char *path);

/* Closes the recording, if one is open.  Once no thread writes to it. */
void record_close(void);

/*
 * Pushes what was written to the file, so that a recording survives a
 * process that never finalizes.  Any thread.
 */
void record_flush(void);

/* Writes line (newline included) as a comment: "# " and the line. */
void record_comment(const char *line);

/* An init callback at now: the recorded ctx and NCCL's arguments. */
void record_init(uint64_t now, const void *ctx, uint64_t comm_hash, int nnodes,
		 int nranks, int rank);

/*
 * A startEvent at now: the recorded ctx, the handle h returned to NCCL
 * and the descriptor d (a ProxyOp of another process marked PXN).
 */
void record_start(uint64_t now, const void *ctx, const void *h,
		  const struct prof_descr *d);

/* A recordEventState at now on handle h with NCCL's arguments. */
void record_state(uint64_t now, const void *h, int state, uint64_t trans_size,
		  uint64_t ptimer);

/* A stopEvent at now on handle h. */
void record_stop(uint64_t now, const void *h);

/* A finalize at now of the recorded ctx. */
void record_finalize(uint64_t now, const void *ctx);

#endif
