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
