/*
 * tls.h - TLS 1.3 over OpenSSL for every TCP link of c4: contexts built
 * from certificate, key and CA files, client sessions that verify the
 * server's name, and the subjects of a verified peer certificate.
 *
 * Only TLS 1.3 is offered or accepted.  A server given a CA requires a
 * client certificate signed by it (mutual TLS); a client always verifies
 * the server's certificate chain and the name it connects to.
 */
#ifndef C4_TLS_H
#define C4_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#define TLS_SUBJECT_MAX 256 /* bytes of one certificate name compared */

/* The files of one TLS end; NULL members are absent. */
struct tls_files {
	char *cert; /* PEM certificate chain, leaf first */
	char *key;  /* PEM private key of the leaf */
	char *ca;   /* PEM CA certificates the peer's chain must end in */
};

/*
 * Is TLS configured in f?  A server needs cert and key; a client has TLS
 * as soon as it names a CA or a certificate.  Changes nothing.
 */
int tls_enabled(const struct tls_files *f, int server);

/*
 * Builds a TLS 1.3 context from f: for a server (server 1) the
 * certificate and key are required and a CA makes client certificates
 * required and verified; for a client the CA (else the system's default
 * paths) verifies the server and a certificate, if any, is presented.
 * Every file is read now; a key that does not match the certificate is
 * an error.  Returns the context (the caller frees it with SSL_CTX_free)
 * or NULL with the reason in err.  Reads f only.
 */
SSL_CTX *tls_ctx_new(const struct tls_files *f, int server, char *err,
		     size_t errlen);

/*
 * A client session on ctx that verifies the server's certificate against
 * host (a DNS name, or an IP address literal matched against the
 * certificate's IP names); host is also sent as SNI when it is a name.
 * Returns it (freed with SSL_free) or NULL with err filled.
 */
SSL *tls_client_new(SSL_CTX *ctx, const char *host, char *err, size_t errlen);

/*
 * Does the verified certificate of ssl's peer carry name: one of its
 * subjectAltName DNS or URI entries, or, when it has none of those, its
 * subject common name?  0 when the peer sent no certificate or it did
 * not verify.  Changes nothing.
 */
int tls_peer_has(SSL *ssl, const char *name);

/*
 * Formats the first name of ssl's verified peer certificate (as
 * tls_peer_has() would compare) into buf, for logs; "" when none.
 */
void tls_peer_name(SSL *ssl, char *buf, size_t len);

/*
 * Writes the reason of the last OpenSSL failure of this thread into err,
 * prefixed with what, and clears OpenSSL's error queue.
 */
void tls_error(char *err, size_t errlen, const char *what);

/*
 * Blocking TLS on a connected socket for the command-line clients:
 * performs the client handshake on fd within the socket's timeouts.
 * Returns 0, or -1 with err filled (ssl is then still the caller's).
 */
int tls_connect_fd(SSL *ssl, int fd, char *err, size_t errlen);

/*
 * Writes all n bytes at p on ssl (blocking).  0, or -1 with errno set
 * (EPIPE for a closed or failed session).
 */
int tls_send_all(SSL *ssl, const void *p, size_t n);

#endif
