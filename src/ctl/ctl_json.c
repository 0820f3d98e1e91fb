/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl's --json output (ctl_json.h): the one place its JSON text is
 * written. */
#include "ctl_json.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

/* A growing text; oom once an append failed (the text is then dropped). */
typedef struct jbuf {
        char *p;
        size_t len, cap;
        int oom;
} jbuf_t;

static void put(jbuf_t *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *p = realloc(b->p, cap);
                if (!p) {
                        b->oom = 1;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, s, n);
        b->len += n;
        b->p[b->len] = '\0';
}

static void puts_(jbuf_t *b, const char *s)
{
        put(b, s, strlen(s));
}

/* The text, or NULL (freed) when an append failed. */
static char *done(jbuf_t *b)
{
        if (b->oom) {
                free(b->p);
                return NULL;
        }
        return b->p;
}

static void put_string(jbuf_t *b, const char *s, size_t len)
{
        const unsigned char *u = (const unsigned char *)s;
        char esc[8];
        put(b, "\"", 1);
        for (size_t i = 0; i < len;) {
                uint32_t cp;
                size_t k = kd_utf8_seq(u + i, len - i, &cp);
                if (k == 0) {
                        put(b, "\\ufffd", 6);
                        i++;
                        continue;
                }
                if (cp == '"' || cp == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char)cp;
                        put(b, esc, 2);
                } else if (cp < 0x20) {
                        static const char shortcut[] = "btn\0fr";
                        if (cp >= '\b' && cp <= '\r' && shortcut[cp - '\b']) {
                                esc[0] = '\\';
                                esc[1] = shortcut[cp - '\b'];
                                put(b, esc, 2);
                        } else {
                                snprintf(esc, sizeof(esc), "\\u%04x",
                                         (unsigned)cp);
                                put(b, esc, 6);
                        }
                } else {
                        put(b, s + i, k);
                }
                i += k;
        }
        put(b, "\"", 1);
}

static double dabs(double d)
{
        return d < 0 ? -d : d;
}

/* A number as cJSON writes it: integers exactly, else 15 significant
 * digits when they read back as d (to within cJSON's relative epsilon),
 * else 17; NaN and infinities as null. */
static void put_number(jbuf_t *b, double d)
{
        char t[64];
        if (isnan(d) || isinf(d)) {
                puts_(b, "null");
                return;
        }
        if (d > -9007199254740992.0 && d < 9007199254740992.0 &&
            d == (double)(int64_t)d) {
                snprintf(t, sizeof(t), "%lld", (long long)(int64_t)d);
        } else {
                snprintf(t, sizeof(t), "%1.15g", d);
                double back = strtod(t, NULL);
                double m = dabs(back) > dabs(d) ? dabs(back) : dabs(d);
                if (dabs(back - d) > m * DBL_EPSILON)
                        snprintf(t, sizeof(t), "%1.17g", d);
        }
        puts_(b, t);
}

static void put_item(jbuf_t *b, const cJSON *o)
{
        const cJSON *c;
        int first = 1;
        switch (o->type & 0xFF) {
        case cJSON_False:
                puts_(b, "false");
                break;
        case cJSON_True:
                puts_(b, "true");
                break;
        case cJSON_Number:
                put_number(b, o->valuedouble);
                break;
        case cJSON_String:
                if (o->valuestring)
                        put_string(b, o->valuestring, strlen(o->valuestring));
                else
                        puts_(b, "null");
                break;
        case cJSON_Array:
                put(b, "[", 1);
                cJSON_ArrayForEach(c, o)
                {
                        if (!first)
                                put(b, ",", 1);
                        first = 0;
                        put_item(b, c);
                }
                put(b, "]", 1);
                break;
        case cJSON_Object:
                put(b, "{", 1);
                cJSON_ArrayForEach(c, o)
                {
                        if (!first)
                                put(b, ",", 1);
                        first = 0;
                        const char *key = c->string ? c->string : "";
                        put_string(b, key, strlen(key));
                        put(b, ":", 1);
                        put_item(b, c);
                }
                put(b, "}", 1);
                break;
        default: /* cJSON_NULL; cJSON_Raw and cJSON_Invalid are not used */
                puts_(b, "null");
                break;
        }
}

char *kd_ctl_json_string(const char *s, size_t len)
{
        jbuf_t b = {NULL, 0, 0, 0};
        put_string(&b, s ? s : "", s ? len : 0);
        return done(&b);
}

char *kd_ctl_json_text(const cJSON *o)
{
        if (!o)
                return NULL;
        jbuf_t b = {NULL, 0, 0, 0};
        put_item(&b, o);
        return done(&b);
}

int kd_ctl_json_write(const cJSON *o)
{
        char *text = kd_ctl_json_text(o);
        int rc = text && printf("%s\n", text) > 0 ? 0 : -1;
        free(text);
        return rc;
}

int kd_ctl_json_print(cJSON *o)
{
        int rc = kd_ctl_json_write(o);
        cJSON_Delete(o);
        return rc;
}

int kd_ctl_json_asked(int argc, char **argv)
{
        for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
                if (!strcmp(argv[i], "--json"))
                        return 1;
        return 0;
}
