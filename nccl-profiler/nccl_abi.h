/*
 * nccl_abi.h - our own declaration of NCCL's profiler plugin interface,
 * versions 4 (NCCL 2.27) and 5 (NCCL 2.28), written from the published
 * interface (NCCL's src/include/plugin/nccl_profiler.h and
 * plugin/profiler/profiler_v4.h, profiler_v5.h).  Only the layout matters:
 * NCCL looks up the exported symbol "ncclProfiler_v5" (then "_v4", ...)
 * with dlsym and calls through the table.  Plain C11; nothing of NCCL's
 * headers is needed to build the plugin.
 *
 * Event handles returned by startEvent are opaque to NCCL: it hands them
 * back to stopEvent/recordEventState and as the parentObj of child events,
 * never dereferences them (a PXN proxy op even carries a parent handle of
 * another process, recognisable by a pid that is not ours).
 */
#ifndef C4_NCCL_ABI_H
#define C4_NCCL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int nccl_result_t; /* ncclResult_t: an int-sized enum */
#define NCCL_ABI_SUCCESS	0
#define NCCL_ABI_SYSTEM_ERROR	2
#define NCCL_ABI_INTERNAL_ERROR 3

/* ncclDebugLogger_t: level is an int-sized enum. */
typedef void (*nccl_logger_t)(int level, unsigned long flags, const char *file,
			      int line, const char *fmt, ...);

/* Event types: bits of the activation mask and descr.type. */
enum nccl_abi_event_type {
	NCCL_EV_GROUP = 1 << 0,
	NCCL_EV_COLL = 1 << 1,
	NCCL_EV_P2P = 1 << 2,
	NCCL_EV_PROXY_OP = 1 << 3,
	NCCL_EV_PROXY_STEP = 1 << 4,
	NCCL_EV_PROXY_CTRL = 1 << 5,
	NCCL_EV_KERNEL_CH = 1 << 6,
	NCCL_EV_NET_PLUGIN = 1 << 7,
	NCCL_EV_GROUP_API = 1 << 8,	/* v5 */
	NCCL_EV_COLL_API = 1 << 9,	/* v5 */
	NCCL_EV_P2P_API = 1 << 10,	/* v5 */
	NCCL_EV_KERNEL_LAUNCH = 1 << 11 /* v5 */
};

/* Event states (ncclProfilerEventState_t; the same numbers in v4 and v5). */
enum nccl_abi_state {
	NCCL_ST_STEP_SEND_GPU_WAIT = 8,
	NCCL_ST_STEP_SEND_WAIT = 9,
	NCCL_ST_STEP_RECV_WAIT = 10,
	NCCL_ST_STEP_RECV_FLUSH_WAIT = 11,
	NCCL_ST_STEP_RECV_GPU_WAIT = 12,
	NCCL_ST_CTRL_IDLE = 13,
	NCCL_ST_CTRL_APPEND_END = 18,
	NCCL_ST_OP_IN_PROGRESS = 19,	  /* ncclProfilerProxyOpInProgress_v4 */
	NCCL_ST_STEP_SEND_PEER_WAIT = 20, /* ..ProxyStepSendPeerWait_v4 */
	NCCL_ST_NET_PLUGIN_UPDATE = 21,
	NCCL_ST_KERNEL_CH_STOP = 22,
	NCCL_ST_GROUP_START_API_STOP = 23, /* v5 */
	NCCL_ST_GROUP_END_API_START = 24   /* v5 */
};

/* ---- version 5 (NCCL 2.28) ------------------------------------------- */

struct nccl_v5_descr {
	uint64_t type; /* one enum nccl_abi_event_type bit */
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
		} p2pApi;
		struct {
			void *stream;
		} kernelLaunch;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
			void *parentGroup;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
			uint64_t pTimer; /* GPU globaltimer at the start, ns */
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
};

/* State arguments: identical layout in v4 and v5. */
union nccl_abi_state_args {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
	struct {
		void *data;
	} netPlugin;
	struct {
		uint64_t pTimer; /* GPU globaltimer at the stop, ns */
	} kernelCh;
};

struct nccl_profiler_v5 {
	const char *name;
	nccl_result_t (*init)(void **context, uint64_t commId,
			      int *eActivationMask, const char *commName,
			      int nNodes, int nranks, int rank,
			      nccl_logger_t logfn);
	nccl_result_t (*startEvent)(void *context, void **eHandle,
				    struct nccl_v5_descr *eDescr);
	nccl_result_t (*stopEvent)(void *eHandle);
	nccl_result_t (*recordEventState)(
		void *eHandle, int eState,
		union nccl_abi_state_args *eStateArgs);
	nccl_result_t (*finalize)(void *context);
};

/* ---- version 4 (NCCL 2.27) ------------------------------------------- */

struct nccl_v4_descr {
	uint8_t type; /* narrower than v5's */
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
			uint64_t pTimer;
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
};

struct nccl_profiler_v4 {
	const char *name;
	/* Note the order: the mask comes before the name and hash in v4. */
	nccl_result_t (*init)(void **context, int *eActivationMask,
			      const char *commName, uint64_t commHash,
			      int nNodes, int nranks, int rank,
			      nccl_logger_t logfn);
	nccl_result_t (*startEvent)(void *context, void **eHandle,
				    struct nccl_v4_descr *eDescr);
	nccl_result_t (*stopEvent)(void *eHandle);
	nccl_result_t (*recordEventState)(
		void *eHandle, int eState,
		union nccl_abi_state_args *eStateArgs);
	nccl_result_t (*finalize)(void *context);
};

#endif
