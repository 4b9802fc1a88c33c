/*
 * msg.h - envelopes: build, pack into frames, unpack and validate.
 *
 * Every message travels in a c4.Envelope whose type names the body member
 * that is set.  msg_unpack() is the one path by which received bytes become
 * a message anywhere in c4: it decodes, checks the protocol version, checks
 * that type and body agree, and validates the body's fields (presence,
 * lengths, ranges), so handlers only see well-formed messages.
 */
#ifndef C4_MSG_H
#define C4_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "admin.pb-c.h"
#include "c4.pb-c.h"
#include "c4d.pb-c.h"
#include "c4p.pb-c.h"
#include "frame.h"
#include "session.pb-c.h"

#define C4_PROTO_VERSION 1u

/* Limits on decoded fields, checked by msg_unpack(). */
#define MSG_ID_MAX	    256u  /* job ids, node names, request ids, ... */
#define MSG_TEXT_MAX	    4096u /* error texts, summaries */
#define MSG_CREDENTIAL_MAX  1024u
#define MSG_RANKS_MAX	    (1u << 20) /* ranks of one communicator */
#define MSG_QP_COUNT_MAX    4096u      /* QPs in one path request */
#define MSG_BATCH_MAX	    65536u     /* requests in one batch */
#define MSG_SKETCH_MAX	    4096u      /* buckets of one quantile sketch */
#define MSG_CAPS_MAX	    64u	       /* capabilities in one hello */
#define MSG_PROBE_PORTS_MAX 65536u     /* source ports in one probe task */
#define MSG_TTL_MAX	    64u	       /* probe TTL, and hops per path */
#define MSG_IFNAME_MAX	    15u	       /* interface names (IFNAMSIZ - 1) */

/* Bit masks of C4__Role values, for msg_role_may_send(). */
#define MSG_ROLE_BIT(r) (1u << (r))

struct msg_err {
	C4__ErrorCode code;
	char text[192];
};

/*
 * Name of a type ("hello", "telemetry", ...) or of a role ("agent",
 * "ccl-client", ...), for logs and counters: static strings, "unknown"
 * for a value out of range.
 */
const char *msg_type_name(C4__MsgType type);
const char *msg_role_name(C4__Role role);
/* Parses a role name as msg_role_name() writes it; -1 if unknown. */
int msg_role_parse(const char *name, C4__Role *out);

/*
 * Initialises env (zeroed, version set) to carry body as a message of the
 * given type.  body must point at the protobuf-c struct of that type.
 */
void msg_init(C4__Envelope *env, C4__MsgType type, void *body);
/*
 * msg_init() with the envelope's sequence number set to seq.  env points
 * at body afterwards, as with msg_init().
 */
void msg_init_seq(C4__Envelope *env, C4__MsgType type, void *body,
		  uint64_t seq);
/* The body of env, whatever its type. */
void *msg_body(const C4__Envelope *env);

/* Bytes of the frame (header included) that msg_pack_frame() writes. */
size_t msg_frame_size(const C4__Envelope *env);
/* Writes header + envelope into out (msg_frame_size() bytes). */
size_t msg_pack_frame(const C4__Envelope *env, uint8_t *out);
/*
 * Packs env into a newly allocated frame (header included) and sets *len
 * to its size.  Returns the frame, which the caller frees, or NULL when
 * out of memory (*len is then unspecified).  Does not change env.
 */
uint8_t *msg_frame_new(const C4__Envelope *env, size_t *len);
/*
 * A deep copy of msg, any protobuf-c message (packed, then unpacked).
 * Returns the copy, which the caller frees with
 * protobuf_c_message_free_unpacked(copy, NULL), or NULL when out of
 * memory.  Does not change msg.
 */
void *msg_copy(const void *msg);

/*
 * Decodes and validates one frame body.  Returns the envelope (free with
 * msg_free()) or NULL with err filled: ERR_MALFORMED, ERR_BAD_VERSION or
 * ERR_INVALID.
 */
C4__Envelope *msg_unpack(const uint8_t *body, size_t len, struct msg_err *err);
/*
 * The same with a protobuf-c allocator (NULL: malloc); an envelope from an
 * allocator whose free does nothing is released with the allocator's
 * memory, not with msg_free().
 */
C4__Envelope *msg_unpack_alloc(const uint8_t *body, size_t len,
			       struct msg_err *err, ProtobufCAllocator *alloc);
/*
 * Frees an envelope msg_unpack() returned, with every body it holds;
 * NULL is fine.  Never for one built with msg_init() on the caller's
 * storage.
 */
void msg_free(C4__Envelope *env);

/* May a peer authenticated with role send messages of this type? */
int msg_role_may_send(C4__Role role, C4__MsgType type);
/* Is this type sent only by the serving side of a session? */
int msg_from_server_only(C4__MsgType type);

#endif
