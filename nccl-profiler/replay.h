/*
 * replay.h - a recording (C4_PROFILER_RECORD, format in replay.c) fed
 * back through the plugin's callbacks, for tests and for c4trace-like
 * offline analysis.
 */
#ifndef C4_REPLAY_H
#define C4_REPLAY_H

#include <stddef.h>
#include <stdio.h>

#include "prof.h"

/*
 * Replays the recording read from f: opens the core with cfg (no thread,
 * no recording; a bad interval becomes the default), runs its clock from
 * the recorded timestamps, reports to sink (with arg) at every interval
 * boundary and at the end, and closes the prof_core.  Returns the callbacks
 * fed, or -1 with err (errlen bytes) filled.  The core must be closed
 * before; it is closed after, with the test clock and sink cleared.  f
 * stays the caller's, read to its end or to the first bad line.
 */
int replay_run(FILE *f, const struct prof_config *cfg, prof_sink_fn sink,
	       void *arg, char *err, size_t errlen);

#endif
