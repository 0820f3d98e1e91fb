/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for integration tests against the real local stack: the broker
 * and MySQL come from KDELAY_BROKERS / KDELAY_MYSQL_URL (scripts/test.sh
 * sets them from deploy/local/stack.sh). Missing variables fail the test
 * program: an integration test never passes by skipping. */
#ifndef IT_ENV_H
#define IT_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <librdkafka/rdkafka.h>
#include <mysql.h>

#include <kdelay/kdelay.h>

/* Reads the environment; 0 when both services are named, else prints why
 * and returns -1 (use from a suite init). */
int it_env_init(void);

/* The exit status of a test program that does not apply to the stack it was
 * given (a test of a 3-node cluster on a single node): ctest reports it as
 * skipped (SKIP_RETURN_CODE in tests/integration/CMakeLists.txt). A missing
 * stack still fails (it_env_init). */
#define IT_SKIP 77

/* A kdelay_fate row's state as readers see it: a FIRING row a run of
 * delivered claims covers (kdelay_fired_run, docs/fate-protocol.md) is
 * FIRED. For a SELECT on kdelay_fate (owners of the token shape). */
#define IT_FATE_STATE_SQL                                                      \
        "CASE WHEN kdelay_fate.state = 'FIRING' AND EXISTS (SELECT 1 FROM "    \
        "kdelay_fired_run r WHERE r.owner_prefix = "                           \
        "CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', 2) AS BINARY) AND "      \
        "r.seq_lo <= CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS "     \
        "UNSIGNED) AND r.seq_hi >= "                                           \
        "CAST(SUBSTRING_INDEX(kdelay_fate.owner, ':', -1) AS UNSIGNED)) "      \
        "THEN 'FIRED' ELSE kdelay_fate.state END"

/* The stack's Kafka node count: KDELAY_KAFKA_NODES (stack.sh env), 1 when
 * unset. */
int it_kafka_nodes(void);
const char *it_brokers(void);
const char *it_mysql_url(void); /* the stack's kdelay database */

/* A prefix unique to this process and call: "it<pid>_<n>". */
void it_unique(char *buf, size_t size, const char *stem);

/* A conf for the stack with topic_prefix `prefix` (NULL keeps "kdelay")
 * and mysql.url `mysql_url` (NULL = the stack's). Caller owns it. */
kdelay_conf_t *it_conf_new(const char *prefix, const char *mysql_url);

/* Schedules task "<stem>-<i>" (value "v") to topic at fire_at_ms through
 * c, without waiting for its delivery report (kdelay_flush does). The
 * library's result; errstr gets why. */
kdelay_err_t it_schedule_v(kdelay_client_t *c, const char *topic,
                           const char *stem, long i, int64_t fire_at_ms,
                           char *errstr, size_t errstr_size);

/* The stack's URL with the user (and password; NULL = none) and database
 * replaced (NULL keeps the URL's), its TLS parameters kept. 0 on success. */
int it_mysql_url_as(const char *user, const char *password, const char *db,
                    char *out, size_t size);

/* Creates a fresh database `name` as the URL's user (root on the local
 * stack), applies the schema when `migrate`, and writes its URL into
 * url_out. 0 on success. */
int it_db_create(const char *name, int migrate, char *url_out, size_t url_size);
void it_db_drop(const char *name);

/* A connection to the stack's server (database from the URL). */
MYSQL *it_mysql_connect(void);

/* Column col of the first row sql returns on conn, into out ("" when
 * none); 0, or -1 when the query failed or the value is NULL or missing. */
int it_mysql_value(MYSQL *conn, const char *sql, int col, char *out,
                   size_t size);
/* it_mysql_value as a number; -1 when unreadable. */
long long it_mysql_ll(MYSQL *conn, const char *sql, int col);

/* A librdkafka properties file (one name=value a line; blank lines and #
 * comments skipped) as a NULL-terminated array of "name=value" strings;
 * NULL when it cannot be read (the reason printed). it_props_free frees
 * it. */
char **it_props_read(const char *path);
void it_props_free(char **props);

