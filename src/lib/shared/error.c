/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes: names, descriptions, retriability. */
#include <kdelay/error.h>

#include "kd_util.h"

static const struct {
        const char *name;
        const char *desc;
        int retriable;
} kd_errs[KDELAY_ERR__COUNT] = {
    [KDELAY_OK] = {"KDELAY_OK", "success", 0},
    [KDELAY_ERR_INVALID_ARG] = {"KDELAY_ERR_INVALID_ARG", "invalid argument",
                                0},
    [KDELAY_ERR_INVALID_ID] = {"KDELAY_ERR_INVALID_ID", "invalid task id", 0},
    [KDELAY_ERR_INVALID_TOPIC] = {"KDELAY_ERR_INVALID_TOPIC",
                                  "invalid topic name", 0},
    [KDELAY_ERR_INVALID_TIME] = {"KDELAY_ERR_INVALID_TIME", "invalid due time",
                                 0},
    [KDELAY_ERR_INVALID_DURATION] = {"KDELAY_ERR_INVALID_DURATION",
                                     "invalid duration", 0},
    [KDELAY_ERR_INVALID_TIERS] = {"KDELAY_ERR_INVALID_TIERS",
                                  "invalid tier list", 0},
    [KDELAY_ERR_INVALID_HEADER] = {"KDELAY_ERR_INVALID_HEADER",
                                   "invalid header", 0},
    [KDELAY_ERR_CONFIG] = {"KDELAY_ERR_CONFIG", "configuration error", 0},
    [KDELAY_ERR_UNKNOWN_PROPERTY] = {"KDELAY_ERR_UNKNOWN_PROPERTY",
                                     "unknown configuration property", 0},
    [KDELAY_ERR_NO_MEMORY] = {"KDELAY_ERR_NO_MEMORY", "out of memory", 1},
    [KDELAY_ERR_KAFKA] = {"KDELAY_ERR_KAFKA", "Kafka error", 1},
    [KDELAY_ERR_QUEUE_FULL] = {"KDELAY_ERR_QUEUE_FULL",
                               "local produce queue is full", 1},
    [KDELAY_ERR_TIMED_OUT] = {"KDELAY_ERR_TIMED_OUT", "timed out", 1},
    [KDELAY_ERR_MYSQL] = {"KDELAY_ERR_MYSQL", "MySQL error", 1},
    [KDELAY_ERR_NOT_CONFIGURED] = {"KDELAY_ERR_NOT_CONFIGURED",
                                   "not configured", 0},
    [KDELAY_ERR_SCHEMA] = {"KDELAY_ERR_SCHEMA",
                           "database schema missing or too new", 0},
    [KDELAY_ERR_PURGED] = {"KDELAY_ERR_PURGED",
                           "abandoned before delivery was confirmed", 1},
    [KDELAY_ERR_SYSTEM] = {"KDELAY_ERR_SYSTEM", "system call failed", 1},
    [KDELAY_ERR_TOO_LATE] = {"KDELAY_ERR_TOO_LATE",
                             "too late: task is already firing or fired", 0},
    [KDELAY_ERR_MALFORMED] = {"KDELAY_ERR_MALFORMED", "malformed task record",
                              0},
    [KDELAY_ERR_NOT_FOUND] = {"KDELAY_ERR_NOT_FOUND",
                              "no pending task has that id", 0},
    [KDELAY_ERR_DEAD] = {"KDELAY_ERR_DEAD",
                         "the task was dead-lettered: never delivered", 0},
    [KDELAY_ERR_NO_SUCH_TOPIC] = {"KDELAY_ERR_NO_SUCH_TOPIC",
                                  "topic does not exist", 0},
    [KDELAY_ERR_RECONCILING] = {"KDELAY_ERR_RECONCILING",
                                "not known yet: a reconciliation after a "
                                "fate-store outage is pending; retry",
                                1},
};

static int known(kdelay_err_t err)
{
        return (int)err >= 0 && err < KDELAY_ERR__COUNT;
}

const char *kdelay_err_str(kdelay_err_t err)
{
        return known(err) ? kd_errs[err].desc : "unknown error";
}

const char *kdelay_err_name(kdelay_err_t err)
{
        return known(err) ? kd_errs[err].name : "KDELAY_ERR_UNKNOWN";
}

int kdelay_err_is_retriable(kdelay_err_t err)
{
        return known(err) && kd_errs[err].retriable;
}
