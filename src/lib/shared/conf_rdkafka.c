/* SPDX-License-Identifier: Apache-2.0 */
/* The librdkafka settings of the configuration object: the pass-through
 * properties (-X, `kafka = [...]`) checked by librdkafka when set, the
 * kafka_config file, and the librdkafka conf of each client built from
 * them, with its log callback. */
#define _POSIX_C_SOURCE 200809L
#include "kd_conf_rdkafka.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_kprops.h"
#include "kd_log.h"
#include "kd_secret.h"
#include "kd_util.h"

const char *const kd_producer_forced[] = {"enable.idempotence", "true", "acks",
                                          "all", NULL};

static kdelay_err_t set_kafka(kdelay_conf_t *conf, const char *name,
                              const char *value, char *why, size_t why_size);

kdelay_err_t kd_conf_kv_put(kdelay_conf_t *conf, const char *name,
                            const char *value)
{
        char *v = strdup(value);
        if (!v)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < conf->kafka_kv_cnt; i += 2) {
                if (strcmp(conf->kafka_kv[i], name) == 0) {
                        free(conf->kafka_kv[i + 1]);
                        conf->kafka_kv[i + 1] = v;
                        return KDELAY_OK;
                }
        }
        char *n = strdup(name);
        char **kv =
            realloc(conf->kafka_kv, (conf->kafka_kv_cnt + 2) * sizeof(*kv));
        if (!n || !kv) {
                free(n);
                free(v);
                if (kv)
                        conf->kafka_kv = kv;
                return KDELAY_ERR_NO_MEMORY;
        }
        kv[conf->kafka_kv_cnt++] = n;
        kv[conf->kafka_kv_cnt++] = v;
        conf->kafka_kv = kv;
        return KDELAY_OK;
}

void kd_conf_kv_free(char **kv, size_t cnt)
{
        for (size_t i = 0; i < cnt; i++)
                free(kv[i]);
        free(kv);
}

/* What kd_conf_kfile_load gathers from a Kafka client properties file. */
typedef struct kfile {
        rd_kafka_conf_t *check; /* validates the properties */
        char **kv;              /* name,value,... (last value of a name) */
        size_t cnt;
        char *brokers; /* its bootstrap.servers */
        unsigned mode; /* the file's st_mode */
} kfile_t;

static kdelay_err_t kfile_put(kfile_t *kf, const char *name, const char *value)
{
        char *v = strdup(value);
        if (!v)
                return KDELAY_ERR_NO_MEMORY;
        for (size_t i = 0; i < kf->cnt; i += 2) {
                if (!strcmp(kf->kv[i], name)) {
                        free(kf->kv[i + 1]);
                        kf->kv[i + 1] = v;
                        return KDELAY_OK;
                }
        }
        char *n = strdup(name);
        char **kv = n ? realloc(kf->kv, (kf->cnt + 2) * sizeof(*kv)) : NULL;
        if (!kv) {
                free(n);
                free(v);
                return KDELAY_ERR_NO_MEMORY;
        }
        kv[kf->cnt++] = n;
        kv[kf->cnt++] = v;
        kf->kv = kv;
        return KDELAY_OK;
}

/* kd_kprops_fn: one property of the file, checked against librdkafka. */
static kdelay_err_t kfile_prop(const char *name, const char *value, int line,
                               void *opaque, char *errstr, size_t errstr_size)
{
        kfile_t *kf = opaque;
        char why[512] = "";
        char *resolved = NULL; /* an env: or file: value's */
        (void)line;
        /* A secret by value is refused in a file others may read, as a
         * file: reference to such a file is; never the value shown. */
        if (*value && !kd_secret_is_ref(value) && kd_secret_name(name) &&
            kd_secret_mode_shared(kf->mode))
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s holds a secret but the file's mode is "
                               "%04o: group and others may not read or "
                               "write it (chmod 600 or 400, or give %s as "
                               "file:PATH or env:NAME)",
                               name, kf->mode & 07777u, name);
        if (kd_secret_is_ref(value)) {
                kdelay_err_t err =
                    kd_secret_resolve(name, value, &resolved, why, sizeof(why));
                if (err)
                        return kd_fail(err, errstr, errstr_size, "%s", why);
                value = resolved;
        }
        kdelay_err_t err = KDELAY_OK;
        if (!strcmp(name, "bootstrap.servers")) {
                char *b = *value ? strdup(value) : NULL;
                if (*value && !b)
                        err = KDELAY_ERR_NO_MEMORY;
                else {
                        free(kf->brokers);
                        kf->brokers = b;
                }
        } else {
                rd_kafka_conf_res_t res =
                    rd_kafka_conf_set(kf->check, name, value, why, sizeof(why));
                if (res == RD_KAFKA_CONF_OK)
                        err = kfile_put(kf, name, value);
                else if (res == RD_KAFKA_CONF_UNKNOWN)
                        err = kd_fail(KDELAY_ERR_UNKNOWN_PROPERTY, errstr,
                                      errstr_size,
                                      "unknown librdkafka property %s", name);
                else if (resolved || kd_conf_name_is_secret(name))
                        /* librdkafka's reason quotes the value */
                        err = kd_fail(
                            KDELAY_ERR_CONFIG, errstr, errstr_size,
                            "invalid value for %s (not shown: %s)", name,
                            resolved ? "given by reference" : "a secret");
                else
                        err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                      "%s", why);
        }
        if (err == KDELAY_ERR_NO_MEMORY)
                kd_fail(err, errstr, errstr_size, "out of memory");
        kd_secret_free(resolved);
        return err;
}

