/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the config loader (src/lib/shared/conf_file.c): a config
 * file's text (kd_conf_load_text, what kdelay_conf_load_file does after reading
 * the file) and name=value settings (kdelay_conf_set_pair, as -X passes
 * them). Whatever the input, nothing crashes or leaks (libFuzzer's leak
 * check), an error says why, and afterwards every kdelay property reads
 * back whole (or, into a buffer too small, not at all) a value that, set
 * again, reads back the same (a secret reads as "***" or "" and is not set
 * again).
 *
 * Input: byte 0 picks the form (its value mod 2), the rest is its input:
 *
 *   0  the text of a config file (libconfig syntax);
 *   1  lines "name=value", each applied with kdelay_conf_set_pair.
 *
 * Inputs naming "include" (libconfig's @include reads other files) or
 * "plugin" (librdkafka's plugin.library.paths loads shared libraries) are
 * skipped: both reach outside the process and a config file is the
 * operator's own.
 *
 * Built with libFuzzer when KDELAY_FUZZ=ON (scripts/fuzz.sh); always built
 * without it into tests/unit/lib/test_fuzz_regress_conf, which replays
 * fuzz/corpus/conf and fuzz/regress/conf. */
#include <string.h>
#include <strings.h>

#include <kdelay/conf.h>

#include "kd_conf.h"
#include "kd_fuzz.h"

enum { FZ_MAX_PROPS = 128 };

/* The names of kdelay's properties, read once from the reference table
 * (kd_conf_write_reference: one row "| `name` | ..." per property). */
static const char *fz_props[FZ_MAX_PROPS];
static size_t fz_prop_cnt;

static void read_props(void)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        FZ_CHECK(f);
        FZ_CHECK(kd_conf_write_reference(f) == 0);
        FZ_CHECK(fclose(f) == 0);
        for (char *p = text; (p = strstr(p, "\n| `")) != NULL;) {
                p += 4;
                char *end = strchr(p, '`');
                FZ_CHECK(end && fz_prop_cnt < FZ_MAX_PROPS);
                fz_props[fz_prop_cnt++] = strndup(p, (size_t)(end - p));
                FZ_CHECK(fz_props[fz_prop_cnt - 1]);
        }
        free(text);
        FZ_CHECK(fz_prop_cnt >= 10);
}

/* Every property reads back, and a value read back sets to itself. */
static void check_read_back(kdelay_conf_t *conf)
{
        char errstr[512];
        for (size_t i = 0; i < fz_prop_cnt; i++) {
                /* Values come from at most 4 KB of input. */
                char v[8192], again[8192], small[16];
                FZ_CHECK(kdelay_conf_get(conf, fz_props[i], v, sizeof(v)) ==
                         KDELAY_OK);
                /* Whole or not at all: a value that does not fit is an
                 * error, never cut short. */
                kdelay_err_t small_err =
                    kdelay_conf_get(conf, fz_props[i], small, sizeof(small));
                if (strlen(v) < sizeof(small))
                        FZ_CHECK(small_err == KDELAY_OK && !strcmp(small, v));
                else
                        FZ_CHECK(small_err == KDELAY_ERR_INVALID_ARG);
                if (!strcmp(v, "***"))
                        continue;
                kdelay_err_t err = kdelay_conf_set(conf, fz_props[i], v, errstr,
                                                   sizeof(errstr));
                if (err)
                        fprintf(stderr, "fuzz_conf: %s=\"%.200s\": %s\n",
                                fz_props[i], v, errstr);
                FZ_CHECK(err == KDELAY_OK);
                FZ_CHECK(kdelay_conf_get(conf, fz_props[i], again,
                                         sizeof(again)) == KDELAY_OK);
                FZ_CHECK(strcmp(v, again) == 0);
        }
}

static void apply_pairs(kdelay_conf_t *conf, char *text)
{
        char errstr[512];
        for (char *line = text, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                errstr[0] = '\0';
                if (kdelay_conf_set_pair(conf, line, errstr, sizeof(errstr)) !=
                    KDELAY_OK)
                        FZ_CHECK(errstr[0] != '\0');
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fz_in_t in = {data, size};
        char errstr[512];
        if (size == 0)
                return 0;
        if (!fz_prop_cnt)
                read_props();
        int form = fz_byte(&in) % 2;
        char *text = fz_text(&in);
        if (strcasestr(text, "include") || strcasestr(text, "plugin")) {
                free(text);
                return 0;
        }
        kdelay_conf_t *conf = kdelay_conf_new();
        FZ_CHECK(conf);
        if (form == 0) {
                errstr[0] = '\0';
                if (kd_conf_load_text(conf, text, "fuzz.conf", errstr,
                                      sizeof(errstr)) != KDELAY_OK)
                        FZ_CHECK(errstr[0] != '\0');
        } else {
                apply_pairs(conf, text);
        }
        free(text);
        kdelay_conf_t *dup = kdelay_conf_dup(conf);
        FZ_CHECK(dup);
        check_read_back(conf);
        kdelay_conf_destroy(conf);
        check_read_back(dup);
        kdelay_conf_destroy(dup);
        return 0;
}
