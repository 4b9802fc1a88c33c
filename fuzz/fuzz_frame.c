/*
 * fuzz_frame.c - libFuzzer target: an arbitrary byte stream through the
 * frame reader and msg_unpack(), as a daemon sees a peer's input.  The
 * first byte picks how the stream is split into reads.
 */
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_buf fb;
	size_t step, off = 1;

	if (size < 1)
		return 0;
	step = (size_t)data[0] % 17 + 1;
	frame_buf_init(&fb);
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		const uint8_t *body;
		uint32_t len;
		enum frame_status st;

		if (frame_buf_append(&fb, data + off, n) < 0)
			break;
		off += n;
		while ((st = frame_buf_next(&fb, 1u << 20, &body, &len)) ==
		       FRAME_READY) {
			struct msg_err err;
			C4__Envelope *env = msg_unpack(body, len, &err);

			if (env != NULL) {
				/* A valid message must survive a re-pack. */
				size_t sz = msg_frame_size(env);
				uint8_t *again = (uint8_t *)__builtin_alloca(
					sz < 65536 ? sz : 1);

				if (sz < 65536)
					msg_pack_frame(env, again);
				(void)msg_body(env);
				(void)msg_type_name(env->type);
				msg_free(env);
			}
		}
		if (st == FRAME_TOO_BIG)
			break;
	}
	frame_buf_free(&fb);
	return 0;
}
