/*
 * metrics.h - the c4p-master's /metrics and /healthz (served when the
 * configuration has "http: listen:").
 */
#ifndef C4P_METRICS_H
#define C4P_METRICS_H

#include <stddef.h>

#include "c4p.h"

/*
 * Starts the HTTP listener when configured (p->http_bound gets its
 * address); 0, or -1 with err.
 */
int metrics_open(struct c4p *p, char *err, size_t errlen);
/* Stops the listener; nothing when none runs. */
void metrics_close(struct c4p *p);
/* Counts a path request answered with an error of code. */
void metrics_path_error(struct c4p *p, C4__ErrorCode code);

#endif
