/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration object's public API, kdelay_conf_* (kdelay/conf.h):
 * create, copy, destroy, set and read back properties, and the helpers
 * the modules name topics with. The property table is conf_props.c, the
 * librdkafka settings conf_rdkafka.c, the libconfig reader conf_file.c,
 * the reference writer conf_doc.c. */
#define _POSIX_C_SOURCE 200809L
#include "kd_conf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_conf_props.h"
#include "kd_conf_rdkafka.h"
#include "kd_secret.h"
#include "kd_util.h"

kdelay_conf_t *kdelay_conf_new(void)
{
        kdelay_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        conf->log_level = KDELAY_LOG_INFO;
        conf->rk_conf = rd_kafka_conf_new();
        if (!conf->rk_conf)
                goto fail;
        for (size_t i = 0; i < kd_props_cnt; i++) {
                if (kd_props[i].def &&
                    kd_prop_set(conf, &kd_props[i], kd_props[i].def, NULL, 0))
                        goto fail;
        }
        conf->brokers_set = 0; /* the default is not a setting */
        return conf;
fail:
        kdelay_conf_destroy(conf);
        return NULL;
}

kdelay_conf_t *kdelay_conf_dup(const kdelay_conf_t *src)
{
        kdelay_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        *conf = *src;
        conf->rk_conf = NULL;
        conf->kafka_kv = NULL;
        conf->kafka_kv_cnt = 0;
        conf->kafka_file_kv = NULL;
        conf->kafka_file_kv_cnt = 0;
        conf->kafka_file_brokers = NULL;
        memset(&conf->fwd_targets, 0, sizeof(conf->fwd_targets));
        memset(&conf->fwd_rate_rules, 0, sizeof(conf->fwd_rate_rules));
        memset(&conf->mysql_params, 0, sizeof(conf->mysql_params));
        for (size_t i = 0; i < kd_props_cnt; i++) {
                const kd_prop_t *p = &kd_props[i];
                if (!KD_PROP_IS_TEXT(p))
                        continue;
                char **field = (char **)((char *)conf + p->offset);
                *field = NULL;
        }
        for (size_t i = 0; i < kd_props_cnt; i++) {
                const kd_prop_t *p = &kd_props[i];
                if (!KD_PROP_IS_TEXT(p))
                        continue;
                const char *s = *(char *const *)((const char *)src + p->offset);
                char **field = (char **)((char *)conf + p->offset);
                if (s && !(*field = strdup(s)))
                        goto fail;
        }
        /* The parsed forms that own memory, parsed again from their text
         * (checked when it was set). */
        if (kd_targets_parse(&conf->fwd_targets, conf->fwd_allowed_targets,
                             NULL, 0) ||
            kd_ratelimits_parse(&conf->fwd_rate_rules,
                                conf->fwd_target_rate_limits, NULL, 0) ||
            (conf->mysql_url &&
             kd_mysql_url_parse(conf->mysql_url, &conf->mysql_params, NULL, 0)))
                goto fail;
        if (!(conf->rk_conf = rd_kafka_conf_dup(src->rk_conf)))
                goto fail;
        for (size_t i = 0; i < src->kafka_kv_cnt; i += 2)
                if (kd_conf_kv_put(conf, src->kafka_kv[i],
                                   src->kafka_kv[i + 1]))
                        goto fail;
        if (src->kafka_file_kv_cnt &&
            !(conf->kafka_file_kv =
                  calloc(src->kafka_file_kv_cnt, sizeof(char *))))
                goto fail;
        for (; conf->kafka_file_kv_cnt < src->kafka_file_kv_cnt;
             conf->kafka_file_kv_cnt++) {
                size_t i = conf->kafka_file_kv_cnt;
                if (!(conf->kafka_file_kv[i] = strdup(src->kafka_file_kv[i])))
                        goto fail;
        }
        if (src->kafka_file_brokers &&
            !(conf->kafka_file_brokers = strdup(src->kafka_file_brokers)))
                goto fail;
        return conf;
fail:
        kdelay_conf_destroy(conf);
        return NULL;
}

void kdelay_conf_destroy(kdelay_conf_t *conf)
{
        if (!conf)
                return;
        for (size_t i = 0; i < kd_props_cnt; i++) {
                const kd_prop_t *p = &kd_props[i];
                if (KD_PROP_IS_TEXT(p))
                        free(*(char **)((char *)conf + p->offset));
        }
        kd_targets_clear(&conf->fwd_targets);
        kd_ratelimits_clear(&conf->fwd_rate_rules);
        kd_mysql_params_clear(&conf->mysql_params);
        if (conf->rk_conf)
                rd_kafka_conf_destroy(conf->rk_conf);
        kd_conf_kv_free(conf->kafka_kv, conf->kafka_kv_cnt);
        kd_conf_kv_free(conf->kafka_file_kv, conf->kafka_file_kv_cnt);
        free(conf->kafka_file_brokers);
        free(conf);
}

kdelay_err_t kdelay_conf_set(kdelay_conf_t *conf, const char *name,
                             const char *value, char *errstr,
                             size_t errstr_size)
{
        if (!conf || !name || !value)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf, name and value are required");
        const kd_prop_t *p = kd_prop_find(name);
        if (!p)
                return kd_fail(KDELAY_ERR_UNKNOWN_PROPERTY, errstr, errstr_size,
                               "unknown kdelay property \"%s\"", name);
        char *resolved = NULL; /* owned; wiped when freed */
        if (kd_secret_is_ref(value)) {
                kdelay_err_t err = kd_secret_resolve(name, value, &resolved,
                                                     errstr, errstr_size);
                if (err)
                        return err;
                value = resolved;
        }
        kdelay_err_t err = kd_prop_set(conf, p, value, errstr, errstr_size);
        kd_secret_free(resolved);
        if (!err && !strcmp(p->name, "brokers"))
                conf->brokers_set = 1;
        return err;
}

