/* SPDX-License-Identifier: Apache-2.0 */
/* bench_limit's parts (docs/performance.md): one section of the stack per
 * workload, producing wire-format tasks, reading the target back, running
 * forwarders and measuring processes (bl_common.c); the crash loop
 * (bl_crash.c). The workloads themselves are in bench_limit.c. */
#ifndef BL_H
#define BL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <librdkafka/rdkafka.h>

#include "it_env.h"

#define SEC           1000LL
#define BL_PARTITIONS 4
#define BL_VALUE_LEN  100

/* The current section's names (bl_section). */
extern char bl_prefix[40], bl_db[64], bl_url[256], bl_target[96];

/* Notes a failed check ("FAILED what" on stdout); the run exits 1. */
void bl_check(int ok, const char *what);
int bl_failed(void);

/* A fresh section: new prefix, database, tier and target topics (the
 * tier topics of the default ladder, or of tiers, a `tiers` value, when
 * it is not NULL); the forwarders' group and a reader's group of it into
 * grp / rgrp. 0 on success. */
int bl_section(const char *tiers, char *grp, size_t grp_size, char *rgrp,
               size_t rgrp_size);

/* Produces n task records to topic: task base+i has the id
 * "<prefix>-<stem>-<base+i>" (also its key) and fire-at fire_at(base+i,
 * arg). 0 when all were acknowledged. */
int bl_produce(const char *topic, int n, int base,
               int64_t (*fire_at)(int, void *), void *arg, const char *stem);

/* A producer of task records (idempotent, lingering linger_ms); delivery
 * failures are counted into *errors (caller-owned, outlives the
 * producer). NULL on failure. */
rd_kafka_t *bl_producer_new(int linger_ms, int *errors);
/* Queues one task record (id, also its key; fire_at; the section's
 * target) to topic; 0, or -1 when it could not be queued. */
int bl_produce_task(rd_kafka_t *rk, const char *topic, const char *id,
                    int64_t fire_at);

/* The task number that ends m's key; -1 when there is none. */
long bl_task_no(const rd_kafka_message_t *m);
/* Fire-at of m from its header; 0 when missing. */
int64_t bl_fire_at_of(const rd_kafka_message_t *m);

/* fire_at for bl_produce: every task at *(int64_t *)arg. */
int64_t bl_at_fixed(int i, void *arg);

/* fire_at for bl_produce: first + i * span / n. */
typedef struct bl_spread {
        int64_t first, span;
        int n;
} bl_spread_t;
int64_t bl_at_spread(int i, void *arg);

/* What a reader of the target saw. Tasks are told apart by the number
 * that ends their key; lateness is of each task's first copy. */
typedef struct bl_seen {
        size_t n;    /* distinct tasks */
        size_t dups; /* copies beyond the first */
        int64_t first_ts, last_ts;
        int64_t p50, p99, max; /* lateness by record timestamp, ms */
        int early;
} bl_seen_t;

/* Reads the target (read_committed, from the start) until tasks 0..want-1
 * have all arrived, or timeout_ms; then idle_ms more for late copies. 0
 * when every task arrived. */
int bl_read_target(const char *grp, int want, int timeout_ms, int idle_ms,
                   bl_seen_t *s);
/* bl_read_target, and each task's first copy's timestamp into ts_of[no]
 * (want entries, caller-owned; untouched for a task that never came). */
int bl_read_target_ts(const char *grp, int want, int timeout_ms, int idle_ms,
                      bl_seen_t *s, int64_t *ts_of);

/* bl_read_target_ts of any topic of task records (the copy's output). */
int bl_read_topic(const char *topic, const char *grp, int want, int timeout_ms,
                  int idle_ms, bl_seen_t *s, int64_t *ts_of);

/* Subscribes consumer rk to topic, its messages on the consumer queue. 0
 * on success. */
int bl_subscribe(rd_kafka_t *rk, const char *topic);

/* "name=value" properties every forwarder gets (bench_limit -X), after
 * the section's own; NULL-ended. */
#define BL_FWD_PROPS_MAX 8
extern const char *bl_fwd_props[BL_FWD_PROPS_MAX + 1];
/* The forwarder binary every section runs (bench_limit --forwarder: an
 * older build's, for before/after runs of one bench); this build's by
 * default. */
