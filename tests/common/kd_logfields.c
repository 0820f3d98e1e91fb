/* SPDX-License-Identifier: Apache-2.0 */
/* A reader of kdelay's key=value log lines (kd_logfields.h). */
#include "kd_logfields.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The value of n hex digits at s, or -1. */
static long hex_value(const char *s, size_t n)
{
        long v = 0;
        for (size_t i = 0; i < n; i++) {
                int d = hex_digit(s[i]);
                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/* Writes code point cp (below U+10000) as UTF-8 at out; its length. */
static size_t put_utf8(uint32_t cp, char *out)
{
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xC0 | cp >> 6);
                out[1] = (char)(0x80 | (cp & 0x3F));
                return 2;
        }
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
}

static int bare_ok(unsigned char c)
{
        return c > ' ' && c != 0x7F && c != '"' && c != '=' && c != '\\';
}

/* A quoted value at s (s[0] is '"'). */
static long parse_quoted(const char *s, size_t len, char *out, size_t *out_len)
{
        size_t i = 1, o = 0;
        while (i < len && s[i] != '"') {
                unsigned char c = (unsigned char)s[i];
                if (c < ' ' || c == 0x7F)
                        return -1; /* control characters are escaped */
                if (c != '\\') {
                        out[o++] = (char)c;
                        i++;
                        continue;
                }
                if (i + 1 >= len)
                        return -1;
                char e = s[i + 1];
                size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 0;
                if (e == '"' || e == '\\') {
                        out[o++] = e;
                        i += 2;
                } else if (digits && i + 2 + digits <= len) {
                        long v = hex_value(s + i + 2, digits);
                        if (v < 0)
                                return -1;
                        /* 3 output bytes for 6 input: out has room. */
                        if (e == 'x')
                                out[o++] = (char)v;
                        else
                                o += put_utf8((uint32_t)v, out + o);
                        i += 2 + digits;
                } else {
                        return -1;
                }
        }
        if (i >= len)
                return -1; /* no closing quote */
        *out_len = o;
        return (long)(i + 1);
}

long kd_logvalue_parse(const char *s, size_t len, char *out, size_t *out_len)
{
        if (len > 0 && s[0] == '"')
                return parse_quoted(s, len, out, out_len);
        size_t i = 0;
        while (i < len && s[i] != ' ') {
                if (!bare_ok((unsigned char)s[i]))
                        return -1;
                out[i] = s[i];
                i++;
        }
        if (i == 0)
                return -1; /* an empty value is written "" */
        *out_len = i;
        return (long)i;
}

int kd_logfields_parse(const char *line, kd_logfield_t *fields, int max)
{
        size_t len = strlen(line), i = 0;
        int n = 0;
        while (i < len) {
                size_t k = 0;
                while (i + k < len &&
                       ((line[i + k] >= 'a' && line[i + k] <= 'z') ||
                        line[i + k] == '_'))
                        k++;
                if (k == 0 || k >= sizeof(fields[0].key) || i + k >= len ||
                    line[i + k] != '=' || n == max)
                        goto bad;
                kd_logfield_t *f = &fields[n];
                memcpy(f->key, line + i, k);
                f->key[k] = '\0';
                i += k + 1;
                f->value = malloc(len - i + 1);
                if (!f->value)
                        goto bad;
                n++;
                long v = kd_logvalue_parse(line + i, len - i, f->value,
                                           &f->value_len);
                if (v < 0)
                        goto bad;
                f->value[f->value_len] = '\0';
                i += (size_t)v;
                if (i < len && (line[i] != ' ' || i + 1 == len))
                        goto bad; /* one space between fields, none at end */
                i += i < len;
        }
        return n;
bad:
        kd_logfields_free(fields, n);
        return -1;
}

void kd_logfields_free(kd_logfield_t *fields, int n)
{
        for (int i = 0; i < n; i++) {
                free(fields[i].value);
                fields[i].value = NULL;
        }
}

const kd_logfield_t *kd_logfields_find(const kd_logfield_t *fields, int n,
                                       const char *key)
{
        for (int i = 0; i < n; i++)
                if (strcmp(fields[i].key, key) == 0)
                        return &fields[i];
        return NULL;
}
