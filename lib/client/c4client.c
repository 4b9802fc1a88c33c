/*
 * c4client.c - the CCL client library's public calls (c4client.h): the
 * session's life cycle, registrations, and the bounded queue the
 * caller's threads fill and the sender thread (transport.c) drains.
 * Locking is described in c4client_int.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "c4client_int.h"
#include "clock.h"

static void
c4client_wake(struct c4client *c)
{
	char b = 1;

	/* Non-blocking: a full pipe already means "wake up". */
	if (write(c->wake[1], &b, 1) < 0 && errno != EAGAIN)
		return;
}

/* Drops the oldest queued summary; mu held. */
static void
c4client_drop_head(struct c4client *c)
{
	struct c4client_item *it = c->head;

	c->head = it->next;
	if (c->head == NULL)
		c->tail = NULL;
	c->st.queue_bytes -= it->len;
	c->st.queue_reports--;
	c->st.reports_dropped++;
	c->st.records_dropped += it->records;
	c->pending_dropped += it->records;
	free(it->frame);
	free(it);
}

int
c4client_report(struct c4client *c, const struct c4client_report *r)
{
	struct c4client_item *it = NULL;
	uint64_t records;
	int rc = -1;

	if (c == NULL || r == NULL)
		return -1;
	records = r->ncolls + r->nconns + r->nwaits + r->nprogress;
	if ((r->ncolls && !r->colls) || (r->nconns && !r->conns) ||
	    (r->nwaits && !r->waits) || (r->nprogress && !r->progress))
		goto out;
	it = calloc(1, sizeof(*it));
	if (it == NULL)
		goto out;
	it->frame = batch_report(c, r, &it->len);
	it->records = records;
	if (it->frame == NULL)
		goto out;

	pthread_mutex_lock(&c->mu);
	if (c->closing || it->len > c->limit) {
		pthread_mutex_unlock(&c->mu);
		goto out;
	}
	while (c->head != NULL && c->st.queue_bytes + it->len > c->limit)
		c4client_drop_head(c);
	if (c->tail != NULL)
		c->tail->next = it;
	else
		c->head = it;
	c->tail = it;
	c->st.queue_bytes += it->len;
	c->st.queue_reports++;
	c->st.reports_queued++;
	pthread_mutex_unlock(&c->mu);
	it = NULL;
	c4client_wake(c);
	rc = 0;
out:
	if (rc < 0) {
		pthread_mutex_lock(&c->mu);
		c->st.reports_dropped++;
		c->st.records_dropped += records;
		c->pending_dropped += records;
		pthread_mutex_unlock(&c->mu);
	}
	if (it != NULL) {
		free(it->frame);
		free(it);
	}
	return rc;
}

static void
c4client_rank_free(C4__RankInfo *r)
{
	free(r->host);
	free(r->gpu_uuid);
	free(r->nic);
}

static void
c4client_reg_free(struct c4client_reg *g)
{
	for (size_t i = 0; i < g->n; i++)
		c4client_rank_free(&g->ranks[i]);
	free(g->ranks);
	free(g->name);
}

static char *
c4client_strdup(const char *s, int *failed)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*failed = 1;
	return d;
}

/* Fills a RankInfo with copies; host defaults to the node name. */
static int
c4client_rank_copy(struct c4client *c, C4__RankInfo *o,
		   const struct c4client_rank *in)
{
	int failed = 0;

	c4__rank_info__init(o);
	o->has_rank = 1;
	o->rank = in->rank;
	o->host = c4client_strdup(in->host ? in->host : c->node, &failed);
	o->has_gpu = 1;
	o->gpu = in->gpu;
	o->gpu_uuid = c4client_strdup(in->gpu_uuid, &failed);
	o->nic = c4client_strdup(in->nic, &failed);
	o->has_nic_port = in->nic_port != 0;
	o->nic_port = in->nic_port;
	o->has_local_rank = 1;
	o->local_rank = in->local_rank;
	o->has_pid = 1;
	o->pid = (uint32_t)getpid();
	if (failed) {
		c4client_rank_free(o);
		return -1;
	}
	return 0;
}

int
c4client_register(struct c4client *c, const struct c4client_comm *m)
{
	struct c4client_reg *g = NULL;
	C4__RankInfo *nr;
	int rc = -1;

	if (c == NULL || m == NULL || m->nranks == 0 ||
	    m->nranks > MSG_RANKS_MAX || m->nlocal > C4CLIENT_RANKS_MAX ||
	    (m->nlocal > 0 && m->ranks == NULL))
		return -1;
	/*
	 * What the agent would refuse must never reach it: a refused message
	 * ends the session, and the registration would be sent again after
	 * every reconnect.
	 */
	if (m->name != NULL && strlen(m->name) > MSG_ID_MAX)
		return -1;
	for (size_t i = 0; i < m->nlocal; i++) {
		const struct c4client_rank *r = &m->ranks[i];

		if (r->rank >= m->nranks ||
		    (r->host != NULL && strlen(r->host) > MSG_ID_MAX) ||
		    (r->gpu_uuid != NULL && strlen(r->gpu_uuid) > MSG_ID_MAX) ||
		    (r->nic != NULL && strlen(r->nic) > MSG_ID_MAX))
			return -1;
	}
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregs; i++)
		if (c->regs[i].hash == m->comm_hash)
			g = &c->regs[i];
	if (g == NULL) {
		struct c4client_reg *v =
			realloc(c->regs, (c->nregs + 1) * sizeof(*v));

		if (v == NULL)
			goto out;
		c->regs = v;
		g = &v[c->nregs++];
		memset(g, 0, sizeof(*g));
		g->hash = m->comm_hash;
	}
	g->nranks = m->nranks;
	if (m->name != NULL && (g->name == NULL || strcmp(g->name, m->name))) {
		free(g->name);
		g->name = strdup(m->name);
	}
	for (size_t i = 0; i < m->nlocal; i++) {
		size_t k;

		for (k = 0; k < g->n; k++)
			if (g->ranks[k].rank == m->ranks[i].rank)
				break;
		if (k == g->n) {
			if (g->n == C4CLIENT_RANKS_MAX)
				goto out;
			nr = realloc(g->ranks, (g->n + 1) * sizeof(*nr));
			if (nr == NULL)
				goto out;
			g->ranks = nr;
			if (c4client_rank_copy(c, &g->ranks[g->n],
					       &m->ranks[i]) < 0)
				goto out;
			g->n++;
		} else {
			C4__RankInfo tmp;

			if (c4client_rank_copy(c, &tmp, &m->ranks[i]) < 0)
				goto out;
			c4client_rank_free(&g->ranks[k]);
			g->ranks[k] = tmp;
		}
	}
	g->sent = 0;
	rc = 0;
