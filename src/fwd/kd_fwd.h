/* kdelay-forwarder internals: the forwarder object, its partitions and
 * tasks. The forwarder is one thread running one event loop (loop.c);
 * librdkafka's threads only wake it through queue io-event fds.
 * docs/forwarder.md explains the design. */
#ifndef KD_FWD_H
#define KD_FWD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_heap.h"
#include "kd_offtrack.h"

typedef struct kd_part kd_part_t;

/* What a task is waiting for. The persisted record is in Kafka; this is
 * only its in-memory bookkeeping while a forwarder handles it. */
typedef enum kd_task_state {
        KD_TASK_QUEUED,   /* read, in its partition's backlog */
        KD_TASK_HELD,     /* timer at fire_at - claim_ahead */
        KD_TASK_CLAIMING, /* in the claim queue */
        KD_TASK_CLAIMED,  /* FIRING in MySQL, timer at fire_at */
        KD_TASK_FIRING,   /* produced to its target, awaiting the report */
        KD_TASK_HOPPING,  /* produced to a tier, awaiting the report */
        KD_TASK_DEAD,     /* produced to the dead topic, awaiting report */
        KD_TASK_RETRY,    /* a produce failed; timer at the retry time */
        KD_TASK_PACED     /* due, claimed, waiting for max_fire_rate */
} kd_task_state_t;

typedef struct kd_task {
        kd_heap_node_t timer;
        kd_task_state_t state;
        kd_task_state_t retry_as; /* KD_TASK_RETRY: what to produce again */
        int retries;
        kd_part_t *part;             /* source partition; NULL once revoked */
        struct kd_task *prev, *next; /* the partition's task list */
        struct kd_task *qnext;       /* link in one kd_taskq_t */
        int64_t offset;
        int64_t append_ms; /* LogAppendTime of the source record */
        int64_t fire_at_ms;
        const char *dead_reason; /* static; set when dead-lettered */
        char *id;                /* owned, NUL-terminated */
        char *target;            /* owned */
        void *key;               /* owned; NULL = null key */
        size_t key_len;
        void *value; /* owned; NULL = null value */
        size_t value_len;
        rd_kafka_headers_t *hdrs; /* owned copy; may be NULL */
        size_t bytes;             /* memory accounted to the held set */
        int held;                 /* counted in the held set */
        int waited_foreign;       /* waited once for a foreign claim */
        char token[65]; /* claim owner token, fixed at the first claim so a
                           retried claim recognises its own row */
} kd_task_t;

/* A FIFO of tasks linked through qnext (a task is in at most one): a
 * partition's backlog, the claim queue, the pacing queue. */
typedef struct kd_taskq {
        kd_task_t *head, *tail;
        size_t len;
} kd_taskq_t;

void kd_taskq_push(kd_taskq_t *q, kd_task_t *t);
kd_task_t *kd_taskq_pop(kd_taskq_t *q); /* NULL when empty */
/* Removes t if queued; 1 when it was. */
int kd_taskq_remove(kd_taskq_t *q, kd_task_t *t);

typedef enum kd_part_state {
        KD_PART_FLOWING,
        KD_PART_WAITING, /* paused until wake_ms: head not due */
        KD_PART_FULL     /* paused: the held set is full */
} kd_part_state_t;

struct kd_part {
        char topic[256];
        int32_t partition;
        size_t tier;
        kd_part_state_t state;
        int64_t wake_ms;
        kd_taskq_t backlog; /* read, not yet processed */
        kd_task_t *tasks;   /* every live task from here */
        kd_offtrack_t track;
        int64_t committed; /* last commit point sent, -1 none */
        /* Exactly-once: records above the committed offset that an earlier
         * owner handled (its committed done set); skipped when read. */
        kd_offrange_t *skip; /* owned */
        size_t skip_cnt, skip_pos;
        struct kd_part *next;
};

typedef struct kd_fwd_stats {
        uint64_t read, held, hopped, fired, cancelled, already_fired, dead,
            dup_copies, foreign_waits, takeovers, handed_over, wrong_tier,
            produce_retries, claim_statements, claimed, mark_statements,
            commits, txn_commits, txn_aborts, skipped_done, rate_limited;
        int64_t late_max_ms;
        size_t held_max; /* the most tasks held at once */
} kd_fwd_stats_t;

/* Task ids, each with a value, waiting for one batched UPDATE. */
typedef struct kd_idq {
        char **ids;    /* owned strings */
        int64_t *vals; /* parallel to ids */
        size_t len, cap;
} kd_idq_t;

