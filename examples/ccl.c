/*
 * ccl.c - a minimal CCL reporting to the node's c4a-agent through
 * libc4client, built from the installed library only:
 *
 *	cc -std=c11 ccl.c $(pkg-config --cflags --libs c4client) -o ccl
 *	./ccl [SOCKET [JOB [TOKEN]]]
 *
 * It registers one communicator of 8 ranks of which it owns rank 0,
 * measures a few "all-reduces", reports them as one interval, and waits
 * (at most 10 s) until the library has sent the summary.  The exit
 * status is 0 when it was sent, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <c4client.h>

static void
ccl_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	struct c4client_opts o = {0};
	struct c4client_rank rank = {0};
	struct c4client_comm comm = {0};
	struct c4client_op op = {0};
	struct c4client_coll coll = {0};
	struct c4client_report r = {0};
	struct c4client_stats st;
	struct c4client *c;
	c4_sketch *kernel;
	int sent = 0;

	o.socket_path = argc > 1 ? argv[1] : "/run/c4/agent.sock";
	o.job_id = argc > 2 ? argv[2] : getenv("C4_JOB_ID");
	o.token = argc > 3 ? argv[3] : getenv("C4_TOKEN");
	if (o.job_id == NULL) {
		fprintf(stderr, "ccl: no job id (argument or C4_JOB_ID)\n");
		return 1;
	}
	printf("libc4client %d.%d.%d\n", C4CLIENT_VERSION_MAJOR,
	       C4CLIENT_VERSION_MINOR, C4CLIENT_VERSION_PATCH);
	c = c4client_open(&o);
	kernel = c4_sketch_new(0);
	if (c == NULL || kernel == NULL) {
		fprintf(stderr, "ccl: cannot open the client\n");
		return 1;
	}
	rank.rank = 0;
	comm.comm_hash = 0xc4c4c4c4c4c4c401ull;
	comm.nranks = 8;
	comm.name = "dp";
	comm.nlocal = 1;
	comm.ranks = &rank;
	if (c4client_register(c, &comm) < 0)
		return 1;
	for (uint64_t i = 1; i <= 100; i++)
		c4_sketch_add(kernel, 1000000 + i * 1000); /* ns */
	op.func = C4CLIENT_ALLREDUCE;
	op.count = 100;
	op.bytes = 100u << 20;
	op.algorithm = C4CLIENT_ALGO_RING;
	op.protocol = C4CLIENT_PROTO_SIMPLE;
	op.channels = 4;
	op.kernel_time = kernel;
	coll.comm_hash = comm.comm_hash;
	coll.nops = 1;
	coll.ops = &op;
	coll.first_seq_entered = coll.first_seq_completed = 1;
	coll.last_seq_entered = coll.last_seq_completed = 100;
	r.interval_ms = 1000;
	r.ncolls = 1;
	r.colls = &coll;
	if (c4client_report(c, &r) < 0)
		fprintf(stderr, "ccl: summary not queued\n");
	for (int i = 0; i < 200 && !sent; i++) {
		c4client_stats(c, &st);
		sent = st.reports_sent >= 1;
		if (!sent)
			ccl_sleep_ms(50);
	}
	c4client_stats(c, &st);
	printf("p50 %.0f ns, sent %llu, dropped %llu, connected %d%s%s\n",
	       c4_sketch_quantile(kernel, 0.5),
	       (unsigned long long)st.reports_sent,
	       (unsigned long long)st.reports_dropped, st.connected,
	       st.last_error[0] ? ", last error: " : "", st.last_error);
	c4client_close(c);
	c4_sketch_free(kernel);
	return sent ? 0 : 1;
}