kdelay_err_t kdelay_conf_set_pair(kdelay_conf_t *conf, const char *pair,
                                  char *errstr, size_t errstr_size)
{
        const char *eq = pair ? strchr(pair, '=') : NULL;
        char name[256];
        if (!eq || eq == pair || (size_t)(eq - pair) >= sizeof(name))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "expected name=value, got \"%s\"",
                               pair ? pair : "");
        memcpy(name, pair, (size_t)(eq - pair));
        name[eq - pair] = '\0';
        if (kd_prop_find(name))
                return kdelay_conf_set(conf, name, eq + 1, errstr, errstr_size);
        return kdelay_conf_set_kafka(conf, name, eq + 1, errstr, errstr_size);
}

/* url with the password of its user part read back as "***" (into buf,
 * cut to it); "" for NULL. */
static const char *url_masked(const char *url, char *buf, size_t size)
{
        if (!url)
                return "";
        const char *user = strstr(url, "://");
        user = user ? user + 3 : url;
        size_t host_at = strcspn(user, "/?#");
        const char *at = NULL;
        for (const char *p = user; p < user + host_at; p++)
                if (*p == '@')
                        at = p; /* the last one: a password may hold '@' */
        const char *colon = at ? memchr(user, ':', (size_t)(at - user)) : NULL;
        if (!colon)
                return url;
        int n =
            snprintf(buf, size, "%.*s***%s", (int)(colon + 1 - url), url, at);
        return n >= 0 && (size_t)n < size ? buf : "***";
}

kdelay_err_t kdelay_conf_get(const kdelay_conf_t *conf, const char *name,
                             char *buf, size_t buf_size)
{
        const kd_prop_t *p = name ? kd_prop_find(name) : NULL;
        if (!conf || !p)
                return KDELAY_ERR_UNKNOWN_PROPERTY;
        const void *field = (const char *)conf + p->offset;
        char tmp[1024] = "";
        const char *text = tmp; /* strings are read in place, whole */
        switch (p->type) {
        case KD_PROP_SECRET:
                text = *(char *const *)field ? "***" : "";
                break;
        case KD_PROP_MYSQLURL:
                text = url_masked(*(char *const *)field, tmp, sizeof(tmp));
                break;
        case KD_PROP_STRING:
        case KD_PROP_SSLMODE:
        case KD_PROP_TARGETS:
        case KD_PROP_RATES:
        case KD_PROP_LISTEN:
        case KD_PROP_KFILE:
        case KD_PROP_TOPICPFX: {
                const char *s = *(char *const *)field;
                text = s ? s : "";
                break;
        }
        case KD_PROP_INT:
                snprintf(tmp, sizeof(tmp), "%d", *(const int *)field);
                break;
        case KD_PROP_BYTES:
                snprintf(tmp, sizeof(tmp), "%lld",
                         (long long)*(const int64_t *)field);
                break;
        case KD_PROP_DURATION:
                kdelay_duration_format(*(const int64_t *)field, tmp,
                                       sizeof(tmp));
                break;
        case KD_PROP_TIERS:
                kd_tiers_format((const kd_tiers_t *)field, tmp, sizeof(tmp));
                break;
        case KD_PROP_DELIVERY:
        case KD_PROP_OUTAGE:
        case KD_PROP_MARKS:
                kd_strlcpy(tmp,
                           kd_prop_choice_names(p->type)[*(const int *)field],
                           sizeof(tmp));
                break;
        }
        if (strlen(text) >= buf_size)
                return KDELAY_ERR_INVALID_ARG;
        kd_strlcpy(buf, text, buf_size);
        return KDELAY_OK;
}

void kdelay_conf_set_log_cb(kdelay_conf_t *conf, kdelay_log_cb_t *cb,
                            kdelay_log_level_t max_level, void *opaque)
{
        conf->log_cb = cb;
        conf->log_level = max_level;
        conf->log_opaque = opaque;
}

void kd_conf_dead_topic(const kdelay_conf_t *conf, char *buf, size_t size)
{
        snprintf(buf, size, "%s.dead", conf->topic_prefix);
}

void kd_conf_journal_topic(const kdelay_conf_t *conf, char *buf, size_t size)
{
        snprintf(buf, size, "%s.journal", conf->topic_prefix);
}

int kd_conf_is_own_topic(const kdelay_conf_t *conf, const char *topic)
{
        /* Each is "<prefix>.<name>": most targets are not (checked per task
         * read, so without formatting a name first). */
        size_t n = strlen(conf->topic_prefix);
        if (strncmp(topic, conf->topic_prefix, n) != 0 || topic[n] != '.')
                return 0;
        char name[256];
        kd_conf_dead_topic(conf, name, sizeof(name));
        if (strcmp(name, topic) == 0)
                return 1;
        kd_conf_journal_topic(conf, name, sizeof(name));
        if (strcmp(name, topic) == 0)
                return 1;
        /* Any tier topic, in the ladder or not: the forwarders read them
         * all. */
        int64_t ms;
        return kd_tiers_topic_delay(conf->topic_prefix, topic, &ms) == 0;
}

int64_t kd_conf_tier_retention_ms(const kdelay_conf_t *conf, size_t idx)
{
        return conf->tiers.v[idx].delay_ms * 2 +
               conf->topics_retention_margin_ms;
}
