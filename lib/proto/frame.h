/*
 * frame.h - the length-prefixed framing of every c4 connection.
 *
 * A frame is a 4-byte big-endian body length followed by the body, one
 * serialized c4.Envelope.  The length is checked against the receiver's
 * maximum as soon as the 4 header bytes are there, before anything of the
 * body is buffered, so an oversized frame costs the receiver nothing.
 */
#ifndef C4_FRAME_H
#define C4_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR_LEN	   4u
#define FRAME_MAX_DEFAULT  (4u * 1024 * 1024) /* 4 MiB */
#define FRAME_MAX_MIN	   1024u	      /* configurable range */
#define FRAME_MAX_LIMIT	   (64u * 1024 * 1024)
#define FRAME_PER_CALLBACK 64u /* frames handled per read callback */

enum frame_status {
	FRAME_READY = 0,     /* a whole frame is available */
	FRAME_NEED_MORE = 1, /* wait for more bytes */
	FRAME_TOO_BIG = -1,  /* declared length above the maximum */
};

/*
 * Looks at the bytes at the head of a stream.  With at least the header
 * present, *body_len gets the declared length; the status says whether the
 * whole frame (FRAME_HDR_LEN + *body_len bytes) is there.  A declared length
 * above max is FRAME_TOO_BIG however few bytes have arrived.
 */
enum frame_status frame_peek(const uint8_t *buf, size_t avail, uint32_t max,
			     uint32_t *body_len);

/* Writes body_len big-endian into the FRAME_HDR_LEN bytes at hdr. */
void frame_put_header(uint8_t hdr[FRAME_HDR_LEN], uint32_t body_len);

/*
 * A growable byte buffer that accumulates a stream and hands out whole
 * frames: used by blocking clients (c4ctl, tests, benchmarks).  Daemons
 * apply frame_peek() to libevent buffers directly.
 */
struct frame_buf {
	uint8_t *data;
	size_t len, cap, off;
};

/*
 * frame_buf_init() makes *fb empty without allocating (whatever it held
 * is forgotten, not freed); frame_buf_free() frees its bytes and leaves it
 * empty, ready for reuse.  Bodies frame_buf_next() returned become
 * invalid.
 */
void frame_buf_init(struct frame_buf *fb);
void frame_buf_free(struct frame_buf *fb);
/* Appends n bytes; returns 0 or -1 on allocation failure. */
int frame_buf_append(struct frame_buf *fb, const void *p, size_t n);
/*
 * Returns FRAME_READY with body and body_len pointing at the next frame's body
 * (valid until the next call) and consumes it; FRAME_NEED_MORE; or
 * FRAME_TOO_BIG (the stream is then unusable).
 */
enum frame_status frame_buf_next(struct frame_buf *fb, uint32_t max,
				 const uint8_t **body, uint32_t *body_len);

#endif
