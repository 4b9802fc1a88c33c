/*
 * store_load.c - loading the store at start: jobs, the catalog learnt from
 * probes, requests with their QPs, then the cables stored down.
 */
#define LOG_SUBSYS "c4p-store"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_int.h"

static int
store_load_jobs(struct c4p_store *s, const struct store_restore *to, char *err,
		size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1, r;

	if (sqlite3_prepare_v2(sqlq_db(s->q),
			       "SELECT id, name FROM job ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);

		if (name == NULL || to->job(to->arg, id, name) < 0) {
			snprintf(err, errlen, "job table: bad row %llu",
				 (unsigned long long)id);
			sqlite3_finalize(st);
			return -1;
		}
	}
	if (r == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "jobs: %s",
			 sqlite3_errmsg(sqlq_db(s->q)));
	sqlite3_finalize(st);
	return rc;
}

static int
store_load_catalog(struct c4p_store *s, const struct store_restore *to,
		   char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct catalog_rec *recs = NULL;
	int rc = -1, r;

	if (sqlite3_prepare_v2(sqlq_db(s->q),
			       "SELECT sip, dip, side, recs FROM catalog", -1,
			       &st, NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_key k;
		size_t n = (size_t)sqlite3_column_bytes(st, 3) /
			   sizeof(struct store_crec);
		const struct store_crec *c = sqlite3_column_blob(st, 3);

		k.sip = (uint32_t)sqlite3_column_int64(st, 0);
		k.dip = (uint32_t)sqlite3_column_int64(st, 1);
		k.side = (uint8_t)sqlite3_column_int64(st, 2);
		free(recs);
		recs = calloc(n + 1, sizeof(*recs));
		if (recs == NULL)
			goto out;
		for (size_t i = 0; i < n; i++) {
			struct store_crec e;

			memcpy(&e, &c[i], sizeof(e));
			recs[i].path.src_port = e.src_port;
			recs[i].path.dst_port = e.dst_port;
			recs[i].path.up = e.up;
			recs[i].path.down = e.down;
			recs[i].sport = e.sport;
			recs[i].loss_permille = e.loss;
			recs[i].origin = e.origin;
		}
		if (catalog_add(to->cat, &k, recs, n, err, errlen) < 0)
			goto out;
	}
	if (r == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "catalog: %s",
			 sqlite3_errmsg(sqlq_db(s->q)));
	free(recs);
	sqlite3_finalize(st);
	return rc;
}

static int
store_load_reqs(struct c4p_store *s, const struct store_restore *to, char *err,
		size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct alloc_record *recs = NULL;
	size_t n = 0, cap = 0;
	int rc = -1, r;

	if (sqlite3_prepare_v2(sqlq_db(s->q),
			       "SELECT key, job, expires, nqp, qps FROM req",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		size_t nqp = (size_t)sqlite3_column_int64(st, 3);
		const struct store_qp *q = sqlite3_column_blob(st, 4);

		if (key == NULL || nqp == 0 ||
		    (size_t)sqlite3_column_bytes(st, 4) !=
			    nqp * sizeof(struct store_qp)) {
			snprintf(err, errlen, "req table: bad row %s",
				 key ? key : "?");
			goto out;
		}
		if (n + nqp > cap) {
			size_t nc = cap ? cap * 2 : 1024;
			void *g;

			while (nc < n + nqp)
				nc *= 2;
			g = realloc(recs, nc * sizeof(*recs));
			if (g == NULL)
				goto out;
			recs = g;
			cap = nc;
		}
		for (size_t i = 0; i < nqp; i++) {
			struct alloc_record *a = &recs[n++];
			struct store_qp e;

			memcpy(&e, &q[i], sizeof(e));
			memset(a, 0, sizeof(*a));
			snprintf(a->req_id, sizeof(a->req_id), "%s", key);
			a->job = (uint64_t)sqlite3_column_int64(st, 1);
			a->expires = (uint64_t)sqlite3_column_int64(st, 2);
			a->index = (uint32_t)i;
			a->nqp = (uint32_t)nqp;
			a->qp_id = e.qp_id;
			a->req.sip = e.sip;
			a->req.dip = e.dip;
			a->req.side = e.rside;
			a->req.weight = e.weight;
			a->sport = e.sport;
			a->side = e.side;
			a->stranded = e.stranded;
			a->fallback = e.home != 0;
			a->home_side = e.home != 0 ? e.home - 1 : e.side;
			a->path.src_port = e.src_port;
			a->path.dst_port = e.dst_port;
			a->path.up = e.up;
			a->path.down = e.down;
		}
	}
	if (r != SQLITE_DONE)
		goto out;
	if (n > 0 && alloc_restore(to->alloc, recs, n, err, errlen) < 0)
		goto out;
	rc = 0;
	log_info("restored %zu QPs", n);
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "requests: %s",
			 sqlite3_errmsg(sqlq_db(s->q)));
	free(recs);
	sqlite3_finalize(st);
	return rc;
}

/* Cables recorded down: mark them down again (moving QPs still on them). */
static int
store_load_links(struct c4p_store *s, const struct store_restore *to, char *err,
		 size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1, r;

	if (sqlite3_prepare_v2(sqlq_db(s->q),
			       "SELECT id FROM link WHERE up = 0", -1, &st,
			       NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		uint32_t id = (uint32_t)sqlite3_column_int64(st, 0);
		struct alloc_change *ch = NULL;
		size_t nch = 0;

		if (alloc_link_set(to->alloc, id, false, &ch, &nch) < 0) {
			snprintf(err, errlen, "link table: bad link %u", id);
			goto out;
		}
		/* Records are saved after moves, so normally nothing moves. */
		for (size_t i = 0; i < nch; i++)
			store_move(s, &ch[i]);
		free(ch);
	}
	if (r == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "links: %s",
			 sqlite3_errmsg(sqlq_db(s->q)));
	sqlite3_finalize(st);
	return rc;
}

int
store_load(struct c4p_store *s, const struct store_restore *to, char *err,
	   size_t errlen)
{
	err[0] = '\0';
	if (store_load_jobs(s, to, err, errlen) < 0 ||
	    store_load_catalog(s, to, err, errlen) < 0 ||
	    store_load_reqs(s, to, err, errlen) < 0 ||
	    store_load_links(s, to, err, errlen) < 0)
		return -1;
	return sqlq_start(s->q, err, errlen);
}
