/*
 * fuzz_config.c - libFuzzer target: arbitrary text through the YAML
 * configuration loader with a schema that uses every field type (nested
 * sections, lists of credentials, the shared server section).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "auth.h"
#include "cfg.h"
#include "srv.h"

struct fz_conf {
	char *name;
	int64_t count;
	double ratio;
	bool on;
	int64_t period;
	int64_t size;
	int level;
	char *addr;
	int64_t mode;
	struct cfg_strlist tags;
	struct srv_conf server;
	struct cfg_list credentials;
	struct cfg_pos pos;
};

static const char *const fz_levels[] = {"low", "high", NULL};

static const struct cfg_field fz_fields[] = {
	{"name", CFG_STR, offsetof(struct fz_conf, name), CFG_REQUIRED, 0, 0,
	 NULL, NULL, NULL},
	{"count", CFG_INT, offsetof(struct fz_conf, count), 0, -5, 5000, "3",
	 NULL, NULL},
	{"ratio", CFG_DOUBLE, offsetof(struct fz_conf, ratio), 0, 0, 1, "0.5",
	 NULL, NULL},
	{"on", CFG_BOOL, offsetof(struct fz_conf, on), 0, 0, 0, "true", NULL,
	 NULL},
	{"period", CFG_DURATION, offsetof(struct fz_conf, period), 0, 1,
	 3600000, "1s", NULL, NULL},
	{"size", CFG_SIZE, offsetof(struct fz_conf, size), 0, 0, 0, "1MiB",
	 NULL, NULL},
	{"level", CFG_ENUM, offsetof(struct fz_conf, level), 0, 0, 0, "low",
	 fz_levels, NULL},
	{"addr", CFG_ADDR, offsetof(struct fz_conf, addr), 0, 0, 0, NULL, NULL,
	 NULL},
	{"mode", CFG_INT, offsetof(struct fz_conf, mode), CFG_OCTAL, 0, 0777,
	 "0640", NULL, NULL},
	{"tags", CFG_STRLIST, offsetof(struct fz_conf, tags), 0, 0, 0, NULL,
	 NULL, NULL},
	SRV_CONF_FIELD(offsetof(struct fz_conf, server)),
	{"credentials", CFG_LIST, offsetof(struct fz_conf, credentials), 0, 0,
	 0, NULL, &auth_credential_schema, NULL},
	{NULL, CFG_POS, offsetof(struct fz_conf, pos), 0, 0, 0, NULL, NULL,
	 NULL},
};

static void
fz_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct fz_conf *c = obj;

	auth_validate_list(&c->credentials, at, d);
}

static const struct cfg_schema fz_schema = {
	"fuzz configuration", sizeof(struct fz_conf), fz_fields,
	CFG_NFIELDS(fz_fields), fz_validate};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_conf conf;
	struct cfg_diag d;
	char *out = NULL;
	size_t outlen = 0;

	if (cfg_load_buffer("fuzz.yaml", data, size, &fz_schema, &conf, &d) ==
	    0) {
		/* What loads must print, and reload to the same thing. */
		FILE *fp = open_memstream(&out, &outlen);

		if (fp != NULL) {
			cfg_print(fp, &fz_schema, &conf);
			fclose(fp);
		}
		free(out);
	}
	cfg_diag_free(&d);
	cfg_free(&fz_schema, &conf);
	return 0;
}
