/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration object's insides, shared by libkdelay modules and the
 * binaries built from this tree (never installed). */
#ifndef KD_CONF_H
#define KD_CONF_H

#include <stdint.h>
#include <stdio.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/conf.h>

#include "kd_listen.h"
#include "kd_mysql_url.h"
#include "kd_ratelimits.h"
#include "kd_targets.h"
#include "kd_tiers.h"

/* forwarder.delivery (docs/reliability.md). */
typedef enum kd_delivery {
        KD_DELIVERY_AT_LEAST_ONCE,
        KD_DELIVERY_EXACTLY_ONCE
} kd_delivery_t;

/* forwarder.fate_outage_policy (docs/reliability.md). */
typedef enum kd_outage_policy {
        KD_OUTAGE_HOLD, /* no fire without a claim */
        KD_OUTAGE_FIRE  /* fire through an outage, journaled */
} kd_outage_policy_t;

/* forwarder.fate_marks (docs/fate-protocol.md, "Runs of delivered
 * claims"). */
typedef enum kd_fate_marks {
        KD_FATE_MARKS_ROWS, /* a FIRED mark per delivered task */
        KD_FATE_MARKS_RUNS, /* a kdelay_fired_run row per run of tokens */
        KD_FATE_MARKS_AUTO  /* runs once the schema is 11 (lean-fate) */
} kd_fate_marks_t;

/* The schema version from which forwarder.fate_marks=auto writes runs
 * (deploy/mysql/011_fate_lean.sql). */
#define KD_FATE_LEAN_SCHEMA 11

struct kdelay_conf_s {
        char *brokers;      /* owned; bootstrap.servers */
        char *topic_prefix; /* owned */
        kd_tiers_t tiers;
        char *mysql_url;           /* owned; NULL = no MySQL configured */
        char *mysql_password;      /* owned; NULL = from URL or env */
        char *mysql_password_env;  /* owned */
        char *mysql_password_file; /* owned; NULL = none */
        char *mysql_ssl_mode;      /* owned; NULL = the URL's or PREFERRED */
        char *mysql_ssl_ca;        /* owned; NULL = the URL's or none */
        char *mysql_ssl_cert;      /* owned; NULL = the URL's or none */
        char *mysql_ssl_key;       /* owned; NULL = the URL's or none */
        /* Owned: mysql_url parsed when set (all zero while it is NULL). */
        kd_mysql_params_t mysql_params;
        /* mysql_ssl_mode parsed when set; KD_MYSQL_SSL_UNSET while NULL. */
        kd_mysql_ssl_mode_t mysql_ssl_mode_id;
        int mysql_connect_timeout_s;
        int64_t fate_retention_ms; /* gc keeps rows this long past due */
        int topics_partitions;
        int topics_replication_factor; /* -1 = broker default */
        int64_t topics_retention_margin_ms;
        int64_t dead_retention_ms;
        int producer_check_target; /* 1: schedule checks the target exists */
        /* kdelay-forwarder (docs/forwarder.md) */
        char *fwd_group_id;              /* owned */
        char *fwd_instance;              /* owned; NULL = <hostname>-<pid> */
        int fwd_static_membership;       /* 1: group.instance.id = instance */
        int64_t fwd_hold_horizon_ms;     /* hold when due within this */
        int64_t fwd_lookahead_ms;        /* read a head this early */
        int64_t fwd_claim_ahead_ms;      /* claim in MySQL this early */
        int64_t fwd_foreign_wait_ms;     /* recheck another's FIRING claim */
        int64_t fwd_max_clock_skew_ms;   /* warn past this skew */
        int64_t fwd_claim_lease_ms;      /* claim lease; 0 = none */
        int fwd_claim_batch;             /* ids per claim statement */
        int fwd_outage_policy;           /* a kd_outage_policy_t */
        int64_t fwd_outage_after_ms;     /* fire: outage this long first */
        int fwd_fault_kill_after_commit; /* tests: SIGKILL after the Nth
                                            commit with fires; 0 = never */
        int fwd_max_held;                /* held tasks, count */
        int64_t fwd_max_held_bytes;      /* held tasks, bytes */
        int64_t fwd_commit_interval_ms;
        int64_t fwd_stats_interval_ms;
        int64_t fwd_retry_max_ms; /* longest backoff */
        int64_t fwd_shutdown_timeout_ms;
        int fwd_delivery;             /* a kd_delivery_t */
        int fwd_fate_marks;           /* a kd_fate_marks_t */
        char *fwd_txn_id;             /* owned; NULL = <group_id>-<instance> */
        int64_t fwd_txn_interval_ms;  /* longest open transaction */
        int fwd_abort_limit;          /* solo aborts before dead letter */
        int fwd_max_fire_rate;        /* fires per second; 0 = no limit */
        char *fwd_allowed_targets;    /* owned; NULL = every topic */
        char *fwd_target_rate_limits; /* owned; NULL = none limited */
        char *fwd_http_listen;        /* owned; NULL or "" = no HTTP */
        /* The three parsed when set: owned, all zero while unset. */
        kd_targets_t fwd_targets;       /* fwd_allowed_targets */
        kd_ratelimits_t fwd_rate_rules; /* fwd_target_rate_limits */
        kd_listen_t fwd_http_addr;      /* fwd_http_listen */
        rd_kafka_conf_t *rk_conf; /* owned; validates pass-through props */
        char **kafka_kv;          /* owned; name,value,name,value... as set */
        size_t kafka_kv_cnt;      /* number of strings (2 per property) */
        /* kafka_config: the path, and its file's properties (applied
         * before kafka_kv, which wins) and bootstrap.servers (used while
         * brokers_set is 0). */
        char *kafka_config;       /* owned; NULL = none */
        char **kafka_file_kv;     /* owned; as kafka_kv */
        size_t kafka_file_kv_cnt; /* number of strings */
        char *kafka_file_brokers; /* owned; NULL = none */
        int brokers_set;          /* brokers was set (not the default) */
        kdelay_log_cb_t *log_cb;
        kdelay_log_level_t log_level;
        void *log_opaque;
};

