/*
 * bench_frame.c - `bench/run frame`: decoding speed of the wire format on
 * one core.  The workload is a typical telemetry batch of one 8-GPU host:
 * 8 ranks, each with a collective summary (2 op kinds with kernel and gap
 * sketches), 16 connection summaries with transfer-time sketches, a wait
 * summary and a progress marker.  A stream of such frames is decoded the
 * way a daemon does (frame reader + msg_unpack + free); heartbeats give
 * the per-frame floor.  Times are thread CPU time, so a busy machine does
 * not inflate them.  Output: only 'metric <name> <value> <unit>' lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frame.h"
#include "msg.h"

#define RANKS	       8
#define CONNS_PER_RANK 16
#define BUCKETS	       12
#define STREAM_FRAMES  256
#define MIN_SECONDS    1.0

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fills a duration summary with a sketch of BUCKETS buckets. */
static void
fill_stats(C4__DurationStats *d, C4__QuantileSketch *q, int32_t *idx,
	   uint64_t *cnt, uint64_t base)
{
	c4__duration_stats__init(d);
	c4__quantile_sketch__init(q);
	for (int b = 0; b < BUCKETS; b++) {
		idx[b] = 600 + (int32_t)b;
		cnt[b] = (uint64_t)(b * 7 % 13 + 1);
	}
	q->has_relative_accuracy_ppm = 1;
	q->relative_accuracy_ppm = 10000;
	q->n_index = q->n_count = BUCKETS;
	q->index = idx;
	q->count = cnt;
	d->has_count = d->has_sum_ns = d->has_min_ns = d->has_max_ns = 1;
	d->count = 96;
	d->sum_ns = base * 96;
	d->min_ns = base / 2;
	d->max_ns = base * 3;
	d->sketch = q;
}

struct batch {
	C4__TelemetryBatch t;
	C4__RankCollSummary coll[RANKS], *collp[RANKS];
	C4__OpStats ops[RANKS][2], *opsp[RANKS][2];
	C4__ConnSummary conn[RANKS * CONNS_PER_RANK],
		*connp[RANKS * CONNS_PER_RANK];
	C4__WaitSummary wait[RANKS], *waitp[RANKS];
	C4__Progress prog[RANKS], *progp[RANKS];
	C4__DurationStats st[RANKS * (4 + CONNS_PER_RANK + 3)];
	C4__QuantileSketch sk[RANKS * (4 + CONNS_PER_RANK + 3)];
	int32_t idx[RANKS * (4 + CONNS_PER_RANK + 3)][BUCKETS];
	uint64_t cnt[RANKS * (4 + CONNS_PER_RANK + 3)][BUCKETS];
	int nst;
};

static C4__DurationStats *
next_stats(struct batch *b, uint64_t base)
{
	int i = b->nst++;

	fill_stats(&b->st[i], &b->sk[i], b->idx[i], b->cnt[i], base);
	return &b->st[i];
}

static void
build_batch(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	c4__telemetry_batch__init(&b->t);
	b->t.job_id = (char *)"job-42";
	b->t.host = (char *)"gpu-node-0017";
	b->t.has_interval_id = b->t.has_interval_start_ns = 1;
	b->t.has_interval_ms = 1;
	b->t.interval_id = 12345;
	b->t.interval_start_ns = 1790000000000000000ull;
	b->t.interval_ms = 1000;
	for (int r = 0; r < RANKS; r++) {
		C4__RankCollSummary *c = &b->coll[r];

		c4__rank_coll_summary__init(c);
		c->has_comm_hash = c->has_rank = 1;
		c->comm_hash = 0x9e3779b97f4a7c15ull;
		c->rank = (uint32_t)(136 + r);
		c->has_first_seq_entered = c->has_last_seq_entered = 1;
		c->has_first_seq_completed = c->has_last_seq_completed = 1;
		c->first_seq_entered = c->first_seq_completed = 90000;
		c->last_seq_entered = c->last_seq_completed = 90095;
		for (int o = 0; o < 2; o++) {
			C4__OpStats *op = &b->ops[r][o];

			c4__op_stats__init(op);
			op->has_func = op->has_count = op->has_bytes = 1;
			op->func = o ? C4__COLL_FUNC__COLL_ALLGATHER
				     : C4__COLL_FUNC__COLL_ALLREDUCE;
			op->count = 48;
			op->bytes = 48ull * 25 * 1024 * 1024;
			op->has_algorithm = op->has_protocol = 1;
			op->algorithm = C4__ALGORITHM__ALGO_RING;
			op->protocol = C4__PROTOCOL__PROTO_SIMPLE;
			op->kernel_time = next_stats(b, 2000000);
			op->gap_time = next_stats(b, 300000);
			b->opsp[r][o] = op;
		}
		c->n_ops = 2;
		c->ops = b->opsp[r];
		b->collp[r] = c;
		for (int k = 0; k < CONNS_PER_RANK; k++) {
			C4__ConnSummary *cs = &b->conn[r * CONNS_PER_RANK + k];

			c4__conn_summary__init(cs);
			cs->has_comm_hash = cs->has_src_rank = 1;
			cs->has_dst_rank = cs->has_channel_mask = 1;
			cs->has_transport = cs->has_bytes = cs->has_chunks = 1;
			cs->comm_hash = 0x9e3779b97f4a7c15ull;
			cs->src_rank = (uint32_t)(136 + r);
			cs->dst_rank = (uint32_t)((136 + r + k * 8 + 1) % 1024);
			cs->channel_mask = 0xffull << (k % 4 * 8);
			cs->transport =
				k < 2 ? C4__TRANSPORT_CLASS__TRANSPORT_NVLINK
				      : C4__TRANSPORT_CLASS__TRANSPORT_NET;
			cs->bytes = 600ull * 1024 * 1024;
			cs->chunks = 1200;
			cs->transfer_time = next_stats(b, 150000);
			b->connp[r * CONNS_PER_RANK + k] = cs;
		}
		c4__wait_summary__init(&b->wait[r]);
		b->wait[r].has_comm_hash = b->wait[r].has_rank = 1;
		b->wait[r].comm_hash = 0x9e3779b97f4a7c15ull;
		b->wait[r].rank = (uint32_t)(136 + r);
		b->wait[r].recv_wait = next_stats(b, 80000);
		b->wait[r].send_peer_wait = next_stats(b, 50000);
		b->wait[r].send_gpu_wait = next_stats(b, 20000);
		b->waitp[r] = &b->wait[r];
		c4__progress__init(&b->prog[r]);
		b->prog[r].has_comm_hash = b->prog[r].has_rank = 1;
		b->prog[r].comm_hash = 0x9e3779b97f4a7c15ull;
		b->prog[r].rank = (uint32_t)(136 + r);
		b->prog[r].has_last_seq_entered = 1;
		b->prog[r].has_last_seq_completed = 1;
		b->prog[r].last_seq_entered = 90095;
		b->prog[r].last_seq_completed = 90095;
		b->progp[r] = &b->prog[r];
	}
	b->t.n_colls = RANKS;
	b->t.colls = b->collp;
	b->t.n_conns = RANKS * CONNS_PER_RANK;
	b->t.conns = b->connp;
	b->t.n_waits = RANKS;
	b->t.waits = b->waitp;
	b->t.n_progress = RANKS;
	b->t.progress = b->progp;
}