kdelay_err_t kd_conf_kfile_load(kdelay_conf_t *conf, const char *path,
                                char *errstr, size_t errstr_size)
{
        kfile_t kf = {NULL, NULL, 0, NULL, 0};
        kdelay_err_t err = KDELAY_OK;
        if (*path) {
                char why[700] = "";
                kf.check = rd_kafka_conf_new();
                err = kf.check ? kd_kprops_load(path, &kf.mode, kfile_prop, &kf,
                                                why, sizeof(why))
                               : KDELAY_ERR_NO_MEMORY;
                if (kf.check)
                        rd_kafka_conf_destroy(kf.check);
                if (err) {
                        kd_conf_kv_free(kf.kv, kf.cnt);
                        free(kf.brokers);
                        return kd_fail(err, errstr, errstr_size,
                                       "kafka_config: %s",
                                       kf.check ? why : "out of memory");
                }
        }
        kd_conf_kv_free(conf->kafka_file_kv, conf->kafka_file_kv_cnt);
        free(conf->kafka_file_brokers);
        conf->kafka_file_kv = kf.kv;
        conf->kafka_file_kv_cnt = kf.cnt;
        conf->kafka_file_brokers = kf.brokers;
        return KDELAY_OK;
}

const char *kd_conf_brokers(const kdelay_conf_t *conf)
{
        return conf->brokers_set || !conf->kafka_file_brokers
                   ? conf->brokers
                   : conf->kafka_file_brokers;
}

const char *kd_conf_kafka_value(const kdelay_conf_t *conf, const char *name)
{
        for (size_t i = 0; i + 1 < conf->kafka_kv_cnt; i += 2)
                if (!strcmp(conf->kafka_kv[i], name))
                        return conf->kafka_kv[i + 1];
        for (size_t i = 0; i + 1 < conf->kafka_file_kv_cnt; i += 2)
                if (!strcmp(conf->kafka_file_kv[i], name))
                        return conf->kafka_file_kv[i + 1];
        return NULL;
}

int kd_conf_name_is_secret(const char *name)
{
        static const char *const words[] = {"password", "secret", ".pem",
                                            "key"};
        for (size_t i = 0; i < KD_ARRAY_LEN(words); i++)
                if (strstr(name, words[i]))
                        return 1;
        return 0;
}

kdelay_err_t kdelay_conf_set_kafka(kdelay_conf_t *conf, const char *name,
                                   const char *value, char *errstr,
                                   size_t errstr_size)
{
        char why[512];
        char *resolved = NULL; /* owned: an env: or file: value's */
        if (!conf || !name || !value)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf, name and value are required");
        if (kd_secret_is_ref(value)) {
                kdelay_err_t err = kd_secret_resolve(name, value, &resolved,
                                                     errstr, errstr_size);
                if (err)
                        return err;
                value = resolved;
        }
        kdelay_err_t err = set_kafka(conf, name, value, why, sizeof(why));
        /* librdkafka's reason quotes the value: not one by reference. */
        if (err == KDELAY_ERR_CONFIG && resolved)
                snprintf(why, sizeof(why),
                         "invalid value for %s (given by reference, not "
                         "shown)",
                         name);
        kd_secret_free(resolved);
        return err ? kd_fail(err, errstr, errstr_size, "%s", why) : KDELAY_OK;
}

/* kdelay_conf_set_kafka of a plain value; the reason into why. */
static kdelay_err_t set_kafka(kdelay_conf_t *conf, const char *name,
                              const char *value, char *why, size_t why_size)
{
        rd_kafka_conf_res_t res =
            rd_kafka_conf_set(conf->rk_conf, name, value, why, why_size);
        /* librdkafka's reason quotes the value: not for a secret. */
        if (res == RD_KAFKA_CONF_INVALID && kd_conf_name_is_secret(name))
                snprintf(why, why_size,
                         "invalid value for %s (not shown: a secret)", name);
        switch (res) {
        case RD_KAFKA_CONF_OK: {
                kdelay_err_t err = kd_conf_kv_put(conf, name, value);
                if (err)
                        snprintf(why, why_size, "%s: out of memory", name);
                return err;
        }
        case RD_KAFKA_CONF_UNKNOWN:
                return KDELAY_ERR_UNKNOWN_PROPERTY;
        default:
                return KDELAY_ERR_CONFIG;
        }
}

