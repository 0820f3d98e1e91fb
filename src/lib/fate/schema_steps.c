/* SPDX-License-Identifier: Apache-2.0 */
/* A migration script split into statements with their guards
 * (kd_schema_steps.h). */
#include "kd_schema_steps.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define KD_DIRECTIVE "-- kdelay:"
#define KD_FLOOR     "floor "
#define KD_OPT_IN    "opt-in "

static const char *skip_blank(const char *p)
{
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

static const char *line_end(const char *p)
{
        const char *nl = strchr(p, '\n');
        return nl ? nl : p + strlen(p);
}

/* An identifier [A-Za-z0-9_]{1,64} at *pp into out; advances *pp. */
static int ident(const char **pp, char *out)
{
        size_t n = 0;
        const char *p = *pp;
        while (isalnum((unsigned char)p[n]) || p[n] == '_') {
                if (n == KD_SCHEMA_NAME_MAX)
                        return -1;
                out[n] = p[n];
                n++;
        }
        out[n] = '\0';
        *pp = p + n;
        return n ? 0 : -1;
}

const char *kd_schema_guard_name(kd_schema_guard_t guard)
{
        switch (guard) {
        case KD_SCHEMA_GUARD_COLUMN:
                return "unless column";
        case KD_SCHEMA_GUARD_INDEX:
                return "unless index";
        case KD_SCHEMA_GUARD_IF_INDEX:
                return "if index";
        case KD_SCHEMA_GUARD_NONE:
                break;
        }
        return "";
}

/* "unless column|index table.name" or "if index table.name" between p
 * and end into step. */
static int directive(const char *p, const char *end, kd_schema_step_t *step)
{
        static const kd_schema_guard_t guards[] = {KD_SCHEMA_GUARD_COLUMN,
                                                   KD_SCHEMA_GUARD_INDEX,
                                                   KD_SCHEMA_GUARD_IF_INDEX};
        p = skip_blank(p);
        for (size_t i = 0; i < sizeof(guards) / sizeof(guards[0]); i++) {
                const char *kind = kd_schema_guard_name(guards[i]);
                size_t len = strlen(kind);
                if (strncmp(p, kind, len) || (p[len] != ' ' && p[len] != '\t'))
                        continue;
                p = skip_blank(p + len);
                if (ident(&p, step->table) || *p++ != '.' ||
                    ident(&p, step->name))
                        return -1;
                while (p < end && isspace((unsigned char)*p))
                        p++;
                if (p != end)
                        return -1;
                step->guard = guards[i];
                return 0;
        }
        return -1;
}

/* 1 when directive words d are one of the whole script's (floor,
 * opt-in), not a statement's guard. */
static int whole_script(const char *d)
{
        return !strncmp(d, KD_FLOOR, strlen(KD_FLOOR)) ||
               !strncmp(d, KD_OPT_IN, strlen(KD_OPT_IN));
}

/* Where the statement starting at p ends: its ';' at a line's end, or
 * the script's end. */
static const char *stmt_end(const char *p)
{
        for (; *p; p++) {
                if (*p != ';')
                        continue;
                const char *q = skip_blank(p + 1);
                if (*q == '\r')
                        q++;
                if (*q == '\n' || !*q)
                        return p;
        }
        return p;
}

int kd_schema_step_next(const char **posp, kd_schema_step_t *step, char *errstr,
                        size_t errstr_size)
{
        const char *p = *posp;
        memset(step, 0, sizeof(*step));
        for (;;) { /* blank and comment lines before the statement */
                while (isspace((unsigned char)*p))
                        p++;
                if (!*p) {
                        *posp = p;
                        if (step->guard == KD_SCHEMA_GUARD_NONE)
                                return 0;
                        snprintf(errstr, errstr_size,
                                 "directive for %s.%s has no statement after "
                                 "it",
                                 step->table, step->name);
                        return -1;
                }
                if (strncmp(p, "--", 2))
                        break;
                const char *end = line_end(p);
                size_t dlen = strlen(KD_DIRECTIVE);
                if (!strncmp(p, KD_DIRECTIVE, dlen) &&
                    !whole_script(skip_blank(p + dlen))) {
                        if (step->guard != KD_SCHEMA_GUARD_NONE ||
                            directive(p + dlen, end, step)) {
                                snprintf(errstr, errstr_size,
                                         "bad directive \"%.*s\" (one per "
                                         "statement: -- kdelay: unless "
                                         "column|index table.name, or if "
                                         "index table.name)",
                                         (int)(end - p), p);
                                return -1;
                        }
                }
                p = end;
        }
        const char *end = stmt_end(p);
        step->sql = p;
        step->sql_len = (size_t)(end - p);
        *posp = *end ? end + 1 : end;
        return 1;
}

int kd_release_parse(const char *s, int v[3])
{
        for (int i = 0; i < 3; i++) {
                long n = 0;
                const char *start = s;
                while (isdigit((unsigned char)*s) && n < 100000)
                        n = n * 10 + (*s++ - '0');
                if (s == start || n >= 100000 || (i < 2 && *s++ != '.'))
                        return -1;
                v[i] = (int)n;
        }
        return *s ? -1 : 0;
}

int kd_release_cmp(const int a[3], const int b[3])
{
        for (int i = 0; i < 3; i++)
                if (a[i] != b[i])
                        return a[i] < b[i] ? -1 : 1;
        return 0;
}

/* The text after "-- kdelay: <word>" on the script's one line that has
 * it, trailing blanks cut, into out (size bytes): 1 found, 0 none, -1
 * declared twice or too long. */
static int script_directive(const char *script, const char *word, char *out,
                            size_t size)
{
        int found = 0;
        for (const char *p = script; *p;) {
                const char *end = line_end(p);
                size_t dlen = strlen(KD_DIRECTIVE), wlen = strlen(word);
                const char *d = !strncmp(p, KD_DIRECTIVE, dlen)
                                    ? skip_blank(p + dlen)
                                    : NULL;
                if (d && !strncmp(d, word, wlen)) {
                        const char *q = skip_blank(d + wlen);
                        size_t n = (size_t)(end - q);
                        while (n && isspace((unsigned char)q[n - 1]))
                                n--;
                        if (found || n >= size)
                                return -1;
                        memcpy(out, q, n);
                        out[n] = '\0';
                        found = 1;
                }
                p = *end ? end + 1 : end;
        }
        return found;
}

int kd_schema_opt_in_of(const char *script, char *name, size_t size)
{
        char text[KD_SCHEMA_OPT_IN_MAX + 1];
        int rc = script_directive(script, KD_OPT_IN, text, sizeof(text));
        if (rc <= 0)
                return rc;
        size_t n = strlen(text);
        if (!n)
                return -1;
        for (size_t i = 0; i < n; i++)
                if (!islower((unsigned char)text[i]) &&
                    !isdigit((unsigned char)text[i]) && text[i] != '-')
                        return -1;
        if (n >= size)
                return -1;
        memcpy(name, text, n + 1);
        return 1;
}

int kd_schema_floor_of(const char *script, int v[3])
{
        char text[32];
        int rc = script_directive(script, KD_FLOOR, text, sizeof(text));
        if (rc <= 0)
                return rc;
        return kd_release_parse(text, v) ? -1 : 1;
}
