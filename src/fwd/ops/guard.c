/* SPDX-License-Identifier: Apache-2.0 */
/* Forwarder property guardrails (kd_guard.h). */
#include "kd_guard.h"

#include <string.h>
#include <strings.h>

#include "kd_conf.h"
#include "kd_log.h"
#include "kd_util.h"

typedef struct kd_guard_rule {
        const char *name;
        const char *allowed[4]; /* NULL-ended; none = set by kdelay only */
        const char *why;
} kd_guard_rule_t;

static const kd_guard_rule_t kd_guard_rules[] = {
    {"auto.offset.reset",
     {"earliest", "smallest", "beginning", NULL},
     "a partition without a committed offset must be read from its start, "
     "or the tasks written before the group's first commit are never "
     "delivered"},
    {"enable.auto.commit",
     {"false", NULL},
     "the forwarder commits an offset only once its record is handled; an "
     "automatic commit would lose held tasks in a crash"},
    {"enable.auto.offset.store",
     {"false", NULL},
     "the forwarder stores an offset only once its record is handled"},
    {"isolation.level",
     {"read_committed", NULL},
     "exactly_once hops are transactional: read_uncommitted would fire "
     "the records of aborted transactions"},
    {"enable.partition.eof", {"false", NULL}, "the forwarder's own setting"},
    {"enable.idempotence",
     {"true", NULL},
     "a retried produce must not write a fire or a hop twice"},
    {"acks",
     {"all", "-1", NULL},
     "a fire or hop acknowledged by fewer than the in-sync replicas can be "
     "lost with a broker"},
    {"group.id", {NULL}, "set forwarder.group_id instead"},
    {"group.instance.id",
     {NULL},
     "set forwarder.instance and forwarder.static_membership=1 instead"},
    {"transactional.id",
     {NULL},
     "exactly_once derives it from forwarder.instance (or "
     "forwarder.transactional_id)"},
};

static int allowed(const kd_guard_rule_t *r, const char *value)
{
        for (size_t i = 0; r->allowed[i]; i++)
                if (!strcasecmp(r->allowed[i], value))
                        return 1;
        return 0;
}

kdelay_err_t kd_guard_check(const kdelay_conf_t *conf, char *errstr,
                            size_t errstr_size)
{
        for (size_t k = 0; k < KD_ARRAY_LEN(kd_guard_rules); k++) {
                const kd_guard_rule_t *r = &kd_guard_rules[k];
                const char *name = r->name;
                /* -X and kafka = [...], else the kafka_config file's */
                const char *value = kd_conf_kafka_value(conf, name);
                if (!value || allowed(r, value))
                        continue;
                char q[200];
                if (!r->allowed[0])
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "librdkafka property %s is set by the "
                                       "forwarder: %s",
                                       name, r->why);
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "librdkafka property %s=%s is refused: %s (the "
                               "forwarder needs %s=%s)",
                               name, kd_log_quote(value, q, sizeof(q)), r->why,
                               name, r->allowed[0]);
        }
        return KDELAY_OK;
}
