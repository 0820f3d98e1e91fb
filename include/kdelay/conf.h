/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kdelay — configuration object.
 *
 * A kdelay_conf_t holds every setting of libkdelay and its tools: kdelay's
 * own properties (see docs/configuration.md for the reference) and
 * librdkafka properties passed through unchanged. Build one with
 * kdelay_conf_new(), fill it from a libconfig file and/or property calls
 * (later calls override earlier ones), then hand it to kdelay_client_new().
 *
 * Thread safety: a conf object is not thread-safe; fill it from one thread.
 */
#ifndef KDELAY_CONF_H
#define KDELAY_CONF_H

#include <stddef.h>

#include <kdelay/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kdelay_conf_s kdelay_conf_t;

/* Log levels, as syslog(3) numbers them. */
typedef enum kdelay_log_level {
        KDELAY_LOG_ERROR = 3,
        KDELAY_LOG_WARNING = 4,
        KDELAY_LOG_NOTICE = 5,
        KDELAY_LOG_INFO = 6,
        KDELAY_LOG_DEBUG = 7
} kdelay_log_level_t;

/* Log callback: `line` is one event as key=value fields without a trailing
 * newline ("event=mysql_connect host=127.0.0.1 err=..."); it is valid only
 * during the call. May be called from librdkafka's threads. */
typedef void(kdelay_log_cb_t)(kdelay_log_level_t level, const char *line,
                              void *opaque);

/* A new configuration with every default set. NULL when out of memory. */
kdelay_conf_t *kdelay_conf_new(void);

/* A deep copy of conf (log callback included). NULL when out of memory. */
kdelay_conf_t *kdelay_conf_dup(const kdelay_conf_t *conf);

/* Frees conf. NULL is allowed. */
void kdelay_conf_destroy(kdelay_conf_t *conf);

/* Sets kdelay property `name` (e.g. "brokers", "tiers", "mysql.url") from
 * its text form. Durations use the syntax of kdelay_duration_parse().
 * Returns KDELAY_ERR_UNKNOWN_PROPERTY for a name kdelay does not know and
 * a KDELAY_ERR_INVALID_* code for a bad value; conf is unchanged then. */
kdelay_err_t kdelay_conf_set(kdelay_conf_t *conf, const char *name,
                             const char *value, char *errstr,
                             size_t errstr_size);

/* Passes librdkafka property `name` through (as kcat's -X does). It is
 * checked against librdkafka at once; unknown names and bad values fail
 * with KDELAY_ERR_UNKNOWN_PROPERTY / KDELAY_ERR_CONFIG. */
kdelay_err_t kdelay_conf_set_kafka(kdelay_conf_t *conf, const char *name,
                                   const char *value, char *errstr,
                                   size_t errstr_size);

/* Applies "name=value": a kdelay property when kdelay knows the name,
 * otherwise a librdkafka property. Used for -X on the command line. */
kdelay_err_t kdelay_conf_set_pair(kdelay_conf_t *conf, const char *pair,
                                  char *errstr, size_t errstr_size);

/* Reads a libconfig file (see conf/kdelay.conf). Settings found there
 * override what conf holds; absent ones keep their values. On error
 * (unreadable file, syntax error with its line, unknown setting, bad
 * value) conf may hold part of the file's settings. */
kdelay_err_t kdelay_conf_load_file(kdelay_conf_t *conf, const char *path,
                                   char *errstr, size_t errstr_size);

/* Copies the text form of property `name` into buf. Passwords read back as
 * "***" when set, the password part of mysql.url too
 * ("mysql://u:***@db/kd"). Returns KDELAY_ERR_UNKNOWN_PROPERTY for unknown
 * names, KDELAY_ERR_INVALID_ARG when buf is too small. */
kdelay_err_t kdelay_conf_get(const kdelay_conf_t *conf, const char *name,
                             char *buf, size_t buf_size);

/* Sets the log callback; NULL (the default) discards log lines.
 * Only lines at or below max_level are passed to it. */
void kdelay_conf_set_log_cb(kdelay_conf_t *conf, kdelay_log_cb_t *cb,
                            kdelay_log_level_t max_level, void *opaque);

/* Name of the environment variable read for the MySQL password when the
 * URL carries none (property mysql.password_env). */
#define KDELAY_MYSQL_PASSWORD_ENV_DEFAULT "KDELAY_MYSQL_PASSWORD"

#ifdef __cplusplus
}
#endif
#endif /* KDELAY_CONF_H */
