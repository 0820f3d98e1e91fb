/* SPDX-License-Identifier: Apache-2.0 */
/* Logging through the conf's callback: one line per event, key=value. */
#ifndef KD_LOG_H
#define KD_LOG_H

#include <stdarg.h>

#include <kdelay/conf.h>

#include "kd_util.h"

/* The longest log line, in bytes with its NUL: one cut beyond it ends
 * "truncated=true". The forwarder's stats line, every row of its metric
 * table, is the longest (about 1.1 KB). */
#define KD_LOG_LINE_MAX 2048

/* Formats an event line ("event=x k=v ...") and passes it to the conf's log
 * callback when level <= the conf's level. Every value that comes from
 * input (ids, topics, header names, error text) must go through
 * kd_log_quote. A line longer than the buffer is cut as kd_log_vformat
 * does. */
void kd_log(const kdelay_conf_t *conf, kdelay_log_level_t level,
            const char *fmt, ...) KD_PRINTF(3, 4);

/* vsnprintf into line, and when the text does not fit, cut it so that
 * every field stays whole: a quoted value is closed after its last whole
 * character, a bare field is dropped, and " truncated=true" ends the line
 * (a line of 64 bytes or more always has room for that). Returns line. */
char *kd_log_vformat(char *line, size_t size, const char *fmt, va_list ap)
    KD_PRINTF(3, 0);

/* Copies s into buf as one key=value value. As is when it is not empty and
 * has only printable ASCII other than space, '"', '=' and '\', and
 * well-formed UTF-8 characters that are not invisible; else
 * double-quoted, with " and \ escaped as \" and \\, control characters,
 * DEL and bytes that are not well-formed UTF-8 as \xNN, and the invisible
 * characters that can hide or reorder text (C1 controls, U+061C,
 * U+200B..U+200F, U+2028..U+202E, U+2060..U+206F, U+FEFF; among them the
 * bidi embeddings, overrides, isolates and marks) as \uNNNN. When buf is
 * too small for the bare form, the value is quoted, cut after its last
 * whole character or escape, and still ends with the closing quote; when
 * not even the two quotes fit (buf_size below 3), buf gets "". Returns
 * buf. */
const char *kd_log_quote(const char *s, char *buf, size_t buf_size);

/* Room for any value of n bytes written by kd_log_quote: 6 characters a
 * byte at most (\uNNNN for 3 bytes, \xNN for 1), the quotes and NUL. */
#define KD_LOG_QUOTED_MAX(n) ((n)*6 + 3)

/* kd_log_quote on len bytes at s (NUL bytes are escaped as \x00). Returns
 * how many bytes of s buf holds: len when it holds the whole value. */
size_t kd_log_quote_mem(const char *s, size_t len, char *buf, size_t buf_size);

#endif
