/* SPDX-License-Identifier: Apache-2.0 */
/* Produce error classes (kd_perr.h). */
#include "kd_perr.h"

kd_perr_class_t kd_perr_class(rd_kafka_resp_err_t err)
{
        switch (err) {
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
                return KD_PERR_TARGET;
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
        case RD_KAFKA_RESP_ERR_INVALID_MSG:
        case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
                return KD_PERR_RECORD;
        case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
        case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
                return KD_PERR_PURGED;
        case RD_KAFKA_RESP_ERR__TRANSPORT:
        case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
        case RD_KAFKA_RESP_ERR__TIMED_OUT:
        case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
        case RD_KAFKA_RESP_ERR__RESOLVE:
        case RD_KAFKA_RESP_ERR__WAIT_COORD:
        case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
        case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
        case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
        case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
        case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
        case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
        case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
        case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
        case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
        case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
        case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
        case RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS:
        case RD_KAFKA_RESP_ERR_INVALID_TXN_STATE:
        case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
        case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
                return KD_PERR_CLUSTER;
        case RD_KAFKA_RESP_ERR__STATE: /* after the real error, at once */
        case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
        case RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID:
        case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
        case RD_KAFKA_RESP_ERR__OUTDATED:
                return KD_PERR_PRODUCER;
        default:
                return KD_PERR_TRANSIENT;
        }
}

int kd_perr_permanent(rd_kafka_resp_err_t err)
{
        kd_perr_class_t c = kd_perr_class(err);
        return c == KD_PERR_TARGET || c == KD_PERR_RECORD;
}

int kd_perr_too_large(rd_kafka_resp_err_t err)
{
        return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
               err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE;
}

const char *kd_perr_dead_reason(rd_kafka_resp_err_t err)
{
        if (kd_perr_too_large(err))
                return "too-large";
        return kd_perr_class(err) == KD_PERR_RECORD ? "target-refused"
                                                    : "target-unavailable";
}

kd_perr_then_t kd_perr_then(kd_task_state_t as, rd_kafka_resp_err_t err,
                            int retries, int poisoned)
{
        int large = kd_perr_too_large(err);
        if (poisoned && !large) {
                if (as == KD_TASK_HOPPING) /* stop failing everything */
                        return KD_THEN_HOP_FAILED;
                if (as == KD_TASK_DEAD)
                        return KD_THEN_DEAD_DROPPED;
        }
        if (large)
                return as == KD_TASK_DEAD ? KD_THEN_DEAD_SMALLER
                                          : KD_THEN_FIRE_FAILED;
        if (as == KD_TASK_FIRING &&
            (poisoned ||
             (kd_perr_permanent(err) && retries >= KD_PERR_PERMANENT_RETRIES)))
                return KD_THEN_FIRE_FAILED; /* poisoned: whatever the error */
        return KD_THEN_RETRY;
}
