/*
 * srv_tls.h - the "tls:" configuration section (certificate, key and CA
 * files) of listeners and of the daemons' outgoing connections, checked
 * at load: every file must be readable and the key must match the
 * certificate, or the load fails with file:line:col.
 */
#ifndef C4_SRV_TLS_H
#define C4_SRV_TLS_H

#include <event2/bufferevent.h>

#include "cfg.h"
#include "tls.h"

extern const struct cfg_schema srv_tls_schema;
/* A field table entry for a struct tls_files member at off, key "tls". */
#define SRV_TLS_FIELD(off)                                                     \
	{                                                                      \
		"tls", CFG_SECTION, (off), 0, 0, 0, NULL, &srv_tls_schema,     \
			"TLS 1.3: cert, key and ca files"                      \
	}

/*
 * Checks the plaintext rule of one TCP address: a connection to or a
 * listener on an address other than loopback must use TLS (tls_on) or
 * say insecure.  Reports "what: ..." at at in d; a unix address passes.
 */
void srv_tls_check_plain(const char *addr, int tls_on, int insecure,
			 const char *what, struct cfg_pos at,
			 struct cfg_diag *d);

/*
 * Logs, at start, a warning for a plaintext TCP address that is not
 * loopback (allowed by insecure: true).  Does nothing for others.
 */
void srv_tls_warn_plain(const char *addr, int tls_on, const char *what);

/*
 * A bufferevent running ssl on fd (-1: one bufferevent_socket_connect
 * will open) on base: the server side when accepting, else the client
 * side.  It takes ssl (freed here on failure) and owns fd once made; a
 * peer that closes without close_notify reads as the end of the stream.
 * NULL without memory.
 */
struct bufferevent *srv_tls_bev(struct event_base *base, evutil_socket_t fd,
				SSL *ssl, int accepting);

#endif
