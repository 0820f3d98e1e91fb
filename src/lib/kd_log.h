/* Logging through the conf's callback: one line per event, key=value. */
#ifndef KD_LOG_H
#define KD_LOG_H

#include <kdelay/conf.h>

#include "kd_util.h"

/* Formats an event line ("event=x k=v ...") and passes it to the conf's log
 * callback when level <= the conf's level. */
void kd_log(const kdelay_conf_t *conf, kdelay_log_level_t level,
            const char *fmt, ...) KD_PRINTF(3, 4);

/* Copies s into buf as a key=value value: as is when it has no space,
 * quote, '=' or control character, else double-quoted with " and \
 * escaped and control characters as \xNN. Returns buf. */
const char *kd_log_quote(const char *s, char *buf, size_t buf_size);

#endif
