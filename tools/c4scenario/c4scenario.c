/*
 * c4scenario: generate a synthetic training job with injected faults, run
 * the C4D engine over it and print the ground truth and the events; or
 * dump the summaries an agent fleet would send (-d).
 *
 *   c4scenario [-n ranks] [-l layout] [-i intervals] [-s seed]
 *              [-f kind[:slowdown[:start]]]... [-d] [-q]
 *   c4scenario -F family [-n ranks] [-i intervals] [-s seed] [-d] [-q]
 *
 * With -F the job is one randomised episode of a phenomenon family
 * (scen.h): its layout, size, magnitudes and timing come from the seed
 * (-n fixes the size, -i the length).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matrix.h"
#include "scen.h"

#define C4SCEN_MAX_INTERVALS 100000

static void
usage(void)
{
	fprintf(stderr,
		"usage: c4scenario [-n ranks] [-l layout] [-i intervals] "
		"[-s seed]\n"
		"                  [-f kind[:slowdown[:start]]]... [-d] [-q]\n"
		"       c4scenario -F family [-n ranks] [-i intervals] "
		"[-s seed] [-d] [-q]\n"
		"layouts:");
	for (int i = 0; i < SCEN_L_COUNT; i++)
		fprintf(stderr, " %s", scen_layout_name((unsigned)i));
	fprintf(stderr, "\nfaults:");
	for (int i = 1; i < SCEN_F_COUNT; i++)
		fprintf(stderr, " %s", scen_fault_name((unsigned)i));
	fprintf(stderr, "\nfamilies:");
	for (int i = 0; i < SCEN_FAM_COUNT; i++)
		fprintf(stderr, " %s", scen_family_name((unsigned)i));
	fprintf(stderr, "\n");
	exit(2);
}

static unsigned long
num(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max) {
		fprintf(stderr, "c4scenario: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static void
print_event(const struct matrix_event *e)
{
	unsigned i;
	char why[256];

	if (matrix_event_describe(e, why, sizeof(why)) >= 0)
		printf("why: %s\n", why);
	printf("event %016" PRIx64 " %s %s iv=%" PRIu64 "..%" PRIu64
	       " slowdown=%.3f score=%.1f conf=%.2f cells=%u%s action=%u "
	       "isolate=%u\n",
	       e->id, matrix_state_name(e->state), matrix_kind_name(e->kind),
	       e->first_interval, e->last_interval, e->slowdown, e->score,
	       e->confidence, e->ncells_total, e->ambiguous ? " ambiguous" : "",
	       e->action, e->isolate_host);
	for (i = 0; i < e->nsuspects; i++) {
		const struct matrix_suspect *s = &e->suspects[i];

		printf("  suspect %s host %u gpu %u nic %u",
		       matrix_role_name(s->role), s->host, s->gpu, s->nic);
		if (s->role == MATRIX_ROLE_LINK)
			printf(" -> host %u gpu %u nic %u", s->peer_host,
			       s->peer_gpu, s->peer_nic);
		printf(" (comm %016" PRIx64 " rank %u", s->comm, s->rank);
		if (s->role == MATRIX_ROLE_LINK)
			printf("->%u", s->peer_rank);
		printf(")\n");
	}
}

static void
print_truth(const struct scen_fault *f)
{
	printf("truth %s base=%s slowdown=%.2f start=%u host %u gpu %u "
	       "-> host %u gpu %u mask=%08x ramp=%u spread=%.2f share=%.2f "
	       "partial=%u%s\n",
	       scen_fault_name(f->kind), scen_fault_name(f->base), f->slowdown,
	       f->start, f->host, f->gpu, f->peer_host, f->peer_gpu, f->on_mask,
	       f->ramp, f->spread, f->share, f->partial,
	       f->moved_on ? " moved-on" : "");
}

/* Build episode seed of family; print its truth. NULL on failure. */
static struct scen *
family_job(const char *name, uint64_t seed, uint32_t nranks,
	   unsigned long *nint, int nint_set)
{
	struct scen_truth t;
	struct scen *s;
	int fam = scen_family_parse(name);

	if (fam < 0)
		usage();
	s = scen_family_new((unsigned)fam, seed, nranks, &t);
	if (s == NULL)
		return NULL;
	if (!nint_set)
		*nint = t.intervals;
	printf("family %s layout %s ranks %u intervals %lu domain %s%s%s",
	       scen_family_name(t.family), scen_layout_name(t.layout), t.nranks,
	       *nint,
	       t.domain < MATRIX_DOM_COUNT ? matrix_domain_name(t.domain)
					   : "none",
	       t.hang ? " hang" : "", t.job_event ? " job-event-ok" : "");
	if (t.event_len)
		printf(" stall %u+%u", t.event_start, t.event_len);
	if (t.nlate)
		printf(" late %u", t.nlate);
	printf("\n");
	if (t.nfaults)
		print_truth(&t.fault);
	return s;
}

