/* SPDX-License-Identifier: Apache-2.0 */
/* The property reference: the table of docs/configuration.md and of
 * kdelay.conf(5), written from the property table (conf_props.c) by
 * tools/kd_confdoc.c. */
#include "kd_conf.h"

#include <stdio.h>
#include <string.h>

#include "kd_conf_props.h"
#include "kd_tiers.h"

/* The "values" cell of p: what kd_prop_set accepts. */
static void prop_values(const kd_prop_t *p, char *buf, size_t size)
{
        switch (p->type) {
        case KD_PROP_STRING:
                snprintf(buf, size, "text");
                break;
        case KD_PROP_SECRET:
                snprintf(buf, size, "text, read back as `***`");
                break;
        case KD_PROP_TOPICPFX:
                snprintf(buf, size, "`[A-Za-z0-9._-]`, at most %d chars",
                         KD_TOPIC_PREFIX_MAX);
                break;
        case KD_PROP_MYSQLURL:
                snprintf(buf, size,
                         "`mysql://user[:password]@host[:port]/db[?ssl-mode="
                         "M&ssl-ca=F&ssl-cert=F&ssl-key=F]`, percent-encoded; "
                         "an IPv6 host in brackets (`[::1]`)");
                break;
        case KD_PROP_SSLMODE:
                snprintf(buf, size, "a TLS mode");
                break;
        case KD_PROP_TARGETS:
                snprintf(buf, size, "topic names and `prefix*` patterns");
                break;
        case KD_PROP_RATES:
                snprintf(buf, size,
                         "`TARGET=RATE[/BURST]` entries: a topic or "
                         "`prefix*`, fires per second 1 .. 1000000, burst "
                         "(default a tenth of the rate, at least 1)");
                break;
        case KD_PROP_LISTEN:
                snprintf(buf, size,
                         "`host:port`, `[v6]:port`; port 0 .. 65535");
                break;
        case KD_PROP_KFILE:
                snprintf(buf, size,
                         "a path; `name=value` lines, values may be "
                         "`env:`/`file:` references");
                break;
        case KD_PROP_INT:
                snprintf(buf, size, "integer, %d .. %d", p->min,
                         KD_PROP_INT_MAX);
                break;
        case KD_PROP_BYTES:
                snprintf(buf, size, "bytes, %d .. 2^40", p->min);
                break;
        case KD_PROP_DURATION:
                snprintf(buf, size, "duration");
                break;
        case KD_PROP_TIERS:
                snprintf(buf, size,
                         "durations, each > 0 and <= 10 years, no duplicates, "
                         "at most %d",
                         KD_TIERS_MAX);
                break;
        case KD_PROP_DELIVERY:
        case KD_PROP_OUTAGE:
        case KD_PROP_MARKS:
                kd_prop_choice_list(p->type, "`", buf, size);
                break;
        }
        /* Text without a default: "" unsets it (kd_prop_set). */
        if (KD_PROP_IS_TEXT(p) && !p->def) {
                size_t n = strlen(buf);
                snprintf(buf + n, size - n, "; empty = unset");
        }
}

/* Non-zero when s cannot stand in a table cell. */
static int cell_bad(const char *s)
{
        return !s || !*s || strpbrk(s, "|\n");
}

int kd_conf_write_reference(FILE *out)
{
        fputs("| property | default | values | meaning |\n"
              "|---|---|---|---|\n",
              out);
        for (size_t i = 0; i < kd_props_cnt; i++) {
                const kd_prop_t *p = &kd_props[i];
                char values[256], def[128];
                prop_values(p, values, sizeof(values));
                if (p->def)
                        snprintf(def, sizeof(def), "`%s`", p->def);
                else
                        snprintf(def, sizeof(def), "%s",
                                 p->unset ? p->unset : "—");
                if (cell_bad(p->help) || cell_bad(def))
                        return -1;
                fprintf(out, "| `%s` | %s | %s | %s |\n", p->name, def, values,
                        p->help);
        }
        return ferror(out) ? -1 : 0;
}
