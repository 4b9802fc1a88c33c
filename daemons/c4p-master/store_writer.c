/*
 * store_writer.c - the SQL of every write of the store: the run callback
 * the queue (lib/daemon/sqlq.h) calls inside its transactions, on its
 * writer thread or on the loop (store.c says who commits when).
 */
#define LOG_SUBSYS "c4p-store"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_int.h"

/*
 * Runs sql (a string literal) with the key as text, then nv integers,
 * then a blob, bound in that order.  0 or -1.
 */
static int
store_writer_run(struct sqlq *q, const char *sql, const char *key,
		 const int64_t *v, int nv, const void *blob, size_t bloblen)
{
	sqlite3_stmt *st = sqlq_stmt(q, sql);
	int i = 1, rc = -1;

	if (st == NULL)
		goto out;
	if (key != NULL)
		sqlite3_bind_text(st, i++, key, -1, SQLITE_STATIC);
	for (int k = 0; k < nv; k++)
		sqlite3_bind_int64(st, i++, v[k]);
	if (blob != NULL)
		sqlite3_bind_blob(st, i++, blob, (int)bloblen, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_DONE)
		rc = 0;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
out:
	if (rc < 0)
		log_errx("store: %s: %s", sql, sqlite3_errmsg(sqlq_db(q)));
	return rc;
}

/* Rewrites one QP of a stored request after a move. */
static int
store_writer_apply_move(struct sqlq *wq, const struct store_op *op)
{
	sqlite3 *db = sqlq_db(wq);
	const struct alloc_change *c = &op->ch;
	sqlite3_stmt *st = NULL;
	struct store_qp *q = NULL;
	size_t n = 0;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT qps FROM req WHERE key = ?", -1, &st,
			       NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = 0; /* released meanwhile: nothing to move */
		goto out;
	}
	n = (size_t)sqlite3_column_bytes(st, 0) / sizeof(*q);
	q = malloc(n * sizeof(*q) + 1);
	if (q == NULL)
		goto out;
	memcpy(q, sqlite3_column_blob(st, 0), n * sizeof(*q));
	sqlite3_finalize(st);
	st = NULL;
	if (c->index < n) {
		struct store_qp *e = &q[c->index];

		e->stranded = c->kind == ALLOC_STRANDED;
		if (c->kind == ALLOC_MOVED) {
			/* a fallback keeps its home side in home */
			if (c->fallback && e->home == 0)
				e->home = e->side + 1;
			else if (!c->fallback)
				e->home = 0;
			e->side = c->new_side;
			e->sport = c->new_sport;
			e->src_port = c->new_path.src_port;
			e->dst_port = c->new_path.dst_port;
			e->up = c->new_path.up;
			e->down = c->new_path.down;
		}
	}
	rc = store_writer_run(wq, "UPDATE req SET qps = ?2 WHERE key = ?1",
			      op->key, NULL, 0, q, n * sizeof(*q));
out:
	if (st != NULL)
		sqlite3_finalize(st);
	free(q);
	return rc;
}

static int
store_writer_apply(struct sqlq *q, const struct store_op *op)
{
	int64_t v[4];

	switch (op->kind) {
	case STORE_OP_JOB:
		v[0] = (int64_t)op->a;
		return store_writer_run(q,
					"INSERT OR REPLACE INTO job(name, id) "
					"VALUES (?, ?)",
					op->key, v, 1, NULL, 0);
	case STORE_OP_PUT:
		v[0] = (int64_t)op->a;
		v[1] = (int64_t)op->b;
		v[2] = (int64_t)op->n;
		return store_writer_run(
			q,
			"INSERT OR REPLACE INTO req(key, job, "
			"expires, nqp, qps) VALUES (?, ?, ?, ?, ?)",
			op->key, v, 3, op->blob,
			op->n * sizeof(struct store_qp));
	case STORE_OP_RENEW:
		v[0] = (int64_t)op->b;
		return store_writer_run(
			q, "UPDATE req SET expires = ?2 WHERE key = ?1",
			op->key, v, 1, NULL, 0);
	case STORE_OP_DEL:
		return store_writer_run(q, "DELETE FROM req WHERE key = ?",
					op->key, NULL, 0, NULL, 0);
	case STORE_OP_DEL_JOB:
		v[0] = (int64_t)op->a;
		return store_writer_run(q, "DELETE FROM req WHERE job = ?",
					NULL, v, 1, NULL, 0);
	case STORE_OP_EXPIRE:
		v[0] = (int64_t)op->a;
		return store_writer_run(q, "DELETE FROM req WHERE expires <= ?",
					NULL, v, 1, NULL, 0);
	case STORE_OP_MOVE:
		return store_writer_apply_move(q, op);
	case STORE_OP_LINK:
		v[0] = (int64_t)op->a;
		v[1] = (int64_t)op->b;
		return store_writer_run(q,
					"INSERT OR REPLACE INTO link(id, up) "
					"VALUES (?, ?)",
					NULL, v, 2, NULL, 0);
	case STORE_OP_CATALOG:
		v[0] = op->ck.sip;
		v[1] = op->ck.dip;
		v[2] = op->ck.side;
		return store_writer_run(
			q,
			"INSERT OR REPLACE INTO catalog(sip, dip, "
			"side, recs) VALUES (?, ?, ?, ?)",
			NULL, v, 3, op->blob,
			op->n * sizeof(struct store_crec));
	}
	return -1;
}

int
store_writer_run_op(struct sqlq *q, struct sqlq_op *op)
{
	return store_writer_apply(q, (const struct store_op *)op);
}

void
store_writer_free_op(struct sqlq_op *op)
{
	struct store_op *o = (struct store_op *)op;

	free(o->blob);
	free(o);
}
