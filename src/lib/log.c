/* Logging through the conf's callback: one line per event, key=value. */
#include "kd_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kd_conf.h"

void kd_log(const kdelay_conf_t *conf, kdelay_log_level_t level,
            const char *fmt, ...)
{
        if (!conf || !conf->log_cb || level > conf->log_level)
                return;
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        conf->log_cb(level, line, conf->log_opaque);
}

const char *kd_log_quote(const char *s, char *buf, size_t buf_size)
{
        if (buf_size == 0)
                return buf;
        if (!s)
                s = "";
        int plain = *s != '\0';
        for (const char *p = s; *p && plain; p++)
                if ((unsigned char)*p <= ' ' || *p == '"' || *p == '=' ||
                    *p == '\\' || (unsigned char)*p == 0x7f)
                        plain = 0;
        if (plain) {
                kd_strlcpy(buf, s, buf_size);
                return buf;
        }
        size_t o = 0;
        buf[o++] = '"';
        for (const unsigned char *p = (const unsigned char *)s;
             *p && o + 6 < buf_size; p++) {
                if (*p == '"' || *p == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = (char)*p;
                } else if (*p < ' ' || *p == 0x7f) {
                        o += (size_t)snprintf(buf + o, buf_size - o, "\\x%02x",
                                              *p);
                } else {
                        buf[o++] = (char)*p;
                }
        }
        if (o + 1 < buf_size)
                buf[o++] = '"';
        buf[o < buf_size ? o : buf_size - 1] = '\0';
        return buf;
}