extern const char *bl_fwd_bin;

/* A forwarder of the section. */
typedef struct bl_fwd {
        it_fwd_t f;
        char instance[32];
        double cpu_us;
        long long hwm_kb;
        long long fired, hopped, statements;
} bl_fwd_t;

/* Starts forwarder `name` in `mode` and group grp, with the "name=value"
 * properties of extra (NULL-ended, may be NULL); waits for its first
 * assignment when wait is set. 0 on success. */
int bl_fwd_start(bl_fwd_t *r, const char *name, const char *mode,
                 const char *grp, const char *const *extra, int wait);
/* SIGTERM, then its CPU, peak RSS and counters (summed over every
 * forwarder_stopped line of its log). Its exit status. */
int bl_fwd_stop(bl_fwd_t *r);

/* CPU time of pid in microseconds, every thread it ever ran (exited ones
 * too; 10 ms resolution); -1 unreadable. */
double bl_cpu_us_of(pid_t pid);
/* A /proc/PID/status field in kB (VmRSS, VmHWM); -1 unreadable. */
long long bl_rss_kb_of(pid_t pid, const char *key);
/* The pid of the stack's broker or MariaDB (KDELAY_STACK_DIR's pid
 * files); -1 when unknown (an external MySQL, another stack). */
pid_t bl_stack_pid(const char *what); /* "kafka" or "mysql" */
/* Bytes on disk of topic's partitions in the stack's Kafka log directory
 * (KDELAY_STACK_DIR/kafka/data/<topic>-<partition>/, every file: segments
 * and their indexes); -1 when unknown (no stack directory). */
long long bl_topic_disk_bytes(const char *topic);

/* The server-wide status counters named names[0..n-1], among those
 * matching like (SHOW GLOBAL STATUS LIKE 'like': the suite's MySQL 8
 * grammar check takes that form), into vals; 0 when every one was read,
 * -1 otherwise. */
int bl_mysql_status(const char *like, const char *const *names, long long *vals,
                    int n);
/* MariaDB's row writes so far, server-wide: Handler_write,
 * Handler_update and Handler_delete (issue 44's measure of what a fire
 * costs the fate store: their sum) into w[3]; 0, or -1 when unknown. */
int bl_mysql_row_writes(long long w[3]);

/* The section database's kdelay_fate: its rows, and InnoDB's data and
 * index bytes (after ANALYZE TABLE: its statistics, in pages); 0, or -1
 * when unknown. */
int bl_fate_table_bytes(long long *rows, long long *data, long long *index);

/* The tier of the default ladder for a task remaining_ms ahead. */
const char *bl_tier_for(int64_t remaining_ms);

/* The crash loop (bl_crash.c): two forwarders, static members of their
 * group when is_static, one killed with SIGKILL every 3-6 s for loop_s
 * seconds and restarted 0-2 s later under its instance; n tasks due
 * 0.1 s .. loop_s + 10 s ahead. */
void bl_crash_run(int n, int loop_s, int is_static);

/* The scale sections (bl_scale.c). Pending: `pending` tasks 6..30 h
 * ahead in tier.6h and two probes (due at the forwarder's start and 10 s
 * later); the forwarder's RSS 15 s in goes to *rss_kb (-1 unknown).
 * Rows: `rows` fate rows bulk-loaded, status and cancel latency on the
 * empty and the full table, and spreads of `tasks` over spread_s s fired
 * alone and during `kdelayctl db gc` of nine in ten rows (with --pause
 * gc_pause; NULL: gc's default). */
void bl_pending_run(int pending, long long *rss_kb, long long *peak_kb);
void bl_rows_run(int rows, int tasks, int spread_s, const char *gc_pause);

/* The ladder (bl_ladder.c): the default ladder with every tier,
 * forwarder.hold_horizon and forwarder.lookahead divided by factor, and n
 * tasks whose delays are log-uniform over 1 s .. 7 d divided alike: Kafka
 * writes per task measured against kd_path_plan's at the run's read lag,
 * lateness, lost and early. The measured writes per task (-1 when the
 * run failed). */
double bl_ladder_run(int n, int factor);

#endif
