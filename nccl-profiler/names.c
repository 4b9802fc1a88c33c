/*
 * names.c - NCCL's names to the plugin's codes (names.h).
 */
#include "names.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "c4client.h"
#include "nccl_abi.h"

/*
 * NCCL's names (ncclFuncToString and friends) mapped to our enums.  Only
 * known names are mapped; anything else counts as "other".
 */
int
names_func_code(const char *s)
{
	static const struct {
		const char *name;
		int code;
	} t[] = {
		{"AllReduce", C4CLIENT_ALLREDUCE},
		{"AllGather", C4CLIENT_ALLGATHER},
		{"ReduceScatter", C4CLIENT_REDUCESCATTER},
		{"Broadcast", C4CLIENT_BROADCAST},
		{"Reduce", C4CLIENT_REDUCE},
		{"AllToAll", C4CLIENT_ALLTOALL},
		{"SendRecv", C4CLIENT_SENDRECV},
		{"Send", C4CLIENT_SENDRECV},
		{"Recv", C4CLIENT_SENDRECV},
	};
	size_t i;

	if (s == NULL)
		return 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(s, t[i].name) == 0)
			return t[i].code;
	return C4CLIENT_FUNC_OTHER;
}

int
names_algo_code(const char *s)
{
	static const struct {
		const char *name;
		int code;
	} t[] = {
		{"Ring", C4CLIENT_ALGO_RING},
		{"Tree", C4CLIENT_ALGO_TREE},
		{"CollNetDirect", C4CLIENT_ALGO_COLLNET_DIRECT},
		{"CollNetChain", C4CLIENT_ALGO_COLLNET_CHAIN},
		{"NVLS", C4CLIENT_ALGO_NVLS},
		{"NVLSTree", C4CLIENT_ALGO_NVLS_TREE},
		{"PAT", C4CLIENT_ALGO_PAT},
	};
	size_t i;

	if (s == NULL)
		return 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcasecmp(s, t[i].name) == 0)
			return t[i].code;
	return C4CLIENT_ALGO_OTHER;
}

int
names_proto_code(const char *s)
{
	if (s == NULL)
		return 0;
	if (strcasecmp(s, "LL") == 0)
		return C4CLIENT_PROTO_LL;
	if (strcasecmp(s, "LL128") == 0)
		return C4CLIENT_PROTO_LL128;
	if (strcasecmp(s, "Simple") == 0)
		return C4CLIENT_PROTO_SIMPLE;
	return 0;
}

/* "ncclFloat32", "ncclBfloat16", "ncclInt8", "ncclFloat8e4m3", ... */
size_t
names_dtype_size(const char *s)
{
	size_t n;

	if (s == NULL)
		return 0;
	if (strncmp(s, "ncclFloat8", 10) == 0)
		return 1;
	n = strlen(s);
	if (n >= 2 && strcmp(s + n - 2, "64") == 0)
		return 8;
	if (n >= 2 && strcmp(s + n - 2, "32") == 0)
		return 4;
	if (n >= 2 && strcmp(s + n - 2, "16") == 0)
		return 2;
	if (n >= 1 && s[n - 1] == '8')
		return 1;
	return 0;
}

int
names_events_parse(const char *s, int *base, int *detail, char *err,
		   size_t errlen)
{
	static const struct {
		const char *name;
		int bit;
	} names[] = {{"coll", NCCL_EV_COLL},
		     {"kernel", NCCL_EV_KERNEL_CH},
		     {"proxy", NCCL_EV_PROXY_OP},
		     {"step", NCCL_EV_PROXY_STEP}};
	int mask = 0, none = 0;
	size_t i, n;

	while (*s != '\0') {
		n = strcspn(s, ", ");
		if (n == 0) {
			s++;
			continue;
		}
		if (n == 4 && strncmp(s, "none", 4) == 0) {
			none = 1;
		} else {
			for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (strlen(names[i].name) == n &&
				    strncmp(s, names[i].name, n) == 0)
					break;
			if (i == sizeof(names) / sizeof(names[0])) {
				snprintf(
					err, errlen,
					"unknown event \"%.*s\" (coll, kernel, "
					"proxy, step or none)",
					(int)(n > 32 ? 32 : n), s);
				return -1;
			}
			mask |= names[i].bit;
		}
		s += n;
	}
	if (none && mask != 0) {
		snprintf(err, errlen, "\"none\" with other events");
		return -1;
	}
	if (!none && mask == 0) {
		snprintf(err, errlen, "no event named");
		return -1;
	}
	if ((mask & (NCCL_EV_KERNEL_CH | NCCL_EV_PROXY_OP)) != 0 &&
	    (mask & NCCL_EV_COLL) == 0) {
		snprintf(err, errlen, "kernel and proxy need coll");
		return -1;
	}
	if ((mask & NCCL_EV_PROXY_STEP) != 0 &&
	    (mask & NCCL_EV_PROXY_OP) == 0) {
		snprintf(err, errlen, "step needs proxy");
		return -1;
	}
	*detail = (mask & NCCL_EV_PROXY_STEP) != 0;
	mask &= ~NCCL_EV_PROXY_STEP;
	*base = none ? -1 : mask;
	return 0;
}
