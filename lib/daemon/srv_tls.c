/*
 * srv_tls.c - TLS for the server core (srv_int.h) and the "tls:"
 * configuration section every TCP end shares (srv_tls.h).
 */
#define LOG_SUBSYS "tls"

#include "srv_tls.h"
#include "srv_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "log.h"
#include "net.h"

static void srv_tls_validate(void *obj, struct cfg_pos at, struct cfg_diag *d);

static const struct cfg_field srv_tls_fields[] = {
	{"cert", CFG_STR, offsetof(struct tls_files, cert), 0, 0, 0, NULL, NULL,
	 "PEM certificate chain presented to the peer, leaf first"},
	{"key", CFG_STR, offsetof(struct tls_files, key), 0, 0, 0, NULL, NULL,
	 "PEM private key of cert"},
	{"ca", CFG_STR, offsetof(struct tls_files, ca), 0, 0, 0, NULL, NULL,
	 "PEM CA certificates that verify the peer"},
};

const struct cfg_schema srv_tls_schema = {
	"tls", sizeof(struct tls_files), srv_tls_fields,
	CFG_NFIELDS(srv_tls_fields), srv_tls_validate};

/* Reads every file now, as a client context would: the load fails early. */
static void
srv_tls_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct tls_files *f = obj;
	char err[768];
	SSL_CTX *ctx;

	if (f->cert == NULL && f->key == NULL && f->ca == NULL)
		return;
	ctx = tls_ctx_new(f, 0, err, sizeof(err));
	if (ctx == NULL)
		cfg_diag_add(d, at, "tls: %s", err);
	SSL_CTX_free(ctx);
}

void
srv_tls_check_plain(const char *addr, int tls_on, int insecure,
		    const char *what, struct cfg_pos at, struct cfg_diag *d)
{
	struct net_addr a;
	char err[256];

	if (addr == NULL || tls_on || insecure ||
	    net_addr_parse(addr, &a, err, sizeof(err)) < 0 ||
	    net_addr_is_loopback(&a))
		return;
	cfg_diag_add(d, at,
		     "%s: %s is not a loopback address: configure tls (cert, "
		     "key, ca) or set insecure: true to send in clear",
		     what, addr);
}

void
srv_tls_warn_plain(const char *addr, int tls_on, const char *what)
{
	struct net_addr a;
	char err[256];

	if (addr == NULL || tls_on ||
	    net_addr_parse(addr, &a, err, sizeof(err)) < 0 ||
	    net_addr_is_loopback(&a))
		return;
	log_warnx("%s %s: plaintext TCP (insecure: true); tokens and data "
		  "cross the network in clear",
		  what, addr);
}

int
srv_tls_reload(struct srv *s)
{
	const struct tls_files *f = s->p.conf ? &s->p.conf->tls : NULL;
	char err[768];
	SSL_CTX *ctx = NULL;

	if (f != NULL && tls_enabled(f, 1)) {
		ctx = tls_ctx_new(f, 1, err, sizeof(err));
		if (ctx == NULL) {
			log_warnx("server tls: %s; keeping the previous "
				  "certificates",
				  err);
			return -1;
		}
	}
	SSL_CTX_free(s->tls_ctx);
	s->tls_ctx = ctx;
	return 0;
}

struct bufferevent *
srv_tls_bev_new(struct srv *s, evutil_socket_t fd, int family)
{
	SSL *ssl;

	if (s->tls_ctx == NULL || family == AF_UNIX)
		return bufferevent_socket_new(s->base, fd,
					      BEV_OPT_CLOSE_ON_FREE);
	ssl = SSL_new(s->tls_ctx);
	if (ssl == NULL) {
		ERR_clear_error();
		return NULL;
	}
	return srv_tls_bev(s->base, fd, ssl, 1);
}

struct bufferevent *
srv_tls_bev(struct event_base *base, evutil_socket_t fd, SSL *ssl,
	    int accepting)
{
	struct bufferevent *bev;

	bev = bufferevent_openssl_socket_new(
		base, fd, ssl,
		accepting ? BUFFEREVENT_SSL_ACCEPTING
			  : BUFFEREVENT_SSL_CONNECTING,
		BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	/* A peer that closes without close_notify has just gone. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void
srv_tls_failed(struct srv_conn *c)
{
	unsigned long e;
	char reason[256] = "connection closed";
	long v;

	c->srv->stats.tls_handshake_failed++;
	v = SSL_get_verify_result(c->ssl);
	while ((e = bufferevent_get_openssl_error(c->bev)) != 0)
		ERR_error_string_n(e, reason, sizeof(reason));
	ERR_clear_error();
	if (v != X509_V_OK)
		snprintf(reason, sizeof(reason), "client certificate: %s",
			 X509_verify_cert_error_string(v));
	srv_flow_warn(c->srv, c->src, "%s: TLS handshake failed: %s", c->peer,
		      reason);
}
