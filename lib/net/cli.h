/*
 * cli.h - a blocking client session, for c4ctl, tests and benchmarks.
 *
 * Connects, sends a hello with the given role and credential, and checks
 * the hello reply; then sends requests and waits (with a timeout) for the
 * reply whose reply_to names them.  Replies are decoded with msg_unpack(),
 * the same validation the daemons apply.
 */
#ifndef C4_CLI_H
#define C4_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "msg.h"
#include "tls.h"

struct cli {
	int fd;
	struct frame_buf in;
	uint32_t max_frame;
	uint64_t seq;
	int timeout_ms;
	/*
	 * Microseconds cli_recv() polls the socket without sleeping before
	 * it blocks in poll() (0: it blocks at once).  A reply that comes
	 * within it is read without the wake-up of a sleeping thread, which
	 * on a virtual machine costs tens of microseconds.
	 */
	int spin_us;
	C4__HelloReply *hello; /* the daemon's reply, owned */
	C4__Envelope *hello_env;
	char err[512];
	/*
	 * Set while fd is a socket cli_connect() opened and cli_close() has
	 * not closed: a merely zeroed client (fd 0) owns no descriptor.
	 */
	int connected;
	SSL_CTX *tls_ctx; /* owned while a TLS session is open */
	SSL *ssl;	  /* the TLS session on fd, or NULL */
};

struct cli_hello {
	C4__Role role;
	const char *credential;
	const char *job_id;
	const char *node_name;
	/*
	 * TLS for a TCP address when it names a CA or a certificate (else
	 * plaintext); NULL: none.  The files are read at connect.
	 */
	const struct tls_files *tls;
};

/*
 * Connects to addr, over TLS 1.3 when h->tls asks for it and addr is TCP
 * (the server's certificate must verify against h->tls->ca and name the
 * host of addr), and says hello.  Returns 0, or -1 with c->err set (the
 * connection is then closed).
 */
int cli_connect(struct cli *c, const char *addr, const struct cli_hello *h,
		int timeout_ms);
/*
 * Says goodbye if connected (best effort), closes the socket and frees the
 * hello reply and the input buffer; c->hello becomes NULL and c->fd -1.
 * Envelopes already returned stay the caller's.  Only a socket that
 * cli_connect() opened is closed: a zeroed c is safe to close (its fd 0
 * is left alone), and so is a c closed before; a caller that put its own
 * descriptor in c->fd closes it itself.  c may then be connected again.
 */
void cli_close(struct cli *c);

/* Sends one message; *seq gets its sequence number.  0 or -1. */
int cli_send(struct cli *c, C4__MsgType type, void *body, uint64_t *seq);
/* Sends raw bytes (tests of malformed input). */
int cli_send_raw(struct cli *c, const void *p, size_t n);
/* Waits for the next message.  NULL with c->err on timeout/close/error. */
C4__Envelope *cli_recv(struct cli *c);
/*
 * Sends a request and waits for its answer, skipping unrelated messages.
 * An Error answer is returned as NULL with its text in c->err.
 */
C4__Envelope *cli_call(struct cli *c, C4__MsgType type, void *body);

#endif
