/* SPDX-License-Identifier: Apache-2.0 */
/* The kdelay property table and its setter: each value is checked when it
 * is set and stored in its typed field of the configuration object. The
 * reference, docs/configuration.md, is generated from this table
 * (conf_doc.c). */
#define _POSIX_C_SOURCE 200809L
#include "kd_conf_props.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_conf_rdkafka.h"
#include "kd_listen.h"
#include "kd_mysql.h"
#include "kd_ratelimits.h"
#include "kd_targets.h"
#include "kd_util.h"
#include "kd_wire.h"

#define KD_OFF(field) offsetof(struct kdelay_conf_s, field)

/* Every kdelay property: name, type, field, default, minimum, help text and
 * what the reference shows as default when there is none. The reference in
 * docs/configuration.md is generated from this table (kd_conf_write_reference
 * in conf_doc.c; docs/development.md says how to refresh it). */
const kd_prop_t kd_props[] = {
    {"brokers", KD_PROP_STRING, KD_OFF(brokers), "127.0.0.1:9092", 0,
     "Kafka bootstrap servers, `HOST:PORT[,...]` (librdkafka "
     "`bootstrap.servers`)"},
    {"kafka_config", KD_PROP_KFILE, KD_OFF(kafka_config), NULL, 0,
     "a Kafka client properties file (`name=value` lines, as Kafka tools' "
     "`--command-config` and `kcat -F` take) whose librdkafka properties "
     "apply to every Kafka client; `-X` and `kafka` win over them; its "
     "`bootstrap.servers` is the broker list when `brokers` is not set; "
     "read when set, an error names its line",
     "— (none)"},
    {"topic_prefix", KD_PROP_TOPICPFX, KD_OFF(topic_prefix), "kdelay", 0,
     "topics are `<prefix>.tier.<tier>` and `<prefix>.dead`"},
    {"tiers", KD_PROP_TIERS, KD_OFF(tiers),
     "1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,16h,1d,"
     "2d12h,7d",
     0,
     "tier delays; in the file a list `[ \"1s\", \"1m\" ]`, on `-X` "
     "comma-separated"},
    {"mysql.url", KD_PROP_MYSQLURL, KD_OFF(mysql_url), NULL, 0,
     "the MySQL database of the fate table; needed by cancel, status, db and "
     "the forwarder",
     "— (unset)"},
    {"mysql.password", KD_PROP_SECRET, KD_OFF(mysql_password), NULL, 0,
     "password, overriding the URL's (prefer the environment variable)"},
    {"mysql.password_file", KD_PROP_STRING, KD_OFF(mysql_password_file), NULL,
     0,
     "file whose first line is the password (systemd: `LoadCredential=` and "
     "`${CREDENTIALS_DIRECTORY}/<name>`), read at each connect when neither "
     "`mysql.password` nor the URL gives one, before `mysql.password_env`"},
    {"mysql.password_env", KD_PROP_STRING, KD_OFF(mysql_password_env),
     KDELAY_MYSQL_PASSWORD_ENV_DEFAULT, 0,
     "environment variable read for the password when neither "
     "`mysql.password` nor the URL gives one"},
    {"mysql.ssl_mode", KD_PROP_SSLMODE, KD_OFF(mysql_ssl_mode), NULL, 0,
     "TLS to MySQL: `DISABLED`, `PREFERRED` (TLS when offered, unverified), "
     "`REQUIRED` (TLS or no connection, unverified), `VERIFY_CA` (the "
     "server's chain checked against `mysql.ssl_ca`), `VERIFY_IDENTITY` (and "
     "its host name); overrides the URL's `ssl-mode`",
     "the URL's, else `PREFERRED`"},
    {"mysql.ssl_ca", KD_PROP_STRING, KD_OFF(mysql_ssl_ca), NULL, 0,
     "PEM file of the CA(s) that sign the MySQL server's certificate; "
     "overrides the URL's `ssl-ca`",
     "the URL's, else none"},
    {"mysql.ssl_cert", KD_PROP_STRING, KD_OFF(mysql_ssl_cert), NULL, 0,
     "PEM file of a client certificate (with `mysql.ssl_key`); overrides the "
     "URL's `ssl-cert`",
     "the URL's, else none"},
    {"mysql.ssl_key", KD_PROP_STRING, KD_OFF(mysql_ssl_key), NULL, 0,
     "PEM file of the client certificate's private key; overrides the URL's "
     "`ssl-key`",
     "the URL's, else none"},
    {"mysql.connect_timeout", KD_PROP_INT, KD_OFF(mysql_connect_timeout_s), "5",
     1, "how long connecting to MySQL may take, in seconds"},
    {"mysql.fate_retention", KD_PROP_DURATION, KD_OFF(fate_retention_ms), "30d",
     0,
     "`kdelayctl db gc` deletes rows of tasks due longer ago than this (keep "
     "it above the tier topics' retention)"},
    {"topics.partitions", KD_PROP_INT, KD_OFF(topics_partitions), "6", 1,
     "partitions of topics created by `kdelayctl topics create`"},
    {"topics.replication_factor", KD_PROP_INT,
     KD_OFF(topics_replication_factor), "-1", -1,
     "replicas of created topics; -1 = the broker's "
     "`default.replication.factor`"},
    {"topics.retention_margin", KD_PROP_DURATION,
     KD_OFF(topics_retention_margin_ms), "7d", 0,
     "tier topic retention = 2 × tier delay + this margin; `topics check` "
     "requires at least tier delay + margin"},
    {"topics.dead_retention", KD_PROP_DURATION, KD_OFF(dead_retention_ms),
     "14d", 0, "retention of the dead-letter topic"},
    {"producer.check_target", KD_PROP_INT, KD_OFF(producer_check_target), "0",
     0,
     "1: schedule refuses a target topic that does not exist (`target topic "
     "'T' does not exist`), from one metadata request per topic and client; "
     "`kdelayctl schedule` sets 1 (`--no-target-check`: 0, for topics created "
     "later); a missing tier topic always fails at once, naming it"},
    {"forwarder.group_id", KD_PROP_STRING, KD_OFF(fwd_group_id),
     "kdelay-forwarder", 0, "consumer group of the forwarders"},
    {"forwarder.instance", KD_PROP_STRING, KD_OFF(fwd_instance), NULL, 0,
     "name in logs and in claim owner tokens ([A-Za-z0-9._-]; other "
     "characters become `_`); give each forwarder a stable one (required for "
     "`exactly_once` unless `forwarder.transactional_id` is set)",
     "`<hostname>-<pid>`"},
    {"forwarder.static_membership", KD_PROP_INT, KD_OFF(fwd_static_membership),
     "0", 0,
     "1: join the consumer group as a static member (`group.instance.id` = "
     "`forwarder.instance`, which must be set): a restart within "
     "`session.timeout.ms` gets its partitions back without a rebalance, and "
     "the FIRING claims of this instance's previous process are taken over "
     "at once; but a stopped member's partitions wait for the session "
     "timeout (docs/forwarder.md)"},
    {"forwarder.hold_horizon", KD_PROP_DURATION, KD_OFF(fwd_hold_horizon_ms),
     "30s", 0,
     "a due task firing within this is held in memory; further away it hops "
     "to a smaller tier (the default `tiers` has none between 1s and 30s: "
     "under a shorter horizon a task with less than 30s left hops through "
     "1s every second; docs/forwarder.md, \"The ladder and what it "
     "costs\")"},
    {"forwarder.lookahead", KD_PROP_DURATION, KD_OFF(fwd_lookahead_ms), "200ms",
     0,
     "a partition's head is read this long before it is due (covers fetch "
     "latency)"},
    {"forwarder.claim_ahead", KD_PROP_DURATION, KD_OFF(fwd_claim_ahead_ms),
     "500ms", 0,
     "held tasks are claimed in MySQL this long before `fire-at` (a cancel in "
     "that last moment answers \"too late\"); claims batch for up to half of "
     "it"},
    {"forwarder.foreign_claim_wait", KD_PROP_DURATION,
     KD_OFF(fwd_foreign_wait_ms), "2s", 0,
     "a task found `FIRING` under another forwarder's claim is checked again "
     "after this, and fired only if still not `FIRED` (`0s` = fire at once)"},
    {"forwarder.claim_lease", KD_PROP_DURATION, KD_OFF(fwd_claim_lease_ms),
     "5s", 0,
     "a claim holds this long by MySQL's clock, renewed while its task is "
     "held or fired; another forwarder takes it over only after it passed "
     "(`0s` = no lease: forwarder.foreign_claim_wait, then take over)"},
    {"forwarder.max_clock_skew", KD_PROP_DURATION,
     KD_OFF(fwd_max_clock_skew_ms), "250ms", 0,
     "this host's clock found off the broker's by more than this (from the "
     "append times of its own hops) is logged and counted; the forwarder "
     "always runs on the broker's time as far as it can tell, so no fire is "
     "early by the broker's clock"},
    {"forwarder.fate_outage_policy", KD_PROP_OUTAGE, KD_OFF(fwd_outage_policy),
     "hold", 0,
     "what due tasks do while MySQL is unreachable or failing: `hold` "
     "(wait: no task fires without its claim, so a cancel that answered OK "
     "is never delivered) or `fire` (after `forwarder.fate_outage_after`, "
     "fire without a claim and write each such fire to the journal topic "
     "`<topic_prefix>.journal`, applied to the fate table when MySQL "
     "answers again; a cancel from before the outage may then be "
     "delivered, and cancels answer UNKNOWN, retry until the journal is "
     "applied: docs/reliability.md)"},
    {"forwarder.fate_outage_after", KD_PROP_DURATION,
     KD_OFF(fwd_outage_after_ms), "30s", 0,
     "`fire`: how long MySQL must be unreachable or failing (no request "
     "answered; a slow answer is not an outage) before due tasks fire "
     "without a claim"},
    {"forwarder.claim_batch", KD_PROP_INT, KD_OFF(fwd_claim_batch), "500", 1,
     "ids per claim / mark-fired statement"},
    {"forwarder.fault.kill_after_commit", KD_PROP_INT,
     KD_OFF(fwd_fault_kill_after_commit), "0", 0,
     "for tests of crash recovery only: in exactly_once, the forwarder kills "
     "itself (SIGKILL) right after its Nth committed transaction that fired "
     "tasks, before it marks them `FIRED` — the window `kdelayctl audit` "
     "closes; 0 = never"},
    {"forwarder.max_held", KD_PROP_INT, KD_OFF(fwd_max_held), "100000", 1,
     "held tasks at most, with hops and dead letters not yet delivered (at "
     "most a quarter); past it partitions pause (back-pressure), all of "
     "them until the held set is down to half or for 1 s"},
    {"forwarder.max_held_bytes", KD_PROP_BYTES, KD_OFF(fwd_max_held_bytes),
     "268435456", 1024,
     "bytes of held tasks at most, hops and dead letters not yet delivered "
     "included (at most a quarter)"},
    {"forwarder.commit_interval", KD_PROP_DURATION,
     KD_OFF(fwd_commit_interval_ms), "1s", 0,
     "offsets are committed this often (and on revoke and shutdown)"},
    {"forwarder.stats_interval", KD_PROP_DURATION,
     KD_OFF(fwd_stats_interval_ms), "10s", 0,
     "an `event=stats` log line this often; `0s` = never"},
    {"forwarder.allowed_targets", KD_PROP_TARGETS, KD_OFF(fwd_allowed_targets),
     NULL, 0,
     "the topics a task may name as its target: topic names and `prefix*` "
     "patterns, comma-separated (in the file also a list); a task for any "
     "other topic goes to the dead-letter topic with reason "
     "`target-forbidden`",
     "— (every topic; a warning at startup)"},
    {"forwarder.http_listen", KD_PROP_LISTEN, KD_OFF(fwd_http_listen), NULL, 0,
     "`host:port` of the forwarder's HTTP endpoint: `/metrics` (Prometheus "
     "text format), `/healthz` (the loop turns), `/readyz` (joined its "
     "group, MySQL answering; a rebalance is not unreadiness for 60 s); unset "
     "or empty = off; port 0 = any free port "
     "(logged as `event=http_listening`); no host (`:9464`), no port or a "
     "port past 65535 stop the binary at startup; 8 connections per client "
     "address, 64 in all of which 8 only for 127.0.0.1 and ::1 (probes), "
     "closed after 3 s without a byte (docs/security.md)",
     "off"},
    {"forwarder.retry_max", KD_PROP_DURATION, KD_OFF(fwd_retry_max_ms), "5s", 0,
     "longest backoff for MySQL and produce retries"},
    {"forwarder.shutdown_timeout", KD_PROP_DURATION,
     KD_OFF(fwd_shutdown_timeout_ms), "10s", 0,
     "how long shutdown and revoke wait for produces in flight"},
    {"forwarder.delivery", KD_PROP_DELIVERY, KD_OFF(fwd_delivery),
     "at_least_once", 0,
     "the forwarder's delivery guarantee; `exactly_once` uses Kafka "
     "transactions (docs/reliability.md)"},
    {"forwarder.fate_marks", KD_PROP_MARKS, KD_OFF(fwd_fate_marks), "auto", 0,
     "how deliveries are put on record in the fate table: `auto` (runs "
     "once the schema is version 11, which `kdelayctl db migrate --enable "
     "lean-fate` takes after every forwarder and client runs 0.4.0 or "
     "later, or a fresh install; rows before, and with `claim_lease` `0s`: "
     "read again every 30 s, the switch is live), `rows` (a FIRED mark per "
     "task) or `runs` (one "
     "`kdelay_fired_run` row per run of claim tokens delivered, about one "
     "per 250 ms, instead of a mark per task; needs schema 10 and no "
     "binary older than 0.4.0 on the table: those read a covered task as "
     "FIRING; docs/fate-protocol.md, docs/upgrading.md)"},
    {"forwarder.transactional_id", KD_PROP_STRING, KD_OFF(fwd_txn_id), NULL, 0,
     "`exactly_once`: the producer's `transactional.id`; stable per "
     "forwarder, so that a restarted one fences its predecessor and aborts "
     "its open transaction at once",
     "`<group_id>-<instance>`"},
    {"forwarder.transaction_interval", KD_PROP_DURATION,
     KD_OFF(fwd_txn_interval_ms), "100ms", 0,
     "`exactly_once`: longest a transaction holding only hops, dead letters, "
     "offsets and a catch-up's fires (each more than 1 s late when "
     "produced) stays open; one holding an on-time fire commits at the next "
     "loop turn (at least 20 ms after the previous commit)"},
    {"forwarder.abort_limit", KD_PROP_INT, KD_OFF(fwd_abort_limit), "3", 1,
     "`exactly_once`: a task whose transactions keep aborting is produced "
     "alone, in a transaction of its own; after this many such "
     "transactions abort (only one when the broker refused the record "
     "itself) it goes to the dead-letter topic with the error as its "
     "reason, so that it cannot stop the others"},
    {"forwarder.max_fire_rate", KD_PROP_INT, KD_OFF(fwd_max_fire_rate), "0", 0,
     "most fires per second per forwarder (0 = no limit); smooths the "
     "catch-up after an outage, in due order"},
    {"forwarder.target_rate_limits", KD_PROP_RATES,
     KD_OFF(fwd_target_rate_limits), NULL, 0,
     "most fires per second to a target topic or to the topics of a "
     "`prefix*`, for the whole group: `TARGET=RATE[/BURST]`, "
     "comma-separated (in the file also a list); each forwarder takes its "
     "share by the tier partitions it holds; fires to a limited target "
     "wait, roughly in due order (a task sent back to Kafka for its turn "
     "may go after later ones), never early",
     "— (no target limited)"},
};

