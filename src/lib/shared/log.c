/* SPDX-License-Identifier: Apache-2.0 */
/* Logging through the conf's callback: one line per event, key=value. */
#include "kd_log.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kd_conf.h"
#include "kd_util.h"

/* What ends a line kd_log_vformat had to cut. */
#define KD_LOG_CUT_MARK " truncated=true"

void kd_log(const kdelay_conf_t *conf, kdelay_log_level_t level,
            const char *fmt, ...)
{
        if (!conf || !conf->log_cb || level > conf->log_level)
                return;
        char line[KD_LOG_LINE_MAX];
        va_list ap;
        va_start(ap, fmt);
        kd_log_vformat(line, sizeof(line), fmt, ap);
        va_end(ap);
        conf->log_cb(level, line, conf->log_opaque);
}

/* Characters that can hide or reorder text on a terminal or in a viewer:
 * C1 controls, the Arabic letter mark, zero-width characters and the
 * left-to-right/right-to-left marks, the line and paragraph separators,
 * bidi embeddings and overrides, invisible operators and bidi isolates,
 * and the byte order mark. */
static int invisible(uint32_t cp)
{
        return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C ||
               (cp >= 0x200B && cp <= 0x200F) ||
               (cp >= 0x2028 && cp <= 0x202E) ||
               (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF;
}

/* One character of the n bytes at s written as a quoted value's text into
 * out (at least 7 bytes, not terminated): its length there; *used is how
 * many input bytes it stands for; *bare is 0 when the character keeps a
 * value from being written bare. */
static size_t quote_char(const unsigned char *s, size_t n, char *out,
                         size_t *used, int *bare)
{
        uint32_t cp;
        size_t k;
        *used = 1;
        *bare = 0;
        if (s[0] == '"' || s[0] == '\\') {
                out[0] = '\\';
                out[1] = (char)s[0];
                return 2;
        }
        if (s[0] < 0x20 || s[0] == 0x7F)
                return (size_t)snprintf(out, 7, "\\x%02x", s[0]);
        if (s[0] < 0x80) {
                *bare = s[0] != ' ' && s[0] != '=';
                out[0] = (char)s[0];
                return 1;
        }
        if ((k = kd_utf8_seq(s, n, &cp)) == 0)
                return (size_t)snprintf(out, 7, "\\x%02x", s[0]);
        *used = k;
        if (invisible(cp))
                return (size_t)snprintf(out, 7, "\\u%04x", (unsigned)cp);
        *bare = 1;
        memcpy(out, s, k);
        return k;
}

size_t kd_log_quote_mem(const char *s, size_t len, char *buf, size_t buf_size)
{
        const unsigned char *u = (const unsigned char *)s;
        char piece[8];
        size_t used;
        if (buf_size == 0)
                return 0;
        buf[0] = '\0';
        if (!s)
                len = 0;
        int bare = len > 0;
        for (size_t i = 0; i < len && bare; i += used)
                quote_char(u + i, len - i, piece, &used, &bare);
        if (bare && len < buf_size) {
                memcpy(buf, s, len);
                buf[len] = '\0';
                return len;
        }
        if (buf_size < 3)
                return 0;
        size_t o = 0, i = 0;
        buf[o++] = '"';
        while (i < len) {
                size_t k = quote_char(u + i, len - i, piece, &used, &bare);
                if (o + k + 2 > buf_size) /* room for '"' and NUL */
                        break;
                memcpy(buf + o, piece, k);
                o += k;
                i += used;
        }
        buf[o++] = '"';
        buf[o] = '\0';
        return i;
}

const char *kd_log_quote(const char *s, char *buf, size_t buf_size)
{
        kd_log_quote_mem(s, s ? strlen(s) : 0, buf, buf_size);
        return buf;
}

static int is_hex(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
               (c >= 'A' && c <= 'F');
}

/* Length of the whole character or escape at s inside a quoted value. */
static size_t quoted_unit(const char *s)
{
        uint32_t cp;
        size_t k;
        if (s[0] == '\\') {
                size_t hex = s[1] == 'x' ? 2 : s[1] == 'u' ? 4 : 0;
                size_t i = 0;
                while (i < hex && is_hex(s[2 + i]))
                        i++;
                if (hex && i == hex)
                        return 2 + hex;
                return s[1] ? 2 : 1;
        }
        k = kd_utf8_seq((const unsigned char *)s, SIZE_MAX, &cp);
        return k ? k : 1;
}

/* Cuts line (size bytes, filled) so every field stays whole and marks it. */
static void cut_line(char *line, size_t size)
{
        if (size < sizeof(KD_LOG_CUT_MARK) + 2)
                return; /* no room to mark it: left as vsnprintf cut it */
        const size_t limit = size - sizeof(KD_LOG_CUT_MARK) - 1;
        size_t p = 0, field = 0;
        int quoted = 0;
        while (line[p]) {
                size_t k = quoted ? quoted_unit(line + p) : 1;
                if (p + k > limit)
                        break;
                if (!quoted && line[p] == ' ')
                        field = p;
                else if (line[p] == '"')
                        quoted = !quoted;
                p += k;
        }
        if (quoted)
                line[p++] = '"';
        else if (line[p] != ' ')
                p = field; /* drop the field cut short */
        const char *mark = &KD_LOG_CUT_MARK[p == 0]; /* no leading space */
        memcpy(line + p, mark, strlen(mark) + 1);
}

char *kd_log_vformat(char *line, size_t size, const char *fmt, va_list ap)
{
        int n = vsnprintf(line, size, fmt, ap);
        if (n < 0)
                kd_strlcpy(line, "event=log_format_failed", size);
        else if ((size_t)n >= size)
                cut_line(line, size);
        return line;
}
