/*
 * auth.c - credential configuration and matching.
 */
#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "msg.h"
#include "tls.h"
#include "token.h"

static void auth_validate(void *obj, struct cfg_pos at, struct cfg_diag *d);

/* Parses a decimal id of a uids/gids list; 0, or -1 when it is not one. */
static int
auth_id(const char *s, unsigned long *out)
{
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno != 0 || *end != '\0' || *out > 0xfffffffeul ? -1 : 0;
}

static const struct cfg_field auth_fields[] = {
	{"name", CFG_STR, offsetof(struct auth_credential, name), CFG_REQUIRED,
	 0, 0, NULL, NULL, "label used in logs"},
	{"token", CFG_STR, offsetof(struct auth_credential, token), CFG_SECRET,
	 0, 0, NULL, NULL, "the secret, inline"},
	{"token_file", CFG_STR, offsetof(struct auth_credential, token_file), 0,
	 0, 0, NULL, NULL, "file whose first line is the secret"},
	{"roles", CFG_STRLIST, offsetof(struct auth_credential, roles),
	 CFG_REQUIRED, 0, 0, NULL, NULL,
	 "agent, ccl-client, ctl (any of them)"},
	{"jobs", CFG_STRLIST, offsetof(struct auth_credential, jobs), 0, 0, 0,
	 NULL, NULL, "jobs an agent or CCL client may speak for; * for any"},
	{"cert_subject", CFG_STRLIST,
	 offsetof(struct auth_credential, cert_subject), 0, 0, 0, NULL, NULL,
	 "TLS client certificate names (SAN DNS/URI, else CN) holding it"},
	{"uids", CFG_STRLIST, offsetof(struct auth_credential, uids), 0, 0, 0,
	 NULL, NULL, "unix-socket peers' user ids that may hold it"},
	{"gids", CFG_STRLIST, offsetof(struct auth_credential, gids), 0, 0, 0,
	 NULL, NULL, "unix-socket peers' group ids that may hold it"},
	{NULL, CFG_POS, offsetof(struct auth_credential, pos), 0, 0, 0, NULL,
	 NULL, NULL},
	/* Derived at validation; listed so that cfg_free() releases it. */
	{NULL, CFG_STR, offsetof(struct auth_credential, secret), CFG_SECRET, 0,
	 0, NULL, NULL, NULL},
};

const struct cfg_schema auth_credential_schema = {
	"credential", sizeof(struct auth_credential), auth_fields,
	CFG_NFIELDS(auth_fields), auth_validate};

/* uids and gids are decimal ids; names are at most TLS_SUBJECT_MAX. */
static void
auth_validate_ids(const struct auth_credential *c, struct cfg_pos at,
		  struct cfg_diag *d)
{
	const struct cfg_strlist *l[2] = {&c->uids, &c->gids};
	unsigned long id;

	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < l[k]->n; i++)
			if (auth_id(l[k]->v[i], &id) < 0)
				cfg_diag_add(d, at,
					     "credential '%s': %s: '%s' is not "
					     "a numeric id",
					     c->name, k ? "gids" : "uids",
					     l[k]->v[i]);
	for (size_t i = 0; i < c->cert_subject.n; i++)
		if (strlen(c->cert_subject.v[i]) == 0 ||
		    strlen(c->cert_subject.v[i]) > TLS_SUBJECT_MAX)
			cfg_diag_add(d, at,
				     "credential '%s': cert_subject must be 1 "
				     "to %u bytes",
				     c->name, TLS_SUBJECT_MAX);
}

static void
auth_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct auth_credential *c = obj;
	char err[256];

	auth_validate_ids(c, at, d);
	if (c->token != NULL && c->token_file != NULL) {
		cfg_diag_add(d, at,
			     "credential '%s': give exactly one of token and "
			     "token_file",
			     c->name);
		return;
	}
	if (c->token == NULL && c->token_file == NULL &&
	    c->cert_subject.n == 0) {
		cfg_diag_add(d, at,
			     "credential '%s': give token, token_file or "
			     "cert_subject",
			     c->name);
		return;
	}
	if (c->token == NULL && c->token_file == NULL) {
		/* Certificate only: no secret crosses the wire. */
	} else if (c->token != NULL) {
		c->secret = strdup(c->token);
	} else {
		c->secret = token_read(c->token_file, AUTH_TOKEN_MAX + 1, err,
				       sizeof(err));
		if (c->secret == NULL) {
			cfg_diag_add(d, at,
				     "credential '%s': token_file %s: %s",
				     c->name, c->token_file, err);
			return;
		}
	}
	if (c->secret != NULL)
		c->secret_len = strlen(c->secret);
	if (c->secret != NULL &&
	    (c->secret_len < AUTH_TOKEN_MIN || c->secret_len > AUTH_TOKEN_MAX))
		cfg_diag_add(d, at,
			     "credential '%s': token must be %u to %u bytes",
			     c->name, AUTH_TOKEN_MIN, AUTH_TOKEN_MAX);
	if (c->roles.n == 0)
		cfg_diag_add(d, at, "credential '%s': roles must not be empty",
			     c->name);
	for (size_t i = 0; i < c->roles.n; i++) {
		C4__Role r;

		if (msg_role_parse(c->roles.v[i], &r) < 0 ||
		    r == C4__ROLE__ROLE_MASTER)
			cfg_diag_add(d, at,
				     "credential '%s': role '%s' is not one of "
				     "agent, ccl-client, ctl",
				     c->name, c->roles.v[i]);
		else
			c->role_mask |= 1u << r;
	}
}