/* The properties of $KDELAY_CLIENT_CONFIG (a secured stack, stack.sh
 * --security: the admin's), read once; an empty list when unset. Every
 * helper here that connects to Kafka (it_kafka_new and what uses it,
 * it_conf_new, it_tiers_create) applies them, and it_ctl passes the file
 * (--kafka-config); values may be file:/env: references (resolved as
 * kdelay does). */
const char *const *it_client_props(void);

/* A plain librdkafka client of the stack's broker with extra properties
 * (NULL-terminated name, value pairs; may be NULL), after
 * it_client_props(). NULL on failure (the reason printed). Caller
 * destroys it. */
rd_kafka_t *it_kafka_new(rd_kafka_type_t type, const char *const *props);

/* Waits until broker metadata shows `topic`; 0 when it does within 30 s. */
int it_wait_topic(const char *topic);

/* A consumed record, copied out of librdkafka (whose handle cannot be
 * destroyed while its messages live). */
typedef struct it_msg {
        char topic[256];
        int32_t partition;
        int64_t offset;
        void *key; /* owned; NULL = null key */
        size_t key_len;
        void *value; /* owned; NULL = null value */
        size_t len;
        int64_t ts;
        rd_kafka_timestamp_type_t tstype;
        int64_t recv_ms; /* wall clock when consumed (read_committed) */
        rd_kafka_headers_t *headers; /* owned; may be NULL */
} it_msg_t;

void it_msg_free(it_msg_t *m);

/* Consumes every record of `topics` (NULL-terminated) from the start until
 * `want` records arrived or timeout_ms passed (want 0: until no record came
 * for 3 s, at most `max`... see it_consume_all). Returns the number read into
 * msgs[] (caller frees each with it_msg_free). */
size_t it_consume(const char *const *topics, it_msg_t *msgs, size_t want,
                  int timeout_ms);

/* Waits for an event on the targets: consumes `topics` from the start
 * until `want` records arrived or timeout_ms passed, and returns how many
 * arrived (the records are not kept: read them again to check them). */
size_t it_wait_records(const char *const *topics, size_t want, int timeout_ms);

/* Consumes every record of `topics` from the start into *msgsp (grown as
 * needed; caller frees each and the array) until no record arrived for
 * idle_ms, or timeout_ms passed. Returns the count. */
size_t it_consume_all(const char *const *topics, it_msg_t **msgsp, int idle_ms,
                      int timeout_ms);

/* The value of header `name` of m as a new NUL-terminated string, or NULL
 * when absent. Caller frees. */
char *it_header(const it_msg_t *m, const char *name);

/* Creates topic with `partitions` partitions (replication 1) and waits
 * until metadata shows it. 0 on success. */
int it_create_topic(const char *topic, int partitions);
/* The same with replication factor rf (-1: the broker's default). */
int it_create_topic_rf(const char *topic, int partitions, int rf);
/* it_create_topic with topic config `name` = `value` (e.g.
 * "cleanup.policy", "compact"). 0 on success. */
int it_create_topic_config(const char *topic, int partitions, const char *name,
                           const char *value);
/* The same with several topic configs (NULL-terminated name, value
 * pairs; may be NULL). */
int it_create_topic_conf(const char *topic, int partitions,
                         const char *const *configs);

/* Runs the repository's deploy/local/stack.sh VERB (e.g. "mysql-stop",
 * or a verb and up to three arguments separated by single spaces:
 * "mysql-readonly on", "node-stop 1 --kill")
 * on the test stack ($KDELAY_STACK_DIR); 0 on success, else its output is
 * printed. */
int it_stack(const char *verb);

/* Deletes topic and waits until metadata no longer shows it. 0 on
 * success. */
int it_delete_topic(const char *topic);

/* Starts argv (argv[0] a path) in the background with stdout and stderr
 * appended to log_path. Returns the pid, or -1. */
pid_t it_spawn(char *const argv[], const char *log_path);

/* Waits up to timeout_ms for pid to exit; returns its exit status (128+sig
 * when killed), or -1 on time-out (the process is then left running). */
int it_wait_pid(pid_t pid, int timeout_ms);

