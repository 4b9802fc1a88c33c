/*
 * frame.c - length-prefixed frames.
 */
#include "frame.h"

#include <stdlib.h>
#include <string.h>

enum frame_status
frame_peek(const uint8_t *buf, size_t avail, uint32_t max, uint32_t *body_len)
{
	uint32_t len;

	if (avail < FRAME_HDR_LEN)
		return FRAME_NEED_MORE;
	len = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
	      (uint32_t)buf[2] << 8 | (uint32_t)buf[3];
	*body_len = len;
	if (len > max)
		return FRAME_TOO_BIG;
	if (avail - FRAME_HDR_LEN < len)
		return FRAME_NEED_MORE;
	return FRAME_READY;
}

void
frame_put_header(uint8_t hdr[FRAME_HDR_LEN], uint32_t body_len)
{
	hdr[0] = (uint8_t)(body_len >> 24);
	hdr[1] = (uint8_t)(body_len >> 16);
	hdr[2] = (uint8_t)(body_len >> 8);
	hdr[3] = (uint8_t)body_len;
}

void
frame_buf_init(struct frame_buf *fb)
{
	memset(fb, 0, sizeof(*fb));
}

void
frame_buf_free(struct frame_buf *fb)
{
	free(fb->data);
	memset(fb, 0, sizeof(*fb));
}

int
frame_buf_append(struct frame_buf *fb, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (fb->off > 0 && fb->off == fb->len) {
		fb->off = fb->len = 0;
	}
	if (fb->len + n > fb->cap) {
		/* Move the unread tail to the front before growing. */
		if (fb->off > 0) {
			memmove(fb->data, fb->data + fb->off,
				fb->len - fb->off);
			fb->len -= fb->off;
			fb->off = 0;
		}
		if (fb->len + n > fb->cap) {
			size_t cap = fb->cap ? fb->cap : 4096;
			uint8_t *d;

			while (cap < fb->len + n)
				cap *= 2;
			d = realloc(fb->data, cap);
			if (d == NULL)
				return -1;
			fb->data = d;
			fb->cap = cap;
		}
	}
	memcpy(fb->data + fb->len, p, n);
	fb->len += n;
	return 0;
}

enum frame_status
frame_buf_next(struct frame_buf *fb, uint32_t max, const uint8_t **body,
	       uint32_t *body_len)
{
	enum frame_status st;

	st = frame_peek(fb->data + fb->off, fb->len - fb->off, max, body_len);
	if (st != FRAME_READY)
		return st;
	*body = fb->data + fb->off + FRAME_HDR_LEN;
	fb->off += FRAME_HDR_LEN + *body_len;
	return FRAME_READY;
}