/* Writes the property reference, the table of docs/configuration.md, as
 * markdown to out: one row per kdelay property with its default, the values
 * it takes and its help text. 0 on success, -1 when writing failed or a row
 * cannot be written as a table row (no help text, a '|' or a newline). */
int kd_conf_write_reference(FILE *out);

/* kdelay_conf_load_file on a config file's text held in memory; `name`
 * stands for the file in error messages. For tests and the fuzz target
 * fuzz/fuzz_conf.c. */
kdelay_err_t kd_conf_load_text(kdelay_conf_t *conf, const char *text,
                               const char *name, char *errstr,
                               size_t errstr_size);

/* Name of the dead-letter topic: "<prefix>.dead". */
void kd_conf_dead_topic(const kdelay_conf_t *conf, char *buf, size_t size);

/* Name of the journal topic: "<prefix>.journal" (fires made without a
 * claim, forwarder.fate_outage_policy=fire). */
void kd_conf_journal_topic(const kdelay_conf_t *conf, char *buf, size_t size);

/* Non-zero when topic is one of kdelay's own: the dead topic, the journal or
 * any tier topic of the prefix ("<prefix>.tier.<duration>", in the ladder or
 * not). */
int kd_conf_is_own_topic(const kdelay_conf_t *conf, const char *topic);

/* What librdkafka's opaque points to for kdelay's clients: the first
 * member of the owning object, so callbacks reach both the conf (for
 * logging) and their owner (by casting the opaque). */
typedef struct kd_rk_owner {
        const kdelay_conf_t *conf; /* borrowed */
} kd_rk_owner_t;

/* A librdkafka conf for one client: `defaults` (NULL-terminated name,
 * value pairs, may be NULL), then brokers (kd_conf_brokers), then the
 * kafka_config file's properties, then the user's pass-through
 * properties, then `forced` pairs that kdelay's guarantees depend on. Logs
 * go to owner->conf's log callback (owner NULL: logs are dropped). The caller
 * owns the result (rd_kafka_new() takes it on success). NULL on failure, with
 * errstr set. */
rd_kafka_conf_t *kd_conf_rk_conf(const kdelay_conf_t *conf,
                                 kd_rk_owner_t *owner,
                                 const char *const *defaults,
                                 const char *const *forced, char *errstr,
                                 size_t errstr_size);

/* The level a librdkafka log line (syslog level, facility, message) is
 * given in kdelay's log: its own, except for a known startup retry that
 * librdkafka gets past by itself, which is KDELAY_LOG_INFO (kdelayctl
 * shows it with -v, the forwarder logs it): the idempotent producer's
 * first PID while a fresh cluster's coordinator loads ("GETPID", "Failed
 * to acquire idempotence PID from broker ...: Coordinator load in
 * progress: retrying", or "Coordinator not available"). A PID that never
 * comes still fails the produce (message timeout), as an error. */
int kd_conf_rk_log_level(int level, const char *fac, const char *msg);

/* A client of `type` made from rkc (kd_conf_rk_conf's, its callbacks
 * set), which it takes: rd_kafka_new's on success, destroyed on failure.
 * NULL on failure, with errstr set ("cannot create Kafka producer: ..."). */
rd_kafka_t *kd_conf_rk_make(rd_kafka_type_t type, rd_kafka_conf_t *rkc,
                            char *errstr, size_t errstr_size);

/* A client of `type` on kd_conf_rk_conf(owner->conf, owner, NULL, forced):
 * the tools' short-lived clients (admin, offsets). NULL on failure, with
 * errstr set; owner must outlive it. */
rd_kafka_t *kd_conf_rk_new(kd_rk_owner_t *owner, rd_kafka_type_t type,
                           const char *const *forced, char *errstr,
                           size_t errstr_size);

/* What kdelay's no-loss promise needs of every producer it creates:
 * NULL-terminated name, value pairs (enable.idempotence=true, acks=all) to
 * pass as kd_conf_rk_conf's `forced`, so no user property overrides them.
 * The forwarder's exactly-once mode adds transactional.id to these. */
extern const char *const kd_producer_forced[];

/* Retention for tier topic idx: tier delay * 2 + retention margin. */
int64_t kd_conf_tier_retention_ms(const kdelay_conf_t *conf, size_t idx);

/* The broker list: brokers when set, else the kafka_config file's
 * bootstrap.servers, else brokers' default. */
const char *kd_conf_brokers(const kdelay_conf_t *conf);

/* The value of pass-through librdkafka property name for kdelay's clients:
 * kafka_kv's (-X, kafka = [...]), else the kafka_config file's; NULL when
 * neither sets it. */
const char *kd_conf_kafka_value(const kdelay_conf_t *conf, const char *name);

/* Non-zero when librdkafka property `name` may hold a secret (a password,
 * a key, a client secret): its value is never echoed. */
int kd_conf_name_is_secret(const char *name);

#endif