out:
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		c4client_wake(c);
	return rc;
}

int
c4client_deregister(struct c4client *c, uint64_t comm_hash)
{
	struct c4client_item *it;
	int rc = -1;

	if (c == NULL)
		return -1;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregs; i++) {
		if (c->regs[i].hash != comm_hash)
			continue;
		it = calloc(1, sizeof(*it));
		if (it == NULL)
			break;
		it->frame = batch_register(c, &c->regs[i], 1, &it->len);
		if (it->frame == NULL) {
			free(it);
			break;
		}
		/* Told only if the session is up; a new session never hears
		 * of the comm again, which says the same. */
		if (c->ctrl_tail != NULL)
			c->ctrl_tail->next = it;
		else
			c->ctrl = it;
		c->ctrl_tail = it;
		c4client_reg_free(&c->regs[i]);
		c->regs[i] = c->regs[--c->nregs];
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&c->mu);
	if (rc == 0)
		c4client_wake(c);
	return rc;
}

struct c4client *
c4client_open(const struct c4client_opts *o)
{
	struct c4client *c;
	char host[256];

	if (o == NULL || o->socket_path == NULL || o->job_id == NULL ||
	    o->job_id[0] == '\0' || o->token == NULL ||
	    strlen(o->socket_path) >= sizeof(c->agent.path) ||
	    strlen(o->job_id) > MSG_ID_MAX ||
	    strlen(o->token) > MSG_CREDENTIAL_MAX ||
	    (o->node_name && strlen(o->node_name) > MSG_ID_MAX) ||
	    (o->queue_limit != 0 && o->queue_limit < C4CLIENT_QUEUE_MIN))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->fd = -1;
	c->wake[0] = c->wake[1] = -1;
	frame_buf_init(&c->in);
	if (o->node_name == NULL) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
	}
	c->agent.family = AF_UNIX;
	memcpy(c->agent.path, o->socket_path, strlen(o->socket_path) + 1);
	c->job = strdup(o->job_id);
	c->token = strdup(o->token);
	c->node = strdup(o->node_name ? o->node_name : host);
	c->limit = o->queue_limit ? o->queue_limit : C4CLIENT_QUEUE_DEFAULT;
	c->backoff_ms = C4CLIENT_BACKOFF_MIN_MS;
	c->hb_ms = 5000;
	c->max_frame = FRAME_MAX_DEFAULT;
	c->seed = (unsigned)getpid() ^ (unsigned)clock_ns(CLOCK_REALTIME);
	if (c->job == NULL || c->token == NULL || c->node == NULL ||
	    pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		goto fail;
	if (pthread_mutex_init(&c->mu, NULL) != 0)
		goto fail;
	if (pthread_create(&c->thread, NULL, transport_run, c) != 0) {
		pthread_mutex_destroy(&c->mu);
		goto fail;
	}
	return c;
fail:
	if (c->wake[0] >= 0) {
		close(c->wake[0]);
		close(c->wake[1]);
	}
	free(c->job);
	free(c->token);
	free(c->node);
	free(c);
	return NULL;
}

void
c4client_stats(struct c4client *c, struct c4client_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
}

void
c4client_close(struct c4client *c)
{
	uint64_t by;

	if (c == NULL)
		return;
	by = clock_ns(CLOCK_MONOTONIC) +
	     (uint64_t)C4CLIENT_CLOSE_FLUSH_MS * 1000000u;
	pthread_mutex_lock(&c->mu);
	c->closing = 1;
	c->close_by_ns = by;
	pthread_mutex_unlock(&c->mu);
	c4client_wake(c);
	pthread_join(c->thread, NULL);
	while (c->head != NULL)
		c4client_drop_head(c);
	for (size_t i = 0; i < c->nregs; i++)
		c4client_reg_free(&c->regs[i]);
	free(c->regs);
	pthread_mutex_destroy(&c->mu);
	close(c->wake[0]);
	close(c->wake[1]);
	frame_buf_free(&c->in);
	free(c->job);
	free(c->token);
	free(c->node);
	free(c);
}

uint64_t
c4client_next_boundary(uint64_t now_ns, uint32_t interval_ms, int first)
{
	uint64_t iv = (uint64_t)interval_ms * 1000000u;

	return first ? clock_tick_first(now_ns, iv, 0)
		     : clock_tick_next(now_ns, iv, 0);
}
