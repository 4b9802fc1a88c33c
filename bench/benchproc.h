/*
 * benchproc.h - what benchmarks that drive real daemons share.
 */
#ifndef C4_BENCHPROC_H
#define C4_BENCHPROC_H

#include <stddef.h>
#include <sys/types.h>

/* Seconds of CLOCK_MONOTONIC. */
double bp_now(void);
/* Starts argv with stdout and stderr in log; it dies with the caller. */
pid_t bp_spawn(char *const argv[], const char *log);
/* The folder of the running benchmark (build-bench/bench); 0 or -1. */
int bp_self_dir(char *buf, size_t len);

#endif
