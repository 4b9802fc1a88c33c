/*
 * hosts.c - the job's hosts: names, NICs, GPUs, queued telemetry windows
 * and which hosts were heard in an interval.
 */
#include "hosts.h"

#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "vec.h"

struct hosts_entry *
hosts_find(struct hosts *hs, const char *name, int create, uint32_t *id)
{
	uint64_t h = fnv1a64(FNV1A64_INIT, name, strlen(name));
	uint32_t i;

	/* Distinct names with equal hashes are told apart by probing on. */
	for (;; h = h * 31 + 7) {
		if (u64map_get(&hs->map, h, &i) < 0)
			break;
		if (strcmp(hs->v[i].name, name) == 0) {
			*id = i;
			return &hs->v[i];
		}
	}
	if (!create || hs->n >= INGEST_HOSTS_MAX)
		return NULL;
	if (vec_reserve((void **)&hs->v, &hs->cap, hs->n + 1, sizeof(*hs->v)) <
	    0)
		return NULL;
	i = (uint32_t)hs->n;
	memset(&hs->v[i], 0, sizeof(hs->v[i]));
	hs->v[i].name = strdup(name);
	if (hs->v[i].name == NULL || u64map_put(&hs->map, h, i) < 0) {
		free(hs->v[i].name);
		return NULL;
	}
	hs->n++;
	*id = i;
	return &hs->v[i];
}

int
hosts_nic(struct hosts_entry *h, const char *nic, uint16_t *idx)
{
	char **v;

	if (nic == NULL || nic[0] == '\0')
		nic = "-";
	for (size_t i = 0; i < h->nnics; i++) {
		if (strcmp(h->nics[i], nic) == 0) {
			*idx = (uint16_t)i;
			return 0;
		}
	}
	if (h->nnics >= UINT16_MAX)
		return -1;
	v = realloc(h->nics, (h->nnics + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	h->nics = v;
	h->nics[h->nnics] = strdup(nic);
	if (h->nics[h->nnics] == NULL)
		return -1;
	*idx = (uint16_t)h->nnics++;
	return 0;
}

void
hosts_add_gpu(struct hosts_entry *h, uint16_t gpu)
{
	if (gpu < 256)
		h->gpus[gpu / 64] |= 1ull << (gpu % 64);
}

const char *
hosts_name(const struct hosts *hs, uint32_t id)
{
	return id < hs->n ? hs->v[id].name : "?";
}

const char *
hosts_nic_name(const struct hosts *hs, uint32_t host, uint16_t nic)
{
	if (host >= hs->n || nic >= hs->v[host].nnics)
		return "?";
	return hs->v[host].nics[nic];
}

uint32_t
hosts_ranks_known(const struct hosts *hs)
{
	uint32_t n = 0;

	for (size_t i = 0; i < hs->n; i++)
		for (int w = 0; w < 4; w++)
			n += (uint32_t)__builtin_popcountll(hs->v[i].gpus[w]);
	return n;
}

void
hosts_window_clear(struct hosts_window *w)
{
	w->ncoll = w->nconn = w->nwait = 0;
}

struct hosts_window *
hosts_slot(struct hosts_entry *h, int *dropped)
{
	struct hosts_window *w;

	h->heard = 1;
	*dropped = 0;
	if (h->nq == INGEST_QUEUE_MAX) {
		h->head = (h->head + 1) % INGEST_QUEUE_MAX;
		h->nq--;
		*dropped = 1;
	}
	w = &h->q[(h->head + h->nq) % INGEST_QUEUE_MAX];
	hosts_window_clear(w);
	return w;
}

void
hosts_push(struct hosts_entry *h)
{
	h->nq++;
}

void
hosts_unlink(struct hosts *hs, const void *link)
{
	for (size_t i = 0; i < hs->n; i++)
		if (hs->v[i].link == link)
			hs->v[i].link = NULL;
}

int
hosts_linked(const struct hosts *hs, uint32_t **ids, size_t *cap, size_t *n)
{
	*n = 0;
	if (vec_reserve((void **)ids, cap, hs->n ? hs->n : 1, sizeof(**ids)) <
	    0)
		return -1;
	for (size_t i = 0; i < hs->n; i++)
		if (hs->v[i].link != NULL)
			(*ids)[(*n)++] = (uint32_t)i;
	return 0;
}

int
hosts_collect(struct hosts *hs,
	      int (*take)(const struct hosts_window *w, void *arg), void *arg,
	      uint32_t **heard, size_t *cheard, size_t *nheard)
{
	*nheard = 0;
	if (vec_reserve((void **)heard, cheard, hs->n ? hs->n : 1,
			sizeof(**heard)) < 0)
		return -1;
	for (size_t i = 0; i < hs->n; i++) {
		struct hosts_entry *h = &hs->v[i];

		if (h->nq > 0) {
			if (take(&h->q[h->head], arg) < 0)
				return -1;
			h->head = (h->head + 1) % INGEST_QUEUE_MAX;
			h->nq--;
			h->heard = 1;
		}
		if (h->heard)
			(*heard)[(*nheard)++] = (uint32_t)i;
		h->heard = h->nq > 0;
	}
	return 0;
}

static void
hosts_window_free(struct hosts_window *w)
{
	free(w->coll);
	free(w->conn);
	free(w->wait);
	memset(w, 0, sizeof(*w));
}

void
hosts_free(struct hosts *hs)
{
	for (size_t i = 0; i < hs->n; i++) {
		struct hosts_entry *h = &hs->v[i];

		for (size_t j = 0; j < h->nnics; j++)
			free(h->nics[j]);
		free(h->nics);
		for (unsigned j = 0; j < INGEST_QUEUE_MAX; j++)
			hosts_window_free(&h->q[j]);
		free(h->name);
	}
	free(hs->v);
	u64map_free(&hs->map);
	memset(hs, 0, sizeof(*hs));
}