const size_t kd_props_cnt = KD_ARRAY_LEN(kd_props);

static const char *const kd_delivery_names[] = {"at_least_once", "exactly_once",
                                                NULL};
static const char *const kd_outage_names[] = {"hold", "fire", NULL};
static const char *const kd_marks_names[] = {"rows", "runs", "auto", NULL};

const char *const *kd_prop_choice_names(kd_prop_type_t type)
{
        if (type == KD_PROP_MARKS)
                return kd_marks_names;
        return type == KD_PROP_DELIVERY ? kd_delivery_names : kd_outage_names;
}

void kd_prop_choice_list(kd_prop_type_t type, const char *quote, char *buf,
                         size_t size)
{
        const char *const *names = kd_prop_choice_names(type);
        size_t len = 0;
        buf[0] = '\0';
        for (int i = 0; names[i] && len < size; i++) {
                int w = snprintf(buf + len, size - len, "%s%s%s%s",
                                 !i             ? ""
                                 : names[i + 1] ? ", "
                                                : " or ",
                                 quote, names[i], quote);
                len += w > 0 ? (size_t)w : 0;
        }
}

const kd_prop_t *kd_prop_find(const char *name)
{
        for (size_t i = 0; i < kd_props_cnt; i++)
                if (strcmp(kd_props[i].name, name) == 0)
                        return &kd_props[i];
        return NULL;
}