int kd_conf_rk_log_level(int level, const char *fac, const char *msg)
{
        static const char failed[] = "Failed to acquire idempotence PID ";
        static const char retrying[] = ": retrying";
        size_t n = msg ? strlen(msg) : 0;
        /* After librdkafka's "[thrd:NAME]: " (log.thread.name) */
        if (n && msg[0] == '[' && strstr(msg, "]: ")) {
                const char *rest = strstr(msg, "]: ") + 3;
                n -= (size_t)(rest - msg);
                msg = rest;
        }
        if (level >= KDELAY_LOG_WARNING && level < KDELAY_LOG_INFO && fac &&
            !strcmp(fac, "GETPID") &&
            !strncmp(msg, failed, sizeof(failed) - 1) &&
            (strstr(msg, ": Coordinator load in progress") ||
             strstr(msg, ": Coordinator not available")) &&
            n >= sizeof(retrying) - 1 &&
            !strcmp(msg + n - (sizeof(retrying) - 1), retrying))
                return KDELAY_LOG_INFO;
        return level;
}

static void rk_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf)
{
        const kd_rk_owner_t *owner = rd_kafka_opaque(rk);
        const kdelay_conf_t *conf = owner ? owner->conf : NULL;
        char qname[300], qfac[64], qmsg[640];
        level = kd_conf_rk_log_level(level, fac, buf);
        if (level > KDELAY_LOG_DEBUG)
                level = KDELAY_LOG_DEBUG;
        if (level < KDELAY_LOG_ERROR)
                level = KDELAY_LOG_ERROR;
        kd_log(conf, (kdelay_log_level_t)level,
               "event=rdkafka client=%s fac=%s msg=%s",
               kd_log_quote(rd_kafka_name(rk), qname, sizeof(qname)),
               kd_log_quote(fac, qfac, sizeof(qfac)),
               kd_log_quote(buf, qmsg, sizeof(qmsg)));
}

/* Applies NULL-terminated name,value pairs to rkc. */
static int rk_apply(rd_kafka_conf_t *rkc, const char *const *kv,
                    const char *what, char *errstr, size_t errstr_size)
{
        char why[512];
        for (size_t i = 0; kv && kv[i]; i += 2) {
                if (rd_kafka_conf_set(rkc, kv[i], kv[i + 1], why,
                                      sizeof(why)) != RD_KAFKA_CONF_OK) {
                        kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                "%s property %s=%s: %s", what, kv[i], kv[i + 1],
                                why);
                        return -1;
                }
        }
        return 0;
}

rd_kafka_conf_t *kd_conf_rk_conf(const kdelay_conf_t *conf,
                                 kd_rk_owner_t *owner,
                                 const char *const *defaults,
                                 const char *const *forced, char *errstr,
                                 size_t errstr_size)
{
        rd_kafka_conf_t *rkc = rd_kafka_conf_new();
        const char *brokers[] = {"bootstrap.servers", kd_conf_brokers(conf),
                                 NULL};
        if (!rkc) {
                kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                        "out of memory");
                return NULL;
        }
        /* User properties are NULL-terminated by construction below. */
        char **user = calloc(conf->kafka_kv_cnt + 1, sizeof(*user));
        if (!user) {
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                        "out of memory");
                return NULL;
        }
        for (size_t i = 0; i < conf->kafka_kv_cnt; i++)
                user[i] = conf->kafka_kv[i];
        char **file = calloc(conf->kafka_file_kv_cnt + 1, sizeof(*file));
        for (size_t i = 0; file && i < conf->kafka_file_kv_cnt; i++)
                file[i] = conf->kafka_file_kv[i];
        if (!file) {
                free(user);
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                        "out of memory");
                return NULL;
        }
        int bad = rk_apply(rkc, defaults, "default", errstr, errstr_size) ||
                  rk_apply(rkc, brokers, "brokers", errstr, errstr_size) ||
                  rk_apply(rkc, (const char *const *)file, "kafka_config",
                           errstr, errstr_size) ||
                  rk_apply(rkc, (const char *const *)user, "kafka", errstr,
                           errstr_size) ||
                  rk_apply(rkc, forced, "required", errstr, errstr_size);
        free(user);
        free(file);
        if (bad) {
                rd_kafka_conf_destroy(rkc);
                return NULL;
        }
        rd_kafka_conf_set_opaque(rkc, owner);
        rd_kafka_conf_set_log_cb(rkc, rk_log_cb);
        return rkc;
}

rd_kafka_t *kd_conf_rk_make(rd_kafka_type_t type, rd_kafka_conf_t *rkc,
                            char *errstr, size_t errstr_size)
{
        char why[512];
        rd_kafka_t *rk = rd_kafka_new(type, rkc, why, sizeof(why));
        if (!rk) {
                rd_kafka_conf_destroy(rkc);
                kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                        "cannot create Kafka %s: %s",
                        type == RD_KAFKA_PRODUCER ? "producer" : "consumer",
                        why);
        }
        return rk;
}

rd_kafka_t *kd_conf_rk_new(kd_rk_owner_t *owner, rd_kafka_type_t type,
                           const char *const *forced, char *errstr,
                           size_t errstr_size)
{
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(owner->conf, owner, NULL, forced,
                                               errstr, errstr_size);
        return rkc ? kd_conf_rk_make(type, rkc, errstr, errstr_size) : NULL;
}
