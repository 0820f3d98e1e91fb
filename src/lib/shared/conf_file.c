/* SPDX-License-Identifier: Apache-2.0 */
/* The libconfig reader: a config file (kdelay.conf(5)) into the
 * configuration object, each setting through kdelay_conf_set or
 * kdelay_conf_set_kafka, so a file accepts and refuses what -X does; an
 * error names the file and line. */
#define _POSIX_C_SOURCE 200809L
#include "kd_conf.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_util.h"

static kdelay_err_t load_setting(kdelay_conf_t *conf, config_setting_t *s,
                                 const char *path, const char *file,
                                 char *errstr, size_t errstr_size);

static kdelay_err_t load_group(kdelay_conf_t *conf, config_setting_t *g,
                               const char *prefix, const char *file,
                               char *errstr, size_t errstr_size)
{
        int n = config_setting_length(g);
        for (int i = 0; i < n; i++) {
                config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
                char path[256];
                snprintf(path, sizeof(path), "%s%s%s", prefix,
                         *prefix ? "." : "", config_setting_name(s));
                kdelay_err_t err =
                    load_setting(conf, s, path, file, errstr, errstr_size);
                if (err)
                        return err;
        }
        return KDELAY_OK;
}

/* Text form of a scalar setting; NULL for aggregates. */
static const char *scalar_text(config_setting_t *s, char *buf, size_t size)
{
        switch (config_setting_type(s)) {
        case CONFIG_TYPE_STRING:
                return config_setting_get_string(s);
        case CONFIG_TYPE_INT:
                snprintf(buf, size, "%d", config_setting_get_int(s));
                return buf;
        case CONFIG_TYPE_INT64:
                snprintf(buf, size, "%lld",
                         (long long)config_setting_get_int64(s));
                return buf;
        case CONFIG_TYPE_BOOL:
                return config_setting_get_bool(s) ? "true" : "false";
        case CONFIG_TYPE_FLOAT:
                snprintf(buf, size, "%g", config_setting_get_float(s));
                return buf;
        default:
                return NULL;
        }
}

static kdelay_err_t load_setting(kdelay_conf_t *conf, config_setting_t *s,
                                 const char *path, const char *file,
                                 char *errstr, size_t errstr_size)
{
        char why[512];
        char num[64];
        int line = config_setting_source_line(s);
        kdelay_err_t err = KDELAY_OK;

        if (config_setting_is_group(s))
                return load_group(conf, s, path, file, errstr, errstr_size);

        if (strcmp(path, "kafka") == 0 && config_setting_is_aggregate(s)) {
                /* librdkafka properties: [ "linger.ms=5", ... ] */
                for (int i = 0; i < config_setting_length(s); i++) {
                        const char *pair = config_setting_get_string_elem(s, i);
                        const char *eq = pair ? strchr(pair, '=') : NULL;
                        if (!eq || eq == pair) {
                                return kd_fail(KDELAY_ERR_CONFIG, errstr,
                                               errstr_size,
                                               "%s:%d: kafka: each entry "
                                               "must be \"property=value\"",
                                               file, line);
                        }
                        char name[256];
                        snprintf(name, sizeof(name), "%.*s", (int)(eq - pair),
                                 pair);
                        err = kdelay_conf_set_kafka(conf, name, eq + 1, why,
                                                    sizeof(why));
                        if (err)
                                return kd_fail(err, errstr, errstr_size,
                                               "%s:%d: kafka: %s", file, line,
                                               why);
                }
                return KDELAY_OK;
        }

        if ((!strcmp(path, "tiers") ||
             !strcmp(path, "forwarder.allowed_targets") ||
             !strcmp(path, "forwarder.target_rate_limits")) &&
            config_setting_is_aggregate(s)) {
                /* [ "1s", "1m", ... ] */
                kdelay_err_t list_err = strcmp(path, "tiers")
                                            ? KDELAY_ERR_CONFIG
                                            : KDELAY_ERR_INVALID_TIERS;
                char list[1024] = "";
                size_t off = 0;
                for (int i = 0; i < config_setting_length(s); i++) {
                        const char *t = config_setting_get_string_elem(s, i);
                        if (!t)
                                return kd_fail(list_err, errstr, errstr_size,
                                               "%s:%d: %s: each entry must "
                                               "be a string",
                                               file, line, path);
                        int w = snprintf(list + off, sizeof(list) - off, "%s%s",
                                         i ? "," : "", t);
                        if (w < 0 || (size_t)w >= sizeof(list) - off)
                                return kd_fail(list_err, errstr, errstr_size,
                                               "%s:%d: %s: list too long", file,
                                               line, path);
                        off += (size_t)w;
                }
                err = kdelay_conf_set(conf, path, list, why, sizeof(why));
        } else {
                const char *text = scalar_text(s, num, sizeof(num));
                if (!text)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s:%d: %s: expected a single value",
                                       file, line, path);
                err = kdelay_conf_set(conf, path, text, why, sizeof(why));
        }
        if (err)
                return kd_fail(err, errstr, errstr_size, "%s:%d: %s", file,
                               line, why);
        return KDELAY_OK;
}