/* A text property's value parsed, for the types that have a parsed form
 * (kept in the conf beside the text, which kdelay_conf_get reads back). */
typedef struct text_parsed {
        kd_targets_t targets;         /* KD_PROP_TARGETS */
        kd_ratelimits_t rates;        /* KD_PROP_RATES */
        kd_listen_t listen;           /* KD_PROP_LISTEN */
        kd_mysql_ssl_mode_t ssl_mode; /* KD_PROP_SSLMODE */
        kd_mysql_params_t mysql;      /* KD_PROP_MYSQLURL */
} text_parsed_t;

/* Checks value, non-empty, against p's type and parses it into *out (the
 * kafka_config file is read, into conf, here). */
static kdelay_err_t text_check(kdelay_conf_t *conf, const kd_prop_t *p,
                               const char *value, text_parsed_t *out,
                               char *errstr, size_t errstr_size)
{
        switch (p->type) {
        case KD_PROP_TARGETS:
                return kd_targets_parse(&out->targets, value, errstr,
                                        errstr_size);
        case KD_PROP_RATES:
                return kd_ratelimits_parse(&out->rates, value, errstr,
                                           errstr_size);
        case KD_PROP_LISTEN:
                return kd_listen_parse(&out->listen, value, errstr,
                                       errstr_size);
        case KD_PROP_SSLMODE:
                if (kd_mysql_ssl_mode_parse(value, &out->ssl_mode))
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: \"%s\" is not DISABLED, PREFERRED, "
                                       "REQUIRED, VERIFY_CA or VERIFY_IDENTITY",
                                       p->name, value);
                return KDELAY_OK;
        case KD_PROP_KFILE:
                return kd_conf_kfile_load(conf, value, errstr, errstr_size);
        case KD_PROP_MYSQLURL:
                return kd_mysql_url_parse(value, &out->mysql, errstr,
                                          errstr_size);
        default:
                return KDELAY_OK;
        }
}

