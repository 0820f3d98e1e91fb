/* SPDX-License-Identifier: Apache-2.0 */
/* Kafka client properties files: what Kafka's tools take with
 * --command-config and librdkafka tools (kcat -F) read, one "name=value" a
 * line. The subset of Java's .properties format that such files use:
 * "name=value" or "name: value" (the first '=' or ':' separates; '=' and
 * ':' in the value are kept), whitespace around name and value trimmed,
 * blank lines and lines whose first non-blank character is '#' or '!'
 * skipped, a later line for a name replacing an earlier one. Backslash
 * escapes are not interpreted and a line ending in a backslash (Java's
 * continuation) is an error. */
#ifndef KD_KPROPS_H
#define KD_KPROPS_H

#include <stddef.h>

#include <kdelay/conf.h>

/* The largest properties file read. */
#define KD_KPROPS_FILE_MAX (1024 * 1024)

/* Called for each property, in file order: name and value (trimmed, NUL-
 * terminated), the line. A non-zero return stops the parse with it;
 * errstr then says why (without the file and line, which the parser
 * adds). */
typedef kdelay_err_t(kd_kprops_fn)(const char *name, const char *value,
                                   int line, void *opaque, char *errstr,
                                   size_t errstr_size);

/* Parses text (len bytes), read from `file` (its name in errors), calling
 * fn for each property. A malformed line is KDELAY_ERR_CONFIG, errstr
 * naming the file (quoted) and the line, never the line's text (it may
 * hold a password). */
kdelay_err_t kd_kprops_parse(const char *text, size_t len, const char *file,
                             kd_kprops_fn *fn, void *opaque, char *errstr,
                             size_t errstr_size);

/* kd_kprops_parse on the file at path. *modep (modep may be NULL) gets
 * the file's mode (its st_mode, of the file opened) before fn is first
 * called. KDELAY_ERR_CONFIG naming the path when it cannot be read, is
 * larger than KD_KPROPS_FILE_MAX or holds a NUL byte. */
kdelay_err_t kd_kprops_load(const char *path, unsigned *modep, kd_kprops_fn *fn,
                            void *opaque, char *errstr, size_t errstr_size);

#endif
