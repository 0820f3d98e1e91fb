/* SPDX-License-Identifier: Apache-2.0 */
/* Kafka client properties files (kd_kprops.h). */
#define _POSIX_C_SOURCE 200809L
#include "kd_kprops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kd_log.h"
#include "kd_util.h"

/* path as kd_log_quote writes it, always in quotes. */
static const char *quote_path(const char *path, char *buf, size_t size)
{
        char q[600];
        kd_log_quote(path, q, sizeof(q));
        const char *mark = q[0] == '"' ? "" : "\"";
        snprintf(buf, size, "%s%s%s", mark, q, mark);
        return buf;
}

static int is_blank(char c)
{
        return c == ' ' || c == '\t' || c == '\f';
}

/* One line (NUL-terminated, its end of line cut) of `file`. */
static kdelay_err_t parse_line(char *l, int line, const char *qfile,
                               kd_kprops_fn *fn, void *opaque, char *errstr,
                               size_t errstr_size)
{
        while (is_blank(*l))
                l++;
        if (!*l || *l == '#' || *l == '!')
                return KDELAY_OK;
        size_t n = strlen(l);
        while (n && is_blank(l[n - 1]))
                l[--n] = '\0';
        if (l[n - 1] == '\\')
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s line %d: ends with a backslash (continued "
                               "lines are not supported: write the property "
                               "on one line)",
                               qfile, line);
        size_t sep = strcspn(l, "=:");
        if (!l[sep])
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s line %d: expected NAME=VALUE", qfile, line);
        char *value = l + sep + 1, sepc = l[sep];
        l[sep] = '\0';
        size_t nl = sep;
        while (nl && is_blank(l[nl - 1]))
                l[--nl] = '\0';
        if (!nl)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s line %d: a property name is missing before "
                               "'%c'",
                               qfile, line, sepc);
        if (strpbrk(l, " \t\f"))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s line %d: a property name holds whitespace "
                               "(expected NAME=VALUE)",
                               qfile, line);
        while (is_blank(*value))
                value++;
        char why[512] = "";
        kdelay_err_t err = fn(l, value, line, opaque, why, sizeof(why));
        if (err)
                return kd_fail(err, errstr, errstr_size, "%s line %d: %s",
                               qfile, line, why);
        return KDELAY_OK;
}

kdelay_err_t kd_kprops_parse(const char *text, size_t len, const char *file,
                             kd_kprops_fn *fn, void *opaque, char *errstr,
                             size_t errstr_size)
{
        char qfile[610];
        quote_path(file, qfile, sizeof(qfile));
        if (memchr(text, '\0', len))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: holds a NUL byte, not a properties file",
                               qfile);
        char *copy = malloc(len + 1);
        if (!copy)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        memcpy(copy, text, len);
        copy[len] = '\0';
        kdelay_err_t err = KDELAY_OK;
        int line = 0;
        for (char *l = copy; !err && l < copy + len;) {
                char *eol = strchr(l, '\n');
                char *next = eol ? eol + 1 : copy + len;
                if (eol)
                        *eol = '\0';
                size_t n = strlen(l);
                if (n && l[n - 1] == '\r')
                        l[n - 1] = '\0';
                err = parse_line(l, ++line, qfile, fn, opaque, errstr,
                                 errstr_size);
                l = next;
        }
        /* The text may hold passwords. */
        memset(copy, 0, len + 1);
        free(copy);
        return err;
}

kdelay_err_t kd_kprops_load(const char *path, unsigned *modep, kd_kprops_fn *fn,
                            void *opaque, char *errstr, size_t errstr_size)
{
        char qpath[610];
        struct stat st;
        quote_path(path, qpath, sizeof(qpath));
        FILE *f = fopen(path, "r");
        if (!f)
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size, "%s: %s",
                               qpath, strerror(errno));
        if (fstat(fileno(f), &st)) {
                int e = errno;
                fclose(f);
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: cannot stat: %s", qpath, strerror(e));
        }
        if (modep)
                *modep = (unsigned)st.st_mode;
        char *text = malloc(KD_KPROPS_FILE_MAX + 1);
        size_t len = text ? fread(text, 1, KD_KPROPS_FILE_MAX + 1, f) : 0;
        int e = ferror(f) ? errno : 0;
        fclose(f);
        kdelay_err_t err = KDELAY_OK;
        if (!text)
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        else if (e)
                err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size, "%s: %s",
                              qpath, strerror(e));
        else if (len > KD_KPROPS_FILE_MAX)
                err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                              "%s: larger than %d bytes", qpath,
                              KD_KPROPS_FILE_MAX);
        else
                err = kd_kprops_parse(text, len, path, fn, opaque, errstr,
                                      errstr_size);
        if (text) {
                memset(text, 0, len); /* it may hold passwords */
                free(text);
        }
        return err;
}
