/*
 * tls.c - TLS 1.3 contexts, client sessions and peer names (tls.h).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

void
tls_error(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char reason[256];

	if (e != 0)
		ERR_error_string_n(e, reason, sizeof(reason));
	else
		snprintf(reason, sizeof(reason), "%s",
			 errno != 0 ? strerror(errno) : "failed");
	ERR_clear_error();
	snprintf(err, errlen, "%s: %s", what, reason);
}

int
tls_enabled(const struct tls_files *f, int server)
{
	if (server)
		return f->cert != NULL && f->key != NULL;
	return f->ca != NULL || f->cert != NULL;
}

/* Loads the certificate and key of f into ctx; 0 or -1 with err. */
static int
tls_ctx_identity(SSL_CTX *ctx, const struct tls_files *f, char *err,
		 size_t errlen)
{
	char what[600];

	if ((f->cert == NULL) != (f->key == NULL)) {
		snprintf(err, errlen, "give both cert and key, or neither");
		return -1;
	}
	if (f->cert == NULL)
		return 0;
	snprintf(what, sizeof(what), "cert %s", f->cert);
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1) {
		tls_error(err, errlen, what);
		return -1;
	}
	snprintf(what, sizeof(what), "key %s", f->key);
	if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1) {
		tls_error(err, errlen, what);
		return -1;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ERR_clear_error();
		snprintf(err, errlen, "key %s does not match cert %s", f->key,
			 f->cert);
		return -1;
	}
	return 0;
}

SSL_CTX *
tls_ctx_new(const struct tls_files *f, int server, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	char what[600];

	ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (ctx == NULL) {
		tls_error(err, errlen, "SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
	/* A write may move its buffer between retries (evbuffers do). */
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (server && f->cert == NULL) {
		snprintf(err, errlen, "a server needs cert and key");
		goto fail;
	}
	if (tls_ctx_identity(ctx, f, err, errlen) < 0)
		goto fail;
	if (f->ca != NULL) {
		snprintf(what, sizeof(what), "ca %s", f->ca);
		if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1) {
			tls_error(err, errlen, what);
			goto fail;
		}
	} else if (!server && SSL_CTX_set_default_verify_paths(ctx) != 1) {
		tls_error(err, errlen, "the system's CA paths");
		goto fail;
	}
	if (server && f->ca != NULL)
		SSL_CTX_set_verify(
			ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
			NULL);
	else if (!server)
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (server) {
		/*
		 * No resumption: every session proves its certificate
		 * afresh, and a reload's new CA applies to all of them.
		 */
		SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL *
tls_client_new(SSL_CTX *ctx, const char *host, char *err, size_t errlen)
{
	SSL *ssl = SSL_new(ctx);
	unsigned char ip[16];
	int literal;

	if (ssl == NULL) {
		tls_error(err, errlen, "SSL_new");
		return NULL;
	}
	literal = inet_pton(AF_INET, host, ip) == 1 ||
		  inet_pton(AF_INET6, host, ip) == 1;
	if (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
						    host) != 1
		    : (SSL_set1_host(ssl, host) != 1 ||
		       SSL_set_tlsext_host_name(ssl, host) != 1)) {
		tls_error(err, errlen, "server name");
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* The verified peer certificate of ssl, or NULL. */
static X509 *
tls_peer_cert(SSL *ssl)
{
	X509 *x = SSL_get0_peer_certificate(ssl);

	if (x == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
		return NULL;
	return x;
}

/*
 * Calls fn on each name of x (SAN DNS and URI, else the CN) until it
 * returns non-zero; returns that value, or 0.
 */
static int
tls_names(X509 *x, int (*fn)(const char *, size_t, void *), void *arg)
{
	GENERAL_NAMES *gens =
		X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int rc = 0, named = 0;

	for (int i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		const ASN1_STRING *s;

		if (g->type == GEN_DNS)
			s = g->d.dNSName;
		else if (g->type == GEN_URI)
			s = g->d.uniformResourceIdentifier;
		else
			continue;
		named = 1;
		rc = fn((const char *)ASN1_STRING_get0_data(s),
			(size_t)ASN1_STRING_length(s), arg);
		if (rc != 0)
			break;
	}
	GENERAL_NAMES_free(gens);
	if (!named) {
		X509_NAME *sub = X509_get_subject_name(x);
		int at = X509_NAME_get_index_by_NID(sub, NID_commonName, -1);
		const ASN1_STRING *s;

		if (at < 0)
			return 0;
		s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(sub, at));
		rc = fn((const char *)ASN1_STRING_get0_data(s),
			(size_t)ASN1_STRING_length(s), arg);
	}
	return rc;
}

static int
tls_name_equal(const char *p, size_t n, void *arg)
{
	const char *want = arg;

	/* An embedded NUL never equals a configured name. */
	return n == strlen(want) && memchr(p, '\0', n) == NULL &&
	       memcmp(p, want, n) == 0;
}

int
tls_peer_has(SSL *ssl, const char *name)
{
	X509 *x = ssl != NULL ? tls_peer_cert(ssl) : NULL;

	if (x == NULL || name == NULL || strlen(name) > TLS_SUBJECT_MAX)
		return 0;
	return tls_names(x, tls_name_equal, (void *)name);
}

struct tls_namebuf {
	char *buf;
	size_t len;
};

static int
tls_name_copy(const char *p, size_t n, void *arg)
{
	struct tls_namebuf *b = arg;

	snprintf(b->buf, b->len, "%.*s", (int)(n > 200 ? 200 : n), p);
	return 1;
}

void
tls_peer_name(SSL *ssl, char *buf, size_t len)
{
	struct tls_namebuf b = {buf, len};
	X509 *x = ssl != NULL ? tls_peer_cert(ssl) : NULL;

	if (len > 0)
		buf[0] = '\0';
	if (x != NULL && len > 0)
		tls_names(x, tls_name_copy, &b);
}

int
tls_connect_fd(SSL *ssl, int fd, char *err, size_t errlen)
{
	long v;

	if (SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
		v = SSL_get_verify_result(ssl);
		if (v != X509_V_OK) {
			ERR_clear_error();
			snprintf(err, errlen,
				 "TLS handshake: server certificate: %s",
				 X509_verify_cert_error_string(v));
		} else {
			tls_error(err, errlen, "TLS handshake");
		}
		return -1;
	}
	return 0;
}

int
tls_send_all(SSL *ssl, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		int w = SSL_write(ssl, c, n > 1u << 30 ? 1 << 30 : (int)n);

		if (w <= 0) {
			int e = SSL_get_error(ssl, w);

			ERR_clear_error();
			if (e == SSL_ERROR_WANT_WRITE ||
			    e == SSL_ERROR_WANT_READ)
				continue;
			errno = e == SSL_ERROR_SYSCALL && errno != 0 ? errno
								     : EPIPE;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}