/* --- 64-bit integers in libconfig text ------------------------------------
 * libconfig 1.5 reads an integer written without an L suffix as an int and
 * wraps one that does not fit (5368709120 becomes 1073741824). Before
 * parsing, the text gets an L after each such integer, so that libconfig
 * reads it as a 64-bit one and its property's range check sees the value
 * written; an integer that does not fit 64 bits is refused. The scan skips
 * what libconfig's scanner skips (strings, comments, names) and tells
 * integers from floats as it does. Files read by `@include` are parsed by
 * libconfig alone. */

/* The longest config file read. */
#define KD_CONF_TEXT_MAX (4 * 1024 * 1024)

typedef struct int_scan {
        const char *s; /* the text */
        size_t n;      /* its length */
        size_t i;      /* the position */
        int line;      /* of s[i], from 1 */
        char *out;     /* the text with the suffixes added */
        size_t out_len;
} int_scan_t;

static int is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static int is_hex_digit(char c)
{
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_name_start(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*';
}

static int is_name_char(char c)
{
        return is_name_start(c) || is_digit(c) || c == '-' || c == '_';
}

/* Copies s[i, to) to the output, counting lines. */
static void scan_copy_to(int_scan_t *sc, size_t to)
{
        for (; sc->i < to; sc->i++) {
                sc->line += sc->s[sc->i] == '\n';
                sc->out[sc->out_len++] = sc->s[sc->i];
        }
}

/* The end of what starts at s[i], a string, a comment or a name; i when
 * nothing of the kind starts there. */
static size_t scan_skip_end(const int_scan_t *sc)
{
        const char *s = sc->s;
        size_t i = sc->i, n = sc->n;
        if (s[i] == '"') {
                for (i++; i < n && s[i] != '"'; i++)
                        if (s[i] == '\\' && i + 1 < n)
                                i++;
                return i < n ? i + 1 : n;
        }
        if (s[i] == '#' || (s[i] == '/' && i + 1 < n && s[i + 1] == '/')) {
                while (i < n && s[i] != '\n')
                        i++;
                return i;
        }
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
                for (i += 2; i + 1 < n; i++)
                        if (s[i] == '*' && s[i + 1] == '/')
                                return i + 2;
                return n;
        }
        if (is_name_start(s[i])) {
                while (i < n && is_name_char(s[i]))
                        i++;
                return i;
        }
        return sc->i;
}

/* The end of the float whose digits before the point end at i (at '.',
 * 'e' or 'E'); i when no float continues there. */
static size_t scan_float_end(const char *s, size_t n, size_t i)
{
        size_t j = i;
        if (j < n && s[j] == '.')
                for (j++; j < n && is_digit(s[j]); j++)
                        ;
        if (j < n && (s[j] == 'e' || s[j] == 'E')) {
                size_t k = j + 1;
                if (k < n && (s[k] == '+' || s[k] == '-'))
                        k++;
                if (k < n && is_digit(s[k])) {
                        while (k < n && is_digit(s[k]))
                                k++;
                        j = k;
                }
        }
        return j;
}

/* 1 when a number starts at s[i]: a digit, or a sign or '.' before one
 * (a sign may also come before ".5"). */
static int scan_number_starts(const char *s, size_t n, size_t i)
{
        if (s[i] == '+' || s[i] == '-')
                i++;
        if (i < n && s[i] == '.')
                i++;
        return i < n && is_digit(s[i]);
}

/* The integer at s[start, end) (hex with 0x) into *v; -1 when it does not
 * fit 64 bits. */
static int scan_integer_value(const char *s, size_t start, size_t end, int hex,
                              long long *v)
{
        char digits[64];
        size_t len = end - start;
        if (len >= sizeof(digits))
                return -1;
        memcpy(digits, s + start, len);
        digits[len] = '\0';
        errno = 0;
        if (hex) {
                unsigned long long u = strtoull(digits, NULL, 16);
                if (errno || u > (unsigned long long)INT64_MAX)
                        return -1;
                *v = (long long)u;
                return 0;
        }
        *v = strtoll(digits, NULL, 10);
        return errno ? -1 : 0;
}

/* Copies the number starting at s[i] (scan_number_starts), with an L added
 * to an integer that needs 64 bits; -1 for an integer that does not fit
 * them. */