void kd_idq_clear(kd_idq_t *q);
/* Appends a copy of id; -1 when out of memory (nothing queued). */
int kd_idq_push(kd_idq_t *q, const char *id, int64_t val);

typedef struct kd_fwd {
        kd_rk_owner_t owner; /* first: both clients' librdkafka opaque */
        kdelay_conf_t *conf; /* owned */
        char instance[64];
        /* Claim tokens "<instance>:<boot>.<generation>:<seq>": a FIRING row
         * whose owner starts with claim_prefix was claimed by another copy
         * of the same task inside this assignment, which this process
         * still holds or has fired (see claim.c). */
        char claim_prefix[48];
        uint32_t boot;
        unsigned generation;
        uint64_t claim_seq;
        rd_kafka_t *consumer;  /* owned */
        rd_kafka_t *producer;  /* owned */
        kd_fate_store_t *fate; /* owned */
        kd_part_t *parts;      /* assigned partitions */
        kd_heap_t timers;      /* HELD, CLAIMED, RETRY tasks */
        kd_taskq_t claimq;
        int64_t claimq_since; /* when the oldest queued claim was queued */
        kd_idq_t fired;       /* delivered, not yet marked FIRED */
        kd_idq_t seen;        /* dropped as CANCELLED, due time not yet written
                                 to their rows (for gc) */
        size_t held_cnt;
        int64_t held_bytes;
        size_t inflight;        /* produces awaiting a report */
        int64_t mysql_retry_ms; /* no MySQL before this; 0 = now */
        int64_t mysql_backoff_ms;
        int mysql_down; /* logged state */
        int64_t next_commit_ms, next_stats_ms, next_mark_ms;
        int64_t shutdown_deadline; /* monotonic; 0 = not shutting down */
        int64_t last_report_mono;  /* when a delivery report last came */
        int io_fds[2][2];          /* consumer, producer queue wake-up pipes */
        rd_kafka_queue_t *consumer_q; /* owned reference */
        rd_kafka_queue_t *producer_q; /* owned reference */
        /* Exactly-once mode (txn.c). Produces go into the open transaction;
         * its fires are marked FIRED only once it commits. */
        int eos;
        int txn_open;
        int txn_has_fire; /* the open transaction holds a fire */
        int txn_failed;   /* a produce in it failed: abort and rewind */
        int txn_dirty;    /* offsets moved since the last commit */
        int fatal;        /* a fatal producer error: stop, exit non-zero */
        int64_t txn_opened_ms;
        int64_t txn_last_ms; /* last commit or abort */
        kd_idq_t txn_fired;  /* fired in the open transaction */
        kd_idq_t poison;     /* id -> fires aborted by a permanent error */
        /* forwarder.max_fire_rate: a token bucket, and the due tasks
         * waiting for it in due order (pace.c). */
        double fire_tokens;
        int64_t fire_tokens_ms;
        kd_taskq_t paceq;
        volatile sig_atomic_t *stop; /* borrowed: set by signal handlers */
        int wake_fd;                 /* borrowed: readable on a signal */
        kd_fwd_stats_t stats;
} kd_fwd_t;

/* fwd.c: lifecycle. conf is taken on success. */
kdelay_err_t kd_fwd_new(kd_fwd_t **fp, kdelay_conf_t *conf, char *errstr,
                        size_t errstr_size);
void kd_fwd_destroy(kd_fwd_t *f);
void kd_fwd_log_stats(kd_fwd_t *f, const char *event);

/* loop.c: runs until *stop is set, then shuts down cleanly. */
kdelay_err_t kd_fwd_run(kd_fwd_t *f, volatile sig_atomic_t *stop, int wake_fd);