/* kd_prop_set of a text property (KD_PROP_IS_TEXT): "" unsets one without
 * a default. */
static kdelay_err_t text_set(kdelay_conf_t *conf, const kd_prop_t *p,
                             const char *value, char *errstr,
                             size_t errstr_size)
{
        text_parsed_t parsed;
        memset(&parsed, 0, sizeof(parsed)); /* ssl_mode KD_MYSQL_SSL_UNSET */
        kdelay_err_t err = KDELAY_OK;
        /* The longest generated name is "<prefix>.tier.<tier>". */
        if (p->type == KD_PROP_TOPICPFX &&
            (!kd_wire_topic_valid(value, strlen(value)) ||
             strlen(value) > KD_TOPIC_PREFIX_MAX))
                return kd_fail(KDELAY_ERR_INVALID_TOPIC, errstr, errstr_size,
                               "%s: \"%s\" does not make valid Kafka topic "
                               "names ([A-Za-z0-9._-], at most %d chars)",
                               p->name, value, KD_TOPIC_PREFIX_MAX);
        /* An empty kafka_config reads no file: the one read before goes. */
        if (*value || p->type == KD_PROP_KFILE)
                err = text_check(conf, p, value, &parsed, errstr, errstr_size);
        if (!err && !*value && p->def)
                err = kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                              "%s must not be empty", p->name);
        char *copy = NULL;
        if (!err && *value && !(copy = strdup(value)))
                err = KDELAY_ERR_NO_MEMORY;
        if (err) {
                kd_targets_clear(&parsed.targets);
                kd_ratelimits_clear(&parsed.rates);
                kd_mysql_params_clear(&parsed.mysql);
                return err;
        }
        char **field = (char **)((char *)conf + p->offset);
        free(*field);
        *field = copy;
        switch (p->type) {
        case KD_PROP_TARGETS:
                kd_targets_clear(&conf->fwd_targets);
                conf->fwd_targets = parsed.targets;
                break;
        case KD_PROP_RATES:
                kd_ratelimits_clear(&conf->fwd_rate_rules);
                conf->fwd_rate_rules = parsed.rates;
                break;
        case KD_PROP_LISTEN:
                conf->fwd_http_addr = parsed.listen;
                break;
        case KD_PROP_SSLMODE:
                conf->mysql_ssl_mode_id = parsed.ssl_mode;
                break;
        case KD_PROP_MYSQLURL:
                kd_mysql_params_clear(&conf->mysql_params);
                conf->mysql_params = parsed.mysql;
                break;
        default:
                break;
        }
        return KDELAY_OK;
}