static void
dump(const struct matrix_input *in)
{
	size_t i;

	for (i = 0; i < in->ncoll; i++)
		printf("coll %" PRIu64 " %016" PRIx64 " %u nops=%u kernel=%.1f "
		       "gap=%.1f enter=%" PRIu64 " done=%" PRIu64 "\n",
		       in->interval, in->coll[i].comm, in->coll[i].rank,
		       in->coll[i].nops, in->coll[i].kernel.p50,
		       in->coll[i].gap.p50, in->coll[i].seq_enter,
		       in->coll[i].seq_done);
	for (i = 0; i < in->nconn; i++)
		printf("conn %" PRIu64 " %016" PRIx64 " %u->%u tr=%u algo=%u "
		       "bytes=%" PRIu64 " chunks=%" PRIu64 " p50=%.2f "
		       "pending=%u\n",
		       in->interval, in->conn[i].comm, in->conn[i].src,
		       in->conn[i].dst, in->conn[i].transport, in->conn[i].algo,
		       in->conn[i].bytes, in->conn[i].chunks,
		       in->conn[i].xfer.p50, in->conn[i].pending);
}

int
main(int argc, char **argv)
{
	struct scen_params sp;
	struct scen *s = NULL;
	struct matrix *m = NULL;
	struct scen_fault f;
	struct matrix_input in;
	const struct matrix_event *ev;
	size_t nev, k;
	unsigned long nint = 16;
	int opt, dumpit = 0, quiet = 0, rc = 1, nf = 0, nint_set = 0;
	char *fspec[SCEN_MAX_FAULTS], *family = NULL;

	scen_params_default(&sp);
	while ((opt = getopt(argc, argv, "n:l:i:s:f:F:dq")) != -1) {
		switch (opt) {
		case 'n':
			sp.nranks = (uint32_t)num(optarg, SCEN_MAX_RANKS);
			break;
		case 'l':
			if (scen_layout_parse(optarg) < 0)
				usage();
			sp.layout = (uint8_t)scen_layout_parse(optarg);
			break;
		case 'i':
			nint = num(optarg, C4SCEN_MAX_INTERVALS);
			nint_set = 1;
			break;
		case 'F':
			family = optarg;
			break;
		case 's':
			sp.seed = num(optarg, ~0ul);
			break;
		case 'f':
			if (nf == SCEN_MAX_FAULTS)
				usage();
			fspec[nf++] = optarg;
			break;
		case 'd':
			dumpit = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			usage();
		}
	}
	if (family != NULL && nf > 0)
		usage();
	if (family != NULL)
		s = family_job(family, sp.seed, sp.nranks == 64 ? 0 : sp.nranks,
			       &nint, nint_set);
	else
		s = scen_new(&sp);
	m = matrix_new(NULL);
	if (s == NULL || m == NULL || scen_register(s, m) < 0) {
		fprintf(stderr, "c4scenario: cannot build the job (ranks must "
				"be a multiple of 8, enough for the layout)\n");
		goto out;
	}
	for (int i = 0; i < nf; i++) {
		char *kind = strtok(fspec[i], ":"), *sl = strtok(NULL, ":");
		char *st = strtok(NULL, ":");
		double slow = sl ? strtod(sl, NULL) : 1.5;
		uint32_t start = st ? (uint32_t)num(st, nint) : 6;

		if (kind == NULL || scen_fault_parse(kind) <= 0 ||
		    scen_add_fault(s, (unsigned)scen_fault_parse(kind), slow,
				   start, &f) < 0)
			usage();
		print_truth(&f);
	}
	for (uint32_t iv = 0; iv < nint; iv++) {
		if (scen_interval(s, iv, &in) < 0)
			goto out;
		if (dumpit)
			dump(&in);
		if (matrix_analyze(m, &in, &ev, &nev) < 0) {
			fprintf(stderr, "c4scenario: analysis failed\n");
			goto out;
		}
		for (k = 0; k < nev && !quiet; k++)
			print_event(&ev[k]);
	}
	rc = 0;
out:
	matrix_free(m);
	scen_free(s);
	return rc;
}
