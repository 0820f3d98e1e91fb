/* SPDX-License-Identifier: Apache-2.0 */
/* SQL text built in memory (kd_sql.h). */
#include "kd_sql.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void reserve(kd_sql_t *s, size_t more)
{
        if (s->oom || s->len + more + 1 <= s->cap)
                return;
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + more + 1)
                cap *= 2;
        char *nb = realloc(s->buf, cap);
        if (!nb) {
                s->oom = 1;
                return;
        }
        s->buf = nb;
        s->cap = cap;
}

void kd_sql_add(kd_sql_t *s, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
                s->oom = 1;
                return;
        }
        reserve(s, (size_t)n);
        if (s->oom)
                return;
        va_start(ap, fmt);
        vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
        va_end(ap);
        s->len += (size_t)n;
}

/* Appends X'hex' for the id bytes. */
void kd_sql_add_hex(kd_sql_t *s, const char *id, size_t len)
{
        static const char hx[] = "0123456789abcdef";
        reserve(s, len * 2 + 3);
        if (s->oom)
                return;
        char *p = s->buf + s->len;
        *p++ = 'X';
        *p++ = '\'';
        for (size_t i = 0; i < len; i++) {
                *p++ = hx[(unsigned char)id[i] >> 4];
                *p++ = hx[(unsigned char)id[i] & 15];
        }
        *p++ = '\'';
        *p = '\0';
        s->len = (size_t)(p - s->buf);
}

/* Appends "X'..',X'..')" for ids: the rest of a "task_id IN (" list. */
void kd_sql_add_id_list(kd_sql_t *s, const char *const *ids, const size_t *lens,
                        size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (i)
                        kd_sql_add(s, ",");
                kd_sql_add_hex(s, ids[i], lens[i]);
        }
        kd_sql_add(s, ")");
}

int64_t kd_sql_col_i64(const char *s)
{
        return s ? strtoll(s, NULL, 10) : -1;
}