static int scan_number(int_scan_t *sc)
{
        const char *s = sc->s;
        size_t n = sc->n, start = sc->i, j = start;
        int hex = s[j] == '0' && j + 2 < n &&
                  (s[j + 1] == 'x' || s[j + 1] == 'X') &&
                  is_hex_digit(s[j + 2]);
        if (hex) {
                for (j += 2; j < n && is_hex_digit(s[j]); j++)
                        ;
        } else {
                if (s[j] == '+' || s[j] == '-')
                        j++;
                while (j < n && is_digit(s[j]))
                        j++;
                size_t f = scan_float_end(s, n, j);
                if (f > j) { /* a float: as libconfig, the longest token */
                        scan_copy_to(sc, f);
                        return 0;
                }
        }
        long long v;
        if (scan_integer_value(s, start, j, hex, &v))
                return -1;
        scan_copy_to(sc, j);
        if ((j >= n || s[j] != 'L') && (v < INT_MIN || v > INT_MAX))
                sc->out[sc->out_len++] = 'L';
        return 0;
}

/* text with an L after each integer that needs 64 bits, into *outp (caller
 * frees); an error naming `name` and the line for one that does not fit
 * them. */
static kdelay_err_t mark_int64(const char *text, const char *name, char **outp,
                               char *errstr, size_t errstr_size)
{
        size_t n = strlen(text);
        /* An L follows an integer of at least 10 characters. */
        int_scan_t sc = {text, n, 0, 1, malloc(n + n / 10 + 2), 0};
        if (!sc.out)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        while (sc.i < n) {
                size_t i = sc.i, end = scan_skip_end(&sc);
                if (end > i) {
                        scan_copy_to(&sc, end);
                } else if (!scan_number_starts(text, n, i)) {
                        scan_copy_to(&sc, i + 1);
                } else if (scan_number(&sc)) {
                        size_t len =
                            strspn(text + i, "+-0123456789abcdefABCDEFxX");
                        kdelay_err_t err = kd_fail(
                            KDELAY_ERR_CONFIG, errstr, errstr_size,
                            "%s:%d: integer %.*s%s does not fit 64 bits", name,
                            sc.line, (int)(len > 40 ? 40 : len), text + i,
                            len > 40 ? "..." : "");
                        free(sc.out);
                        return err;
                }
        }
        sc.out[sc.out_len] = '\0';
        *outp = sc.out;
        return KDELAY_OK;
}

/* Applies the settings of cfg, read (ok) from `name`, to conf. */
static kdelay_err_t load_config(kdelay_conf_t *conf, config_t *cfg, int ok,
                                const char *name, char *errstr,
                                size_t errstr_size)
{
        if (!ok)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s:%d: %s", name, config_error_line(cfg),
                               config_error_text(cfg));
        return load_group(conf, config_root_setting(cfg), "", name, errstr,
                          errstr_size);
}

/* Parses text, read from `name`, and applies its settings to conf. */
static kdelay_err_t load_marked_text(kdelay_conf_t *conf, const char *text,
                                     const char *name, char *errstr,
                                     size_t errstr_size)
{
        char *marked = NULL;
        kdelay_err_t err = mark_int64(text, name, &marked, errstr, errstr_size);
        if (err)
                return err;
        config_t cfg;
        config_init(&cfg);
        int ok = config_read_string(&cfg, marked);
        err = load_config(conf, &cfg, ok, name, errstr, errstr_size);
        config_destroy(&cfg);
        free(marked);
        return err;
}

/* The whole of f into *textp (caller frees), its length into *lenp; -1
 * with errno, or with errno EFBIG past KD_CONF_TEXT_MAX. */
static int read_text(FILE *f, char **textp, size_t *lenp)
{
        size_t len = 0, cap = 4096;
        char *text = malloc(cap);
        while (text) {
                len += fread(text + len, 1, cap - len - 1, f);
                if (ferror(f)) {
                        free(text);
                        return -1;
                }
                if (feof(f)) {
                        text[len] = '\0';
                        *textp = text;
                        *lenp = len;
                        return 0;
                }
                if (cap >= KD_CONF_TEXT_MAX) {
                        free(text);
                        errno = EFBIG;
                        return -1;
                }
                char *bigger = realloc(text, cap * 2);
                if (!bigger)
                        free(text);
                text = bigger;
                cap *= 2;
        }
        errno = ENOMEM;
        return -1;
}

kdelay_err_t kdelay_conf_load_file(kdelay_conf_t *conf, const char *path,
                                   char *errstr, size_t errstr_size)
{
        if (!conf || !path)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf and path are required");
        FILE *f = fopen(path, "r");
        char *text = NULL;
        size_t len = 0;
        if (!f || read_text(f, &text, &len)) {
                int e = errno;
                if (f)
                        fclose(f);
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size, "%s: %s",
                               path,
                               e == EFBIG ? "larger than 4 MiB" : strerror(e));
        }
        fclose(f);
        kdelay_err_t err =
            strlen(text) != len
                ? kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                          "%s: holds a NUL byte", path)
                : load_marked_text(conf, text, path, errstr, errstr_size);
        free(text);
        return err;
}

kdelay_err_t kd_conf_load_text(kdelay_conf_t *conf, const char *text,
                               const char *name, char *errstr,
                               size_t errstr_size)
{
        if (!conf || !text || !name)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf, text and name are required");
        return load_marked_text(conf, text, name, errstr, errstr_size);
}
