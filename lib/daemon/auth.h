/*
 * auth.h - credentials a daemon accepts, and who may do what with them.
 *
 * A credential is a named secret token (written inline or read from a file)
 * with the roles it may take and, for agents and CCL clients, the jobs it
 * may speak for.  The hello of every connection carries a token; the daemon
 * finds the credential it matches (in constant time per entry) and checks
 * the role and job the peer claims against it.
 */
#ifndef C4_AUTH_H
#define C4_AUTH_H

#include <stddef.h>

#include "cfg.h"

#define AUTH_TOKEN_MIN 8u /* bytes; shorter secrets are refused */
#define AUTH_TOKEN_MAX 1024u

struct auth_credential {
	char *name;
	char *token;	  /* inline secret, or */
	char *token_file; /* a file holding it (first line) */
	struct cfg_strlist roles;
	struct cfg_strlist jobs; /* empty or "*": any job */
	struct cfg_pos pos;
	/* Filled by validation: */
	unsigned role_mask; /* bits of C4__Role */
	char *secret;	    /* the token actually compared */
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
/* The credential named name, or NULL.  Changes nothing. */
const struct auth_credential *auth_find(const struct cfg_list *creds,
					const char *name);
/* May this credential take role (a C4__Role) and speak for job? */
int auth_allows(const struct auth_credential *c, int role, const char *job);

#endif
