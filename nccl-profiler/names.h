/*
 * names.h - the names NCCL and the plugin's environment use, mapped to
 * the plugin's codes.  Pure functions of their arguments: any thread,
 * no state, nothing kept of the strings passed.
 */
#ifndef C4_NAMES_H
#define C4_NAMES_H

#include <stddef.h>

/*
 * NCCL's function name (ncclFuncToString: "AllReduce", "Send", ...) as a
 * c4client_func; C4CLIENT_FUNC_OTHER for a name not known, 0 for NULL.
 */
int names_func_code(const char *s);

/*
 * NCCL's algorithm name ("Ring", "NVLSTree", ..., any case) as a
 * c4client algorithm; C4CLIENT_ALGO_OTHER when not known, 0 for NULL.
 */
int names_algo_code(const char *s);

/* NCCL's protocol name (LL, LL128, Simple, any case); 0 when not known. */
int names_proto_code(const char *s);

/*
 * The size in bytes of one element of NCCL's datatype named s
 * ("ncclFloat32", "ncclBfloat16", "ncclFloat8e4m3", ...), from the width
 * its name ends with; 0 when not known or NULL.
 */
size_t names_dtype_size(const char *s);

/*
 * Parses an event list ("coll,kernel,proxy,step" or "none"; see
 * docs/nccl.md) into *base (Coll, KernelCh, ProxyOp bits; -1 for none,
 * as prof_config.base_mask) and *detail (1 when "step" is named).  0, or
 * -1 with err (errlen bytes) naming the bad word; *base and *detail are
 * set only on success.
 */
int names_events_parse(const char *s, int *base, int *detail, char *err,
		       size_t errlen);

#endif
