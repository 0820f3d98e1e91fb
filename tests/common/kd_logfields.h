/* SPDX-License-Identifier: Apache-2.0 */
/* A reader of kdelay's key=value log lines, written from the format's
 * description (src/lib/shared/kd_log.h) rather than from its code, for tests
 * and fuzz targets that check what the log writes parses back: fields are
 * separated by one space, a key is [a-z_]+, a value is bare (no space,
 * '"', '=', '\' or control character) or double-quoted with the escapes
 * \" \\ \xNN and \uNNNN (a code point below U+10000, written as UTF-8). */
#ifndef KD_LOGFIELDS_H
#define KD_LOGFIELDS_H

#include <stddef.h>

typedef struct kd_logfield {
        char key[32];
        char *value; /* owned, value_len bytes and a NUL */
        size_t value_len;
} kd_logfield_t;

/* Parses the value at s (len bytes, which may go on past the value) into
 * out (room for len bytes), its length in *out_len. Returns how many bytes
 * of s the value's text takes, or -1 when it is malformed. */
long kd_logvalue_parse(const char *s, size_t len, char *out, size_t *out_len);

/* Parses a whole line into at most max fields (values malloc'ed). Returns
 * the number of fields, or -1 when the line is malformed or has more than
 * max fields (then nothing is left to free). */
int kd_logfields_parse(const char *line, kd_logfield_t *fields, int max);

/* Frees the values of n fields. */
void kd_logfields_free(kd_logfield_t *fields, int n);

/* The field named key among n, or NULL. */
const kd_logfield_t *kd_logfields_find(const kd_logfield_t *fields, int n,
                                       const char *key);

#endif
