/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.target_rate_limits: fires per second to a target topic or to
 * every topic of a `prefix*`, with a burst (docs/forwarder.md, "Target
 * rate limits"). The forwarder paces by it; kdelayctl stats reports the
 * limited targets' lateness. */
#ifndef KD_RATELIMITS_H
#define KD_RATELIMITS_H

#include <stddef.h>

#include <kdelay/error.h>

/* The most rules a list may hold. */
#define KD_RATELIMITS_MAX 64

typedef struct kd_ratelimit {
        const char *name; /* the topic or prefix; into kd_ratelimits_t.buf */
        size_t len;
        int prefix;     /* 1: the entry ended in '*' */
        double rate;    /* fires per second, > 0 */
        double burst;   /* fires at once, >= 1 */
        const char *as; /* the entry as written ("orders.*"), for labels */
} kd_ratelimit_t;

typedef struct kd_ratelimits {
        char *buf;         /* owned: names and labels, NUL-separated */
        kd_ratelimit_t *v; /* owned */
        size_t cnt;        /* 0: no target is limited */
} kd_ratelimits_t;

/* Parses list — "payments=500, orders.*=2000/400": TARGET=RATE[/BURST],
 * TARGET a topic name or a `prefix*`, RATE fires per second (1 ..
 * 1000000), BURST fires (1 .. 1000000; default a tenth of a second's
 * worth, at least 1); NULL or "" = none — into *l (cleared first; the
 * caller clears it). KDELAY_ERR_CONFIG naming the entry at fault, also
 * for a target given twice. */
kdelay_err_t kd_ratelimits_parse(kd_ratelimits_t *l, const char *list,
                                 char *errstr, size_t errstr_size);

/* The rule limiting topic (len bytes): an exact name first, else the
 * longest matching prefix; -1 when none does. */
int kd_ratelimits_match(const kd_ratelimits_t *l, const char *topic,
                        size_t len);

void kd_ratelimits_clear(kd_ratelimits_t *l);

#endif
