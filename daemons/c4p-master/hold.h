/*
 * hold.h - which live session made (holds) which request, so that moved
 * QPs can be told to it.
 */
#ifndef C4P_HOLD_H
#define C4P_HOLD_H

#include "reply.h"

struct hold;

/* An empty table; NULL when out of memory. */
struct hold *hold_new(void);
/* Frees the table (not the sessions); NULL is ignored. */
void hold_free(struct hold *h);
/*
 * Records that sess holds the request key (copied), replacing an older
 * holder; 0, or -1 when out of memory.
 */
int hold_set(struct hold *h, const char *key, struct c4p_sess *sess);
/* The session holding key, or NULL. */
struct c4p_sess *hold_get(const struct hold *h, const char *key);
/* Forgets key; nothing when it is not held. */
void hold_del(struct hold *h, const char *key);
/* Forgets every request sess holds (the session closed). */
void hold_drop_sess(struct hold *h, const struct c4p_sess *sess);

#endif