/* Runs argv (argv[0] a path) with extra environment `env` (NULL-terminated
 * "K=V", may be NULL); captures stdout and stderr (NUL-terminated, caller
 * frees). Returns the exit status, or -1 when it could not run. */
int it_run(char *const argv[], char *const env[], char **out, char **err);

/* Runs kdelayctl (the binary at bin) with the args (NULL-terminated)
 * followed by the stack's --brokers, --mysql url and -X
 * topic_prefix=prefix; *outp and *errp get its output (freed first when
 * set: start them NULL). Returns its exit status (see it_run). */
int it_ctl(const char *bin, const char *prefix, const char *url, char **outp,
           char **errp, ...);

/* How it_ctl_with runs kdelayctl: it_ctl's, and more. */
typedef struct it_ctl_opts {
        const char *bin;    /* the kdelayctl binary */
        const char *prefix; /* -X topic_prefix=prefix; NULL = none */
        const char *url;    /* --mysql url; NULL = none */
        /* One -X each (NULL-ended); NULL = the stack's Kafka identity
         * (--kafka-config $KDELAY_CLIENT_CONFIG). */
        const char *const *props;
        char *const *env; /* added to its environment (NULL-ended); NULL =
                             none */
} it_ctl_opts_t;

/* it_ctl with o's settings: the args (NULL-terminated), then --brokers,
 * --mysql, -X topic_prefix and the properties. */
int it_ctl_with(const it_ctl_opts_t *o, char **outp, char **errp, ...);
/* The same with the args in ap. */
int it_ctl_withv(const it_ctl_opts_t *o, char **outp, char **errp, va_list ap);

/* Creates the tier and dead-letter topics of topic prefix `prefix`
 * (`partitions` each) with kdelay's own topic code; 0 on success (else the
 * reason is printed). */
int it_tiers_create(const char *prefix, const char *mysql_url, int partitions);
/* The same with replication factor rf (-1: the broker's default). */
int it_tiers_create_rf(const char *prefix, const char *mysql_url,
                       int partitions, int rf);

/* A kdelay-forwarder process of a test. */
typedef struct it_fwd {
        const char *instance;   /* borrowed: forwarder.instance */
        pid_t pid;              /* -1 when not running */
        char log[256];          /* its stdout and stderr */
        const char *const *env; /* borrowed: "K=V" strings (at most 8,
                                   NULL-ended) added to its environment;
                                   NULL = none */
} it_fwd_t;

/* Starts the forwarder binary `bin` as f->instance for topic prefix `pfx`,
 * group `grp` and mysql.url `mysql_url` on the stack's broker, with one
 * -X per "name=value" in props (NULL-terminated, at most 20; may be NULL);
 * output to "fwd-<pfx>-<instance>.log". 0 on success. */
int it_fwd_start(it_fwd_t *f, const char *bin, const char *pfx, const char *grp,
                 const char *mysql_url, const char *const *props);

/* Sends sig to f and waits up to 60 s for it to exit: its exit status
 * (see it_wait_pid). */
int it_fwd_stop(it_fwd_t *f, int sig);

/* How many lines of the log file at path contain needle. */
int it_log_count(const char *path, const char *needle);

/* The sum of the integer values of ` field=` over the lines of the log at
 * path that contain needle (0 when none), e.g. a counter of every
 * `event=forwarder_stopped` line; -1 when the file cannot be read. */
int64_t it_log_sum(const char *path, const char *needle, const char *field);

/* Waits up to timeout_ms for a line containing needle in the log at path;
 * 0 when it appeared. A forwarder's log is the only notification of, e.g.,
 * a consumer group assignment, so this polls the file. */
int it_wait_log(const char *path, const char *needle, int timeout_ms);

/* Sorts the lateness figures v (ms) and prints their quantiles as a line
 * "  lateness WHAT n=.. p50=..ms p99=..ms max=..ms"; *p99 and *max get them
 * (0 when n is 0, and nothing is printed). */
void it_report_lateness(const char *what, int64_t *v, size_t n, int64_t *p99,
                        int64_t *max);

/* Sleeps until wall-clock time at_ms: a test timeline's clock, not a wait
 * for an event. */
void it_sleep_until(int64_t at_ms);

#endif
