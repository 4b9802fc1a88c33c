/*
 * auth.h - credentials a daemon accepts, and who may do what with them.
 *
 * A credential is a named secret token (written inline or read from a file)
 * and/or the names of TLS client certificates (cert_subject), with the
 * roles it may take and, for agents and CCL clients, the jobs it may speak
 * for.  A session whose verified client certificate carries one of a
 * credential's cert_subject names holds that credential without any token
 * in its hello; otherwise the hello's token selects the credential (in
 * constant time per entry), and a credential that names certificates is
 * then refused unless the session's certificate carries one of them.  A
 * credential with uids or gids is only held by a unix-socket peer whose
 * SO_PEERCRED ids are listed.  The role and job the peer claims are then
 * checked against it.
 */
#ifndef C4_AUTH_H
#define C4_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfg.h"

#define AUTH_TOKEN_MIN 8u /* bytes; shorter secrets are refused */
#define AUTH_TOKEN_MAX 1024u

struct auth_credential {
	char *name;
	char *token;	  /* inline secret, or */
	char *token_file; /* a file holding it (first line) */
	struct cfg_strlist roles;
	struct cfg_strlist jobs;	 /* empty or "*": any job */
	struct cfg_strlist cert_subject; /* client certificate names */
	struct cfg_strlist uids;	 /* unix peers' user ids allowed */
	struct cfg_strlist gids;	 /* unix peers' group ids allowed */
	struct cfg_pos pos;
	/* Filled by validation: */
	unsigned role_mask; /* bits of C4__Role */
	char *secret;	    /* the token actually compared, or NULL */
	size_t secret_len;
};

extern const struct cfg_schema auth_credential_schema;

/* Checks a whole credentials list: unique names, unique tokens. */
void auth_validate_list(const struct cfg_list *creds, struct cfg_pos at,
			struct cfg_diag *d);

/*
 * Finds the credential whose secret equals token.  Returns it or NULL.  The
 * comparison time does not depend on where the first difference is.
 */
const struct auth_credential *auth_match(const struct cfg_list *creds,
					 const void *token, size_t len);
/* What the transport proved about a peer, besides its hello. */
struct auth_peer {
	void *tls;     /* SSL * whose handshake completed, or NULL */
	int has_ucred; /* a unix-socket peer: uid and gid are set */
	uid_t uid;
	gid_t gid;
};

/*
 * Finds the credential a peer holds: the first whose cert_subject names
 * p's verified certificate (a non-empty token must then be the
 * credential's, if it has one), else the one token matches; either way
 * refused (NULL) when the credential names certificates p's does not
 * carry, or lists uids/gids that p's unix ids are not among.  token may
 * be NULL with len 0.  Changes nothing.
 */
const struct auth_credential *auth_match_peer(const struct cfg_list *creds,
					      const struct auth_peer *p,
					      const void *token, size_t len);
/*
 * A hash of everything a credential checks of a peer (token, names,
 * ids), so that a reload can tell whether a session's proof still holds.
 */
uint64_t auth_hash(const struct auth_credential *c);
/* The credential named name, or NULL.  Changes nothing. */
const struct auth_credential *auth_find(const struct cfg_list *creds,
					const char *name);
/* May this credential take role (a C4__Role) and speak for job? */
int auth_allows(const struct auth_credential *c, int role, const char *job);

#endif