kdelay_err_t kd_prop_set(kdelay_conf_t *conf, const kd_prop_t *p,
                         const char *value, char *errstr, size_t errstr_size)
{
        void *field = (char *)conf + p->offset;
        if (KD_PROP_IS_TEXT(p))
                return text_set(conf, p, value, errstr, errstr_size);
        switch (p->type) {
        case KD_PROP_INT: {
                char *end;
                errno = 0;
                long v = strtol(value, &end, 10);
                if (errno || end == value || *end || v < p->min ||
                    v > KD_PROP_INT_MAX)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: \"%s\" is not an integer in "
                                       "[%d, %d]",
                                       p->name, value, p->min, KD_PROP_INT_MAX);
                *(int *)field = (int)v;
                return KDELAY_OK;
        }
        case KD_PROP_BYTES: {
                char *end;
                errno = 0;
                long long v = strtoll(value, &end, 10);
                if (errno || end == value || *end || v < p->min ||
                    v > KD_PROP_BYTES_MAX)
                        return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                                       "%s: \"%s\" is not a byte count in "
                                       "[%d, 2^40]",
                                       p->name, value, p->min);
                *(int64_t *)field = v;
                return KDELAY_OK;
        }
        case KD_PROP_DURATION: {
                int64_t ms;
                if (kdelay_duration_parse(value, &ms) != KDELAY_OK)
                        return kd_fail(KDELAY_ERR_INVALID_DURATION, errstr,
                                       errstr_size,
                                       "%s: \"%s\" is not a duration (e.g. "
                                       "250ms, 30s, 5m, 2h, 7d)",
                                       p->name, value);
                *(int64_t *)field = ms;
                return KDELAY_OK;
        }
        case KD_PROP_DELIVERY:
        case KD_PROP_OUTAGE:
        case KD_PROP_MARKS: {
                const char *const *names = kd_prop_choice_names(p->type);
                char list[100];
                for (int i = 0; names[i]; i++) {
                        if (!strcmp(value, names[i])) {
                                *(int *)field = i;
                                return KDELAY_OK;
                        }
                }
                kd_prop_choice_list(p->type, "", list, sizeof(list));
                return kd_fail(KDELAY_ERR_CONFIG, errstr, errstr_size,
                               "%s: \"%s\" is not %s", p->name, value, list);
        }
        case KD_PROP_TIERS: {
                char why[200];
                kd_tiers_t t;
                if (kd_tiers_parse(&t, value, why, sizeof(why)) != KDELAY_OK)
                        return kd_fail(KDELAY_ERR_INVALID_TIERS, errstr,
                                       errstr_size, "%s: %s", p->name, why);
                *(kd_tiers_t *)field = t;
                return KDELAY_OK;
        }
        default: /* the text types: text_set */
                break;
        }
        return KDELAY_ERR_INVALID_ARG;
}
