/* The delivery-mode seam: at_least_once (mode_alo.c) and exactly_once
 * (mode_eos.c) are two implementations of this table of operations, in
 * the manner of nng's protocol ops. Nothing outside those two files tests
 * which mode runs; the fire and intake stages call these operations, and
 * the modes call only the settle stage below them. */
#ifndef KD_MODE_H
#define KD_MODE_H

#include "kd_fwd_state.h"

struct kd_mode_ops {
        const char *name; /* forwarder.delivery */
        /* A foreign FIRING claim is taken over at once rather than after
         * forwarder.foreign_claim_wait. */
        int takeover_at_once;

        /* Checks the conf, allocates f->mode_state, and names the
         * producer's properties (NULL-terminated name, value pairs, valid
         * until destroy): defaults the user may override, and the forced
         * ones the mode's guarantee depends on. */
        kdelay_err_t (*init)(kd_fwd_t *f, const char *const **defaults,
                             const char *const **forced, char *errstr,
                             size_t errstr_size);
        void (*destroy)(kd_fwd_t *f);
        /* Before the consumer subscribes (exactly_once fences an earlier
         * process with the same transactional.id). */
        kdelay_err_t (*start)(kd_fwd_t *f, char *errstr, size_t errstr_size);

        /* Partitions being assigned: may set the offsets to start at in
         * parts; -1 when the forwarder must stop instead. */
        int (*assigning)(kd_fwd_t *f, rd_kafka_topic_partition_list_t *parts);
        /* Partition p was created for tp of the assignment. */
        void (*opened)(kd_fwd_t *f, kd_part_t *p,
                       const rd_kafka_topic_partition_t *tp);
        /* 1 when the backlog head t of p may be handled now; 0 pauses p
         * until room appears (the room hook). */
        int (*admit)(const kd_fwd_t *f, const kd_part_t *p, const kd_task_t *t);

        /* Before producing t as `as` (t NULL: a clock probe, produced
         * only when 0): 0 to produce now, with *rk; > 0 to wait that many
         * ms and ask again (a solo transaction is open, or t waits for
         * one); -1 to defer it with the retry backoff (the transaction
         * failed). */
        int (*begin)(kd_fwd_t *f, const kd_task_t *t, kd_task_state_t as,
                     rd_kafka_t **rk);
        /* 1 when producing t as `as` already failed for good often
         * enough; *err gets the last error. */
        int (*poisoned)(kd_fwd_t *f, const kd_task_t *t, kd_task_state_t as,
                        rd_kafka_resp_err_t *err);
        /* Produce fire/hop: librdkafka took t's record. */
        void (*produced)(kd_fwd_t *f, kd_task_t *t);

        /* Settle: t's produce was delivered; frees t. */
        void (*delivered)(kd_fwd_t *f, kd_task_t *t);
        /* t's produce failed for good (after librdkafka's retries): 1 when
         * the mode handled it (t freed), 0 when the fire stage retries or
         * dead-letters it. permanent: producing it again cannot succeed.
         */
        int (*failed)(kd_fwd_t *f, kd_task_t *t, rd_kafka_resp_err_t err,
                      int permanent);
        /* t is handled without a produce (dropped, already fired); frees
         * t. */
        void (*done)(kd_fwd_t *f, kd_task_t *t);

        /* Commit offsets before the partitions go (revoke), within
         * deadline (monotonic ms). 1 when what it committed was aborted
         * instead (partitions that stay must then be rewound). */
        int (*revoke)(kd_fwd_t *f, int64_t deadline);
        /* A new producer replaced one that failed for good (fwd.c):
         * exactly_once initialises its transactions (fencing the old one,
         * which aborts its transaction) and rewinds. */
        kdelay_err_t (*renewed)(kd_fwd_t *f, char *errstr, size_t errstr_size);
        /* The coordinator's answer to the consumer's own offset commits
         * (librdkafka's offset_commit_cb): err, and offsets with each
         * partition's err (not owned). */
        void (*committed)(kd_fwd_t *f, rd_kafka_resp_err_t err,
                          const rd_kafka_topic_partition_list_t *offsets);
};

extern const kd_mode_ops_t kd_mode_alo;
extern const kd_mode_ops_t kd_mode_eos;

/* The ops of conf's forwarder.delivery. */
const kd_mode_ops_t *kd_mode_select(const kdelay_conf_t *conf);

#endif