void
auth_validate_list(const struct cfg_list *creds, struct cfg_pos at,
		   struct cfg_diag *d)
{
	const struct auth_credential *v = creds->items;

	(void)at;
	for (size_t i = 0; i < creds->n; i++) {
		for (size_t j = 0; j < i; j++) {
			if (v[i].name && v[j].name &&
			    strcmp(v[i].name, v[j].name) == 0)
				cfg_diag_add(d, v[i].pos,
					     "credential name '%s' used twice",
					     v[i].name);
			if (v[i].secret && v[j].secret &&
			    strcmp(v[i].secret, v[j].secret) == 0)
				cfg_diag_add(d, v[i].pos,
					     "credentials '%s' and '%s' have "
					     "the same token",
					     v[j].name, v[i].name);
		}
	}
}

/* Constant-time comparison of equal-length prefixes plus the length. */
static int
auth_equal(const char *a, size_t alen, const void *b, size_t blen)
{
	const unsigned char *pb = b;
	unsigned char diff = (unsigned char)(alen != blen);
	size_t n = alen < blen ? alen : blen;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(a[i] ^ pb[i]);
	return diff == 0;
}

const struct auth_credential *
auth_match(const struct cfg_list *creds, const void *token, size_t len)
{
	const struct auth_credential *v = creds->items, *found = NULL;

	for (size_t i = 0; i < creds->n; i++)
		if (v[i].secret != NULL &&
		    auth_equal(v[i].secret, v[i].secret_len, token, len) &&
		    found == NULL)
			found = &v[i];
	return found;
}

/* Is id in the list l of decimal ids (an empty list allows any)? */
static int
auth_id_in(const struct cfg_strlist *l, unsigned long id)
{
	unsigned long v;

	if (l->n == 0)
		return 1;
	for (size_t i = 0; i < l->n; i++)
		if (auth_id(l->v[i], &v) == 0 && v == id)
			return 1;
	return 0;
}

/* Does the session's certificate carry one of c's cert_subject names? */
static int
auth_cert_ok(const struct auth_credential *c, const struct auth_peer *p)
{
	for (size_t i = 0; p->tls != NULL && i < c->cert_subject.n; i++)
		if (tls_peer_has(p->tls, c->cert_subject.v[i]))
			return 1;
	return 0;
}

/* The transport rules of c (certificate, unix ids) hold for p? */
static int
auth_peer_ok(const struct auth_credential *c, const struct auth_peer *p)
{
	if (c->cert_subject.n > 0 && !auth_cert_ok(c, p))
		return 0;
	if (c->uids.n == 0 && c->gids.n == 0)
		return 1;
	return p->has_ucred && auth_id_in(&c->uids, (unsigned long)p->uid) &&
	       auth_id_in(&c->gids, (unsigned long)p->gid);
}

const struct auth_credential *
auth_match_peer(const struct cfg_list *creds, const struct auth_peer *p,
		const void *token, size_t len)
{
	const struct auth_credential *v = creds->items, *cred = NULL;

	for (size_t i = 0; p->tls != NULL && i < creds->n && !cred; i++)
		if (auth_cert_ok(&v[i], p))
			cred = &v[i];
	if (cred != NULL && len > 0 && cred->secret != NULL &&
	    !auth_equal(cred->secret, cred->secret_len, token, len))
		return NULL;
	if (cred == NULL && len > 0)
		cred = auth_match(creds, token, len);
	if (cred == NULL || !auth_peer_ok(cred, p))
		return NULL;
	return cred;
}

uint64_t
auth_hash(const struct auth_credential *c)
{
	const struct cfg_strlist *l[3] = {&c->cert_subject, &c->uids, &c->gids};
	uint64_t h = FNV1A64_INIT;

	if (c->secret != NULL)
		h = fnv1a64(h, c->secret, c->secret_len);
	for (size_t k = 0; k < 3; k++) {
		h = fnv1a64(h, "|", 1);
		for (size_t i = 0; i < l[k]->n; i++)
			h = fnv1a64(h, l[k]->v[i], strlen(l[k]->v[i]) + 1);
	}
	return h;
}

const struct auth_credential *
auth_find(const struct cfg_list *creds, const char *name)
{
	const struct auth_credential *v = creds->items;

	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < creds->n; i++)
		if (v[i].name != NULL && strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

int
auth_allows(const struct auth_credential *c, int role, const char *job)
{
	if (role < 0 || role > 31 || !(c->role_mask & (1u << role)))
		return 0;
	if (role == C4__ROLE__ROLE_CTL || c->jobs.n == 0)
		return 1;
	for (size_t i = 0; i < c->jobs.n; i++)
		if (strcmp(c->jobs.v[i], "*") == 0 ||
		    (job != NULL && strcmp(c->jobs.v[i], job) == 0))
			return 1;
	return 0;
}