/* part.c: assignment and per-partition processing. */
void kd_part_assign(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
void kd_part_revoke(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
void kd_part_on_message(kd_fwd_t *f, rd_kafka_message_t *m);
/* Processes every partition's backlog whose head is due at now. */
void kd_part_process_all(kd_fwd_t *f, int64_t now);
/* Earliest wake time of a waiting partition, or INT64_MAX. */
int64_t kd_part_next_wake(const kd_fwd_t *f);
kd_part_t *kd_part_find(kd_fwd_t *f, const char *topic, int32_t partition);
void kd_part_pause(kd_fwd_t *f, kd_part_t *p, kd_part_state_t why,
                   int64_t wake_ms);
/* Commits every partition whose commit point moved; sync or async
 * (at-least-once mode; exactly-once commits through kd_txn_commit). */
void kd_part_commit(kd_fwd_t *f, int sync);
/* Exactly-once, after an aborted transaction: drops every task and reads
 * all assigned partitions again from their committed offsets. */
void kd_part_rewind(kd_fwd_t *f);
/* Offsets and done sets of the assigned partitions, for a transaction;
 * NULL when none has a commit point, or when *failed (a done set that
 * cannot be written: the transaction must abort). Caller destroys it. */
rd_kafka_topic_partition_list_t *kd_part_offsets(kd_fwd_t *f, int *failed);

/* txn.c: exactly-once mode. */
typedef enum kd_txn_result {
        KD_TXN_OK,      /* committed, or nothing to commit */
        KD_TXN_ABORTED, /* aborted: the caller rewinds (or drops) */
        KD_TXN_FATAL    /* f->fatal set: the process must exit */
} kd_txn_result_t;
/* init_transactions: fences an earlier process with the same
 * transactional.id and aborts its open transaction. */
kdelay_err_t kd_txn_init(kd_fwd_t *f, char *errstr, size_t errstr_size);
/* Opens a transaction unless one is open; 0 when produces may go ahead. */
int kd_txn_begin(kd_fwd_t *f);
/* Commits the open transaction (or, when only offsets moved, one holding
 * just them) with every partition's offset and done set. */
kd_txn_result_t kd_txn_commit(kd_fwd_t *f);
/* Aborts the open transaction (a produce in it failed). */
kd_txn_result_t kd_txn_abort(kd_fwd_t *f, const char *why);
/* When the open transaction is due for its commit; INT64_MAX for none. */
int64_t kd_txn_due_ms(const kd_fwd_t *f);
/* pace.c: forwarder.max_fire_rate. Fires t now if the rate allows and
 * nothing is waiting before it, else queues it (due order is kept). */
void kd_pace_fire(kd_fwd_t *f, kd_task_t *t, int64_t now);
/* Fires queued tasks as the rate allows. */
void kd_pace_run(kd_fwd_t *f, int64_t now);
/* When the next queued task may fire; INT64_MAX when none waits. */
int64_t kd_pace_next_ms(const kd_fwd_t *f);
/* Removes t from the queue (revoke, free). */
void kd_pace_forget(kd_fwd_t *f, kd_task_t *t);

/* task.c */
kd_task_t *kd_task_from_message(const rd_kafka_message_t *m);
void kd_task_free(kd_fwd_t *f, kd_task_t *t);
/* Marks t's offset handled and frees it. */
void kd_task_done(kd_fwd_t *f, kd_task_t *t);
/* Accounts t to / removes t from the held set. */
void kd_task_hold(kd_fwd_t *f, kd_task_t *t);
void kd_task_unhold(kd_fwd_t *f, kd_task_t *t);
int kd_fwd_held_full(const kd_fwd_t *f, const kd_task_t *t);

/* produce.c: fire / hop / dead-letter, and their delivery reports. */
void kd_produce_fire(kd_fwd_t *f, kd_task_t *t, int64_t now);
void kd_produce_hop(kd_fwd_t *f, kd_task_t *t, size_t tier);
void kd_produce_dead(kd_fwd_t *f, kd_task_t *t, const char *reason);
void kd_produce_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *opaque);
/* Serves delivery reports until nothing is in flight or deadline
 * (monotonic ms) passes; outside shutdown also when no report came for a
 * second (a produce stuck on a missing topic must not hold a rebalance,
 * and so the whole group, up). */
void kd_produce_drain(kd_fwd_t *f, int64_t deadline);

/* claim.c: batched MySQL claims and FIRED marks. */
void kd_claim_enqueue(kd_fwd_t *f, kd_task_t *t);
void kd_claim_flush(kd_fwd_t *f, int64_t now);
void kd_claim_mark_fired(kd_fwd_t *f, const char *id);
/* Queues the due time of a task dropped as CANCELLED for its row. */
void kd_claim_note_cancelled(kd_fwd_t *f, const char *id, int64_t fire_at);
void kd_claim_flush_fired(kd_fwd_t *f, int64_t now);
/* Removes t from the claim queue (revoke). */
void kd_claim_forget(kd_fwd_t *f, kd_task_t *t);
/* Starts a new claim generation (on every assignment). */
void kd_claim_new_generation(kd_fwd_t *f);

#endif
