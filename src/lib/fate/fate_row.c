/* SPDX-License-Identifier: Apache-2.0 */
/* What a fate row says, the same for every store and every reader: a
 * state's name and its parse, a claim's owner and how runs split it, a
 * status and a cancel's answer from the row found, an unclaimed fire's
 * prior state. No store and no statement: pure functions that the store's
 * front (fate.c), its implementations (fate_mysql.c and the files beside
 * it, the tests' in-memory store) and the client (kdelay_fate_str) call. */
#include "kd_fate.h"

#include <string.h>

#include "kd_fate_ops.h"
#include "kd_util.h"

/* The state column's values, and kdelay_fate_str's: one table. */
static const char *const fate_names[] = {
    [KDELAY_FATE_UNDECIDED] = "UNDECIDED",
    [KDELAY_FATE_FIRING] = "FIRING",
    [KDELAY_FATE_FIRED] = "FIRED",
    [KDELAY_FATE_CANCELLED] = "CANCELLED",
    [KDELAY_FATE_DEAD] = "DEAD",
};
#define KD_FATES (sizeof(fate_names) / sizeof(fate_names[0]))

const char *kd_fate_name(kdelay_fate_t fate)
{
        return (unsigned)fate < KD_FATES ? fate_names[fate]
                                         : fate_names[KDELAY_FATE_UNDECIDED];
}

kdelay_fate_t kd_fate_parse(const char *s)
{
        for (size_t f = 0; s && f < KD_FATES; f++)
                if (strcmp(s, fate_names[f]) == 0)
                        return (kdelay_fate_t)f;
        return KDELAY_FATE_UNDECIDED;
}

const char *kd_fate_claim_owner(const kd_fate_claim_t *item, const char *owner,
                                size_t *lenp)
{
        const char *tok = item->token ? item->token : owner;
        size_t len = tok ? strlen(tok) : 0;
        *lenp = len > KD_FATE_OWNER_MAX ? KD_FATE_OWNER_MAX : len;
        return tok;
}

int kd_fate_owner_split(const char *owner, size_t len, size_t *prefix_lenp,
                        uint64_t *seqp)
{
        const char *c1 = owner ? memchr(owner, ':', len) : NULL;
        if (!c1 || c1 == owner)
                return 0;
        size_t rest = len - (size_t)(c1 + 1 - owner);
        const char *c2 = memchr(c1 + 1, ':', rest);
        if (!c2 || c2 == c1 + 1)
                return 0;
        const char *seq = c2 + 1;
        size_t digits = len - (size_t)(seq - owner);
        /* The shortest decimal form: what CAST(CAST(s AS UNSIGNED) AS
         * BINARY) = s accepts in SQL. */
        if (digits == 0 || digits > 20 || (seq[0] == '0' && digits > 1))
                return 0;
        uint64_t v = 0;
        for (size_t i = 0; i < digits; i++) {
                unsigned d = (unsigned char)seq[i] - '0';
                if (d > 9 || v > (UINT64_MAX - d) / 10)
                        return 0;
                v = v * 10 + d;
        }
        *prefix_lenp = (size_t)(c2 - owner);
        *seqp = v;
        return 1;
}

void kd_fate_status_none(kdelay_status_t *status)
{
        memset(status, 0, sizeof(*status));
        status->fate = KDELAY_FATE_UNDECIDED;
        status->decided_at_ms = status->updated_at_ms = -1;
        status->fire_at_ms = -1;
}

kdelay_err_t kd_fate_cancel_found(kdelay_fate_t fate, char *errstr,
                                  size_t errstr_size)
{
        switch (fate) {
        case KDELAY_FATE_CANCELLED:
                return KDELAY_OK;
        case KDELAY_FATE_FIRING:
        case KDELAY_FATE_FIRED:
                return kd_fail(KDELAY_ERR_TOO_LATE, errstr, errstr_size,
                               "task is already %s", kd_fate_name(fate));
        case KDELAY_FATE_DEAD:
                return kd_fail(KDELAY_ERR_DEAD, errstr, errstr_size,
                               "task was dead-lettered (DEAD): it will not "
                               "be delivered; its dead letter stays");
        default:
                return kd_fail(KDELAY_ERR_MYSQL, errstr, errstr_size,
                               "fate row changed during cancel; retry");
        }
}

kdelay_err_t kd_fate_cancel_pending(kdelay_fate_t fate, char *errstr,
                                    size_t errstr_size)
{
        if (fate == KDELAY_FATE_FIRING || fate == KDELAY_FATE_FIRED ||
            fate == KDELAY_FATE_DEAD)
                return kd_fate_cancel_found(fate, errstr, errstr_size);
        return kd_fail(KDELAY_ERR_RECONCILING, errstr, errstr_size,
                       "fires made without a claim through a fate-store "
                       "outage (forwarder.fate_outage_policy=fire) are being "
                       "reconciled, and this task may be one of them; "
                       "nothing was recorded (kdelayctl status shows the "
                       "pending reconciliation)");
}

static const char *const prior_names[KD_PRIORS] = {
    [KD_PRIOR_FIRED] = "fired",
    [KD_PRIOR_CANCELLED] = "cancelled",
    [KD_PRIOR_FIRING] = "firing",
    [KD_PRIOR_DEAD] = "dead",
};

const char *kd_unclaimed_prior_str(kd_unclaimed_prior_t prior)
{
        return (unsigned)prior < KD_PRIORS ? prior_names[prior] : "fired";
}

const char *kd_unclaimed_cancel_when(int64_t cancelled_at_ms,
                                     int64_t fired_at_ms)
{
        if (cancelled_at_ms < 0)
                return NULL;
        return cancelled_at_ms > fired_at_ms ? "after_fire" : "before_fire";
}