/* A stream of STREAM_FRAMES copies of one packed frame. */
static uint8_t *
make_stream(C4__MsgType type, void *body, size_t *frame_len, size_t *len)
{
	C4__Envelope env;
	uint8_t *s;

	msg_init(&env, type, body);
	env.has_seq = 1;
	env.seq = 1;
	*frame_len = msg_frame_size(&env);
	*len = *frame_len * STREAM_FRAMES;
	s = malloc(*len);
	if (s == NULL)
		exit(1);
	for (int i = 0; i < STREAM_FRAMES; i++)
		msg_pack_frame(&env, s + (size_t)i * *frame_len);
	return s;
}

/* Decodes the stream repeatedly for MIN_SECONDS; returns frames/s. */
static double
decode_rate(const uint8_t *stream, size_t len)
{
	struct frame_buf fb;
	double t0 = cpu_now(), t;
	uint64_t frames = 0;

	frame_buf_init(&fb);
	do {
		const uint8_t *body;
		uint32_t blen;

		/* 64 KiB reads, as a socket would deliver them. */
		for (size_t off = 0; off < len; off += 65536) {
			size_t n = len - off < 65536 ? len - off : 65536;

			if (frame_buf_append(&fb, stream + off, n) < 0)
				exit(1);
			while (frame_buf_next(&fb, FRAME_MAX_DEFAULT, &body,
					      &blen) == FRAME_READY) {
				struct msg_err err;
				C4__Envelope *env =
					msg_unpack(body, blen, &err);

				if (env == NULL) {
					fprintf(stderr, "decode: %s\n",
						err.text);
					exit(1);
				}
				msg_free(env);
				frames++;
			}
		}
		t = cpu_now() - t0;
	} while (t < MIN_SECONDS);
	frame_buf_free(&fb);
	return (double)frames / t;
}

static double
encode_rate(C4__TelemetryBatch *t, size_t frame_len)
{
	uint8_t *buf = malloc(frame_len);
	double t0 = cpu_now(), el;
	uint64_t frames = 0;
	C4__Envelope env;

	do {
		for (int i = 0; i < 256; i++) {
			msg_init(&env, C4__MSG_TYPE__MSG_TELEMETRY, t);
			env.has_seq = 1;
			env.seq = frames + 1;
			if (msg_pack_frame(&env, buf) == 0)
				exit(1);
			frames++;
		}
		el = cpu_now() - t0;
	} while (el < MIN_SECONDS);
	free(buf);
	return (double)frames / el;
}

int
main(void)
{
	static struct batch b;
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	size_t flen, slen, hlen, hslen;
	uint8_t *stream, *hstream;
	double rate;

	build_batch(&b);
	stream = make_stream(C4__MSG_TYPE__MSG_TELEMETRY, &b.t, &flen, &slen);
	hb.has_nonce = hb.has_sent_ns = 1;
	hb.nonce = 1;
	hb.sent_ns = 123456789;
	hstream = make_stream(C4__MSG_TYPE__MSG_HEARTBEAT, &hb, &hlen, &hslen);
	fprintf(stderr,
		"telemetry batch: %d ranks, %d connections, %zu bytes\n", RANKS,
		RANKS * CONNS_PER_RANK, flen);

	printf("metric frame_telemetry_batch_bytes %zu bytes\n", flen);
	rate = decode_rate(stream, slen);
	printf("metric frame_decode_telemetry_rate %.0f frames/s\n", rate);
	printf("metric frame_decode_telemetry_throughput %.1f MB/s\n",
	       rate * (double)flen / 1e6);
	printf("metric frame_decode_telemetry_conn_summaries %.0f records/s\n",
	       rate * RANKS * CONNS_PER_RANK);
	printf("metric frame_encode_telemetry_rate %.0f frames/s\n",
	       encode_rate(&b.t, flen));
	rate = decode_rate(hstream, hslen);
	printf("metric frame_decode_heartbeat_rate %.0f frames/s\n", rate);
	free(stream);
	free(hstream);
	return 0;
}
